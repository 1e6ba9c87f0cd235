// Converters of ONNX Runtime's QOperator form (the com.microsoft domain) besides QGemm: each
// is its float operator between a dequantization of its inputs and a quantization of its
// result, which is how ONNX Runtime defines them (its kernels approximate the float result
// with lookup tables or fixed point; tests/onnx compares the two). A QLinearConcat whose
// inputs share the output's scale and zero point is the concat of the integers, exactly.
#include "common.hpp"

namespace dlavm::onnx::detail {

namespace {

// Input x (at k) dequantized with its scale (k + 1) and zero point (k + 2, absent: 0).
graph::Expr dequantized(Importer& im, const Node& n, int k) {
  const auto x = im.expr(n, k);
  const DType t = im.type_of(x).dtype;
  if (t != DType::int8() && t != DType::uint8())
    raise<TypeError>("input {} is {}; quantized values are int8 or uint8", k, t);
  return graph::dequantize_linear(x, im.expr(n, k + 1),
                                  default_zero_point(im, n, k + 2, k + 1, t, "zero_point"));
}

// y quantized with the scale at input k and the zero point at k + 1 (absent: a zero of `t`).
graph::Expr quantized(Importer& im, const Node& n, const graph::Expr& y, int k, DType t) {
  return graph::quantize_linear(y, im.expr(n, k),
                                default_zero_point(im, n, k + 1, k, t, "y_zero_point"));
}

DType quantized_input_type(Importer& im, const Node& n, int k) {
  return im.type_of(im.expr(n, k)).dtype;
}

// Whether inputs a and b of n are constants of equal values (absent inputs: equal when both
// are absent).
bool same_constant(Importer& im, const Node& n, int a, int b) {
  if (!Importer::has_input(n, a) || !Importer::has_input(n, b))
    return Importer::has_input(n, a) == Importer::has_input(n, b);
  const auto& ca = im.input(n, a).constant;
  const auto& cb = im.input(n, b).constant;
  if (ca == nullptr || cb == nullptr || ca->dtype() != cb->dtype() || ca->size() != cb->size())
    return false;
  if (ca->dtype().is_float()) return std::ranges::equal(ca->fdata(), cb->fdata());
  return std::ranges::equal(ca->data(), cb->data());
}

template <class Op>
Outs binary(Importer& im, const Node& n, Op op) {
  const DType t = quantized_input_type(im, n, 0);
  return {quantized(im, n, op(dequantized(im, n, 0), dequantized(im, n, 3)), 6, t)};
}

template <class Op>
Outs unary(Importer& im, const Node& n, Op op) {
  const DType t = quantized_input_type(im, n, 0);
  return {quantized(im, n, op(dequantized(im, n, 0)), 3, t)};
}

}  // namespace

namespace convert {

Outs qlinear_add(Importer& im, const Node& n) {
  return binary(im, n, [](auto a, auto b) { return graph::add(a, b); });
}
Outs qlinear_mul(Importer& im, const Node& n) {
  return binary(im, n, [](auto a, auto b) { return graph::mul(a, b); });
}

Outs qlinear_global_average_pool(Importer& im, const Node& n) {
  if (attr_int(im, n, "channels_last", 0) != 0) unsupported("channels_last = 1");
  if (im.type_of(im.expr(n, 0)).ndim() != 4) unsupported("an input that is not NCHW");
  return unary(im, n, [](auto x) { return graph::global_avg_pool2d(x); });
}

Outs qlinear_sigmoid(Importer& im, const Node& n) {
  return unary(im, n, [](auto x) { return graph::sigmoid(x); });
}

Outs qlinear_leaky_relu(Importer& im, const Node& n) {
  const double alpha = attr_float(im, n, "alpha", 0.01f);
  return unary(im, n, [&](auto x) { return graph::leaky_relu(x, {.alpha = alpha}); });
}

// Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input.
Outs qlinear_concat(Importer& im, const Node& n) {
  if (n.input_size() < 5 || (n.input_size() - 2) % 3 != 0)
    raise<ValueError>(
        "{} inputs; QLinearConcat takes Y_scale, Y_zero_point and a (X, X_scale, "
        "X_zero_point) triple per input",
        n.input_size());
  const std::int64_t axis = attr_int(im, n, "axis", 0);
  const DType t = quantized_input_type(im, n, 2);
  std::vector<graph::Expr> ints, floats;
  bool exact = true;
  for (int k = 2; k < n.input_size(); k += 3) {
    if (quantized_input_type(im, n, k) != t)
      raise<TypeError>("input {} is {} and input 2 {}; they must agree", k,
                       quantized_input_type(im, n, k), t);
    exact = exact && same_constant(im, n, k + 1, 0) && same_constant(im, n, k + 2, 1);
    ints.push_back(im.expr(n, k));
    floats.push_back(dequantized(im, n, k));
  }
  if (exact) return {graph::concat(std::move(ints), {.axis = axis})};
  return {quantized(im, n, graph::concat(std::move(floats), {.axis = axis}), 0, t)};
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
