// Converters of quantized operators: QuantizeLinear, DequantizeLinear, ConvInteger,
// MatMulInteger, QLinearConv, QLinearMatMul, and com.microsoft's QGemm.
#include <fmt/ranges.h>

#include "common.hpp"
#include <memory>
#include <optional>

namespace dlavm::onnx::detail {

// Input k, or a zero of `dtype` in the shape of input `like` when it is absent (ONNX's default
// zero point: uint8 for QuantizeLinear, x's type for DequantizeLinear).
graph::Expr default_zero_point(Importer& im, const Node& n, int k, int like, DType dtype,
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

namespace {

// The attributes later versions added, at the values that mean what version 13 did: no blocks
// (21) and float32 arithmetic and results: QuantizeLinear's precision (23), DequantizeLinear's
// output_dtype (23). (`saturate`, 19, concerns float8 outputs only, which are refused as
// types; QuantizeLinear's output_dtype, 21, is read by quantized_type.)
void refuse_blocks_and_precisions(Importer& im, const Node& n) {
  if (const auto b = attr_int(im, n, "block_size", 0); b != 0)
    unsupported(fmt::format("block_size = {} (blocked quantization)", b));
  const char* name = n.op_type() == "QuantizeLinear" ? "precision" : "output_dtype";
  const auto t = static_cast<std::int32_t>(attr_int(im, n, name, 0));
  if (t != 0 && t != ::onnx::TensorProto::FLOAT)
    unsupported(fmt::format("{} = {}", name, onnx_type_name(t)));
}

// QuantizeLinear's output type: its zero point's, else output_dtype (21), else uint8.
DType quantized_type(Importer& im, const Node& n) {
  const auto t = static_cast<std::int32_t>(attr_int(im, n, "output_dtype", 0));
  if (t == 0) return DType::uint8();
  if (t != ::onnx::TensorProto::UINT8 && t != ::onnx::TensorProto::INT8)
    unsupported(fmt::format("output_dtype = {}", onnx_type_name(t)));
  return *dtype_of(t);
}

}  // namespace

namespace convert {

Outs quantize_linear(Importer& im, const Node& n) {
  refuse_blocks_and_precisions(im, n);
  const auto zp = default_zero_point(im, n, 2, 1, quantized_type(im, n), "zero_point");
  if (attr_int(im, n, "output_dtype", 0) != 0 && im.type_of(zp).dtype != quantized_type(im, n))
    raise<TypeError>("output_dtype is {} and the zero point {}", quantized_type(im, n),
                     im.type_of(zp).dtype);
  // (version 10 has no axis: its scale is one value, for which any axis says the same)
  return {graph::quantize_linear(im.expr(n, 0), im.expr(n, 1), zp,
                                 {.axis = attr_int(im, n, "axis", 1)})};
}

Outs dequantize_linear(Importer& im, const Node& n) {
  refuse_blocks_and_precisions(im, n);
  const auto x = im.expr(n, 0);
  const auto zp = default_zero_point(im, n, 2, 1, im.type_of(x).dtype, "zero_point");
  return {graph::dequantize_linear(x, im.expr(n, 1), zp, {.axis = attr_int(im, n, "axis", 1)})};
}

}  // namespace convert

namespace {

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
graph::Expr integer_conv(Importer& im, const Node& n, int xi, int wi, int xz, int wz) {
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

// The int32 product of MatMulInteger and QLinearMatMul: a's zero point per row, b's per column.
// With a constant 2-D b, the int8 form is a dense layer over b' transposed. `b_transposed`:
// b is [N, K] (QGemm's transB), its zero point per row, and is the dense weight as it is.
graph::Expr integer_matmul(Importer& im, const Node& n, int ai, int bi, int az, int bz,
                           bool b_transposed) {
  const auto a = im.expr(n, ai), b = im.expr(n, bi);
  const std::size_t ra = im.type_of(a).ndim(), rb = im.type_of(b).ndim();
  if (ra < 2 || rb < 2) unsupported("a 1-D operand (MatMul of vectors)");
  const auto general = [&] {
    auto bz0 = minus_zero_point(im, n, b, bz, "b_zero_point", rb, b_transposed ? rb - 2 : rb - 1);
    if (b_transposed) bz0 = graph::transpose(bz0, {.perm = {1, 0}});
    return graph::matmul(minus_zero_point(im, n, a, az, "a_zero_point", ra, ra - 2), bz0);
  };
  const auto b8 = rb == 2 ? int8_weight(im, n, bi, bz, b_transposed ? 0 : 1) : std::nullopt;
  const auto a8 = b8 ? int8_input(im, n, ai, az) : std::nullopt;
  if (!a8) return general();
  const te::NDArray& bv = **b8;
  te::NDArray w8 = bv;
  if (!b_transposed) {
    const std::int64_t k = bv.shape()[0], cols = bv.shape()[1];
    w8 = te::NDArray(DType::int8(), {cols, k});
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < cols; ++j)
        w8.set_flat(static_cast<std::size_t>(j * k + i),
                    bv.data()[static_cast<std::size_t>(i * cols + j)]);
  }
  const auto bias = zero_point_bias(w8, 0, a8->delta);
  if (!bias) return general();
  auto y = b_transposed && *b8 == im.input(n, bi).constant
               ? graph::dense(a8->x, b)
               : graph::dense(a8->x, im.make_constant(n, "b_int8_transposed", std::move(w8)));
  if (a8->delta != 0)
    y = graph::bias_add(y, im.make_constant(n, "zero_point_bias", *bias), {.axis = -1});
  return y;
}

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

}  // namespace

namespace convert {

Outs conv_integer(Importer& im, const Node& n) { return {integer_conv(im, n, 0, 1, 2, 3)}; }
Outs matmul_integer(Importer& im, const Node& n) {
  return {integer_matmul(im, n, 0, 1, 2, 3, false)};
}

Outs qlinear_conv(Importer& im, const Node& n) {
  auto acc = integer_conv(im, n, 0, 3, 2, 5);
  if (Importer::has_input(n, 8)) acc = graph::bias_add(acc, im.expr(n, 8), {.axis = 1});
  return {requantize_linear(im, n, acc, 1, 4, 6, 7, 1)};
}

Outs qlinear_matmul(Importer& im, const Node& n) {
  const auto acc = integer_matmul(im, n, 0, 3, 2, 5, false);
  return {requantize_linear(im, n, acc, 1, 4, 6, 7, -1)};
}

// QGemm (com.microsoft): Gemm of A [M, K] and B ([K, N], or [N, K] with transB) with their
// zero points; C an int32 bias at scale a_scale * b_scale, zero point 0; with y_scale the
// result requantized like QLinearMatMul's, without it the float sum (a_scale * b_scale per
// column times the int32 sum). alpha other than 1 and transA are refused.
Outs qgemm(Importer& im, const Node& n) {
  if (attr_int(im, n, "transA", 0) != 0) unsupported("transA = 1");
  if (const float alpha = attr_float(im, n, "alpha", 1.0f); alpha != 1.0f)
    unsupported(fmt::format("alpha = {} (1 only)", alpha));
  if (im.type_of(im.expr(n, 0)).ndim() != 2 || im.type_of(im.expr(n, 3)).ndim() != 2)
    raise<ShapeError>("A and B must be 2-D matrices");
  auto acc = integer_matmul(im, n, 0, 3, 2, 5, attr_int(im, n, "transB", 0) != 0);
  if (Importer::has_input(n, 6)) {
    if (im.type_of(im.expr(n, 6)).dtype != DType::int32())
      raise<TypeError>("C is {}; QGemm's bias is int32", im.type_of(im.expr(n, 6)).dtype);
    acc = graph::bias_add(acc, im.expr(n, 6), {.axis = -1});
  }
  if (Importer::has_input(n, 7)) return {requantize_linear(im, n, acc, 1, 4, 7, 8, -1)};
  const te::NDArray& sa = im.constant(n, 1, "a_scale");
  const te::NDArray& sb = im.constant(n, 4, "b_scale");
  if (sa.size() != 1 || !sa.dtype().is_float() || !sb.dtype().is_float())
    raise<TypeError>("a_scale must be one float32 and b_scale float32");
  std::vector<float> scale;
  for (float s : sb.fdata()) scale.push_back(sa.fdata()[0] * s);
  std::vector<std::int64_t> shape;
  if (scale.size() > 1) shape = {static_cast<std::int64_t>(scale.size())};
  return {graph::dequantize_linear(
      acc, im.make_constant(n, "scale", te::NDArray::from_floats(shape, scale)),
      im.make_constant(n, "zero", te::NDArray(DType::int32(), shape)), {.axis = -1})};
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
