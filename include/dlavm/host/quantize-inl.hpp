// Definitions for host/quantize.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/quantize.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace dlavm::host {

DLAVM_INLINE std::string_view rounding_name(Rounding r) {
  switch (r) {
    case Rounding::Floor:
      return "floor";
    case Rounding::Nearest:
      return "nearest";
  }
  raise<ValueError>("internal: unknown Rounding {}, please report", static_cast<int>(r));
}

DLAVM_INLINE std::optional<Rounding> parse_rounding(std::string_view name) {
  if (name == "floor") return Rounding::Floor;
  if (name == "nearest") return Rounding::Nearest;
  return std::nullopt;
}

DLAVM_INLINE void validate(const RequantizeParams& p, DType in, std::string_view who) {
  if (!in.is_int())
    raise<TypeError>("{}: x is {}; requantize takes a signed integer (an int32 accumulator)", who,
                     in);
  if (!p.out_dtype.is_integral() || p.out_dtype.lanes() != 1)
    raise<TypeError>("{}: attribute 'out_dtype' is {}; requantize produces integers", who,
                     p.out_dtype);
  if (p.shift < 0 || p.shift >= in.bits())
    raise<ValueError>("{}: attribute 'shift' is {}; for {} input it must be in [0, {})", who,
                      p.shift, in, in.bits());
  if (p.lo > p.hi)
    raise<ValueError>("{}: attribute 'lo' ({}) is greater than 'hi' ({})", who, p.lo, p.hi);
  const DType t = p.out_dtype;
  if (p.lo < t.min_value() || p.hi > t.max_value())
    raise<ValueError>("{}: [lo, hi] = [{}, {}] does not fit out_dtype {} ([{}, {}])", who, p.lo,
                      p.hi, t, t.min_value(), t.max_value());
}

DLAVM_INLINE te::NDArray requantize(const te::NDArray& x, const RequantizeParams& p) {
  validate(p, x.dtype(), "host::requantize");
  const DType in = x.dtype();
  const std::uint64_t round =
      p.rounding == Rounding::Nearest && p.shift > 0 ? std::uint64_t{1} << (p.shift - 1) : 0;
  te::NDArray y(p.out_dtype, x.shape());
  const auto src = x.data();
  auto dst = y.data();
  for (std::size_t i = 0; i < src.size(); ++i) {
    const std::int64_t sum = detail::wrap_u64(in, static_cast<std::uint64_t>(src[i]) + round);
    dst[i] = std::clamp(sum >> p.shift, p.lo, p.hi);
  }
  return y;
}

DLAVM_INLINE std::int64_t float_to_int(float v, DType dtype) {
  return runtime::float_to_int(v, dtype.min_value(), dtype.max_value());
}

DLAVM_INLINE te::NDArray cast(const te::NDArray& x, DType dtype) {
  te::NDArray y(dtype, x.shape());  // raises for float types other than float32
  const DType from = x.dtype();
  if (from.is_float() && dtype.is_float()) {
    y = x;
  } else if (from.is_float()) {
    const auto src = x.fdata();
    auto dst = y.data();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = float_to_int(src[i], dtype);
  } else if (dtype.is_float()) {
    const auto src = x.data();
    auto dst = y.fdata();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<float>(src[i]);
  } else {
    const auto src = x.data();
    auto dst = y.data();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = dtype.wrap(src[i]);
  }
  return y;
}

namespace detail {

// The channel of each element of x (its index along p.axis), or 0 for per-tensor parameters;
// and x as the runtime kernels see it, [outer, channels, inner] (split_channels).
struct ChannelIndex {
  AxisSplit<std::int64_t> split;
  std::size_t operator()(std::size_t i) const {
    return static_cast<std::size_t>((static_cast<std::int64_t>(i) / split.inner) % split.extent);
  }
};

inline ChannelIndex channel_index(const te::NDArray& x, const te::NDArray& scale,
                                  const LinearQuantParams& p) {
  return {split_channels<std::int64_t>(x.shape(), scale.ndim(), p.axis)};
}

}  // namespace detail

DLAVM_INLINE void validate_linear_quant(const te::NDArray& x, const te::NDArray& scale,
                                        const te::NDArray& zero_point, const LinearQuantParams& p,
                                        std::string_view who) {
  if (scale.dtype() != DType::float32())
    raise<TypeError>("{}: the scale is {}; it must be float32", who, scale.dtype());
  if (!zero_point.dtype().is_integral())
    raise<TypeError>("{}: the zero point is {}; it must be an integer type", who,
                     zero_point.dtype());
  if (scale.shape() != zero_point.shape())
    raise<ShapeError>("{}: the scale has shape [{}] and the zero point [{}]; they must agree", who,
                      fmt::join(scale.shape(), ", "), fmt::join(zero_point.shape(), ", "));
  if (scale.ndim() > 1)
    raise<ShapeError>("{}: the scale has rank {}; it is a scalar or one value per channel", who,
                      scale.ndim());
  if (scale.ndim() == 1) {
    const auto rank = static_cast<std::int64_t>(x.ndim());
    if (p.axis < -rank || p.axis >= rank)
      raise<ValueError>("{}: axis {} is outside [-{}, {}) for x of rank {}", who, p.axis, rank,
                        rank, rank);
    const std::int64_t axis = p.axis < 0 ? p.axis + rank : p.axis;
    if (scale.shape()[0] != x.shape()[static_cast<std::size_t>(axis)])
      raise<ShapeError>("{}: {} scales for dim {} of x, which is {}", who, scale.shape()[0], axis,
                        x.shape()[static_cast<std::size_t>(axis)]);
  }
}

DLAVM_INLINE te::NDArray quantize_linear(const te::NDArray& x, const te::NDArray& scale,
                                         const te::NDArray& zero_point,
                                         const LinearQuantParams& p) {
  validate_linear_quant(x, scale, zero_point, p, "host::quantize_linear");
  if (!x.dtype().is_float())
    raise<TypeError>("host::quantize_linear: x is {}; it must be float32", x.dtype());
  const DType t = zero_point.dtype();
  const auto ch = detail::channel_index(x, scale, p);
  te::NDArray y(t, x.shape());
  runtime::quantize_linear(x.fdata().data(), scale.fdata().data(), zero_point.data().data(),
                           y.data().data(), ch.split.outer, ch.split.extent, ch.split.inner,
                           t.min_value(), t.max_value());
  return y;
}

DLAVM_INLINE te::NDArray dequantize_linear(const te::NDArray& x, const te::NDArray& scale,
                                           const te::NDArray& zero_point,
                                           const LinearQuantParams& p) {
  validate_linear_quant(x, scale, zero_point, p, "host::dequantize_linear");
  if (x.dtype().is_float() || x.dtype() != zero_point.dtype())
    raise<TypeError>(
        "host::dequantize_linear: x is {} and the zero point {}; both are one "
        "integer type",
        x.dtype(), zero_point.dtype());
  const auto ch = detail::channel_index(x, scale, p);
  te::NDArray y(DType::float32(), x.shape());
  runtime::dequantize_linear(x.data().data(), scale.fdata().data(), zero_point.data().data(),
                             y.fdata().data(), ch.split.outer, ch.split.extent, ch.split.inner);
  return y;
}

DLAVM_INLINE te::NDArray rescale(const te::NDArray& acc, const te::NDArray& multiplier,
                                 const te::NDArray& zero_point, const LinearQuantParams& p) {
  validate_linear_quant(acc, multiplier, zero_point, p, "host::rescale");
  if (acc.dtype() != DType::int32())
    raise<TypeError>("host::rescale: the accumulator is {}; it must be int32", acc.dtype());
  const DType t = zero_point.dtype();
  const auto ch = detail::channel_index(acc, multiplier, p);
  te::NDArray y(t, acc.shape());
  const auto src = acc.data();
  auto dst = y.data();
  for (std::size_t i = 0; i < src.size(); ++i) {
    const std::size_t c = ch(i);
    // exact: |acc| < 2^31 times a 24-bit significand fits double's 53 bits
    const double v = static_cast<double>(src[i]) * static_cast<double>(multiplier.fdata()[c]);
    double r = std::nearbyint(v);  // the default rounding mode: to nearest, ties to even
    r = std::clamp(r + static_cast<double>(zero_point.data()[c]),
                   static_cast<double>(t.min_value()), static_cast<double>(t.max_value()));
    dst[i] = static_cast<std::int64_t>(r);
  }
  return y;
}

}  // namespace dlavm::host
