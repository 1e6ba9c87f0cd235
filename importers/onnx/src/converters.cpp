// The converter table (converters.hpp) and the choice of a node's converter by its model's
// opset.
#include "converters.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_versions.hpp"
#include "ops/common.hpp"
#include <algorithm>
#include <iterator>

namespace dlavm::onnx {

namespace detail {

namespace {

namespace c = convert;

// Rows of one operator do not overlap; a range's ends are versions ONNX has (tests/onnx checks
// both). Versions that only widened the types an operator takes share a row: a type dlavm
// does not compute on is refused as a type.
constexpr ConverterRow kRows[] = {
    {"Abs", 1, 13, c::abs, "`abs`"},
    {"Acos", 7, 22, c::acos, "`acos`"},
    {"Acosh", 9, 22, c::acosh, "`acosh`"},
    {"Add", 1, 6, c::add_v1, "versions 1 and 6 without their legacy broadcast attribute"},
    {"Add", 7, 14, c::add, "`add` (numpy broadcasting)"},
    {"And", 1, 1, c::and_v1, "version 1 without its legacy broadcast attribute"},
    {"And", 7, 7, c::and_, "`logical_and` (numpy broadcasting; BOOL is uint8 0/1)"},
    {"ArgMax", 1, 13, c::arg_max, "`argmax` (axis, keepdims, select_last_index; int64)"},
    {"ArgMin", 1, 13, c::arg_min, "`argmin` (axis, keepdims, select_last_index; int64)"},
    {"Asin", 7, 22, c::asin, "`asin`"},
    {"Asinh", 9, 22, c::asinh, "`asinh`"},
    {"Atan", 7, 22, c::atan, "`atan`"},
    {"Atanh", 9, 22, c::atanh, "`atanh`"},
    {"AveragePool", 1, 22, c::average_pool,
     "`avg_pool2d` (2-D, and 1-D as a height-1 image; `ceil_mode` as extra padding at the end, "
     "which the pool does not count; `count_include_pad`)"},
    {"BatchNormalization", 1, 6, c::batch_normalization_v1,
     "versions 1 and 6 with is_test = 1 only"},
    {"BatchNormalization", 7, 15, c::batch_normalization,
     "`batch_norm` (inference: running mean and variance), which the `fold_batch_norm` pass "
     "folds into the convolution or dense layer before it"},
    {"Cast", 6, 25, c::cast,
     "`cast` (to float32, int8, uint8, int32, int64; from BOOL, a uint8 0/1); to BOOL: "
     "`not_equal` to 0"},
    {"Ceil", 1, 13, c::ceil, "`ceil`"},
    {"Celu", 12, 28, c::celu, "`celu` (alpha)"},
    {"Clip", 1, 6, c::clip_v1, "versions 1 and 6: the bounds are attributes"},
    {"Clip", 11, 13, c::clip,
     "`clip` with constant bounds; maximum and minimum with computed ones"},
    {"Concat", 1, 1, c::concat_v1, "version 1: axis 1 by default"},
    {"Concat", 4, 13, c::concat, "`concat`"},
    {"Constant", 1, 25, c::constant,
     "`constant` (value, value_float(s), value_int(s); not sparse or strings)"},
    {"ConstantOfShape", 9, 25, c::constant_of_shape,
     "a constant (its shape a constant or a computed shape whose dims are all known)"},
    {"Conv", 1, 22, c::conv,
     "`conv2d` (1-D as 2-D; groups, dilations), `bias_add` for B; `pads`, `auto_pad` "
     "SAME_UPPER / SAME_LOWER / VALID, asymmetric pads included"},
    {"ConvInteger", 10, 10, c::conv_integer,
     "`conv2d` of int8 operands and a zero-point `bias_add`, else on int32 operands, each "
     "minus its zero point (per output channel for w)"},
    {"ConvTranspose", 1, 22, c::conv_transpose,
     "`conv2d_transpose` (float32), 1-D as 2-D; `bias_add` for B"},
    {"Cos", 7, 22, c::cos, "`cos`"},
    {"Cosh", 9, 22, c::cosh, "`cosh`"},
    {"DequantizeLinear", 10, 25, c::dequantize_linear,
     "`dequantize_linear`, per tensor or per channel (`axis`); not blocked"},
    {"Div", 7, 14, c::div,
     "`div` (numpy broadcasting; integers truncate toward zero); of computed shapes: folded"},
    {"Dropout", 1, 22, c::dropout,
     "its input (inference; the mask output and training mode refused)"},
    {"Elu", 1, 22, c::elu, "`elu` (alpha)"},
    {"Equal", 1, 1, c::equal_v1, "version 1 without its legacy broadcast attribute"},
    {"Equal", 7, 19, c::equal,
     "`equal` (numpy broadcasting; a uint8 0/1); of computed dims: folded where their ranges "
     "decide it"},
    {"Erf", 9, 13, c::erf, "`erf`"},
    {"Exp", 1, 13, c::exp, "`exp`"},
    {"Expand", 8, 13, c::expand,
     "`broadcast_to` (the shape a constant or a computed shape whose symbolic dims are x's own)"},
    {"Flatten", 1, 25, c::flatten, "`flatten`"},
    {"Floor", 1, 13, c::floor, "`floor`"},
    {"GRU", 7, 22, c::gru,
     "`recurrent` (cell gru, linear_before_reset; default activations; layout 1 transposed)"},
    {"Gather", 1, 13, c::gather, "`take`; of a computed shape or constants: folded"},
    {"Gelu", 20, 20, c::gelu,
     "`gelu` (approximate = none); tanh: its formula in `mul`, `add` and `tanh`"},
    {"Gemm", 1, 13, c::gemm,
     "`dense` when transB = 1 (the form VTA runs), else `matmul`; `transpose` for transA; "
     "`mul` by alpha and beta, `add` of C with broadcasting"},
    {"GlobalAveragePool", 1, 22, c::global_average_pool, "`global_avg_pool2d` (2-D)"},
    {"Greater", 1, 1, c::greater_v1, "version 1 without its legacy broadcast attribute"},
    {"Greater", 7, 13, c::greater,
     "`greater` (numpy broadcasting; a uint8 0/1); of computed dims: folded where their "
     "ranges decide it"},
    {"GreaterOrEqual", 12, 16, c::greater_or_equal,
     "`greater_equal` (numpy broadcasting; a uint8 0/1); of computed dims: folded where their "
     "ranges decide it"},
    {"HardSigmoid", 1, 22, c::hard_sigmoid, "`hard_sigmoid` (alpha, beta)"},
    {"HardSwish", 14, 22, c::hard_swish, "`hard_swish`"},
    {"Identity", 1, 25, c::identity, "its input"},
    {"If", 1, 25, c::if_,
     "the nodes of the branch its condition chooses, inlined, when the condition is known at "
     "import (an initializer, a Constant, a folded computation); known at run time: both "
     "branches, each output picked by `where`"},
    {"IsInf", 10, 20, c::is_inf, "`is_inf` (detect_positive, detect_negative; float32)"},
    {"IsNaN", 9, 20, c::is_nan, "`is_nan` (float32)"},
    {"LSTM", 7, 22, c::lstm,
     "`recurrent` (cell lstm; default activations; no clip, peepholes or input_forget; layout 1 "
     "transposed); Y_h and Y_c sliced at the last steps"},
    {"LayerNormalization", 17, 17, c::layer_normalization,
     "`layer_norm` over the dims from `axis` (Scale and B broadcast to them; no B: zeros)"},
    {"LeakyRelu", 1, 16, c::leaky_relu, "`leaky_relu` (alpha)"},
    {"Less", 1, 1, c::less_v1, "version 1 without its legacy broadcast attribute"},
    {"Less", 7, 13, c::less,
     "`less` (numpy broadcasting; a uint8 0/1); of computed dims: folded where their "
     "ranges decide it"},
    {"LessOrEqual", 12, 16, c::less_or_equal,
     "`less_equal` (numpy broadcasting; a uint8 0/1); of computed dims: folded where their "
     "ranges decide it"},
    {"Log", 1, 13, c::log, "`log`"},
    {"LogSoftmax", 1, 11, c::log_softmax_v1,
     "versions 1 and 11: over the input flattened at `axis` (default 1)"},
    {"LogSoftmax", 13, 13, c::log_softmax, "`log_softmax` along `axis`"},
    {"MatMul", 1, 13, c::matmul, "`matmul` (operands of rank 2 or more)"},
    {"MatMulInteger", 10, 10, c::matmul_integer,
     "`matmul` of int32 operands minus their zero points (per row of a, per column of b), or "
     "`dense` of int8 operands for a constant 2-D b"},
    {"Max", 1, 13, c::max, "`maximum` of the inputs, left to right (numpy broadcasting)"},
    {"MaxPool", 1, 22, c::max_pool,
     "`max_pool2d` (2-D, and 1-D as a height-1 image; `ceil_mode`; no Indices output)"},
    {"Mean", 1, 13, c::mean, "`add` of the inputs, then `mul` by 1 / count (float32)"},
    {"Min", 1, 13, c::min, "`minimum` of the inputs, left to right (numpy broadcasting)"},
    {"Mish", 18, 22, c::mish, "`mish`"},
    {"Mul", 1, 6, c::mul_v1, "versions 1 and 6 without their legacy broadcast attribute"},
    {"Mul", 7, 14, c::mul, "`mul` (numpy broadcasting)"},
    {"Neg", 1, 13, c::neg, "`neg`"},
    {"Not", 1, 1, c::not_, "`logical_not` (BOOL is uint8 0/1)"},
    {"Or", 1, 1, c::or_v1, "version 1 without its legacy broadcast attribute"},
    {"Or", 7, 7, c::or_, "`logical_or` (numpy broadcasting; BOOL is uint8 0/1)"},
    {"PRelu", 1, 16, c::prelu, "`prelu` (the slope broadcast to x)"},
    {"Pad", 2, 2, c::pad_v2, "version 2: pads and value are attributes"},
    {"Pad", 11, 25, c::pad,
     "`pad` (constant, edge and reflect modes; constant pads, no axes input)"},
    {"Pow", 1, 15, c::pow, "`pow` (float32; an integer exponent cast to float32)"},
    {"QLinearConv", 10, 10, c::qlinear_conv, "ConvInteger's sum, `bias_add` of B, then `rescale`"},
    {"QLinearMatMul", 10, 21, c::qlinear_matmul, "MatMulInteger's product, then `rescale`"},
    {"QuantizeLinear", 10, 25, c::quantize_linear,
     "`quantize_linear`, per tensor or per channel (`axis`); int8 or uint8, not blocked"},
    {"RNN", 7, 22, c::rnn, "`recurrent` (cell rnn; tanh; layout 1 transposed)"},
    {"Range", 11, 11, c::range, "a constant (start, limit and delta constants)"},
    {"Reciprocal", 1, 13, c::reciprocal, "`reciprocal`"},
    {"ReduceL1", 1, 13, c::reduce_l1_v1, "versions before 18: the axes an attribute"},
    {"ReduceL1", 18, 18, c::reduce_l1, "`abs`, then `reduce_sum`"},
    {"ReduceL2", 1, 13, c::reduce_l2_v1, "versions before 18: the axes an attribute"},
    {"ReduceL2", 18, 18, c::reduce_l2, "`mul` (x * x), `reduce_sum`, then `sqrt` (float32)"},
    {"ReduceLogSum", 1, 13, c::reduce_log_sum_v1, "versions before 18: the axes an attribute"},
    {"ReduceLogSum", 18, 18, c::reduce_log_sum, "`reduce_sum`, then `log` (float32)"},
    {"ReduceLogSumExp", 1, 13, c::reduce_log_sum_exp_v1,
     "versions before 18: the axes an attribute"},
    {"ReduceLogSumExp", 18, 18, c::reduce_log_sum_exp,
     "m + log(sum(exp(x - m))), m the `reduce_max` (float32)"},
    {"ReduceMax", 1, 13, c::reduce_max_v1, "versions before 18: the axes an attribute"},
    {"ReduceMax", 18, 20, c::reduce_max,
     "`reduce_max` (axes a constant input, keepdims, noop_with_empty_axes)"},
    {"ReduceMean", 1, 13, c::reduce_mean_v1, "versions before 18: the axes an attribute"},
    {"ReduceMean", 18, 18, c::reduce_mean,
     "`reduce_mean` (axes a constant input, keepdims, noop_with_empty_axes)"},
    {"ReduceMin", 1, 13, c::reduce_min_v1, "versions before 18: the axes an attribute"},
    {"ReduceMin", 18, 20, c::reduce_min,
     "`reduce_min` (axes a constant input, keepdims, noop_with_empty_axes)"},
    {"ReduceSum", 1, 11, c::reduce_sum_v1, "versions 1 and 11: the axes an attribute"},
    {"ReduceSum", 13, 13, c::reduce_sum,
     "`reduce_sum` (axes a constant input, keepdims, noop_with_empty_axes)"},
    {"ReduceSumSquare", 1, 13, c::reduce_sum_square_v1,
     "versions before 18: the axes an attribute"},
    {"ReduceSumSquare", 18, 18, c::reduce_sum_square, "`mul` (x * x), then `reduce_sum`"},
    {"Relu", 1, 14, c::relu, "`relu`"},
    {"Reshape", 1, 1, c::reshape_v1, "version 1: the shape is an attribute"},
    {"Reshape", 5, 25, c::reshape,
     "`reshape`, the shape a constant or a computed shape (symbolic dims kept where the input "
     "has them, or inferred)"},
    {"Resize", 11, 19, c::resize,
     "`resize2d` of 4-D NCHW (nearest or linear; scales or sizes constant; batch and channel "
     "kept)"},
    {"Round", 11, 22, c::round, "`round` (halves to even)"},
    {"Selu", 1, 22, c::selu, "`selu` (alpha, gamma)"},
    {"Shape", 1, 25, c::shape,
     "the input's dims (`start`, `end`), a constant or symbolic dims that fold into the "
     "Reshape, Slice or arithmetic they feed"},
    {"Sigmoid", 1, 13, c::sigmoid, "`sigmoid`"},
    {"Sign", 9, 13, c::sign, "`sign`"},
    {"Sin", 7, 22, c::sin, "`sin`"},
    {"Sinh", 9, 22, c::sinh, "`sinh`"},
    {"Size", 1, 25, c::size, "the input's element count, folded like Shape"},
    {"Slice", 1, 1, c::slice_v1, "version 1: starts, ends and axes are attributes"},
    {"Slice", 10, 13, c::slice,
     "`strided_slice` (constant starts, ends, axes, steps); of a computed shape: folded"},
    {"Softmax", 1, 11, c::softmax_v1,
     "versions 1 and 11: over the input flattened at `axis` (default 1)"},
    {"Softmax", 13, 13, c::softmax, "`softmax` along `axis`"},
    {"Softplus", 1, 22, c::softplus, "`softplus`"},
    {"Softsign", 1, 22, c::softsign, "`softsign`"},
    {"Split", 2, 11, c::split_v2, "versions 2 and 11: the sizes an attribute"},
    {"Split", 13, 18, c::split,
     "`strided_slice` per output (sizes a constant input, or equal parts: num_outputs)"},
    {"Sqrt", 1, 13, c::sqrt, "`sqrt`"},
    {"Squeeze", 1, 11, c::squeeze_v1, "versions 1 and 11: the axes an attribute"},
    {"Squeeze", 13, 25, c::squeeze,
     "`reshape` (symbolic dims kept where the input has them); of a computed shape: folded"},
    {"Sub", 7, 14, c::sub, "`sub` (numpy broadcasting); of computed shapes: folded"},
    {"Sum", 1, 13, c::sum, "`add` of the inputs, left to right (numpy broadcasting)"},
    {"Tan", 7, 22, c::tan, "`tan`"},
    {"Tanh", 1, 13, c::tanh, "`tanh`"},
    {"ThresholdedRelu", 10, 22, c::thresholded_relu, "`thresholded_relu` (alpha)"},
    {"Tile", 6, 13, c::tile, "`tile` (repeats a constant)"},
    {"Transpose", 1, 25, c::transpose, "`transpose`"},
    {"Unsqueeze", 1, 11, c::unsqueeze_v1, "versions 1 and 11: the axes an attribute"},
    {"Unsqueeze", 13, 25, c::unsqueeze,
     "`reshape` (symbolic dims kept where the input has them); of a computed shape: folded"},
    {"Where", 9, 16, c::where,
     "`where` (the three broadcast; the condition a uint8); over computed dims: the dims its "
     "constant condition picks"},
    {"Xor", 1, 1, c::xor_v1, "version 1 without its legacy broadcast attribute"},
    {"Xor", 7, 7, c::xor_, "`logical_xor` (numpy broadcasting; BOOL is uint8 0/1)"},
};

const OnnxOperator* history_of(std::string_view op) {
  const auto* end = std::end(kOnnxOperators);
  const auto* it =
      std::lower_bound(std::begin(kOnnxOperators), end, op,
                       [](const OnnxOperator& o, std::string_view k) { return o.op < k; });
  return it != end && it->op == op ? it : nullptr;
}

// com.microsoft's operators (ONNX Runtime's contrib domain), all of version 1.
constexpr ConverterRow kMicrosoftRows[] = {
    {"QGemm", 1, 1, c::qgemm,
     "the integer product (a dense layer; transB; alpha 1), `bias_add` of the int32 C, then "
     "`rescale` with y_scale or the float sum without"},
    {"QLinearAdd", 1, 1, c::qlinear_add, "`add` between `dequantize_linear` and `quantize_linear`"},
    {"QLinearConcat", 1, 1, c::qlinear_concat,
     "`concat` of the integers where every input has the output's scale and zero point; else "
     "between dequantization and quantization"},
    {"QLinearGlobalAveragePool", 1, 1, c::qlinear_global_average_pool,
     "`global_avg_pool2d` between dequantization and quantization (NCHW)"},
    {"QLinearLeakyRelu", 1, 1, c::qlinear_leaky_relu,
     "`leaky_relu` between dequantization and quantization"},
    {"QLinearMul", 1, 1, c::qlinear_mul, "`mul` between dequantization and quantization"},
    {"QLinearSigmoid", 1, 1, c::qlinear_sigmoid,
     "`sigmoid` between dequantization and quantization"},
};

std::string versions_text(const std::vector<std::int64_t>& v) {
  return fmt::format("{}", fmt::join(v, ", "));
}

}  // namespace

static_assert(kOnnxLatestOpset == kLatestOpset,
              "onnx_versions.hpp and import.hpp disagree on the newest opset");

std::span<const ConverterRow> converter_rows() { return kRows; }

std::vector<std::int64_t> onnx_versions(std::string_view op) {
  std::vector<std::int64_t> out;
  if (const auto* h = history_of(op))
    for (const auto v : h->versions)
      if (v != 0) out.push_back(v);
  return out;
}

Selection select_converter(std::string_view op, std::int64_t opset) {
  Selection s;
  const auto versions = onnx_versions(op);
  if (versions.empty()) {
    s.refusal = fmt::format("{} is no operator of the default ONNX domain (opsets 1 to {})", op,
                            kOnnxLatestOpset);
    return s;
  }
  for (const auto v : versions)
    if (v <= opset) s.version = v;
  if (s.version == 0) {
    s.refusal = fmt::format("{} does not exist in opset {} (it came in opset {})", op, opset,
                            versions.front());
    return s;
  }
  std::vector<std::int64_t> handled;
  for (const auto& row : kRows) {
    if (row.op != op) continue;
    if (row.first <= s.version && s.version <= row.last) {
      s.row = &row;
      return s;
    }
    for (const auto v : versions)
      if (row.first <= v && v <= row.last) handled.push_back(v);
  }
  if (handled.empty())
    s.refusal = fmt::format("the importer converts no version of {}", op);
  else
    s.refusal = fmt::format(
        "{}-{} (the version opset {} selects) is not handled; the importer "
        "converts {} versions {}",
        op, s.version, opset, op, versions_text(handled));
  return s;
}

std::span<const ConverterRow> microsoft_converter_rows() { return kMicrosoftRows; }

Selection select_microsoft_converter(std::string_view op, std::int64_t opset) {
  Selection s;
  for (const auto& row : kMicrosoftRows)
    if (row.op == op) {
      if (opset < row.first) {
        s.refusal = fmt::format("com.microsoft's {} does not exist in its opset {}", op, opset);
        return s;
      }
      s.row = &row;
      s.version = row.first;
      return s;
    }
  std::vector<std::string_view> names;
  for (const auto& row : kMicrosoftRows) names.push_back(row.op);
  s.refusal = fmt::format("the importer converts com.microsoft's {} only, not {}",
                          fmt::join(names, ", "), op);
  return s;
}

}  // namespace detail

std::vector<OperatorSupport> operator_support() {
  std::vector<OperatorSupport> out;
  for (const auto& o : detail::kOnnxOperators) {
    OperatorSupport s{.op = std::string(o.op), .versions = detail::onnx_versions(o.op)};
    // (the newest row first: what the operator becomes today, then the older forms; an index
    // loop because Clang 14 with libstdc++ 12 rejects reverse views over a C array)
    for (auto i = std::size(detail::kRows); i-- > 0;) {
      const auto& row = detail::kRows[i];
      if (row.op != o.op) continue;
      for (const auto v : s.versions)
        if (row.first <= v && v <= row.last) s.converted.push_back(v);
      if (s.becomes.find(row.becomes) == std::string::npos)
        s.becomes += fmt::format("{}{}", s.becomes.empty() ? "" : "; ", row.becomes);
    }
    std::sort(s.converted.begin(), s.converted.end());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dlavm::onnx
