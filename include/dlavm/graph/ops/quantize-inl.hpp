// Definitions for graph/ops/quantize.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/quantize.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

inline TensorType requantize_type(const TypeCall& c) {
  const DType in = c.type(0).dtype;
  if (!in.is_int())
    raise<TypeError>("{}: {} is {}; requantize takes a signed integer (an int32 accumulator)",
                     c.label, c.arg(0), in);
  const host::RequantizeParams p = requantize_params(c.attrs);
  host::validate(p, in, c.label);
  return {c.type(0).shape, p.out_dtype};
}

inline TensorType cast_type(const TypeCall& c) {
  const DType to = c.attrs.get_dtype("dtype");
  if (to.lanes() != 1 || (to.is_float() && to != DType::float32()))
    raise<TypeError>("{}: attribute 'dtype' is {}; casts go to scalar integers or float32", c.label,
                     to);
  return {c.type(0).shape, to};
}

}  // namespace detail

DLAVM_INLINE host::RequantizeParams requantize_params(const Attrs& attrs) {
  const std::string& rounding = attrs.get_string("rounding");
  const auto r = host::parse_rounding(rounding);
  if (!r) raise<ValueError>("attribute 'rounding' is \"{}\"; allowed: floor, nearest", rounding);
  return {.shift = attrs.get_int("shift"),
          .lo = attrs.get_int("lo"),
          .hi = attrs.get_int("hi"),
          .rounding = *r,
          .out_dtype = attrs.get_dtype("out_dtype")};
}

DLAVM_INLINE Expr requantize(Expr x, const host::RequantizeParams& p) {
  return call("requantize", {std::move(x)},
              {{"shift", p.shift},
               {"lo", p.lo},
               {"hi", p.hi},
               {"rounding", std::string(host::rounding_name(p.rounding))},
               {"out_dtype", p.out_dtype}});
}

DLAVM_INLINE Expr cast(Expr x, DType dtype) {
  return call("cast", {std::move(x)}, {{"dtype", dtype}});
}

DLAVM_INLINE void add_quantize_ops(OpRegistry& ops) {
  const host::RequantizeParams d;
  ops.add({.name = "requantize",
           .attrs = {{"shift", AttrKind::Int, std::nullopt},
                     {"lo", AttrKind::Int, d.lo},
                     {"hi", AttrKind::Int, d.hi},
                     {"rounding",
                      AttrKind::String,
                      std::string(host::rounding_name(d.rounding)),
                      {"floor", "nearest"}},
                     {"out_dtype", AttrKind::DType, d.out_dtype}},
           .type_rule = detail::requantize_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::requantize(*a[0], requantize_params(attrs));
           }});
  ops.add({.name = "cast",
           .attrs = {{"dtype", AttrKind::DType, std::nullopt}},
           .type_rule = detail::cast_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::cast(*a[0], attrs.get_dtype("dtype"));
           }});
}

}  // namespace dlavm::graph
