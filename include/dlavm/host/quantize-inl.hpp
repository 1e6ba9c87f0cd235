// Definitions for host/quantize.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/quantize.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <algorithm>
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

}  // namespace dlavm::host
