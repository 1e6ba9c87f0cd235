// Definitions for graph/ops/float_ops.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/float_ops.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

inline TensorType softmax_type(const TypeCall& c) {
  c.axis("axis", c.type(0).ndim());
  return c.type(0);
}

inline TensorType layer_norm_type(const TypeCall& c) {
  const auto& x = c.type(0).shape;
  const std::size_t axis = c.axis("axis", x.size());
  for (std::size_t i : {1, 2}) {
    c.require_same_dtype(0, i);
    c.require_rank(i, x.size() - axis);
    for (std::size_t k = 0; k < x.size() - axis; ++k)
      c.require_equal(c.type(i).shape[k], fmt::format("{} dim {}", c.arg(i), k), x[axis + k],
                      fmt::format("{} dim {}", c.arg(0), axis + k));
  }
  return c.type(0);
}

inline TensorType gelu_type(const TypeCall& c) { return c.type(0); }

}  // namespace detail

DLAVM_INLINE Expr softmax(Expr x, const host::SoftmaxParams& p) {
  return call("softmax", {std::move(x)}, {{"axis", p.axis}});
}
DLAVM_INLINE Expr layer_norm(Expr x, Expr gamma, Expr beta, const host::LayerNormParams& p) {
  return call("layer_norm", {std::move(x), std::move(gamma), std::move(beta)},
              {{"axis", p.axis}, {"epsilon", p.epsilon}});
}
DLAVM_INLINE Expr gelu(Expr x) { return call("gelu", {std::move(x)}); }

DLAVM_INLINE void add_float_ops(OpRegistry& ops) {
  const host::LayerNormParams ln;
  ops.add({.name = "softmax",
           .attrs = {{"axis", AttrKind::Int, host::SoftmaxParams{}.axis}},
           .type_rule = detail::softmax_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::softmax(*a[0], {.axis = attrs.get_int("axis")});
               },
           .host_support = detail::host_float32_only});
  ops.add({.name = "layer_norm",
           .min_args = 3,
           .max_args = 3,
           .attrs = {{"axis", AttrKind::Int, ln.axis}, {"epsilon", AttrKind::Float, ln.epsilon}},
           .type_rule = detail::layer_norm_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::layer_norm(
                     *a[0], *a[1], *a[2],
                     {.axis = attrs.get_int("axis"), .epsilon = attrs.get_float("epsilon")});
               },
           .host_support = detail::host_float32_only});
  ops.add({.name = "gelu",
           .type_rule = detail::gelu_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::gelu(*a[0]); },
           .host_support = detail::host_float32_only});
}

}  // namespace dlavm::graph
