// Converters of element-wise math and reductions: the unary functions (Sigmoid, Tanh, Exp, Log,
// Sqrt, Erf, Abs, Neg, HardSigmoid, HardSwish, LeakyRelu), the binary ones of tensors (Sub, Div,
// Pow, Max, Min, PRelu, and Sum and Mean of any count), ReduceSum/Mean/Max/Min, ArgMax/ArgMin
// and LogSoftmax.
#include <fmt/ranges.h>

#include "common.hpp"

namespace dlavm::onnx::detail {

namespace {

template <graph::Expr (*Op)(graph::Expr)>
Outs unary(Importer& im, const Node& n) {
  return {Op(im.expr(n, 0))};
}

// Inputs 0 and 1 of one dtype: b cast to a's where a converter allows other types (Pow's
// exponent).
graph::Expr as_dtype_of(Importer& im, const graph::Expr& b, const graph::Expr& a) {
  const DType want = im.type_of(a).dtype;
  return im.type_of(b).dtype == want ? b : graph::cast(b, want);
}

// Max, Min, Sum and Mean of one or more inputs, left to right.
graph::Expr fold_inputs(Importer& im, const Node& n, graph::Expr (*op)(graph::Expr, graph::Expr)) {
  if (n.input_size() == 0) raise<ValueError>("{} has no inputs", n.op_type());
  graph::Expr acc = im.expr(n, 0);
  for (int k = 1; k < n.input_size(); ++k) acc = op(acc, im.expr(n, k));
  return acc;
}

// The reduction a node asks for: its axes (the attribute before ReduceSum-13 and the others'
// 18, else the optional input; none reduces every dim) and keepdims; nullopt when it reduces
// nothing (noop_with_empty_axes with no axes).
std::optional<host::ReduceParams> reduction_of(Importer& im, const Node& n, bool axes_input) {
  std::vector<std::int64_t> axes;
  if (!axes_input) {
    axes = attr_ints(im, n, "axes", {});
  } else if (Importer::has_input(n, 1)) {
    const auto d = im.dims_of(n, 1);
    if (!d) unsupported("its axes (input 1) are not a constant");
    for (const auto& e : d->values) axes.push_back(*e.as_int());
  }
  if (axes.empty() && attr_int(im, n, "noop_with_empty_axes", 0) != 0) return std::nullopt;
  return host::ReduceParams{.axes = std::move(axes),
                            .keepdims = attr_int(im, n, "keepdims", 1) != 0};
}

Outs reduce_by(Importer& im, const Node& n,
               graph::Expr (*op)(graph::Expr, const host::ReduceParams&), bool axes_input) {
  const auto x = im.expr(n, 0);
  const auto p = reduction_of(im, n, axes_input);
  return {p ? op(x, *p) : x};
}

// The reductions ONNX defines as a sum between element-wise steps: pre(x), summed, then
// post (a reduction of nothing applies both).
enum class SumOf { Squares, Magnitudes, SquaresRooted, Logged };

Outs reduce_sum_of(Importer& im, const Node& n, SumOf what, bool axes_input) {
  const auto x = im.expr(n, 0);
  const DType dtype = im.type_of(x).dtype;
  const bool float_only = what == SumOf::SquaresRooted || what == SumOf::Logged;
  if (float_only && dtype != DType::float32())
    unsupported(fmt::format("{} of {} (it computes in float32 only)", n.op_type(), dtype.str()));
  graph::Expr y = x;
  if (what == SumOf::Squares || what == SumOf::SquaresRooted) y = graph::mul(x, x);
  if (what == SumOf::Magnitudes) y = graph::abs(x);
  if (const auto p = reduction_of(im, n, axes_input)) y = graph::reduce_sum(y, *p);
  if (what == SumOf::SquaresRooted) y = graph::sqrt(y);
  if (what == SumOf::Logged) y = graph::log(y);
  return {y};
}

// log(sum(exp(x))) as ONNX's reference computes it: shifted by the maximum, m + log(sum(exp(x -
// m))), so that large values do not overflow.
Outs reduce_log_sum_exp_of(Importer& im, const Node& n, bool axes_input) {
  const auto x = im.expr(n, 0);
  const DType dtype = im.type_of(x).dtype;
  if (dtype != DType::float32())
    unsupported(fmt::format("ReduceLogSumExp of {} (it computes in float32 only)", dtype.str()));
  const auto p = reduction_of(im, n, axes_input);
  if (!p) return {graph::log(graph::exp(x))};
  host::ReduceParams kept = *p;
  kept.keepdims = true;
  const auto m = graph::reduce_max(x, kept);
  const auto sum = graph::reduce_sum(graph::exp(graph::sub(x, m)), *p);
  return {graph::add(graph::log(sum), p->keepdims ? m : graph::reduce_max(x, *p))};
}

template <runtime::Unary K>
Outs unary_kind(Importer& im, const Node& n) {
  return {graph::unary(K, im.expr(n, 0))};
}

}  // namespace

namespace convert {

Outs sigmoid(Importer& im, const Node& n) { return unary<graph::sigmoid>(im, n); }
Outs tanh(Importer& im, const Node& n) { return unary<graph::tanh>(im, n); }
Outs exp(Importer& im, const Node& n) { return unary<graph::exp>(im, n); }
Outs log(Importer& im, const Node& n) { return unary<graph::log>(im, n); }
Outs sqrt(Importer& im, const Node& n) { return unary<graph::sqrt>(im, n); }
Outs erf(Importer& im, const Node& n) { return unary<graph::erf>(im, n); }
Outs abs(Importer& im, const Node& n) { return unary<graph::abs>(im, n); }
Outs neg(Importer& im, const Node& n) { return unary<graph::neg>(im, n); }
Outs hard_swish(Importer& im, const Node& n) { return unary<graph::hard_swish>(im, n); }

Outs hard_sigmoid(Importer& im, const Node& n) {
  return {graph::hard_sigmoid(im.expr(n, 0), {.alpha = attr_float(im, n, "alpha", 0.2f),
                                              .beta = attr_float(im, n, "beta", 0.5f)})};
}

Outs leaky_relu(Importer& im, const Node& n) {
  return {graph::leaky_relu(im.expr(n, 0), {.alpha = attr_float(im, n, "alpha", 0.01f)})};
}

Outs reciprocal(Importer& im, const Node& n) { return unary<graph::reciprocal>(im, n); }
Outs floor(Importer& im, const Node& n) { return unary<graph::floor>(im, n); }
Outs ceil(Importer& im, const Node& n) { return unary<graph::ceil>(im, n); }
Outs round(Importer& im, const Node& n) { return unary<graph::round>(im, n); }
Outs sign(Importer& im, const Node& n) { return unary<graph::sign>(im, n); }
Outs softplus(Importer& im, const Node& n) { return unary<graph::softplus>(im, n); }
Outs softsign(Importer& im, const Node& n) { return unary<graph::softsign>(im, n); }
Outs sin(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Sin>(im, n); }
Outs cos(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Cos>(im, n); }
Outs tan(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Tan>(im, n); }
Outs asin(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Asin>(im, n); }
Outs acos(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Acos>(im, n); }
Outs atan(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Atan>(im, n); }
Outs sinh(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Sinh>(im, n); }
Outs cosh(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Cosh>(im, n); }
Outs asinh(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Asinh>(im, n); }
Outs acosh(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Acosh>(im, n); }
Outs atanh(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Atanh>(im, n); }
Outs mish(Importer& im, const Node& n) { return unary_kind<runtime::Unary::Mish>(im, n); }

Outs elu(Importer& im, const Node& n) {
  return {graph::elu(im.expr(n, 0), {.alpha = attr_float(im, n, "alpha", 1.0f)})};
}
Outs selu(Importer& im, const Node& n) {
  return {graph::selu(im.expr(n, 0),
                      {.alpha = attr_float(im, n, "alpha", 1.67326319217681884765625f),
                       .gamma = attr_float(im, n, "gamma", 1.05070102214813232421875f)})};
}
Outs celu(Importer& im, const Node& n) {
  return {graph::celu(im.expr(n, 0), {.alpha = attr_float(im, n, "alpha", 1.0f)})};
}
Outs thresholded_relu(Importer& im, const Node& n) {
  return {graph::thresholded_relu(im.expr(n, 0), {.alpha = attr_float(im, n, "alpha", 1.0f)})};
}

// approximate = none: the graph's gelu (the erf form); tanh: ONNX's formula written out,
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
Outs gelu(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const auto approximate = attr_string(im, n, "approximate", "none");
  if (approximate == "none") return {graph::gelu(x)};
  if (approximate != "tanh") unsupported(fmt::format("approximate = '{}'", approximate));
  const auto scalar = [&](std::string_view name, float v) {
    return im.make_constant(n, name, te::NDArray::from_floats({}, {v}));
  };
  const auto cube = graph::mul(graph::mul(x, x), x);
  const auto inner = graph::mul(graph::add(x, graph::mul(cube, scalar("cubic", 0.044715f))),
                                scalar("sqrt_2_over_pi", 0.7978845608028654f));
  return {graph::mul(graph::mul(x, scalar("half", 0.5f)),
                     graph::add(scalar("one", 1.0f), graph::tanh(inner)))};
}

Outs prelu(Importer& im, const Node& n) { return {graph::prelu(im.expr(n, 0), im.expr(n, 1))}; }

// (ONNX's Pow of an integer base is an integer power; pow computes in float32 only, which does
// not hold every int32 or int64 power exactly)
Outs pow(Importer& im, const Node& n) {
  const auto a = im.expr(n, 0);
  if (const DType t = im.type_of(a).dtype; t != DType::float32())
    unsupported(fmt::format("a Pow of a {} base (pow computes in float32 only)", t));
  return {graph::pow(a, as_dtype_of(im, im.expr(n, 1), a))};
}

Outs max(Importer& im, const Node& n) { return {fold_inputs(im, n, graph::maximum)}; }
Outs min(Importer& im, const Node& n) { return {fold_inputs(im, n, graph::minimum)}; }
Outs sum(Importer& im, const Node& n) { return {fold_inputs(im, n, graph::add)}; }

Outs mean(Importer& im, const Node& n) {
  const auto total = fold_inputs(im, n, graph::add);
  if (!im.type_of(total).dtype.is_float()) unsupported("a Mean of integers");
  return {graph::mul(
      total,
      im.make_constant(n, "reciprocal",
                       te::NDArray::from_floats({}, {1.0f / static_cast<float>(n.input_size())})))};
}

Outs sub_tensors(Importer& im, const Node& n) { return {graph::sub(im.expr(n, 0), im.expr(n, 1))}; }
Outs div_tensors(Importer& im, const Node& n) { return {graph::div(im.expr(n, 0), im.expr(n, 1))}; }

Outs reduce_sum_v1(Importer& im, const Node& n) {
  return reduce_by(im, n, graph::reduce_sum, false);
}
Outs reduce_sum(Importer& im, const Node& n) { return reduce_by(im, n, graph::reduce_sum, true); }
Outs reduce_mean_v1(Importer& im, const Node& n) {
  return reduce_by(im, n, graph::reduce_mean, false);
}
Outs reduce_mean(Importer& im, const Node& n) { return reduce_by(im, n, graph::reduce_mean, true); }
Outs reduce_max_v1(Importer& im, const Node& n) {
  return reduce_by(im, n, graph::reduce_max, false);
}
Outs reduce_max(Importer& im, const Node& n) { return reduce_by(im, n, graph::reduce_max, true); }
Outs reduce_min_v1(Importer& im, const Node& n) {
  return reduce_by(im, n, graph::reduce_min, false);
}
Outs reduce_min(Importer& im, const Node& n) { return reduce_by(im, n, graph::reduce_min, true); }

Outs reduce_sum_square_v1(Importer& im, const Node& n) {
  return reduce_sum_of(im, n, SumOf::Squares, false);
}
Outs reduce_sum_square(Importer& im, const Node& n) {
  return reduce_sum_of(im, n, SumOf::Squares, true);
}
Outs reduce_l1_v1(Importer& im, const Node& n) {
  return reduce_sum_of(im, n, SumOf::Magnitudes, false);
}
Outs reduce_l1(Importer& im, const Node& n) {
  return reduce_sum_of(im, n, SumOf::Magnitudes, true);
}
Outs reduce_l2_v1(Importer& im, const Node& n) {
  return reduce_sum_of(im, n, SumOf::SquaresRooted, false);
}
Outs reduce_l2(Importer& im, const Node& n) {
  return reduce_sum_of(im, n, SumOf::SquaresRooted, true);
}
Outs reduce_log_sum_v1(Importer& im, const Node& n) {
  return reduce_sum_of(im, n, SumOf::Logged, false);
}
Outs reduce_log_sum(Importer& im, const Node& n) {
  return reduce_sum_of(im, n, SumOf::Logged, true);
}
Outs reduce_log_sum_exp_v1(Importer& im, const Node& n) {
  return reduce_log_sum_exp_of(im, n, false);
}
Outs reduce_log_sum_exp(Importer& im, const Node& n) { return reduce_log_sum_exp_of(im, n, true); }

// Versions 1 and 11: over the input flattened at `axis` (default 1), as Softmax was.
Outs log_softmax_v1(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const auto type = im.type_of(x);
  const auto rank = static_cast<std::int64_t>(type.ndim());
  const std::int64_t axis = normalize_axis(attr_int(im, n, "axis", 1), rank, "axis");
  if (axis == rank - 1) return {graph::log_softmax(x, {.axis = axis})};
  std::vector<std::int64_t> back;
  for (const auto& d : type.shape) back.push_back(static_dim(d, "LogSoftmax before version 13"));
  return {graph::reshape(graph::log_softmax(graph::flatten(x, {.axis = axis}), {.axis = 1}),
                         {.newshape = back})};
}

Outs log_softmax(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const auto rank = static_cast<std::int64_t>(im.type_of(x).ndim());
  return {
      graph::log_softmax(x, {.axis = normalize_axis(attr_int(im, n, "axis", -1), rank, "axis")})};
}

// ArgMax and ArgMin: every version (1 took a non-negative axis only, 11 any, 12 added
// select_last_index, whose default keeps the earlier meaning).
Outs arg_max(Importer& im, const Node& n) {
  return {graph::argmax(im.expr(n, 0),
                        {.axis = attr_int(im, n, "axis", 0),
                         .keepdims = attr_int(im, n, "keepdims", 1) != 0,
                         .select_last_index = attr_int(im, n, "select_last_index", 0) != 0})};
}
Outs arg_min(Importer& im, const Node& n) {
  return {graph::argmin(im.expr(n, 0),
                        {.axis = attr_int(im, n, "axis", 0),
                         .keepdims = attr_int(im, n, "keepdims", 1) != 0,
                         .select_last_index = attr_int(im, n, "select_last_index", 0) != 0})};
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
