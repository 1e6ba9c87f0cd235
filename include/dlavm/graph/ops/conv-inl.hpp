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
          .field("groups", &P::groups, "channel groups (1 only)");
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
  c.require_equal(x[1], fmt::format("{} dim 1 (channels)", c.arg(0)), w[1],
                  fmt::format("{} dim 1 (channels)", c.arg(1)));
  const std::int64_t kh = c.constant_dim(1, 2, "conv2d needs a constant kernel height");
  const std::int64_t kw = c.constant_dim(1, 3, "conv2d needs a constant kernel width");
  ne::Expr oh = window_output(c, x[2], p.padding[0] + p.padding[2], kh, p.strides[0], "height");
  ne::Expr ow = window_output(c, x[3], p.padding[1] + p.padding[3], kw, p.strides[1], "width");
  return {{x[0], w[0], std::move(oh), std::move(ow)}, dtype};
}

}  // namespace detail

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
}

}  // namespace dlavm::graph
