// Definitions for host/pool.hpp: one window walk, shared by the max and the average.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/pool.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace dlavm::host {

namespace detail {

using PoolDims = runtime::PoolShape;

inline PoolDims pool_dims(std::string_view who, const te::NDArray& x, const Pool2dParams& p) {
  validate(p, who);
  require_rank(who, "x", x, 4);
  const auto& s = x.shape();
  PoolDims d{
      s[0] * s[1],  s[2],         s[3],         0,           0, p.pool_size[0], p.pool_size[1],
      p.strides[0], p.strides[1], p.padding[0], p.padding[1]};
  const std::int64_t padded_h = d.h + p.padding[0] + p.padding[2];
  const std::int64_t padded_w = d.w + p.padding[1] + p.padding[3];
  if (padded_h < d.kh || padded_w < d.kw)
    raise<ShapeError>("{}: the {}x{} window is larger than the padded {}x{} input", who, d.kh, d.kw,
                      padded_h, padded_w);
  d.oh = window_output(d.h, p.padding[0] + p.padding[2], d.kh, d.sh);
  d.ow = window_output(d.w, p.padding[1] + p.padding[3], d.kw, d.sw);
  return d;
}

inline te::NDArray avg_pool(std::string_view who, const te::NDArray& x, const PoolDims& d,
                            bool count_include_pad) {
  if (x.dtype().is_integral() && x.dtype().bits() > 32)
    raise<TypeError>("{}: x is {}; averages take integers of at most 32 bits or float32", who,
                     x.dtype());
  te::NDArray y(x.dtype(), {x.shape()[0], x.shape()[1], d.oh, d.ow});
  if (x.dtype().is_float())
    runtime::pool_window_avg(x.fdata().data(), y.fdata().data(), d, count_include_pad);
  else
    runtime::pool_window_avg(x.data().data(), y.data().data(), d, count_include_pad);
  return y;
}

}  // namespace detail

DLAVM_INLINE void validate(const Pool2dParams& p, std::string_view who) {
  for (auto k : p.pool_size)
    if (k < 1)
      raise<ValueError>("{}: attribute 'pool_size' is [{}]; window dims must be >= 1", who,
                        fmt::join(p.pool_size, ", "));
  for (auto s : p.strides)
    if (s < 1)
      raise<ValueError>("{}: attribute 'strides' is [{}]; strides must be >= 1", who,
                        fmt::join(p.strides, ", "));
  for (std::size_t k = 0; k < 4; ++k) {
    const std::int64_t window = p.pool_size[k % 2];
    if (p.padding[k] < 0 || p.padding[k] >= window)
      raise<ValueError>(
          "{}: attribute 'padding' is [{}] for pool_size [{}]; each pad must be in [0, {}) so "
          "that every window holds an element of the input",
          who, fmt::join(p.padding, ", "), fmt::join(p.pool_size, ", "), window);
  }
}

DLAVM_INLINE te::NDArray max_pool2d(const te::NDArray& x, const Pool2dParams& p) {
  const auto d = detail::pool_dims("host::max_pool2d", x, p);
  te::NDArray y(x.dtype(), {x.shape()[0], x.shape()[1], d.oh, d.ow});
  if (x.dtype().is_float())
    runtime::pool_window_max(x.fdata().data(), y.fdata().data(), d);
  else
    runtime::pool_window_max(x.data().data(), y.data().data(), d);
  return y;
}

DLAVM_INLINE te::NDArray avg_pool2d(const te::NDArray& x, const Pool2dParams& p) {
  const auto d = detail::pool_dims("host::avg_pool2d", x, p);
  return detail::avg_pool("host::avg_pool2d", x, d, p.count_include_pad);
}

DLAVM_INLINE te::NDArray global_avg_pool2d(const te::NDArray& x) {
  constexpr std::string_view who = "host::global_avg_pool2d";
  detail::require_rank(who, "x", x, 4);
  const Pool2dParams p{.pool_size = {x.shape()[2], x.shape()[3]}};
  return detail::avg_pool(who, x, detail::pool_dims(who, x, p), true);
}

}  // namespace dlavm::host
