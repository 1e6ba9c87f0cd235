// Definitions for host/pool.hpp: one window walk, shared by the max and the average.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/pool.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace dlavm::host {

namespace detail {

struct PoolDims {
  std::int64_t planes, h, w, oh, ow, kh, kw, sh, sw, pt, pl;
};

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

// Sets every output to reduce(plane, y0, y1, x0, x1): the rows [y0, y1) and columns [x0, x1)
// of its window that lie inside the input plane.
template <class T, class Reduce>
void for_each_window(const T* x, T* y, const PoolDims& d, Reduce&& reduce) {
  for (std::int64_t p = 0; p < d.planes; ++p) {
    const T* plane = x + p * d.h * d.w;
    T* out = y + p * d.oh * d.ow;
    for (std::int64_t oy = 0; oy < d.oh; ++oy) {
      const std::int64_t y0 = std::max<std::int64_t>(0, oy * d.sh - d.pt);
      const std::int64_t y1 = std::min(d.h, oy * d.sh - d.pt + d.kh);
      for (std::int64_t ox = 0; ox < d.ow; ++ox) {
        const std::int64_t x0 = std::max<std::int64_t>(0, ox * d.sw - d.pl);
        const std::int64_t x1 = std::min(d.w, ox * d.sw - d.pl + d.kw);
        out[oy * d.ow + ox] = reduce(plane, y0, y1, x0, x1);
      }
    }
  }
}

template <class T>
T window_max(const T* plane, std::int64_t w, std::int64_t y0, std::int64_t y1, std::int64_t x0,
             std::int64_t x1) {
  T m = plane[y0 * w + x0];
  for (std::int64_t iy = y0; iy < y1; ++iy)
    for (std::int64_t ix = x0; ix < x1; ++ix) {
      const T v = plane[iy * w + ix];
      if constexpr (std::is_floating_point_v<T>) {
        if (v > m || std::isnan(v)) m = v;
        if (std::isnan(m)) return m;
      } else {
        m = std::max(m, v);
      }
    }
  return m;
}

// Sum of the window: int64 for integers (exact for inputs of at most 32 bits), float32 in
// row-major order for floats.
template <class T, class Acc>
Acc window_sum(const T* plane, std::int64_t w, std::int64_t y0, std::int64_t y1, std::int64_t x0,
               std::int64_t x1) {
  Acc s = 0;
  for (std::int64_t iy = y0; iy < y1; ++iy)
    for (std::int64_t ix = x0; ix < x1; ++ix) s += plane[iy * w + ix];
  return s;
}

inline te::NDArray avg_pool(std::string_view who, const te::NDArray& x, const PoolDims& d,
                            bool count_include_pad) {
  if (x.dtype().is_integral() && x.dtype().bits() > 32)
    raise<TypeError>("{}: x is {}; averages take integers of at most 32 bits or float32", who,
                     x.dtype());
  te::NDArray y(x.dtype(), {x.shape()[0], x.shape()[1], d.oh, d.ow});
  auto count = [&](std::int64_t y0, std::int64_t y1, std::int64_t x0, std::int64_t x1) {
    return count_include_pad ? d.kh * d.kw : (y1 - y0) * (x1 - x0);
  };
  if (x.dtype().is_float()) {
    for_each_window(x.fdata().data(), y.fdata().data(), d,
                    [&](const float* plane, auto y0, auto y1, auto x0, auto x1) {
                      const float s = window_sum<float, float>(plane, d.w, y0, y1, x0, x1);
                      return s / static_cast<float>(count(y0, y1, x0, x1));
                    });
  } else {
    for_each_window(x.data().data(), y.data().data(), d,
                    [&](const std::int64_t* plane, auto y0, auto y1, auto x0, auto x1) {
                      const auto s =
                          window_sum<std::int64_t, std::int64_t>(plane, d.w, y0, y1, x0, x1);
                      return floor_div(s, count(y0, y1, x0, x1));
                    });
  }
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
  auto reduce = [&](const auto* plane, auto y0, auto y1, auto x0, auto x1) {
    return detail::window_max(plane, d.w, y0, y1, x0, x1);
  };
  if (x.dtype().is_float())
    detail::for_each_window(x.fdata().data(), y.fdata().data(), d, reduce);
  else
    detail::for_each_window(x.data().data(), y.data().data(), d, reduce);
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
