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

// The axes of a reduction: the attribute (before ReduceSum-13 and the others' 18), or the
// optional input; none given reduces every dim, unless noop_with_empty_axes.
Outs reduce_by(Importer& im, const Node& n,
               graph::Expr (*op)(graph::Expr, const host::ReduceParams&), bool axes_input) {
  std::vector<std::int64_t> axes;
  if (!axes_input) {
    axes = attr_ints(im, n, "axes", {});
  } else if (Importer::has_input(n, 1)) {
    const auto d = im.dims_of(n, 1);
    if (!d) unsupported("its axes (input 1) are not a constant");
    for (const auto& e : d->values) axes.push_back(*e.as_int());
  }
  const auto x = im.expr(n, 0);
  if (axes.empty() && attr_int(im, n, "noop_with_empty_axes", 0) != 0) return {x};
  return {op(x, {.axes = std::move(axes), .keepdims = attr_int(im, n, "keepdims", 1) != 0})};
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
