// Definitions for graph/ops/conv.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/conv.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

inline TensorType conv2d_type(const TypeCall& c) {
  if (const std::int64_t groups = c.attrs.get_int("groups"); groups != 1)
    raise<ValueError>("{}: attribute 'groups' is {}; only groups = 1 is supported", c.label,
                      groups);
  c.ints("strides", 2);
  c.ints("padding", 4);
  const host::Conv2dParams p = conv2d_params(c.attrs);
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
  return {.strides = detail::array_attr<2>(attrs, "strides"),
          .padding = detail::array_attr<4>(attrs, "padding")};
}

DLAVM_INLINE Expr conv2d(Expr x, Expr w, const host::Conv2dParams& p) {
  return call("conv2d", {std::move(x), std::move(w)},
              {{"strides", detail::ints_of(p.strides)}, {"padding", detail::ints_of(p.padding)}});
}

DLAVM_INLINE void add_conv_ops(OpRegistry& ops) {
  const host::Conv2dParams defaults;
  ops.add({.name = "conv2d",
           .min_args = 2,
           .max_args = 2,
           .attrs = {{"strides", AttrKind::Ints, detail::ints_of(defaults.strides)},
                     {"padding", AttrKind::Ints, detail::ints_of(defaults.padding)},
                     {"groups", AttrKind::Int, std::int64_t{1}}},
           .type_rule = detail::conv2d_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::conv2d(*a[0], *a[1], conv2d_params(attrs));
           }});
}

}  // namespace dlavm::graph
