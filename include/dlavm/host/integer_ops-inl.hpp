// Definitions for host/integer_ops.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/integer_ops.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace dlavm::host {

DLAVM_INLINE runtime::IntegerExp integer_exp_for(double scale, std::string_view who) {
  if (!(scale >= kMinIntegerSoftmaxScale && scale < kMaxIntegerSoftmaxScale))
    raise<ValueError>(
        "{}: scale {} is outside [{:.6g}, {:.6g}): the exponent's multiplier "
        "round(scale * log2(e) * 2^frac_bits) must lie in [32, 127] for some frac_bits in [7, "
        "15] (VTA's ALU multiplies by at most 8 signed bits)",
        who, scale, kMinIntegerSoftmaxScale, kMaxIntegerSoftmaxScale);
  // the most fraction bits that keep the multiplier within 7 bits; the range checked above
  // makes it at least 32 (64 when a wider one did not fit)
  const double c = scale * 1.4426950408889634;
  const auto multiplier = [&](std::int32_t bits) {
    return static_cast<std::int32_t>(std::lround(std::ldexp(c, bits)));
  };
  std::int32_t bits = 15;
  while (bits > 7 && multiplier(bits) > 127) --bits;
  return {multiplier(bits), bits};
}

namespace detail {

// The rows of a softmax over `axis` of s, checked: [outer, extent, inner], and a causal one's
// query count and whether the queries are the inner index. Messages call s `arg`, holding `what`.
struct IntegerSoftmaxRows {
  AxisSplit<std::int64_t> split;
  std::int64_t queries = 0;
  bool query_inner = false;
};

inline IntegerSoftmaxRows integer_softmax_rows(const te::NDArray& s, const IntegerSoftmaxParams& p,
                                               std::string_view who, std::string_view arg,
                                               std::string_view what) {
  if (s.dtype() != DType::int8())
    raise<TypeError>("{}: {} is {}; the integer softmax takes int8 {}", who, arg, s.dtype(), what);
  const std::size_t axis = detail::axis_or_raise(who, "axis", p.axis, s.ndim());
  const auto& shape = s.shape();
  IntegerSoftmaxRows rows{split_at(shape, axis)};
  if (rows.split.extent > runtime::kIntegerSoftmaxMaxExtent)
    raise<ShapeError>("{}: {} keys along axis {} of {} {}; at most {} keep the sum in 32 bits", who,
                      rows.split.extent, axis, arg, detail::shape_str(shape),
                      runtime::kIntegerSoftmaxMaxExtent);
  if (const char* why =
          p.causal ? integer_softmax_causal_axis_error(axis, shape.size(), p.queries) : nullptr)
    raise<ValueError>("{}: a causal softmax's keys cannot be axis {} of {} {}: {}", who, axis, arg,
                      detail::shape_str(shape), why);
  if (const auto query = integer_softmax_causal_queries(p, axis, shape.size())) {
    rows.queries = shape[query->axis];
    rows.query_inner = query->inner;
    if (rows.queries > rows.split.extent)
      raise<ShapeError>(
          "{}: {} {} has {} queries and {} keys; a causal mask needs at least as many keys "
          "(the queries are the last positions)",
          who, arg, detail::shape_str(shape), rows.queries, rows.split.extent);
  }
  return rows;
}

}  // namespace detail

DLAVM_INLINE te::NDArray integer_softmax(const te::NDArray& s, const IntegerSoftmaxParams& p) {
  constexpr std::string_view who = "host::integer_softmax";
  if (s.dtype() != DType::int8())
    raise<TypeError>("{}: s is {}; the integer softmax takes int8 scores", who, s.dtype());
  const auto fixed = integer_exp_for(p.scale, who);
  const auto rows = detail::integer_softmax_rows(s, p, who, "s", "scores");
  te::NDArray y(s.dtype(), s.shape());
  if (y.size() == 0) return y;  // no rows, empty rows, or no queries
  runtime::integer_softmax(s.data().data(), y.data().data(), rows.split.outer, rows.split.extent,
                           rows.split.inner, fixed, rows.queries, rows.query_inner);
  return y;
}

DLAVM_INLINE te::NDArray integer_softmax_exp(const te::NDArray& s, const IntegerSoftmaxParams& p) {
  constexpr std::string_view who = "host::integer_softmax_exp";
  if (s.dtype() != DType::int8())
    raise<TypeError>("{}: s is {}; the integer softmax takes int8 scores", who, s.dtype());
  const auto fixed = integer_exp_for(p.scale, who);
  const auto rows = detail::integer_softmax_rows(s, p, who, "s", "scores");
  te::NDArray y(s.dtype(), s.shape());
  if (y.size() == 0) return y;
  runtime::integer_softmax_exp(s.data().data(), y.data().data(), rows.split.outer,
                               rows.split.extent, rows.split.inner, fixed, rows.queries,
                               rows.query_inner);
  return y;
}

DLAVM_INLINE te::NDArray integer_softmax_normalize(const te::NDArray& e,
                                                   const IntegerSoftmaxParams& p) {
  constexpr std::string_view who = "host::integer_softmax_normalize";
  const auto rows = detail::integer_softmax_rows(e, p, who, "e", "exponentials");
  te::NDArray y(e.dtype(), e.shape());
  if (y.size() == 0) return y;
  runtime::integer_softmax_normalize(e.data().data(), y.data().data(), rows.split.outer,
                                     rows.split.extent, rows.split.inner, rows.queries,
                                     rows.query_inner);
  return y;
}

DLAVM_INLINE te::NDArray integer_context_normalize(const te::NDArray& context, const te::NDArray& e,
                                                   const ContextNormalizeParams& p) {
  constexpr std::string_view who = "host::integer_context_normalize";
  if (context.dtype() != DType::int32())
    raise<TypeError>("{}: context is {}; it takes the int32 product of exponentials and V", who,
                     context.dtype());
  if (e.dtype() != DType::int8())
    raise<TypeError>("{}: e is {}; it takes int8 exponentials", who, e.dtype());
  const auto& c = context.shape();
  const auto& x = e.shape();
  if (c.size() < 2 || c.size() != x.size() || !std::equal(c.begin(), c.end() - 1, x.begin()))
    raise<ShapeError>(
        "{}: context {} and e {} differ before their last dim; they are [.., M, D] and [.., M, "
        "N] (a row of exponentials a row of the context)",
        who, detail::shape_str(c), detail::shape_str(x));
  if (x.back() > runtime::kIntegerSoftmaxMaxExtent)
    raise<ShapeError>("{}: e {} has {} keys; at most {} keep the sum in 32 bits", who,
                      detail::shape_str(x), x.back(), runtime::kIntegerSoftmaxMaxExtent);
  if (p.shift < 0 || p.shift > kMaxContextShift)
    raise<ValueError>("{}: shift {} is outside [0, {}]", who, p.shift, kMaxContextShift);
  te::NDArray y(DType::int8(), c);
  if (y.size() == 0) return y;
  runtime::integer_context_normalize(context.data().data(), e.data().data(), y.data().data(),
                                     static_cast<std::int64_t>(y.size()) / c.back(), x.back(),
                                     c.back(), static_cast<std::int32_t>(p.shift));
  return y;
}

}  // namespace dlavm::host
