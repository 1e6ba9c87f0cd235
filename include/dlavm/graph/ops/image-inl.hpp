// Definitions for graph/ops/image.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/image.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>

namespace dlavm::graph {

namespace detail {

inline const AttrSchema<host::Resize2dParams>& resize2d_schema() {
  using P = host::Resize2dParams;
  using C = host::ResizeCoordinates;
  using N = host::ResizeNearest;
  static const auto schema =
      AttrSchema<P>()
          .field("scales", &P::scales, "height and width scales (float32), or empty")
          .field("sizes", &P::sizes, "output height and width, or empty")
          .field("mode", &P::mode, "nearest (an element) or linear (interpolated, float32)",
                 {{"nearest", host::ResizeMode::Nearest}, {"linear", host::ResizeMode::Linear}})
          .field("coordinate_transformation_mode", &P::coordinate_transformation_mode,
                 "how an output index maps to a source coordinate (ONNX's modes)",
                 {{"half_pixel", C::HalfPixel},
                  {"asymmetric", C::Asymmetric},
                  {"align_corners", C::AlignCorners},
                  {"pytorch_half_pixel", C::PytorchHalfPixel}})
          .field("nearest_mode", &P::nearest_mode, "how mode nearest rounds a coordinate",
                 {{"round_prefer_floor", N::RoundPreferFloor},
                  {"round_prefer_ceil", N::RoundPreferCeil},
                  {"floor", N::Floor},
                  {"ceil", N::Ceil}});
  return schema;
}

// floor(d * s) for a symbolic d and a float32 scale s = p * 2^e (p odd): d * (p * 2^e), or
// floordiv(d * p, 2^-e); exact when d's maximum * p is below 2^53 (the double product the host
// kernel floors is then exact too). nullopt otherwise.
inline std::optional<ne::Expr> scaled_dim(const ne::Expr& d, float s) {
  int e = 0;
  double p = std::ldexp(std::frexp(static_cast<double>(s), &e), 24);  // s = p * 2^(e - 24)
  e -= 24;
  while (std::fmod(p, 2.0) == 0.0) {
    p /= 2;
    ++e;
  }
  const auto max = ne::bounds(d).max;
  if (e > 30 || e < -62 || static_cast<double>(max) * p >= 0x1p53) return std::nullopt;
  const auto pi = static_cast<std::int64_t>(p);
  if (e >= 0) return ne::simplify(d * (pi << e));
  return ne::simplify(ne::floordiv(d * pi, std::int64_t{1} << -e));
}

inline TensorType resize2d_type(const TypeCall& c) {
  const auto p = params_of(c, resize2d_schema());
  host::validate(p, c.label);
  c.require_rank(0, 4);
  host::check_resize_dtype(p, c.type(0).dtype, c.label, c.arg(0));
  std::vector<ne::Expr> out = c.type(0).shape;
  for (std::size_t k = 0; k < 2; ++k) {
    const ne::Expr& d = out[2 + k];
    const char* what = k == 0 ? "height" : "width";
    if (!ne::can_prove(d >= 1))
      raise<ShapeError>("{}: {} {} `{}` can be {}; resizing needs at least 1", c.label, c.arg(0),
                        what, d, ne::bounds(d).min);
    if (const auto n = ne::simplify(d).as_int()) {
      out[2 + k] = host::resize_extent(p, k, *n, c.label);
    } else if (!p.sizes.empty()) {
      out[2 + k] = p.sizes[k];
    } else if (const auto e = scaled_dim(d, host::resize_scale(p, k))) {
      out[2 + k] = *e;
    } else {
      raise<ShapeError>(
          "{}: {} {} `{}` (at most {}) scaled by {} has no exact symbolic size; give sizes, or a "
          "scale p / 2^k with the maximum * p below 2^53",
          c.label, c.arg(0), what, d, ne::bounds(d).max, host::resize_scale(p, k));
    }
  }
  return {std::move(out), c.type(0).dtype};
}

// runtime::resize2d_nearest / resize2d_linear(x, y, ResizeShape{...}) over the planes N*C.
inline FirmwareCall resize2d_firmware(const FirmwareStep& s) {
  const auto p = resize2d_schema().from_attrs(s.call.attrs);
  const auto& x = s.input(0);
  const auto& y = s.result.shape;
  return {p.mode == host::ResizeMode::Linear ? "dlavm::runtime::resize2d_linear"
                                             : "dlavm::runtime::resize2d_nearest",
          {FirmwareArg::input(0), FirmwareArg::output(),
           FirmwareArg::aggregate(
               "dlavm::runtime::ResizeShape",
               {FirmwareArg::dim(x[0] * x[1]), FirmwareArg::dim(x[2]), FirmwareArg::dim(x[3]),
                FirmwareArg::dim(y[2]), FirmwareArg::dim(y[3]),
                FirmwareArg::real(host::resize_scale(p, 0)),
                FirmwareArg::real(host::resize_scale(p, 1)),
                FirmwareArg::integer(static_cast<std::int64_t>(p.coordinate_transformation_mode)),
                FirmwareArg::integer(static_cast<std::int64_t>(p.nearest_mode))})}};
}

}  // namespace detail

DLAVM_INLINE host::Resize2dParams resize2d_params(const Attrs& attrs) {
  return detail::resize2d_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr resize2d(Expr x, const host::Resize2dParams& p) {
  return call("resize2d", {std::move(x)}, detail::resize2d_schema().to_attrs(p));
}

DLAVM_INLINE void add_image_ops(OpRegistry& ops) {
  ops.add({.name = "resize2d",
           .attrs = detail::resize2d_schema().specs(),
           .type_rule = detail::resize2d_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::resize2d(*a[0], resize2d_params(attrs));
               },
           .firmware = {.call = detail::resize2d_firmware}});
}

}  // namespace dlavm::graph
