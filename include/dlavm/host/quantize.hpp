// Host kernels that change element types: requantize (the fixed-point rescale of an
// accumulator) and cast. The semantics below are the definition the graph ops and every
// accelerator strategy must reproduce.
//
//   requantize(x, {shift, lo = -128, hi = 127, rounding = floor, out_dtype = int8})
//       x: a signed integer array (typically int32, VTA's accumulator), shift in [0, bits):
//       y = clamp((x + r) >> shift, lo, hi) converted to out_dtype, where
//         r = 1 << (shift - 1) for Rounding::Nearest with shift > 0 (ties round up), else 0,
//         x + r wraps around in x's dtype (as VTA's ALU adds), >> is arithmetic (rounds
//         towards minus infinity), and lo <= hi both lie in out_dtype's range.
//   cast(x, dtype)
//       int -> int: two's-complement wrap-around (int32 300 -> int8 44);
//       int -> float32: exact when representable, else the nearest float (ties to even);
//       float32 -> int: rounds half to even (2.5 -> 2, -1.5 -> -2), saturates at the dtype's
//       limits (1e10 -> int32 2147483647), NaN -> 0;
//       float32 -> float32: unchanged.
//
// ONNX's linear quantization, per tensor (a scale and zero point of shape []) or per channel
// (shape [C], C = the dim of x at `axis`; c below is the element's index along it):
//   quantize_linear(x float32, scale float32, zero_point int8 | uint8, {axis = 1})
//       y = saturate(round_half_even(x / scale[c]) + zero_point[c]), the division in float32,
//       in zero_point's dtype (QuantizeLinear)
//   dequantize_linear(x int8 | uint8 | int32, scale float32, zero_point of x's dtype, {axis})
//       y = (float32(x) - float32(zero_point[c])) * scale[c], each step in float32
//       (DequantizeLinear)
//   rescale(acc int32, multiplier float32, zero_point int8 | uint8, {axis})
//       y = saturate(round_half_even(acc * multiplier[c]) + zero_point[c]), the product exact
//       (in double: 31 bits times 24), in zero_point's dtype: the output step of QLinearConv
//       and QLinearMatMul, whose multiplier is float32(float32(x_scale * w_scale) / y_scale)
//
//   auto y = host::requantize(acc, {.shift = 8, .rounding = host::Rounding::Nearest});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace dlavm::host {

enum class Rounding : std::uint8_t { Floor, Nearest };

// "floor" / "nearest" (the graph attribute's spelling), and back.
std::string_view rounding_name(Rounding r);
std::optional<Rounding> parse_rounding(std::string_view name);

struct RequantizeParams {
  std::int64_t shift = 0;
  std::int64_t lo = -128;
  std::int64_t hi = 127;
  Rounding rounding = Rounding::Floor;
  DType out_dtype = DType::int8();
};

// Checks the parameters for an input of dtype `in`; ValueError/TypeError naming `who` and the
// attribute.
void validate(const RequantizeParams& p, DType in, std::string_view who);

te::NDArray requantize(const te::NDArray& x, const RequantizeParams& p);

struct LinearQuantParams {
  std::int64_t axis = 1;  // the channel axis of a per-channel scale
};
// x seen as [outer, channels, inner] for linear (de)quantization parameters of rank
// `parameter_rank`: one per channel of dim `axis` (the runtime kernels' view), or one for all
// when the parameters or x are scalars. Int64 dims (the host) or ne::Expr (firmware calls).
template <class Extent>
AxisSplit<Extent> split_channels(std::span<const Extent> x, std::size_t parameter_rank,
                                 std::int64_t axis) {
  if (parameter_rank == 0 || x.empty()) {
    AxisSplit<Extent> all;
    for (const auto& d : x) all.inner = all.inner * d;
    return all;
  }
  const auto rank = static_cast<std::int64_t>(x.size());
  return detail::split_dims(x, static_cast<std::size_t>(axis < 0 ? axis + rank : axis));
}

// Checks x's, the scale's and the zero point's types and shapes (TypeError / ShapeError naming
// `who`).
void validate_linear_quant(const te::NDArray& x, const te::NDArray& scale,
                           const te::NDArray& zero_point, const LinearQuantParams& p,
                           std::string_view who);
te::NDArray quantize_linear(const te::NDArray& x, const te::NDArray& scale,
                            const te::NDArray& zero_point, const LinearQuantParams& p = {});
te::NDArray dequantize_linear(const te::NDArray& x, const te::NDArray& scale,
                              const te::NDArray& zero_point, const LinearQuantParams& p = {});
te::NDArray rescale(const te::NDArray& acc, const te::NDArray& multiplier,
                    const te::NDArray& zero_point, const LinearQuantParams& p = {});
te::NDArray cast(const te::NDArray& x, DType dtype);

// The cast of one float32 value to an integer dtype, as `cast` defines it.
std::int64_t float_to_int(float v, DType dtype);

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/quantize-inl.hpp>
#endif
