// Definitions for graph/ops/logic.hpp: the records come from host's tables; the broadcasting
// ones share graph/ops/common.hpp's broadcast rule and firmware kernel with the binary ops.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/logic.hpp>
#include <dlavm/graph/printer.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace dlavm::graph {

namespace detail {

// TypeError unless input i is uint8, a boolean.
inline void require_boolean(const TypeCall& c, std::size_t i, std::string_view role) {
  if (c.type(i).dtype != DType::uint8())
    raise<TypeError>("{}: {} is {}; {} (a boolean: 0 or 1, any nonzero true)", c.label, c.arg(i),
                     c.type(i).dtype, role);
}

inline TensorType compare_type(const TypeCall& c) {
  c.require_same_dtype(0, 1);
  return {broadcast(c, 0, 1), DType::uint8()};
}

inline TensorType logical_type(const TypeCall& c) {
  for (std::size_t i = 0; i < c.size(); ++i) require_boolean(c, i, "logical ops take uint8");
  return {c.size() == 1 ? c.type(0).shape : broadcast(c, 0, 1), DType::uint8()};
}

inline TensorType where_type(const TypeCall& c) {
  require_boolean(c, 0, "the condition is uint8");
  c.require_same_dtype(1, 2);
  const auto ab = broadcast(c, 1, 2);
  return {broadcast(c, c.arg(0), c.type(0).shape, "the broadcast of inputs 1 and 2", ab),
          c.type(1).dtype};
}

inline const AttrSchema<host::IsInfParams>& is_inf_schema() {
  using P = host::IsInfParams;
  static const auto schema =
      AttrSchema<P>()
          .field("detect_positive", &P::detect_positive, "1: +inf is true; 0: it is false")
          .field("detect_negative", &P::detect_negative, "1: -inf is true; 0: it is false");
  return schema;
}

inline std::vector<AttrSpec> float_class_specs(runtime::FloatClass kind) {
  return kind == runtime::FloatClass::Inf ? is_inf_schema().specs() : std::vector<AttrSpec>{};
}

inline OpRecord compare_record(const host::CompareOp& op) {
  const runtime::Compare kind = op.kind;
  return {
      .name = std::string(op.name),
      .min_args = 2,
      .max_args = 2,
      .type_rule = compare_type,
      .host_kernel = [kind](HostArgs a, const Attrs&) { return host::compare(kind, *a[0], *a[1]); },
      .host_support = host_float32_or_integers,
      .firmware = broadcast_firmware(
          std::string(op.name),
          fmt::format("dlavm::runtime::compare<dlavm::runtime::Compare::{}>", op.enumerator),
          fmt::format("dlavm::runtime::compare_broadcast<dlavm::runtime::Compare::{}>",
                      op.enumerator),
          {"a_shape", "b_shape"})};
}

// runtime::logical<kind>(x, y, elements) of one operand (Not); of two, as the binary ops.
inline FirmwareKernel logical_firmware(const host::LogicalOp& op) {
  const auto function =
      fmt::format("dlavm::runtime::logical<dlavm::runtime::Logical::{}>", op.enumerator);
  if (runtime::arity(op.kind) == 1)
    return {.call = [function](const FirmwareStep& s) { return elements_call(function, s, 1); }};
  return broadcast_firmware(
      std::string(op.name), function,
      fmt::format("dlavm::runtime::logical_broadcast<dlavm::runtime::Logical::{}>", op.enumerator),
      {"a_shape", "b_shape"});
}

inline OpRecord logical_record(const host::LogicalOp& op) {
  const runtime::Logical kind = op.kind;
  const auto args = static_cast<std::size_t>(runtime::arity(kind));
  return {.name = std::string(op.name),
          .min_args = args,
          .max_args = args,
          .type_rule = logical_type,
          .host_kernel =
              [kind](HostArgs a, const Attrs&) {
                return a.size() == 1 ? host::logical(kind, *a[0])
                                     : host::logical(kind, *a[0], *a[1]);
              },
          .firmware = logical_firmware(op)};
}

// runtime::float_class<kind>(x, y, elements[, detect_positive, detect_negative]).
inline FirmwareCall float_class_firmware(const host::FloatClassOp& op, const FirmwareStep& s) {
  FirmwareCall c = elements_call(
      fmt::format("dlavm::runtime::float_class<dlavm::runtime::FloatClass::{}>", op.enumerator), s,
      1);
  if (op.kind == runtime::FloatClass::Inf) {
    const auto p = is_inf_schema().from_attrs(s.call.attrs);
    c.args.push_back(FirmwareArg::boolean(p.detect_positive));
    c.args.push_back(FirmwareArg::boolean(p.detect_negative));
  }
  return c;
}

inline OpRecord float_class_record(const host::FloatClassOp& op) {
  const runtime::FloatClass kind = op.kind;
  return {
      .name = std::string(op.name),
      .attrs = float_class_specs(kind),
      .type_rule = [](const TypeCall& c) -> TensorType {
        return {c.type(0).shape, DType::uint8()};
      },
      .host_kernel =
          [kind](HostArgs a, const Attrs& attrs) {
            return host::float_class(kind, *a[0],
                                     kind == runtime::FloatClass::Inf
                                         ? is_inf_schema().from_attrs(attrs)
                                         : host::IsInfParams{});
          },
      .host_support = host_float32_only,
      .firmware = {.call = [op](const FirmwareStep& s) { return float_class_firmware(op, s); }}};
}

}  // namespace detail

DLAVM_INLINE host::IsInfParams is_inf_params(const Attrs& attrs) {
  return detail::is_inf_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr compare(runtime::Compare kind, Expr a, Expr b) {
  return call(std::string(host::compare_op(kind).name), {std::move(a), std::move(b)});
}
DLAVM_INLINE Expr equal(Expr a, Expr b) { return compare(runtime::Compare::Equal, a, b); }
DLAVM_INLINE Expr not_equal(Expr a, Expr b) { return compare(runtime::Compare::NotEqual, a, b); }
DLAVM_INLINE Expr greater(Expr a, Expr b) { return compare(runtime::Compare::Greater, a, b); }
DLAVM_INLINE Expr greater_equal(Expr a, Expr b) {
  return compare(runtime::Compare::GreaterEqual, a, b);
}
DLAVM_INLINE Expr less(Expr a, Expr b) { return compare(runtime::Compare::Less, a, b); }
DLAVM_INLINE Expr less_equal(Expr a, Expr b) { return compare(runtime::Compare::LessEqual, a, b); }

DLAVM_INLINE Expr logical(runtime::Logical kind, Expr a, Expr b) {
  if (runtime::arity(kind) != 2)
    raise<ValueError>("graph::logical: '{}' takes {} operand, given 2", host::logical_op(kind).name,
                      runtime::arity(kind));
  return call(std::string(host::logical_op(kind).name), {std::move(a), std::move(b)});
}
DLAVM_INLINE Expr logical(runtime::Logical kind, Expr x) {
  if (runtime::arity(kind) != 1)
    raise<ValueError>("graph::logical: '{}' takes {} operands, given 1",
                      host::logical_op(kind).name, runtime::arity(kind));
  return call(std::string(host::logical_op(kind).name), {std::move(x)});
}
DLAVM_INLINE Expr logical_and(Expr a, Expr b) { return logical(runtime::Logical::And, a, b); }
DLAVM_INLINE Expr logical_or(Expr a, Expr b) { return logical(runtime::Logical::Or, a, b); }
DLAVM_INLINE Expr logical_xor(Expr a, Expr b) { return logical(runtime::Logical::Xor, a, b); }
DLAVM_INLINE Expr logical_not(Expr x) { return logical(runtime::Logical::Not, std::move(x)); }

DLAVM_INLINE Expr where(Expr cond, Expr a, Expr b) {
  return call("where", {std::move(cond), std::move(a), std::move(b)});
}

DLAVM_INLINE Expr is_nan(Expr x) { return call("is_nan", {std::move(x)}); }
DLAVM_INLINE Expr is_inf(Expr x, const host::IsInfParams& p) {
  return call("is_inf", {std::move(x)}, detail::is_inf_schema().to_attrs(p));
}

DLAVM_INLINE void add_logic_ops(OpRegistry& ops) {
  for (const host::CompareOp& op : host::kCompareOps) ops.add(detail::compare_record(op));
  for (const host::LogicalOp& op : host::kLogicalOps) ops.add(detail::logical_record(op));
  ops.add({.name = "where",
           .min_args = 3,
           .max_args = 3,
           .type_rule = detail::where_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::where(*a[0], *a[1], *a[2]); },
           .host_support = detail::host_float32_or_integers,
           .firmware = detail::broadcast_firmware("where", "dlavm::runtime::where",
                                                  "dlavm::runtime::where_broadcast",
                                                  {"c_shape", "a_shape", "b_shape"})});
  for (const host::FloatClassOp& op : host::kFloatClassOps) ops.add(detail::float_class_record(op));
}

}  // namespace dlavm::graph
