// The converters: one function per ONNX op type, from a node to the graph values of its
// outputs, with ONNX's semantics written as graph ops (docs/onnx.md lists them). A converter
// throws Unsupported for what it does not handle, naming the attribute and its value.
#include <dlavm/core/error.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/int_math.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "importer.hpp"
#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

namespace dlavm::onnx::detail {

namespace {

using Node = ::onnx::NodeProto;
using Outs = std::vector<graph::Expr>;

[[noreturn]] void unsupported(std::string reason) { throw Unsupported{std::move(reason)}; }

// A static dim, or an Unsupported naming what needs it.
std::int64_t static_dim(const ne::Expr& d, std::string_view what) {
  const auto v = d.as_int();
  if (!v) unsupported(fmt::format("{} needs a static dim, and it is {}", what, d));
  return *v;
}

// A sum of the model's dims, pads and window sizes, each as large as the model says: an
// Unsupported naming `what` when it leaves int64.
std::int64_t window_sum(std::initializer_list<std::int64_t> terms, std::string_view what) {
  std::int64_t sum = 0;
  for (auto t : terms) {
    const auto next = ne::detail::checked_add(sum, t);
    if (!next) unsupported(fmt::format("{} overflows int64", what));
    sum = *next;
  }
  return sum;
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, std::string_view what) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    raise<ValueError>("{} {} is outside [-{}, {}) for rank {}", what, axis, rank, rank, rank);
  return a;
}

// The integer values of a constant (int64 or int32 shapes, pads, axes).
std::vector<std::int64_t> ints_of(const te::NDArray& a) {
  if (!a.dtype().is_integral()) unsupported("a shape or pads tensor of floats");
  return {a.data().begin(), a.data().end()};
}

// A scalar of a constant tensor (one element, any rank).
double scalar_of(const te::NDArray& a, std::string_view what) {
  if (a.size() != 1)
    unsupported(fmt::format("its {} has {} elements; a scalar is needed", what, a.size()));
  return a.value_as_double(0);
}

// -------------------------------------------------------------------------------- windows

// Pads of a 2-D window op: ONNX's `pads` ([top, left, bottom, right]) or auto_pad, as the
// host ops' (top, left, bottom, right).
// `one_d`: a 1-D window (its pads [begin, end]) on x viewed as a height-1 image.
std::array<std::int64_t, 4> window_pads(Importer& im, const Node& n, const graph::Expr& x,
                                        std::array<std::int64_t, 2> kernel,
                                        std::array<std::int64_t, 2> strides, bool one_d = false) {
  const std::string auto_pad = attr_string(im, n, "auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    auto pads =
        attr_ints(im, n, "pads",
                  one_d ? std::vector<std::int64_t>{0, 0} : std::vector<std::int64_t>{0, 0, 0, 0});
    if (pads.size() != (one_d ? 2u : 4u))
      unsupported(fmt::format("pads of {} entries ({}: {})", pads.size(), one_d ? "1-D" : "2-D",
                              one_d ? 2 : 4));
    for (auto p : pads)
      if (p < 0) unsupported(fmt::format("a negative pad {}", p));
    if (one_d) pads = {0, pads[0], 0, pads[1]};
    return {pads[0], pads[1], pads[2], pads[3]};
  }
  if (auto_pad == "VALID") return {0, 0, 0, 0};
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    raise<ValueError>("auto_pad '{}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", auto_pad);
  // SAME: the output has ceil(in / stride) positions, the pad split evenly, the odd one at
  // the end (UPPER) or the start (LOWER)
  const auto type = im.type_of(x);
  if (type.ndim() != 4)
    unsupported(fmt::format("auto_pad {} on an input of rank {}: only 2-D windows are handled",
                            auto_pad, type.ndim()));
  std::array<std::int64_t, 4> out{};
  for (int k = 0; k < 2; ++k) {
    // (strides are at least 1: pair_attr; (o - 1) * stride - in is in [-stride, 0), so no
    // step overflows)
    const std::int64_t in = static_dim(type.shape[2 + k], "auto_pad " + auto_pad);
    const std::int64_t o = in / strides[k] + (in % strides[k] != 0 ? 1 : 0);
    const std::int64_t total = std::max<std::int64_t>((o - 1) * strides[k] - in + kernel[k], 0);
    const std::int64_t small = total / 2, large = total - small;
    out[k] = auto_pad == "SAME_UPPER" ? small : large;
    out[2 + k] = auto_pad == "SAME_UPPER" ? large : small;
  }
  return out;
}

// A window attribute of a 2-D node, or of a 1-D one (`one_d`: one entry, returned as the
// width of a height-1 window).
std::array<std::int64_t, 2> pair_attr(Importer& im, const Node& n, std::string_view name,
                                      std::array<std::int64_t, 2> fallback, bool one_d = false) {
  const auto v = attr_ints(im, n, name,
                           one_d ? std::vector<std::int64_t>{fallback[1]}
                                 : std::vector<std::int64_t>{fallback[0], fallback[1]});
  if (v.size() != (one_d ? 1u : 2u))
    unsupported(
        fmt::format("{} of {} entries for a {} window", name, v.size(), one_d ? "1-D" : "2-D"));
  for (auto x : v)
    if (x < 1 && find_attr(n, name) != nullptr)
      raise<ValueError>("{} = [{}]: window sizes and strides are at least 1", name,
                        fmt::join(v, ", "));
  return one_d ? std::array<std::int64_t, 2>{1, v[0]} : std::array<std::int64_t, 2>{v[0], v[1]};
}

void require_unit(Importer& im, const Node& n, std::string_view name) {
  for (auto d : attr_ints(im, n, name, {}))
    if (d != 1)
      unsupported(fmt::format("{} = [{}]", name, fmt::join(attr_ints(im, n, name, {}), ", ")));
}

// ------------------------------------------------------------------------------ converters

Outs relu(Importer& im, const Node& n) { return {graph::relu(im.expr(n, 0))}; }

// Before opset 7, Add and Mul broadcast only when told to, along `axis` (a legacy form).
void legacy_broadcast(Importer& im, const Node& n) {
  if (im.opset() < 7 && attr_int(im, n, "broadcast", 0) != 0)
    unsupported("the legacy broadcast attribute (opset < 7)");
}
Outs add(Importer& im, const Node& n) {
  legacy_broadcast(im, n);
  return {graph::add(im.expr(n, 0), im.expr(n, 1))};
}
Outs mul(Importer& im, const Node& n) {
  legacy_broadcast(im, n);
  return {graph::mul(im.expr(n, 0), im.expr(n, 1))};
}

Outs clip(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const DType dt = im.type_of(x).dtype;
  double lo = dt.is_float() ? -std::numeric_limits<double>::infinity()
                            : static_cast<double>(dt.min_value());
  double hi =
      dt.is_float() ? std::numeric_limits<double>::infinity() : static_cast<double>(dt.max_value());
  if (im.opset() < 11) {
    lo = attr_float(im, n, "min", static_cast<float>(lo));
    hi = attr_float(im, n, "max", static_cast<float>(hi));
  } else {
    if (Importer::has_input(n, 1)) lo = scalar_of(im.constant(n, 1, "min"), "min");
    if (Importer::has_input(n, 2)) hi = scalar_of(im.constant(n, 2, "max"), "max");
  }
  if (lo > hi) {
    // ONNX: every value becomes max when min > max
    lo = hi;
  }
  return {graph::clip(x, {.lo = lo, .hi = hi})};
}

// The parameters of a 2-D convolution node (Conv, ConvInteger, QLinearConv) whose input is x
// and weight w: group 1 and no dilation only.
host::Conv2dParams conv_params(Importer& im, const Node& n, const graph::Expr& x,
                               const graph::Expr& w) {
  const auto wt = im.type_of(w);
  if (wt.ndim() != 4)
    unsupported(fmt::format("a weight of rank {}: only 2-D convolutions are handled", wt.ndim()));
  if (attr_int(im, n, "group", 1) != 1)
    unsupported(fmt::format("group = {}", attr_int(im, n, "group", 1)));
  require_unit(im, n, "dilations");
  const std::array<std::int64_t, 2> kernel = {static_dim(wt.shape[2], "the kernel height"),
                                              static_dim(wt.shape[3], "the kernel width")};
  const auto strides = pair_attr(im, n, "strides", {1, 1});
  return {.strides = strides, .padding = window_pads(im, n, x, kernel, strides)};
}

Outs conv(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0), w = im.expr(n, 1);
  auto y = graph::conv2d(x, w, conv_params(im, n, x, w));
  if (Importer::has_input(n, 2)) y = graph::bias_add(y, im.expr(n, 2), {.axis = 1});
  return {y};
}

Outs gemm(Importer& im, const Node& n) {
  auto a = im.expr(n, 0);
  auto b = im.expr(n, 1);
  const float alpha = attr_float(im, n, "alpha", 1.0f);
  const float beta = attr_float(im, n, "beta", 1.0f);
  if (attr_int(im, n, "transA", 0) != 0) a = graph::transpose(a, {.perm = {1, 0}});
  // A . B^T is a dense layer, the form VTA runs with a constant B
  graph::Expr y = attr_int(im, n, "transB", 0) != 0 ? graph::dense(a, b) : graph::matmul(a, b);
  const DType dt = im.type_of(a).dtype;
  const auto scalar = [&](std::string_view name, float v) {
    if (!dt.is_float()) unsupported(fmt::format("{} = {} on integers", name, v));
    return im.make_constant(n, name, te::NDArray::from_floats({}, {v}));
  };
  if (alpha != 1.0f) y = graph::mul(y, scalar("alpha", alpha));
  if (Importer::has_input(n, 2) && beta != 0.0f) {
    auto c = im.expr(n, 2);
    if (beta != 1.0f) c = graph::mul(c, scalar("beta", beta));
    y = graph::add(y, c);
  }
  return {y};
}

Outs matmul(Importer& im, const Node& n) {
  const auto a = im.expr(n, 0), b = im.expr(n, 1);
  if (im.type_of(a).ndim() < 2 || im.type_of(b).ndim() < 2)
    unsupported("a 1-D operand (MatMul of vectors)");
  return {graph::matmul(a, b)};
}

// A 1-D pool runs as a 2-D one over its input viewed as [N, C, 1, L].
Outs pool(Importer& im, const Node& n, bool max) {
  auto x = im.expr(n, 0);
  const std::size_t rank = im.type_of(x).ndim();
  if (rank != 3 && rank != 4)
    unsupported(fmt::format("an input of rank {}: only 1-D and 2-D pooling are handled", rank));
  const bool one_d = rank == 3;
  if (one_d) x = graph::reshape(x, {.newshape = {0, 0, 1, -1}});
  if (n.output_size() > 1 && !n.output(1).empty()) unsupported("the Indices output");
  if (attr_int(im, n, "storage_order", 0) != 0) unsupported("storage_order = 1");
  require_unit(im, n, "dilations");
  const auto kernel = pair_attr(im, n, "kernel_shape", {0, 0}, one_d);
  const auto strides = pair_attr(im, n, "strides", {1, 1}, one_d);
  auto pads = window_pads(im, n, x, kernel, strides, one_d);
  const bool include_pad = !max && attr_int(im, n, "count_include_pad", 0) != 0;
  if (attr_int(im, n, "ceil_mode", 0) != 0) {
    // ceil: the last window may overhang the padded input; padding that the window does not
    // count (max ignores it, an average without count_include_pad too) says the same
    if (include_pad) unsupported("ceil_mode = 1 with count_include_pad = 1");
    const auto type = im.type_of(x);
    for (int k = 0; k < 2; ++k) {
      const std::int64_t span =
          window_sum({static_dim(type.shape[2 + k], "ceil_mode"), pads[k], pads[2 + k], -kernel[k]},
                     "ceil_mode's window");
      // the last window's index, out - 1: ceil(span / stride)
      const std::int64_t last =
          window_sum({span, strides[k], -1}, "ceil_mode's window") / strides[k];
      pads[2 + k] = window_sum({pads[2 + k], last * strides[k], -span}, "ceil_mode's pad");
    }
  }
  const host::Pool2dParams p{
      .pool_size = kernel, .strides = strides, .padding = pads, .count_include_pad = include_pad};
  auto y = max ? graph::max_pool2d(x, p) : graph::avg_pool2d(x, p);
  if (one_d) y = graph::reshape(y, {.newshape = {0, 0, -1}});
  return {y};
}
Outs max_pool(Importer& im, const Node& n) { return pool(im, n, true); }
Outs average_pool(Importer& im, const Node& n) { return pool(im, n, false); }

Outs global_average_pool(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  if (im.type_of(x).ndim() != 4)
    unsupported(
        fmt::format("an input of rank {}: only 2-D pooling is handled", im.type_of(x).ndim()));
  return {graph::global_avg_pool2d(x)};
}

Outs reshape(Importer& im, const Node& n) {
  std::vector<std::int64_t> shape =
      im.opset() < 5 ? attr_ints(im, n, "shape", {}) : ints_of(im.constant(n, 1, "shape"));
  if (attr_int(im, n, "allowzero", 0) != 0)
    for (auto d : shape)
      if (d == 0) unsupported("allowzero = 1 with a 0 in the shape (an empty tensor)");
  return {graph::reshape(im.expr(n, 0), {.newshape = std::move(shape)})};
}

Outs flatten(Importer& im, const Node& n) {
  return {graph::flatten(im.expr(n, 0), {.axis = attr_int(im, n, "axis", 1)})};
}

Outs transpose(Importer& im, const Node& n) {
  return {graph::transpose(im.expr(n, 0), {.perm = attr_ints(im, n, "perm", {})})};
}

Outs concat(Importer& im, const Node& n) {
  if (n.input_size() == 0) raise<ValueError>("Concat has no inputs");
  std::vector<graph::Expr> xs;
  for (int k = 0; k < n.input_size(); ++k) xs.push_back(im.expr(n, k));
  const auto rank = static_cast<std::int64_t>(im.type_of(xs.front()).ndim());
  // the axis was optional (default 1) before opset 4
  const std::int64_t axis =
      normalize_axis(attr_int(im, n, "axis", im.opset() < 4 ? 1 : 0), rank, "axis");
  return {graph::concat(std::move(xs), {.axis = axis})};
}

host::PadMode pad_mode(const std::string& name) {
  if (name == "constant") return host::PadMode::Constant;
  if (name == "edge") return host::PadMode::Edge;
  if (name == "reflect") return host::PadMode::Reflect;
  unsupported(fmt::format("mode '{}'", name));
}

Outs pad(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const host::PadMode mode = pad_mode(attr_string(im, n, "mode", "constant"));
  std::vector<std::int64_t> pads;
  double value = 0;
  if (im.opset() < 2) unsupported("opset 1's 'paddings' attribute");
  if (im.opset() < 11) {
    pads = attr_ints(im, n, "pads", {});
    value = attr_float(im, n, "value", 0.0f);
  } else {
    pads = ints_of(im.constant(n, 1, "pads"));
    if (Importer::has_input(n, 2)) value = scalar_of(im.constant(n, 2, "constant_value"), "value");
    if (Importer::has_input(n, 3)) unsupported("the axes input");
  }
  const std::size_t rank = im.type_of(x).ndim();
  if (pads.size() != 2 * rank)
    raise<ValueError>("pads has {} entries for rank {} (needs {})", pads.size(), rank, 2 * rank);
  for (auto p : pads)
    if (p < 0) unsupported(fmt::format("a negative pad {} (cropping)", p));
  const auto half = static_cast<std::ptrdiff_t>(rank);
  return {graph::pad(x, {.pad_before = {pads.begin(), pads.begin() + half},
                         .pad_after = {pads.begin() + half, pads.end()},
                         .value = value,
                         .mode = mode})};
}

Outs softmax(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const auto type = im.type_of(x);
  const auto rank = static_cast<std::int64_t>(type.ndim());
  const std::int64_t axis =
      normalize_axis(attr_int(im, n, "axis", im.opset() < 13 ? 1 : -1), rank, "axis");
  if (im.opset() >= 13 || axis == rank - 1) return {graph::softmax(x, {.axis = axis})};
  // before opset 13: over the dims from axis on, as one (the input flattened to 2-D)
  std::vector<std::int64_t> back;
  for (const auto& d : type.shape) back.push_back(static_dim(d, "Softmax before opset 13"));
  const auto flat = graph::flatten(x, {.axis = axis});
  return {graph::reshape(graph::softmax(flat, {.axis = 1}), {.newshape = back})};
}

Outs cast(Importer& im, const Node& n) {
  if (im.opset() < 6) unsupported("a Cast whose 'to' is a string (opset < 6)");
  const auto to = static_cast<std::int32_t>(attr_int(im, n, "to", 0));
  const auto dtype = dtype_of(to);
  if (!dtype) unsupported(fmt::format("a cast to {}", onnx_type_name(to)));
  return {graph::cast(im.expr(n, 0), *dtype)};
}

Outs constant(Importer& im, const Node& n) {
  for (const auto& a : n.attribute()) {
    if (a.name() == "value")
      return {im.make_constant(n, "value", to_array(a.t(), im.label(n) + ": attribute 'value'"))};
    if (a.name() == "value_float")
      return {im.make_constant(n, "value", te::NDArray::from_floats({}, {a.f()}))};
    if (a.name() == "value_floats")
      return {im.make_constant(
          n, "value",
          te::NDArray::from_floats(
              {a.floats_size()},
              std::span(a.floats().data(), static_cast<std::size_t>(a.floats_size()))))};
    if (a.name() == "value_int")
      return {im.make_constant(n, "value", te::NDArray::from_ints(DType::int64(), {}, {a.i()}))};
    if (a.name() == "value_ints")
      return {im.make_constant(
          n, "value",
          te::NDArray::from_ints(
              DType::int64(), {a.ints_size()},
              std::span(a.ints().data(), static_cast<std::size_t>(a.ints_size()))))};
    unsupported(fmt::format("attribute '{}'", a.name()));
  }
  raise<ValueError>("a Constant without a value");
}

// ------------------------------------------------------------------------- quantization

// Input k, or a zero of `dtype` in the shape of input `like` when it is absent (ONNX's default
// zero point: uint8 for QuantizeLinear, x's type for DequantizeLinear).
graph::Expr zero_point(Importer& im, const Node& n, int k, int like, DType dtype,
                       std::string_view name) {
  if (Importer::has_input(n, k)) return im.expr(n, k);
  // a scale holds a value per tensor or per channel: a zero point larger than any would be is
  // not allocated
  constexpr std::int64_t max_count = std::int64_t{1} << 20;
  std::vector<std::int64_t> shape;
  for (const auto& d : im.type_of(im.expr(n, like)).shape)
    shape.push_back(static_dim(d, "a default zero point"));
  std::int64_t count = 1;
  for (auto d : shape) {
    if (d > 0 && count > max_count / d)
      unsupported(fmt::format("a default zero point of shape [{}] (at most {} elements)",
                              fmt::join(shape, ", "), max_count));
    count *= d;
  }
  return im.make_constant(n, name, te::NDArray(dtype, shape));
}

std::int64_t quant_axis(Importer& im, const Node& n) {
  return im.opset() < 13 ? 1 : attr_int(im, n, "axis", 1);
}

Outs quantize_linear(Importer& im, const Node& n) {
  const auto zp = zero_point(im, n, 2, 1, DType::uint8(), "zero_point");
  return {graph::quantize_linear(im.expr(n, 0), im.expr(n, 1), zp, {.axis = quant_axis(im, n)})};
}

Outs dequantize_linear(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const auto zp = zero_point(im, n, 2, 1, im.type_of(x).dtype, "zero_point");
  return {graph::dequantize_linear(x, im.expr(n, 1), zp, {.axis = quant_axis(im, n)})};
}

// x - zero_point as int32 (x int8 or uint8), the zero point a constant of shape [] or [1], or
// per slice along `axis` (its values laid along that axis of a rank-`rank` constant).
graph::Expr minus_zero_point(Importer& im, const Node& n, const graph::Expr& x, int k,
                             std::string_view role, std::size_t rank, std::size_t axis) {
  auto x32 = graph::cast(x, DType::int32());
  if (!Importer::has_input(n, k)) return x32;
  const te::NDArray& zp = im.constant(n, k, role);
  if (zp.dtype() != im.type_of(x).dtype)
    raise<TypeError>("{} is {} and its input {}; they must agree", role, zp.dtype(),
                     im.type_of(x).dtype);
  if (zp.dtype() != DType::int8() && zp.dtype() != DType::uint8())
    raise<TypeError>("{} is {}; zero points are int8 or uint8", role, zp.dtype());
  bool zero = true;
  for (auto v : zp.data()) zero = zero && v == 0;
  if (zero) return x32;
  std::vector<std::int64_t> shape;
  if (zp.size() > 1) {
    shape.assign(rank, 1);
    shape[axis] = static_cast<std::int64_t>(zp.size());
  }
  std::vector<std::int64_t> neg;
  for (auto v : zp.data()) neg.push_back(-v);
  return graph::add(x32,
                    im.make_constant(n, role, te::NDArray::from_ints(DType::int32(), shape, neg)));
}

// ---- the int8 x int8 form VTA runs
// VTA multiplies int8 by int8 into int32. A product with zero points, sum of (x - zx)(w - zw),
// takes that form exactly when w is a constant whose w' = w - zw fits int8: with the input
// shifted into int8, x' = x - c (c = 128 for uint8, 0 for int8),
//   sum of (x - zx) w'  =  sum of x' w'  +  (c - zx) sum of w'
// where the second term is a constant per output channel: a bias, added in the accumulator.
// Anything else (a weight computed at run time, a per-row input zero point, a w' outside int8)
// keeps the int32 form, which runs on the host.

// Input wi minus its zero point wz (per tensor, or per slice along `axis`) as an int8
// array: the input's own when it is int8 with zero points 0 (a quantizer's symmetric weights:
// no copy of a model's largest arrays); nullopt when w is not a constant or w - zw leaves int8.
std::optional<std::shared_ptr<const te::NDArray>> int8_weight(Importer& im, const Node& n, int wi,
                                                              int wz, std::size_t axis) {
  const auto& given = im.input(n, wi).constant;
  if (given == nullptr) return std::nullopt;
  const te::NDArray& w = *given;
  const te::NDArray* zp =
      Importer::has_input(n, wz) ? &im.constant(n, wz, "w_zero_point") : nullptr;
  if (zp != nullptr && zp->dtype() != w.dtype())
    raise<TypeError>("w_zero_point is {} and its input {}; they must agree", zp->dtype(),
                     w.dtype());
  const auto& shape = w.shape();
  if (w.size() == 0 || axis >= shape.size() ||
      (zp != nullptr && zp->size() != 1 && static_cast<std::int64_t>(zp->size()) != shape[axis]))
    return std::nullopt;
  bool zero = true;
  if (zp != nullptr)
    for (const auto z : zp->data()) zero = zero && z == 0;
  if (zero && w.dtype() == DType::int8()) return given;
  std::size_t inner = 1;
  for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= static_cast<std::size_t>(shape[d]);
  const auto slices = static_cast<std::size_t>(shape[axis]);
  auto out = std::make_shared<te::NDArray>(DType::int8(), shape);
  const auto src = w.data();
  auto dst = out->data();
  for (std::size_t base = 0; base < src.size(); base += inner * slices)
    for (std::size_t c = 0; c < slices; ++c) {
      const std::int64_t z = zp == nullptr ? 0 : zp->data()[zp->size() == 1 ? 0 : c];
      for (std::size_t i = base + c * inner; i < base + (c + 1) * inner; ++i) {
        dst[i] = src[i] - z;
        if (dst[i] < -128 || dst[i] > 127) return std::nullopt;
      }
    }
  return std::shared_ptr<const te::NDArray>(std::move(out));
}

// Input xi shifted into int8 (x - c) and c - zx; nullopt for a zero point that is not one
// constant.
struct Int8Input {
  graph::Expr x;
  std::int64_t delta;  // c - zx
};
std::optional<Int8Input> int8_input(Importer& im, const Node& n, int xi, int xz) {
  const auto x = im.expr(n, xi);
  const DType dt = im.type_of(x).dtype;
  if (dt != DType::int8() && dt != DType::uint8()) return std::nullopt;
  std::int64_t zx = 0;
  if (Importer::has_input(n, xz)) {
    const te::NDArray& zp = im.constant(n, xz, "x_zero_point");
    if (zp.size() != 1 || zp.dtype() != dt) return std::nullopt;
    zx = zp.data()[0];
  }
  if (dt == DType::int8()) return Int8Input{x, -zx};
  const auto shifted = graph::add(
      graph::cast(x, DType::int32()),
      im.make_constant(n, "minus_128", te::NDArray::from_ints(DType::int32(), {}, {-128})));
  return Int8Input{graph::cast(shifted, DType::int8()), 128 - zx};
}

// delta times the sum of w' over every dim but `axis`, as an int32 constant per slice of
// `axis`; nullopt when a sum leaves int32.
std::optional<te::NDArray> zero_point_bias(const te::NDArray& w8, std::size_t axis,
                                           std::int64_t delta) {
  const auto& shape = w8.shape();
  std::size_t inner = 1;
  for (std::size_t d = axis + 1; d < shape.size(); ++d) inner *= static_cast<std::size_t>(shape[d]);
  std::vector<std::int64_t> sums(static_cast<std::size_t>(shape[axis]), 0);
  const auto w = w8.data();
  for (std::size_t base = 0; base < w.size(); base += inner * sums.size())
    for (std::size_t c = 0; c < sums.size(); ++c)
      for (std::size_t i = base + c * inner; i < base + (c + 1) * inner; ++i) sums[c] += w[i];
  for (auto& v : sums) {
    v *= delta;
    if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;
  }
  return te::NDArray::from_ints(DType::int32(), {shape[axis]}, sums);
}

// The int32 convolution of ConvInteger and QLinearConv: inputs x, w, and their zero points at
// positions xz, wz (absent: 0). The padding ONNX adds holds x's zero point: 0 once it is
// subtracted, zx - c in the shifted input (a Pad on the host unless that is 0).
graph::Expr conv_integer(Importer& im, const Node& n, int xi, int wi, int xz, int wz) {
  const auto x = im.expr(n, xi), w = im.expr(n, wi);
  auto params = conv_params(im, n, x, w);
  const auto w8 = int8_weight(im, n, wi, wz, 0);
  const auto x8 = w8 ? int8_input(im, n, xi, xz) : std::nullopt;
  const auto bias = x8 ? zero_point_bias(**w8, 0, x8->delta) : std::nullopt;
  if (!bias)
    return graph::conv2d(minus_zero_point(im, n, x, xz, "x_zero_point", 4, 1),
                         minus_zero_point(im, n, w, wz, "w_zero_point", 4, 0), params);
  graph::Expr input = x8->x;
  const auto& p = params.padding;
  if (x8->delta != 0 && (p[0] != 0 || p[1] != 0 || p[2] != 0 || p[3] != 0)) {
    input = graph::pad(input, {.pad_before = {0, 0, p[0], p[1]},
                               .pad_after = {0, 0, p[2], p[3]},
                               .value = static_cast<double>(-x8->delta)});
    params.padding = {0, 0, 0, 0};
  }
  const auto weight = *w8 == im.input(n, wi).constant ? w : im.make_constant(n, "w_int8", **w8);
  auto y = graph::conv2d(input, weight, params);
  if (x8->delta != 0)
    y = graph::bias_add(y, im.make_constant(n, "zero_point_bias", *bias), {.axis = 1});
  return y;
}

Outs conv_integer_op(Importer& im, const Node& n) { return {conv_integer(im, n, 0, 1, 2, 3)}; }

// The int32 product of MatMulInteger and QLinearMatMul: a's zero point per row, b's per column.
// With a constant 2-D b, the int8 form is a dense layer over b' transposed.
graph::Expr matmul_integer(Importer& im, const Node& n, int ai, int bi, int az, int bz) {
  const auto a = im.expr(n, ai), b = im.expr(n, bi);
  const std::size_t ra = im.type_of(a).ndim(), rb = im.type_of(b).ndim();
  if (ra < 2 || rb < 2) unsupported("a 1-D operand (MatMul of vectors)");
  const auto b8 = rb == 2 ? int8_weight(im, n, bi, bz, 1) : std::nullopt;
  const auto a8 = b8 ? int8_input(im, n, ai, az) : std::nullopt;
  if (!a8)
    return graph::matmul(minus_zero_point(im, n, a, az, "a_zero_point", ra, ra - 2),
                         minus_zero_point(im, n, b, bz, "b_zero_point", rb, rb - 1));
  const te::NDArray& bv = **b8;
  const std::int64_t k = bv.shape()[0], cols = bv.shape()[1];
  te::NDArray w8(DType::int8(), {cols, k});
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      w8.set_flat(static_cast<std::size_t>(j * k + i),
                  bv.data()[static_cast<std::size_t>(i * cols + j)]);
  const auto bias = zero_point_bias(w8, 0, a8->delta);
  if (!bias)
    return graph::matmul(minus_zero_point(im, n, a, az, "a_zero_point", ra, ra - 2),
                         minus_zero_point(im, n, b, bz, "b_zero_point", rb, rb - 1));
  auto y = graph::dense(a8->x, im.make_constant(n, "b_int8_transposed", std::move(w8)));
  if (a8->delta != 0)
    y = graph::bias_add(y, im.make_constant(n, "zero_point_bias", *bias), {.axis = -1});
  return y;
}

Outs matmul_integer_op(Importer& im, const Node& n) { return {matmul_integer(im, n, 0, 1, 2, 3)}; }

// The output step of QLinearConv / QLinearMatMul: multiplier float32(x_scale * w_scale) /
// y_scale per channel (of w's scale), rounded half to even, plus y's zero point, saturated.
graph::Expr requantize_linear(Importer& im, const Node& n, const graph::Expr& acc, int xs, int ws,
                              int ys, int yz, std::int64_t axis) {
  const te::NDArray& sx = im.constant(n, xs, "input scale");
  const te::NDArray& sw = im.constant(n, ws, "weight scale");
  const te::NDArray& sy = im.constant(n, ys, "output scale");
  const te::NDArray zy = Importer::has_input(n, yz)
                             ? im.constant(n, yz, "output zero point")
                             : te::NDArray(DType::uint8(), {});  // ONNX's default: uint8 0
  if (sx.size() != 1 || sy.size() != 1 || zy.size() != 1)
    unsupported("a per-channel input or output scale");
  if (!sw.dtype().is_float() || !sx.dtype().is_float() || !sy.dtype().is_float())
    raise<TypeError>("the scales must be float32");
  const float x_scale = sx.fdata()[0], y_scale = sy.fdata()[0];
  std::vector<float> m;
  for (float w_scale : sw.fdata()) m.push_back(static_cast<float>(x_scale * w_scale) / y_scale);
  std::vector<std::int64_t> shape;
  if (m.size() > 1) shape = {static_cast<std::int64_t>(m.size())};
  const auto mult = im.make_constant(n, "multiplier", te::NDArray::from_floats(shape, m));
  const auto zp = im.make_constant(
      n, "y_zero_point",
      te::NDArray::from_ints(zy.dtype(), shape, std::vector<std::int64_t>(m.size(), zy.data()[0])));
  return graph::rescale(acc, mult, zp, {.axis = axis});
}

Outs qlinear_conv(Importer& im, const Node& n) {
  auto acc = conv_integer(im, n, 0, 3, 2, 5);
  if (Importer::has_input(n, 8)) acc = graph::bias_add(acc, im.expr(n, 8), {.axis = 1});
  return {requantize_linear(im, n, acc, 1, 4, 6, 7, 1)};
}

Outs qlinear_matmul(Importer& im, const Node& n) {
  const auto acc = matmul_integer(im, n, 0, 3, 2, 5);
  return {requantize_linear(im, n, acc, 1, 4, 6, 7, -1)};
}

struct Entry {
  std::string_view op;
  Converter convert;
};

constexpr Entry kConverters[] = {
    {"Add", add},
    {"AveragePool", average_pool},
    {"Cast", cast},
    {"Clip", clip},
    {"Concat", concat},
    {"Constant", constant},
    {"Conv", conv},
    {"ConvInteger", conv_integer_op},
    {"DequantizeLinear", dequantize_linear},
    {"Flatten", flatten},
    {"Gemm", gemm},
    {"GlobalAveragePool", global_average_pool},
    {"MatMul", matmul},
    {"MatMulInteger", matmul_integer_op},
    {"MaxPool", max_pool},
    {"Mul", mul},
    {"Pad", pad},
    {"QLinearConv", qlinear_conv},
    {"QLinearMatMul", qlinear_matmul},
    {"QuantizeLinear", quantize_linear},
    {"Relu", relu},
    {"Reshape", reshape},
    {"Softmax", softmax},
    {"Transpose", transpose},
};

}  // namespace

Converter converter_of(std::string_view op_type) {
  for (const auto& e : kConverters)
    if (e.op == op_type) return e.convert;
  return nullptr;
}

}  // namespace dlavm::onnx::detail
