// Definitions for graph/ops/reduce.hpp: one schema for every reduction; the type rule and the
// kernels share host::reduced_dims, host::reduced_shape and host::merge_reduction.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/reduce.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>

#include <fmt/format.h>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dlavm::graph {

namespace detail {

inline const AttrSchema<host::ReduceParams>& reduce_schema() {
  using P = host::ReduceParams;
  static const auto schema =
      AttrSchema<P>()
          .field("axes", &P::axes, "the dims reduced (negative: from the end); empty: every dim")
          .field("keepdims", &P::keepdims, "1: the reduced dims stay, as 1s; 0: they are dropped");
  return schema;
}

// Which dims of input 0 the call reduces; ValueError naming the input and its shape.
inline std::vector<bool> reduced_dims(const TypeCall& c) {
  const auto& x = c.type(0).shape;
  return host::reduced_dims(params_of(c, reduce_schema()).axes, x.size(), c.label,
                            fmt::format("{} {}", c.arg(0), shape_text(x)));
}

inline TensorType reduce_type(const TypeCall& c) {
  const auto keepdims = params_of(c, reduce_schema()).keepdims;
  return {host::reduced_shape(std::span(c.type(0).shape), reduced_dims(c), keepdims),
          c.type(0).dtype};
}

// Input 0's dims as runtime::reduce walks them, simplified.
inline host::MergedReduction<ne::Expr> merged_dims(const TypeCall& c) {
  std::vector<ne::Expr> x;
  for (const auto& d : c.type(0).shape) x.push_back(ne::simplify(d));
  auto m = host::merge_reduction(std::span<const ne::Expr>(x), reduced_dims(c));
  for (auto& d : m.shape) d = ne::simplify(d);
  return m;
}

inline std::optional<std::string> reduce_support(runtime::Reduce kind, const TypeCall& c) {
  if (auto why = host_float32_or_integers(c)) return why;
  const DType t = c.type(0).dtype;
  if (kind == runtime::Reduce::Mean && t.is_integral() && t.bits() > 32)
    return fmt::format("averages integers of at most 32 bits, and {} is {}", c.arg(0), t);
  const std::size_t groups = merged_dims(c).shape.size();
  if (groups > host::kMaxReduceGroups)
    return fmt::format("{} {} makes {} groups of dims kept and reduced in turn; at most {}",
                       c.arg(0), shape_text(c.type(0).shape), groups, host::kMaxReduceGroups);
  return std::nullopt;
}

// runtime::reduce<kind>(x, y, shape, reduced, rank) over the merged dims.
inline FirmwareCall reduce_firmware(runtime::Reduce kind, const FirmwareStep& s) {
  const auto m = merged_dims(s.call);
  FirmwareLocal shape{"shape", "std::int64_t", true, {}}, reduced{"reduced", "bool", true, {}};
  for (std::size_t k = 0; k < m.shape.size(); ++k) {
    shape.items.push_back(FirmwareArg::dim(m.shape[k]));
    reduced.items.push_back(FirmwareArg::boolean(m.reduced[k]));
  }
  return {fmt::format("dlavm::runtime::reduce<dlavm::runtime::Reduce::{}>",
                      host::reduce_op(kind).enumerator),
          {FirmwareArg::input(0), FirmwareArg::output(), FirmwareArg::local("shape"),
           FirmwareArg::local("reduced"),
           FirmwareArg::integer(static_cast<std::int64_t>(m.shape.size()))},
          {std::move(shape), std::move(reduced)}};
}

inline OpRecord reduce_record(const host::ReduceOp& op) {
  const runtime::Reduce kind = op.kind;
  return {.name = std::string(op.name),
          .attrs = reduce_schema().specs(),
          .type_rule = reduce_type,
          .host_kernel =
              [kind](HostArgs a, const Attrs& attrs) {
                return host::reduce(kind, *a[0], reduce_schema().from_attrs(attrs));
              },
          .host_support = [kind](const TypeCall& c) { return reduce_support(kind, c); },
          .firmware = {.call = [kind](const FirmwareStep& s) { return reduce_firmware(kind, s); }}};
}

inline const AttrSchema<host::ArgReduceParams>& arg_reduce_schema() {
  using P = host::ArgReduceParams;
  static const auto schema =
      AttrSchema<P>()
          .field("axis", &P::axis, "the dim searched (negative: from the end)")
          .field("keepdims", &P::keepdims, "1: the axis stays, as a 1; 0: it is dropped")
          .field("select_last_index", &P::select_last_index,
                 "1: of equal elements (or NaNs) the last; 0: the first");
  return schema;
}

// The axis of input 0, normalized; ShapeError when its dim can be 0 (a growing state's), where
// no index is there to pick.
inline std::size_t arg_reduce_axis(const TypeCall& c) {
  const std::size_t axis = c.axis("axis", c.type(0).ndim());
  const ne::Expr& d = c.type(0).shape[axis];
  if (!ne::can_prove(d >= 1))
    raise<ShapeError>(
        "{}: {} {} may have no element along the axis (dim {}, `{}`, can be {}) to pick an index "
        "of",
        c.label, c.arg(0), shape_text(c.type(0).shape), axis, d, ne::bounds(d).min);
  return axis;
}

inline TensorType arg_reduce_type(const TypeCall& c) {
  const auto p = params_of(c, arg_reduce_schema());
  return {host::arg_reduced_shape(std::span(c.type(0).shape), arg_reduce_axis(c), p.keepdims),
          DType::int64()};
}

// runtime::arg_reduce<kind>(x, y, outer, extent, inner, select_last).
inline FirmwareCall arg_reduce_firmware(runtime::ArgReduce kind, const FirmwareStep& s) {
  const auto split = host::split_at(std::span<const ne::Expr>(s.input(0)), arg_reduce_axis(s.call));
  return {fmt::format("dlavm::runtime::arg_reduce<dlavm::runtime::ArgReduce::{}>",
                      host::arg_reduce_op(kind).enumerator),
          {FirmwareArg::input(0), FirmwareArg::output(), FirmwareArg::dim(split.outer),
           FirmwareArg::dim(split.extent), FirmwareArg::dim(split.inner),
           FirmwareArg::boolean(arg_reduce_schema().from_attrs(s.call.attrs).select_last_index)}};
}

inline OpRecord arg_reduce_record(const host::ArgReduceOp& op) {
  const runtime::ArgReduce kind = op.kind;
  return {
      .name = std::string(op.name),
      .attrs = arg_reduce_schema().specs(),
      .type_rule = arg_reduce_type,
      .host_kernel =
          [kind](HostArgs a, const Attrs& attrs) {
            return host::arg_reduce(kind, *a[0], arg_reduce_schema().from_attrs(attrs));
          },
      .host_support = host_float32_or_integers,
      .firmware = {.call = [kind](const FirmwareStep& s) { return arg_reduce_firmware(kind, s); }}};
}

}  // namespace detail

DLAVM_INLINE host::ArgReduceParams arg_reduce_params(const Attrs& attrs) {
  return detail::arg_reduce_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr arg_reduce(runtime::ArgReduce kind, Expr x, const host::ArgReduceParams& p) {
  return call(std::string(host::arg_reduce_op(kind).name), {std::move(x)},
              detail::arg_reduce_schema().to_attrs(p));
}
DLAVM_INLINE Expr argmax(Expr x, const host::ArgReduceParams& p) {
  return arg_reduce(runtime::ArgReduce::Max, std::move(x), p);
}
DLAVM_INLINE Expr argmin(Expr x, const host::ArgReduceParams& p) {
  return arg_reduce(runtime::ArgReduce::Min, std::move(x), p);
}

DLAVM_INLINE host::ReduceParams reduce_params(const Attrs& attrs) {
  return detail::reduce_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr reduce(runtime::Reduce kind, Expr x, const host::ReduceParams& p) {
  return call(std::string(host::reduce_op(kind).name), {std::move(x)},
              detail::reduce_schema().to_attrs(p));
}
DLAVM_INLINE Expr reduce_sum(Expr x, const host::ReduceParams& p) {
  return reduce(runtime::Reduce::Sum, std::move(x), p);
}
DLAVM_INLINE Expr reduce_mean(Expr x, const host::ReduceParams& p) {
  return reduce(runtime::Reduce::Mean, std::move(x), p);
}
DLAVM_INLINE Expr reduce_max(Expr x, const host::ReduceParams& p) {
  return reduce(runtime::Reduce::Maximum, std::move(x), p);
}
DLAVM_INLINE Expr reduce_min(Expr x, const host::ReduceParams& p) {
  return reduce(runtime::Reduce::Minimum, std::move(x), p);
}

DLAVM_INLINE void add_reduce_ops(OpRegistry& ops) {
  for (const host::ReduceOp& op : host::kReduceOps) ops.add(detail::reduce_record(op));
  for (const host::ArgReduceOp& op : host::kArgReduceOps) ops.add(detail::arg_reduce_record(op));
}

}  // namespace dlavm::graph
