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

inline const AttrSchema<host::LinearQuantParams>& linear_quant_schema() {
  static const auto schema = AttrSchema<host::LinearQuantParams>().field(
      "axis", &host::LinearQuantParams::axis, "the channel axis of per-channel parameters");
  return schema;
}

// The checks of host::validate_linear_quant on types; `x_ok` says whether x's dtype fits.
inline void linear_quant_args(const TypeCall& c, bool x_ok, std::string_view x_needs) {
  if (!x_ok)
    raise<TypeError>("{}: {} is {}; it must be {}", c.label, c.arg(0), c.type(0).dtype, x_needs);
  if (c.type(1).dtype != DType::float32())
    raise<TypeError>("{}: {} is {}; the scale is float32", c.label, c.arg(1), c.type(1).dtype);
  if (!c.type(2).dtype.is_integral())
    raise<TypeError>("{}: {} is {}; the zero point is an integer type", c.label, c.arg(2),
                     c.type(2).dtype);
  if (c.type(1).ndim() > 1)
    raise<ShapeError>("{}: {} has rank {}; a scale is a scalar or one value per channel", c.label,
                      c.arg(1), c.type(1).ndim());
  c.require_rank(2, c.type(1).ndim());
  if (c.type(1).ndim() == 1) {
    const std::size_t axis = c.axis("axis", c.type(0).ndim());
    c.require_equal(c.type(1).shape[0], fmt::format("the scales of {}", c.arg(1)),
                    c.type(0).shape[axis], fmt::format("dim {} of {}", axis, c.arg(0)));
    c.require_equal(c.type(2).shape[0], fmt::format("the zero points of {}", c.arg(2)),
                    c.type(0).shape[axis], fmt::format("dim {} of {}", axis, c.arg(0)));
  }
}

inline TensorType quantize_linear_type(const TypeCall& c) {
  linear_quant_args(c, c.type(0).dtype == DType::float32(), "float32");
  return {c.type(0).shape, c.type(2).dtype};
}

inline TensorType dequantize_linear_type(const TypeCall& c) {
  linear_quant_args(c, c.type(0).dtype.is_integral(), "an integer type");
  c.require_same_dtype(0, 2);
  return {c.type(0).shape, DType::float32()};
}

inline TensorType rescale_type(const TypeCall& c) {
  linear_quant_args(c, c.type(0).dtype == DType::int32(), "int32 (an accumulator)");
  return {c.type(0).shape, c.type(2).dtype};
}

}  // namespace detail

DLAVM_INLINE Expr quantize_linear(Expr x, Expr scale, Expr zero_point,
                                  const host::LinearQuantParams& p) {
  return call("quantize_linear", {std::move(x), std::move(scale), std::move(zero_point)},
              detail::linear_quant_schema().to_attrs(p));
}

DLAVM_INLINE Expr dequantize_linear(Expr x, Expr scale, Expr zero_point,
                                    const host::LinearQuantParams& p) {
  return call("dequantize_linear", {std::move(x), std::move(scale), std::move(zero_point)},
              detail::linear_quant_schema().to_attrs(p));
}

DLAVM_INLINE Expr rescale(Expr acc, Expr multiplier, Expr zero_point,
                          const host::LinearQuantParams& p) {
  return call("rescale", {std::move(acc), std::move(multiplier), std::move(zero_point)},
              detail::linear_quant_schema().to_attrs(p));
}

DLAVM_INLINE host::LinearQuantParams linear_quant_params(const Attrs& attrs) {
  return detail::linear_quant_schema().from_attrs(attrs);
}

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

namespace detail {

// runtime::requantize(x, y, elements, x's bits, shift, rounding constant, lo, hi).
inline FirmwareKernel requantize_firmware() {
  return {.support = [](const FirmwareStep& s) -> std::optional<std::string> {
            const DType x = s.call.type(0).dtype;
            if (x.is_int()) return std::nullopt;
            return fmt::format("requantize of {} has no firmware kernel (signed integers only)", x);
          },
          .call =
              [](const FirmwareStep& s) {
                const auto p = requantize_params(s.call.attrs);
                const std::uint64_t round = p.rounding == host::Rounding::Nearest && p.shift > 0
                                                ? std::uint64_t{1} << (p.shift - 1)
                                                : 0;
                FirmwareCall c = elements_call("dlavm::runtime::requantize", s, 1);
                c.args.push_back(FirmwareArg::integer(s.call.type(0).dtype.bits()));
                c.args.push_back(FirmwareArg::integer(p.shift));
                c.args.push_back(FirmwareArg::integer(static_cast<std::int64_t>(round), "ULL"));
                c.args.push_back(FirmwareArg::integer(p.lo, "LL"));
                c.args.push_back(FirmwareArg::integer(p.hi, "LL"));
                return c;
              }};
}

// runtime::cast(x, y, elements, lo, hi): the output type's range (unused for float).
inline FirmwareCall cast_firmware(const FirmwareStep& s) {
  const DType t = s.result.dtype;
  const std::int64_t lo = t.is_float() ? 0 : t.min_value(), hi = t.is_float() ? 0 : t.max_value();
  FirmwareCall c = elements_call("dlavm::runtime::cast", s, 1);
  c.args.push_back(FirmwareArg::integer(lo == INT64_MIN ? INT64_MIN + 1 : lo, "LL"));
  c.args.push_back(FirmwareArg::integer(hi, "LL"));
  return c;
}

// runtime::quantize_linear / dequantize_linear / rescale(x, scale, zero point, y, outer,
// channels, inner[, the output type's range]).
inline FirmwareCall linear_quant_firmware(const FirmwareStep& s, std::string_view kernel) {
  const bool quantize = kernel != "dequantize_linear";
  const auto split = host::split_channels(std::span(s.input(0)), s.input(1).size(),
                                          linear_quant_schema().from_attrs(s.call.attrs).axis);
  FirmwareCall c{fmt::format("dlavm::runtime::{}", kernel),
                 {FirmwareArg::input(0), FirmwareArg::input(1), FirmwareArg::input(2),
                  FirmwareArg::output(), FirmwareArg::dim(split.outer),
                  FirmwareArg::dim(split.extent), FirmwareArg::dim(split.inner)}};
  if (quantize) {
    c.args.push_back(FirmwareArg::integer(s.result.dtype.min_value(), "LL"));
    c.args.push_back(FirmwareArg::integer(s.result.dtype.max_value(), "LL"));
  }
  return c;
}

}  // namespace detail

DLAVM_INLINE void add_quantize_ops(OpRegistry& ops) {
  ops.add({.name = "requantize",
           .attrs = detail::requantize_schema().specs(),
           .type_rule = detail::requantize_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::requantize(*a[0], requantize_params(attrs));
               },
           .firmware = detail::requantize_firmware()});
  const auto linear = [&](std::string name, TypeRule rule, auto kernel, FirmwareKernel firmware) {
    ops.add({.name = std::move(name),
             .min_args = 3,
             .max_args = 3,
             .attrs = detail::linear_quant_schema().specs(),
             .type_rule = std::move(rule),
             .host_kernel =
                 [kernel](HostArgs a, const Attrs& attrs) {
                   return kernel(*a[0], *a[1], *a[2],
                                 detail::linear_quant_schema().from_attrs(attrs));
                 },
             .firmware = std::move(firmware)});
  };
  linear("quantize_linear", detail::quantize_linear_type,
         [](const te::NDArray& x, const te::NDArray& s, const te::NDArray& z,
            const host::LinearQuantParams& p) { return host::quantize_linear(x, s, z, p); },
         {.call = [](const FirmwareStep& s) {
           return detail::linear_quant_firmware(s, "quantize_linear");
         }});
  linear("dequantize_linear", detail::dequantize_linear_type,
         [](const te::NDArray& x, const te::NDArray& s, const te::NDArray& z,
            const host::LinearQuantParams& p) { return host::dequantize_linear(x, s, z, p); },
         {.call = [](const FirmwareStep& s) {
           return detail::linear_quant_firmware(s, "dequantize_linear");
         }});
  linear(
      "rescale", detail::rescale_type,
      [](const te::NDArray& x, const te::NDArray& s, const te::NDArray& z,
         const host::LinearQuantParams& p) { return host::rescale(x, s, z, p); },
      {.call = [](const FirmwareStep& s) { return detail::linear_quant_firmware(s, "rescale"); }});
  ops.add({.name = "cast",
           .attrs = detail::cast_schema().specs(),
           .type_rule = detail::cast_type,
           .host_kernel = [](HostArgs a,
                             const Attrs& attrs) { return host::cast(*a[0], cast_dtype(attrs)); },
           .firmware = {.call = detail::cast_firmware}});
}

}  // namespace dlavm::graph
