// Definitions for graph/ops/elementwise.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/elementwise.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/ne/structural.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace dlavm::graph {

namespace detail {

inline TensorType broadcast_type(const TypeCall& c) {
  c.require_same_dtype(0, 1);
  return {broadcast(c, 0, 1), c.type(0).dtype};
}

// The slope broadcasts to x's shape (ONNX's unidirectional broadcast): aligned at the end,
// each of its dims is 1 or provably x's.
inline TensorType prelu_type(const TypeCall& c) {
  c.require_same_dtype(0, 1);
  const auto& x = c.type(0).shape;
  const auto& slope = c.type(1).shape;
  if (slope.size() > x.size())
    raise<ShapeError>("{}: {} {} has more dims than {} {}; the slope broadcasts to x's shape",
                      c.label, c.arg(1), shape_text(slope), c.arg(0), shape_text(x));
  const std::size_t skip = x.size() - slope.size();
  for (std::size_t k = 0; k < slope.size(); ++k)
    if (ne::simplify(slope[k]).as_int() != 1)
      c.require_equal(slope[k], fmt::format("{} dim {}", c.arg(1), k), x[skip + k],
                      fmt::format("{} dim {} (a slope dim is 1 or x's)", c.arg(0), skip + k));
  return c.type(0);
}

inline TensorType bias_add_type(const TypeCall& c) {
  c.require_same_dtype(0, 1);
  c.require_rank(1, 1);
  const std::size_t axis = c.axis("axis", c.type(0).ndim());
  c.require_equal(c.type(1).shape[0], fmt::format("{} dim 0", c.arg(1)), c.type(0).shape[axis],
                  fmt::format("{} dim {} (the axis)", c.arg(0), axis));
  return c.type(0);
}

inline const AttrSchema<host::BiasAddParams>& bias_add_schema() {
  static const auto schema = AttrSchema<host::BiasAddParams>().field(
      "axis", &host::BiasAddParams::axis, "the axis the bias runs along (negative: from the end)");
  return schema;
}

inline const AttrSchema<host::ClipParams>& clip_schema() {
  using P = host::ClipParams;
  static const auto schema = AttrSchema<P>()
                                 .field("lo", &P::lo, "the lower bound", true)
                                 .field("hi", &P::hi, "the upper bound", true);
  return schema;
}

inline TensorType clip_type(const TypeCall& c) {
  const host::ClipParams p = params_of(c, clip_schema());
  if (c.type(0).dtype.is_integral())
    host::clip_int_bounds(p, c.type(0).dtype, c.label);
  else
    host::validate(p, c.label);
  return c.type(0);
}

inline TensorType same_type_as_input(const TypeCall& c) { return c.type(0); }

}  // namespace detail

DLAVM_INLINE host::BiasAddParams bias_add_params(const Attrs& attrs) {
  return detail::bias_add_schema().from_attrs(attrs);
}

DLAVM_INLINE host::ClipParams clip_params(const Attrs& attrs) {
  return detail::clip_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr binary(runtime::Binary kind, Expr a, Expr b) {
  return call(std::string(host::binary_op(kind).name), {std::move(a), std::move(b)});
}
DLAVM_INLINE Expr add(Expr a, Expr b) { return binary(runtime::Binary::Add, a, b); }
DLAVM_INLINE Expr sub(Expr a, Expr b) { return binary(runtime::Binary::Sub, a, b); }
DLAVM_INLINE Expr mul(Expr a, Expr b) { return binary(runtime::Binary::Mul, a, b); }
DLAVM_INLINE Expr div(Expr a, Expr b) { return binary(runtime::Binary::Div, a, b); }
DLAVM_INLINE Expr pow(Expr a, Expr b) { return binary(runtime::Binary::Pow, a, b); }
DLAVM_INLINE Expr maximum(Expr a, Expr b) { return binary(runtime::Binary::Maximum, a, b); }
DLAVM_INLINE Expr minimum(Expr a, Expr b) { return binary(runtime::Binary::Minimum, a, b); }
DLAVM_INLINE Expr prelu(Expr x, Expr slope) { return binary(runtime::Binary::Prelu, x, slope); }
DLAVM_INLINE Expr bias_add(Expr x, Expr b, const host::BiasAddParams& p) {
  return call("bias_add", {std::move(x), std::move(b)}, detail::bias_add_schema().to_attrs(p));
}
DLAVM_INLINE Expr relu(Expr x) { return call("relu", {std::move(x)}); }
DLAVM_INLINE Expr clip(Expr x, const host::ClipParams& p) {
  return call("clip", {std::move(x)}, detail::clip_schema().to_attrs(p));
}

namespace detail {

// runtime::binary<kind>(a, b, y, elements) for operands of one shape; else
// runtime::binary_broadcast<kind>(a, b, y, shape, a_shape, b_shape, rank), the operands'
// shapes aligned to the result's rank (at most 8) with leading 1s.
inline FirmwareKernel binary_firmware(runtime::Binary kind) {
  const auto enumerator = host::binary_op(kind).enumerator;
  return broadcast_firmware(
      std::string(host::binary_op(kind).name),
      fmt::format("dlavm::runtime::binary<dlavm::runtime::Binary::{}>", enumerator),
      fmt::format("dlavm::runtime::binary_broadcast<dlavm::runtime::Binary::{}>", enumerator),
      {"a_shape", "b_shape"});
}

inline OpRecord binary_record(const host::BinaryOp& op) {
  const runtime::Binary kind = op.kind;
  return {
      .name = std::string(op.name),
      .min_args = 2,
      .max_args = 2,
      .type_rule = kind == runtime::Binary::Prelu ? TypeRule(prelu_type) : TypeRule(broadcast_type),
      .host_kernel = [kind](HostArgs a, const Attrs&) { return host::binary(kind, *a[0], *a[1]); },
      .host_support = runtime::takes_integers(kind) ? SupportRule(host_float32_or_integers)
                                                    : SupportRule(host_float32_only),
      .firmware = binary_firmware(kind)};
}

inline FirmwareCall bias_add_firmware(const FirmwareStep& s) {
  const auto& x = s.input(0);
  const auto axis = s.call.axis("axis", x.size());
  const auto split = host::split_at(std::span<const ne::Expr>(x), axis);
  return {"dlavm::runtime::bias_add",
          {FirmwareArg::input(0), FirmwareArg::input(1), FirmwareArg::output(),
           FirmwareArg::dim(split.outer), FirmwareArg::dim(split.extent),
           FirmwareArg::dim(split.inner)}};
}

inline FirmwareCall clip_firmware(const FirmwareStep& s) {
  const auto p = clip_params(s.call.attrs);
  FirmwareCall c = elements_call("dlavm::runtime::clip", s, 1);
  if (s.call.type(0).dtype.is_float()) {
    c.args.push_back(FirmwareArg::real(static_cast<float>(p.lo)));
    c.args.push_back(FirmwareArg::real(static_cast<float>(p.hi)));
  } else {
    const auto [lo, hi] = host::clip_int_bounds(p, s.call.type(0).dtype, "clip");
    c.args.push_back(FirmwareArg::typed(0, lo));
    c.args.push_back(FirmwareArg::typed(0, hi));
  }
  return c;
}

}  // namespace detail

DLAVM_INLINE void add_elementwise_ops(OpRegistry& ops) {
  for (const host::BinaryOp& op : host::kBinaryOps) ops.add(detail::binary_record(op));
  ops.add({.name = "bias_add",
           .min_args = 2,
           .max_args = 2,
           .attrs = detail::bias_add_schema().specs(),
           .type_rule = detail::bias_add_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::bias_add(*a[0], *a[1], bias_add_params(attrs));
               },
           .firmware = {.call = detail::bias_add_firmware}});
  ops.add({.name = "relu",
           .type_rule = detail::same_type_as_input,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::relu(*a[0]); },
           .firmware = {.call = [](const FirmwareStep& s) {
             return detail::elements_call("dlavm::runtime::relu", s, 1);
           }}});
  ops.add({.name = "clip",
           .attrs = detail::clip_schema().specs(),
           .type_rule = detail::clip_type,
           .host_kernel = [](HostArgs a,
                             const Attrs& attrs) { return host::clip(*a[0], clip_params(attrs)); },
           .firmware = {.call = detail::clip_firmware}});
}

}  // namespace dlavm::graph
