// Definitions for graph/ops/integer_ops.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/integer_ops.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <fmt/format.h>

#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::graph {

namespace detail {

inline const AttrSchema<host::IntegerSoftmaxParams>& integer_softmax_schema() {
  using P = host::IntegerSoftmaxParams;
  static const auto schema =
      AttrSchema<P>()
          .field("axis", &P::axis, "the dim of the keys, normalized over (negative: from the end)")
          .field("scale", &P::scale, "the real value of one unit of the int8 scores")
          .field("causal", &P::causal, "mask the keys after each query")
          .field("queries", &P::queries,
                 "a causal softmax's queries: the other of the last two dims, or the dim before "
                 "the keys",
                 {{"other", host::CausalQueries::Other}, {"before", host::CausalQueries::Before}});
  return schema;
}

// integer_softmax_normalize's: integer_softmax's but the scale, which it does not use.
inline const AttrSchema<host::IntegerSoftmaxParams>& integer_softmax_normalize_schema() {
  using P = host::IntegerSoftmaxParams;
  static const auto schema =
      AttrSchema<P>()
          .field("axis", &P::axis, "the dim of the keys, normalized over (negative: from the end)")
          .field("causal", &P::causal, "mask the keys after each query")
          .field("queries", &P::queries,
                 "a causal softmax's queries: the other of the last two dims, or the dim before "
                 "the keys",
                 {{"other", host::CausalQueries::Other}, {"before", host::CausalQueries::Before}});
  return schema;
}

inline const AttrSchema<host::ContextNormalizeParams>& integer_context_normalize_schema() {
  using P = host::ContextNormalizeParams;
  static const auto schema = AttrSchema<P>().field(
      "shift", &P::shift, "the right shift that requantizes the normalized context, in [0, 31]");
  return schema;
}

// integer_context_normalize's: int32 [.., M, D] and int8 [.., M, N] alike before their last
// dims, at most 8191 keys N; the context's shape, int8.
inline TensorType integer_context_normalize_type(const TypeCall& c) {
  const auto& context = c.type(0);
  const auto& e = c.type(1);
  if (context.dtype != DType::int32())
    raise<TypeError>("{}: {} is {}; it takes the int32 product of exponentials and V", c.label,
                     c.arg(0), context.dtype);
  if (e.dtype != DType::int8())
    raise<TypeError>("{}: {} is {}; it takes int8 exponentials", c.label, c.arg(1), e.dtype);
  c.require_min_rank(0, 2);
  c.require_rank(1, context.ndim());
  for (std::size_t k = 0; k + 1 < context.ndim(); ++k)
    c.require_equal(context.shape[k], fmt::format("dim {} of {}", k, c.arg(0)), e.shape[k],
                    fmt::format("dim {} of {}", k, c.arg(1)));
  if (ne::bounds(e.shape.back()).max > runtime::kIntegerSoftmaxMaxExtent)
    raise<ShapeError>("{}: {} has {} keys (at most {}); at most {} keep their sum in 32 bits",
                      c.label, c.arg(1), e.shape.back(), ne::bounds(e.shape.back()).max,
                      runtime::kIntegerSoftmaxMaxExtent);
  const auto p = params_of(c, integer_context_normalize_schema());
  if (p.shift < 0 || p.shift > host::kMaxContextShift)
    raise<ValueError>("{}: shift {} is outside [0, {}]", c.label, p.shift, host::kMaxContextShift);
  return {context.shape, DType::int8()};
}

// The type of integer_softmax and its two halves (`normalize`: the second, which has no scale).
inline TensorType integer_softmax_type(const TypeCall& c, bool normalize) {
  const auto& s = c.type(0);
  if (s.dtype != DType::int8())
    raise<TypeError>("{}: {} is {}; the integer softmax takes int8 {}", c.label, c.arg(0), s.dtype,
                     normalize ? "exponentials" : "scores");
  const auto p =
      params_of(c, normalize ? integer_softmax_normalize_schema() : integer_softmax_schema());
  if (!normalize) (void)host::integer_exp_for(p.scale, c.label);
  const std::size_t axis = c.axis("axis", s.ndim());
  const auto& keys = s.shape[axis];
  if (ne::bounds(keys).max > runtime::kIntegerSoftmaxMaxExtent)
    raise<ShapeError>(
        "{}: {} has {} keys along axis {} (at most {}); at most {} keep the sum of the "
        "exponentials in 32 bits",
        c.label, c.arg(0), keys, axis, ne::bounds(keys).max, runtime::kIntegerSoftmaxMaxExtent);
  if (p.causal) {
    if (const char* why = host::integer_softmax_causal_axis_error(axis, s.ndim(), p.queries))
      raise<ValueError>("{}: a causal softmax's keys cannot be axis {} of {} (rank {}): {}",
                        c.label, axis, c.arg(0), s.ndim(), why);
    const auto& queries = s.shape[host::integer_softmax_causal_queries(p, axis, s.ndim())->axis];
    if (!ne::can_prove(ne::simplify(keys - queries) >= 0))
      raise<ShapeError>(
          "{}: {} has {} keys (dim {}) and {} queries; a causal mask needs at least as many "
          "keys as queries (the queries are the last positions)",
          c.label, c.arg(0), keys, axis, queries);
  }
  return s;
}

}  // namespace detail

DLAVM_INLINE host::IntegerSoftmaxParams integer_softmax_params(const Attrs& attrs) {
  return detail::integer_softmax_schema().from_attrs(attrs);
}

DLAVM_INLINE host::IntegerSoftmaxParams integer_softmax_normalize_params(const Attrs& attrs) {
  return detail::integer_softmax_normalize_schema().from_attrs(attrs);
}

DLAVM_INLINE host::ContextNormalizeParams integer_context_normalize_params(const Attrs& attrs) {
  return detail::integer_context_normalize_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr integer_context_normalize(Expr context, Expr e,
                                            const host::ContextNormalizeParams& p) {
  return call("integer_context_normalize", {std::move(context), std::move(e)},
              detail::integer_context_normalize_schema().to_attrs(p));
}

DLAVM_INLINE Expr integer_softmax(Expr s, const host::IntegerSoftmaxParams& p) {
  return call("integer_softmax", {std::move(s)}, detail::integer_softmax_schema().to_attrs(p));
}

DLAVM_INLINE Expr integer_softmax_exp(Expr s, const host::IntegerSoftmaxParams& p) {
  return call("integer_softmax_exp", {std::move(s)}, detail::integer_softmax_schema().to_attrs(p));
}

DLAVM_INLINE Expr integer_softmax_normalize(Expr e, const host::IntegerSoftmaxParams& p) {
  return call("integer_softmax_normalize", {std::move(e)},
              detail::integer_softmax_normalize_schema().to_attrs(p));
}

namespace detail {

// runtime::integer_softmax or integer_softmax_exp (`function`): (x, y, outer, keys, inner,
// exponential, queries, queries inner); runtime::integer_softmax_normalize without the
// exponential.
inline FirmwareCall integer_softmax_firmware(const FirmwareStep& s, const char* function) {
  const auto& x = s.input(0);
  const bool normalize = std::string_view(function).ends_with("normalize");
  const auto p = normalize ? integer_softmax_normalize_params(s.call.attrs)
                           : integer_softmax_params(s.call.attrs);
  const auto axis = s.call.axis("axis", x.size());
  const auto split = host::split_at(std::span(x), axis);
  const auto query = host::integer_softmax_causal_queries(p, axis, x.size());
  std::vector<FirmwareArg> args{FirmwareArg::input(0), FirmwareArg::output(),
                                FirmwareArg::dim(split.outer), FirmwareArg::dim(split.extent),
                                FirmwareArg::dim(split.inner)};
  if (!normalize) {
    const auto fixed = host::integer_exp_for(p.scale);
    args.push_back(FirmwareArg::aggregate(
        "dlavm::runtime::IntegerExp",
        {FirmwareArg::integer(fixed.multiplier), FirmwareArg::integer(fixed.frac_bits)}));
  }
  args.push_back(FirmwareArg::dim(query ? x[query->axis] : ne::Expr(0)));
  args.push_back(FirmwareArg::boolean(query && query->inner));
  return {function, std::move(args)};
}

}  // namespace detail

DLAVM_INLINE void add_integer_ops(OpRegistry& ops) {
  // integer_softmax and its halves share their type rule, attributes (but the normalization's
  // scale) and firmware call; `host` is the host kernel, runtime::`name` the firmware's
  using Host = te::NDArray (*)(const te::NDArray&, const host::IntegerSoftmaxParams&);
  const auto add = [&](const std::string& name, Host host) {
    const bool normalize = name == "integer_softmax_normalize";
    ops.add(
        {.name = name,
         .attrs = normalize ? detail::integer_softmax_normalize_schema().specs()
                            : detail::integer_softmax_schema().specs(),
         .type_rule =
             [normalize](const TypeCall& c) { return detail::integer_softmax_type(c, normalize); },
         .host_kernel =
             [normalize, host](HostArgs a, const Attrs& attrs) {
               return host(*a[0], normalize ? integer_softmax_normalize_params(attrs)
                                            : integer_softmax_params(attrs));
             },
         .firmware = {.call = [function = "dlavm::runtime::" + name](const FirmwareStep& s) {
           return detail::integer_softmax_firmware(s, function.c_str());
         }}});
  };
  add("integer_softmax", &host::integer_softmax);
  add("integer_softmax_exp", &host::integer_softmax_exp);
  add("integer_softmax_normalize", &host::integer_softmax_normalize);
  // runtime::integer_context_normalize(context, e, y, rows, keys, dims, shift)
  ops.add({.name = "integer_context_normalize",
           .min_args = 2,
           .max_args = 2,
           .attrs = detail::integer_context_normalize_schema().specs(),
           .type_rule = &detail::integer_context_normalize_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::integer_context_normalize(*a[0], *a[1],
                                                        integer_context_normalize_params(attrs));
               },
           .firmware = {.call = [](const FirmwareStep& s) {
             const auto& context = s.input(0);
             return FirmwareCall{
                 "dlavm::runtime::integer_context_normalize",
                 {FirmwareArg::input(0), FirmwareArg::input(1), FirmwareArg::output(),
                  FirmwareArg::dim(element_count(std::span(context).first(context.size() - 1))),
                  FirmwareArg::dim(s.input(1).back()), FirmwareArg::dim(context.back()),
                  FirmwareArg::integer(integer_context_normalize_params(s.call.attrs).shift)}};
           }}});
}

}  // namespace dlavm::graph
