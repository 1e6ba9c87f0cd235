// Definitions for graph/ops/elementwise.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/elementwise.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

inline TensorType broadcast_type(const TypeCall& c) {
  c.require_same_dtype(0, 1);
  return {broadcast(c, 0, 1), c.type(0).dtype};
}

inline TensorType bias_add_type(const TypeCall& c) {
  c.require_same_dtype(0, 1);
  c.require_rank(1, 1);
  const std::size_t axis = c.axis("axis", c.type(0).ndim());
  c.require_equal(c.type(1).shape[0], fmt::format("{} dim 0", c.arg(1)), c.type(0).shape[axis],
                  fmt::format("{} dim {} (the axis)", c.arg(0), axis));
  return c.type(0);
}

inline host::ClipParams clip_params(const Attrs& attrs) {
  return {.lo = attrs.get_float("lo"), .hi = attrs.get_float("hi")};
}

inline TensorType clip_type(const TypeCall& c) {
  const host::ClipParams p = clip_params(c.attrs);
  if (c.type(0).dtype.is_integral())
    host::clip_int_bounds(p, c.type(0).dtype, c.label);
  else
    host::validate(p, c.label);
  return c.type(0);
}

inline TensorType same_type_as_input(const TypeCall& c) { return c.type(0); }

}  // namespace detail

DLAVM_INLINE Expr add(Expr a, Expr b) { return call("add", {std::move(a), std::move(b)}); }
DLAVM_INLINE Expr mul(Expr a, Expr b) { return call("mul", {std::move(a), std::move(b)}); }
DLAVM_INLINE Expr bias_add(Expr x, Expr b, const host::BiasAddParams& p) {
  return call("bias_add", {std::move(x), std::move(b)}, {{"axis", p.axis}});
}
DLAVM_INLINE Expr relu(Expr x) { return call("relu", {std::move(x)}); }
DLAVM_INLINE Expr clip(Expr x, const host::ClipParams& p) {
  return call("clip", {std::move(x)}, {{"lo", p.lo}, {"hi", p.hi}});
}

DLAVM_INLINE void add_elementwise_ops(OpRegistry& ops) {
  ops.add({.name = "add",
           .min_args = 2,
           .max_args = 2,
           .type_rule = detail::broadcast_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::add(*a[0], *a[1]); }});
  ops.add({.name = "mul",
           .min_args = 2,
           .max_args = 2,
           .type_rule = detail::broadcast_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::mul(*a[0], *a[1]); }});
  ops.add({.name = "bias_add",
           .min_args = 2,
           .max_args = 2,
           .attrs = {{"axis", AttrKind::Int, host::BiasAddParams{}.axis}},
           .type_rule = detail::bias_add_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::bias_add(*a[0], *a[1], {.axis = attrs.get_int("axis")});
           }});
  ops.add({.name = "relu",
           .type_rule = detail::same_type_as_input,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::relu(*a[0]); }});
  ops.add({.name = "clip",
           .attrs = {{"lo", AttrKind::Float, std::nullopt}, {"hi", AttrKind::Float, std::nullopt}},
           .type_rule = detail::clip_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::clip(*a[0], detail::clip_params(attrs));
           }});
}

}  // namespace dlavm::graph
