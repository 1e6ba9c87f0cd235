// Definitions for graph/ops/quantize.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/quantize.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

inline const AttrSchema<host::RequantizeParams>& requantize_schema() {
  using P = host::RequantizeParams;
  using host::Rounding;
  static const auto schema =
      AttrSchema<P>()
          .field("shift", &P::shift, "the right shift after the rounding constant", true)
          .field("lo", &P::lo, "the lower bound of the clamp")
          .field("hi", &P::hi, "the upper bound of the clamp")
          .field("rounding", &P::rounding, "floor, or to nearest with ties upward",
                 {{"floor", Rounding::Floor}, {"nearest", Rounding::Nearest}})
          .field("out_dtype", &P::out_dtype, "the result's integer type");
  return schema;
}

// The target type of a cast.
struct CastParams {
  DType dtype = DType::int32();
};

inline const AttrSchema<CastParams>& cast_schema() {
  static const auto schema = AttrSchema<CastParams>().field("dtype", &CastParams::dtype,
                                                            "the element type to cast to", true);
  return schema;
}

inline TensorType requantize_type(const TypeCall& c) {
  const DType in = c.type(0).dtype;
  if (!in.is_int())
    raise<TypeError>("{}: {} is {}; requantize takes a signed integer (an int32 accumulator)",
                     c.label, c.arg(0), in);
  const host::RequantizeParams p = params_of(c, requantize_schema());
  host::validate(p, in, c.label);
  return {c.type(0).shape, p.out_dtype};
}

inline TensorType cast_type(const TypeCall& c) {
  const DType to = params_of(c, cast_schema()).dtype;
  if (to.lanes() != 1 || (to.is_float() && to != DType::float32()))
    raise<TypeError>("{}: attribute 'dtype' is {}; casts go to scalar integers or float32", c.label,
                     to);
  return {c.type(0).shape, to};
}

}  // namespace detail

DLAVM_INLINE host::RequantizeParams requantize_params(const Attrs& attrs) {
  return detail::requantize_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr requantize(Expr x, const host::RequantizeParams& p) {
  return call("requantize", {std::move(x)}, detail::requantize_schema().to_attrs(p));
}

DLAVM_INLINE DType cast_dtype(const Attrs& attrs) {
  return detail::cast_schema().from_attrs(attrs).dtype;
}

DLAVM_INLINE Expr cast(Expr x, DType dtype) {
  return call("cast", {std::move(x)}, detail::cast_schema().to_attrs({dtype}));
}

DLAVM_INLINE void add_quantize_ops(OpRegistry& ops) {
  ops.add({.name = "requantize",
           .attrs = detail::requantize_schema().specs(),
           .type_rule = detail::requantize_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::requantize(*a[0], requantize_params(attrs));
           }});
  ops.add({.name = "cast",
           .attrs = detail::cast_schema().specs(),
           .type_rule = detail::cast_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::cast(*a[0], cast_dtype(attrs));
           }});
}

}  // namespace dlavm::graph
