// Definitions for graph/ops/conv.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/conv.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

inline const AttrSchema<host::Conv2dParams>& conv2d_schema() {
  using P = host::Conv2dParams;
  static const auto schema =
      AttrSchema<P>()
          .field("strides", &P::strides, "steps of the window: (height, width)")
          .field("padding", &P::padding, "zero rows and columns: (top, left, bottom, right)")
          .field("groups", &P::groups, "channel groups (a depthwise convolution: the channels)")
          .field("dilations", &P::dilations, "spacing of the kernel taps: (height, width)");
  return schema;
}

inline TensorType conv2d_type(const TypeCall& c) {
  const host::Conv2dParams p = params_of(c, conv2d_schema());
  host::validate(p, c.label);
  c.require_rank(0, 4);
  c.require_rank(1, 4);
  const DType dtype = product_dtype(c);
  const auto& x = c.type(0).shape;
  const auto& w = c.type(1).shape;
  if (p.groups == 1)
    c.require_equal(x[1], fmt::format("{} dim 1 (channels)", c.arg(0)), w[1],
                    fmt::format("{} dim 1 (channels)", c.arg(1)));
  else
    c.require_equal(
        x[1], fmt::format("{} dim 1 (channels)", c.arg(0)), w[1] * ne::Expr(p.groups),
        fmt::format("{} dim 1 (channels per group) times groups = {}", c.arg(1), p.groups));
  if (p.groups != 1) {
    const std::int64_t o = c.constant_dim(1, 0, "a grouped conv2d needs constant output channels");
    if (o % p.groups != 0)
      raise<ShapeError>("{}: {} has {} output channels, not a multiple of groups = {}", c.label,
                        c.arg(1), o, p.groups);
  }
  const std::int64_t kh = host::dilated_extent(
      c.constant_dim(1, 2, "conv2d needs a constant kernel height"), p.dilations[0]);
  const std::int64_t kw = host::dilated_extent(
      c.constant_dim(1, 3, "conv2d needs a constant kernel width"), p.dilations[1]);
  ne::Expr oh = window_output(c, x[2], p.padding[0] + p.padding[2], kh, p.strides[0], "height");
  ne::Expr ow = window_output(c, x[3], p.padding[1] + p.padding[3], kw, p.strides[1], "width");
  return {{x[0], w[0], std::move(oh), std::move(ow)}, dtype};
}

inline const AttrSchema<host::ConvTranspose2dParams>& conv2d_transpose_schema() {
  using P = host::ConvTranspose2dParams;
  static const auto schema =
      AttrSchema<P>()
          .field("strides", &P::strides, "steps of the scattered windows: (height, width)")
          .field("padding", &P::padding, "rows and columns cropped: (top, left, bottom, right)")
          .field("output_padding", &P::output_padding, "rows and columns added at the end")
          .field("groups", &P::groups, "channel groups")
          .field("dilations", &P::dilations, "spacing of the kernel taps: (height, width)");
  return schema;
}

inline TensorType conv2d_transpose_type(const TypeCall& c) {
  const host::ConvTranspose2dParams p = params_of(c, conv2d_transpose_schema());
  host::validate(p, c.label);
  c.require_rank(0, 4);
  c.require_rank(1, 4);
  const auto& x = c.type(0).shape;
  const auto& w = c.type(1).shape;
  c.require_equal(x[1], fmt::format("{} dim 1 (channels)", c.arg(0)), w[0],
                  fmt::format("{} dim 0 (input channels)", c.arg(1)));
  const std::int64_t channels = c.constant_dim(0, 1, "conv2d_transpose needs constant channels");
  if (channels % p.groups != 0)
    raise<ShapeError>("{}: {} has {} channels, not a multiple of groups = {}", c.label, c.arg(0),
                      channels, p.groups);
  const std::int64_t kh = c.constant_dim(1, 2, "conv2d_transpose needs a constant kernel height");
  const std::int64_t kw = c.constant_dim(1, 3, "conv2d_transpose needs a constant kernel width");
  std::vector<ne::Expr> shape = {x[0], w[1] * ne::Expr(p.groups)};
  const std::int64_t kernel[] = {kh, kw};
  for (std::size_t k = 0; k < 2; ++k) {
    // stride * (in - 1) + the rest, symbolic in `in`
    const std::int64_t rest = host::transposed_extent(p, k, 1, kernel[k]);
    auto extent = ne::simplify(ne::Expr(p.strides[k]) * (x[2 + k] - ne::Expr(1)) + ne::Expr(rest));
    if (!ne::can_prove(extent >= ne::Expr(1)))
      raise<ShapeError>("{}: output {} `{}` of {} may be below 1 (the padding crops everything)",
                        c.label, k == 0 ? "height" : "width", extent, c.arg(0));
    shape.push_back(std::move(extent));
  }
  return {std::move(shape), DType::float32()};
}

}  // namespace detail

DLAVM_INLINE host::ConvTranspose2dParams conv2d_transpose_params(const Attrs& attrs) {
  return detail::conv2d_transpose_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr conv2d_transpose(Expr x, Expr w, const host::ConvTranspose2dParams& p) {
  return call("conv2d_transpose", {std::move(x), std::move(w)},
              detail::conv2d_transpose_schema().to_attrs(p));
}

DLAVM_INLINE host::Conv2dParams conv2d_params(const Attrs& attrs) {
  return detail::conv2d_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr conv2d(Expr x, Expr w, const host::Conv2dParams& p) {
  return call("conv2d", {std::move(x), std::move(w)}, detail::conv2d_schema().to_attrs(p));
}

DLAVM_INLINE void add_conv_ops(OpRegistry& ops) {
  ops.add({.name = "conv2d",
           .min_args = 2,
           .max_args = 2,
           .attrs = detail::conv2d_schema().specs(),
           .type_rule = detail::conv2d_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::conv2d(*a[0], *a[1], conv2d_params(attrs));
           }});
  ops.add({.name = "conv2d_transpose",
           .min_args = 2,
           .max_args = 2,
           .attrs = detail::conv2d_transpose_schema().specs(),
           .type_rule = detail::conv2d_transpose_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::conv2d_transpose(*a[0], *a[1], conv2d_transpose_params(attrs));
               },
           .host_support = detail::host_float32_only});
}

}  // namespace dlavm::graph
