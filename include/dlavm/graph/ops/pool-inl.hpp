// Definitions for graph/ops/pool.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/pool.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

inline TensorType pool2d_type(const TypeCall& c) {
  c.ints("pool_size", 2);
  c.ints("strides", 2);
  c.ints("padding", 4);
  if (const AttrValue* v = c.attrs.find("count_include_pad")) {
    const std::int64_t flag = std::get<std::int64_t>(*v);
    if (flag != 0 && flag != 1)
      raise<ValueError>("{}: attribute 'count_include_pad' is {}; it is 0 or 1", c.label, flag);
  }
  const host::Pool2dParams p = pool2d_params(c.attrs);
  host::validate(p, c.label);
  c.require_rank(0, 4);
  const auto& x = c.type(0).shape;
  ne::Expr oh =
      window_output(c, x[2], p.padding[0] + p.padding[2], p.pool_size[0], p.strides[0], "height");
  ne::Expr ow =
      window_output(c, x[3], p.padding[1] + p.padding[3], p.pool_size[1], p.strides[1], "width");
  return {{x[0], x[1], std::move(oh), std::move(ow)}, c.type(0).dtype};
}

inline TensorType global_pool_type(const TypeCall& c) {
  c.require_rank(0, 4);
  const auto& x = c.type(0).shape;
  return {{x[0], x[1], 1, 1}, c.type(0).dtype};
}

// The host averages take integers of at most 32 bits, or float32.
inline std::optional<std::string> host_average_support(const TypeCall& c) {
  const DType t = c.type(0).dtype;
  if (t.is_integral() && t.bits() > 32)
    return fmt::format("averages integers of at most 32 bits, and {} is {}", c.arg(0), t);
  return std::nullopt;
}

inline std::vector<AttrSpec> pool_attr_specs(bool average) {
  const host::Pool2dParams d;
  std::vector<AttrSpec> specs{{"pool_size", AttrKind::Ints, std::nullopt},
                              {"strides", AttrKind::Ints, ints_of(d.strides)},
                              {"padding", AttrKind::Ints, ints_of(d.padding)}};
  if (average)
    specs.push_back({"count_include_pad", AttrKind::Int, std::int64_t{d.count_include_pad}});
  return specs;
}

inline Attrs pool_attrs(const host::Pool2dParams& p, bool average) {
  Attrs a{{"pool_size", ints_of(p.pool_size)},
          {"strides", ints_of(p.strides)},
          {"padding", ints_of(p.padding)}};
  if (average) a.set("count_include_pad", std::int64_t{p.count_include_pad});
  return a;
}

}  // namespace detail

DLAVM_INLINE host::Pool2dParams pool2d_params(const Attrs& attrs) {
  host::Pool2dParams p{.pool_size = detail::array_attr<2>(attrs, "pool_size"),
                       .strides = detail::array_attr<2>(attrs, "strides"),
                       .padding = detail::array_attr<4>(attrs, "padding")};
  if (attrs.contains("count_include_pad"))
    p.count_include_pad = attrs.get_int("count_include_pad") != 0;
  return p;
}

DLAVM_INLINE Expr max_pool2d(Expr x, const host::Pool2dParams& p) {
  return call("max_pool2d", {std::move(x)}, detail::pool_attrs(p, false));
}

DLAVM_INLINE Expr avg_pool2d(Expr x, const host::Pool2dParams& p) {
  return call("avg_pool2d", {std::move(x)}, detail::pool_attrs(p, true));
}

DLAVM_INLINE Expr global_avg_pool2d(Expr x) { return call("global_avg_pool2d", {std::move(x)}); }

DLAVM_INLINE void add_pool_ops(OpRegistry& ops) {
  ops.add({.name = "max_pool2d",
           .attrs = detail::pool_attr_specs(false),
           .type_rule = detail::pool2d_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::max_pool2d(*a[0], pool2d_params(attrs));
           }});
  ops.add({.name = "avg_pool2d",
           .attrs = detail::pool_attr_specs(true),
           .type_rule = detail::pool2d_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::avg_pool2d(*a[0], pool2d_params(attrs));
               },
           .host_support = detail::host_average_support});
  ops.add({.name = "global_avg_pool2d",
           .type_rule = detail::global_pool_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::global_avg_pool2d(*a[0]); },
           .host_support = detail::host_average_support});
}

}  // namespace dlavm::graph
