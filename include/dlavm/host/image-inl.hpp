// Definitions for host/image.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/image.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace dlavm::host {

DLAVM_INLINE void validate(const Resize2dParams& p, std::string_view who) {
  if (p.scales.empty() == p.sizes.empty())
    raise<ValueError>(
        "{}: give exactly one of the attributes 'scales' [{}] and 'sizes' [{}] (height, width)",
        who, fmt::join(p.scales, ", "), fmt::join(p.sizes, ", "));
  if (!p.scales.empty()) {
    if (p.scales.size() != 2)
      raise<ValueError>("{}: attribute 'scales' [{}] has {} entries; it takes 2 (height, width)",
                        who, fmt::join(p.scales, ", "), p.scales.size());
    for (const double s : p.scales) {
      const float f = static_cast<float>(s);
      if (!std::isfinite(f) || !(f > 0))
        raise<ValueError>("{}: attribute 'scales' [{}] has {}; scales are > 0 and finite floats",
                          who, fmt::join(p.scales, ", "), s);
    }
  } else {
    if (p.sizes.size() != 2)
      raise<ValueError>("{}: attribute 'sizes' [{}] has {} entries; it takes 2 (height, width)",
                        who, fmt::join(p.sizes, ", "), p.sizes.size());
    for (const auto s : p.sizes)
      if (s < 0)
        raise<ValueError>("{}: attribute 'sizes' [{}] has {}; sizes are >= 0", who,
                          fmt::join(p.sizes, ", "), s);
  }
}

DLAVM_INLINE void check_resize_dtype(const Resize2dParams& p, DType dtype, std::string_view who,
                                     std::string_view what) {
  if (p.mode == ResizeMode::Linear && dtype != DType::float32())
    raise<TypeError>(
        "{}: {} is {}; mode linear computes in float32 only (cast it, or use mode nearest)", who,
        what, dtype);
}

DLAVM_INLINE float resize_scale(const Resize2dParams& p, std::size_t k) {
  return p.scales.empty() ? 0.0f : static_cast<float>(p.scales[k]);
}

DLAVM_INLINE std::int64_t resize_extent(const Resize2dParams& p, std::size_t k, std::int64_t in,
                                        std::string_view who) {
  if (!p.sizes.empty()) return p.sizes[k];
  const float s = resize_scale(p, k);
  const double out = std::floor(static_cast<double>(in) * static_cast<double>(s));
  if (!(out < 0x1p62))
    raise<ValueError>("{}: {} elements scaled by {} give {} elements, more than an array holds",
                      who, in, s, out);
  return static_cast<std::int64_t>(out);
}

DLAVM_INLINE te::NDArray resize2d(const te::NDArray& x, const Resize2dParams& p) {
  constexpr std::string_view who = "host::resize2d";
  validate(p, who);
  detail::require_rank(who, "x", x, 4);
  check_resize_dtype(p, x.dtype(), who, "x");
  const std::int64_t h = x.shape()[2], w = x.shape()[3];
  if (h < 1 || w < 1)
    raise<ShapeError>("{}: x {} has no rows or no columns to resize", who,
                      detail::shape_str(x.shape()));
  const runtime::ResizeShape d{
      .planes = x.shape()[0] * x.shape()[1],
      .h = h,
      .w = w,
      .oh = resize_extent(p, 0, h, who),
      .ow = resize_extent(p, 1, w, who),
      .scale_h = resize_scale(p, 0),
      .scale_w = resize_scale(p, 1),
      .coordinates = static_cast<std::int32_t>(p.coordinate_transformation_mode),
      .nearest = static_cast<std::int32_t>(p.nearest_mode)};
  te::NDArray y(x.dtype(), {x.shape()[0], x.shape()[1], d.oh, d.ow});
  if (p.mode == ResizeMode::Linear)
    runtime::resize2d_linear(x.fdata().data(), y.fdata().data(), d);
  else if (x.dtype().is_float())
    runtime::resize2d_nearest(x.fdata().data(), y.fdata().data(), d);
  else
    runtime::resize2d_nearest(x.data().data(), y.data().data(), d);
  return y;
}

}  // namespace dlavm::host
