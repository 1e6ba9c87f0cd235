// Host kernels for integer-only versions of transformer float ops, as an accelerator without
// floating point computes them (I-BERT's approach): integer_softmax. The arithmetic is
// runtime::integer_softmax's (runtime/kernels.hpp), which defines it step by step; this header
// adds the checks and the fixed point derived from the scores' scale.
//
//   integer_softmax(s int8, {axis = -1, scale = 0.125, causal = false}) -> int8, s's shape
//       probabilities in units of 1/127 of the scores s * scale along `axis` (at most 8191
//       keys); `causal`: the keys are dim `axis`, one of the last two, and the queries the
//       other, the last of the key positions (as causal_mask): query q of M sees keys up to
//       N - M + q, the others get 0. `queries = Before` puts the queries in the dim just before
//       the keys instead (any axis but the first): scores [.., M, N, H] with keys along -2 and
//       independent rows (heads) in the last dim, the layout VTA's ALU normalizes.
//   integer_softmax_exp(s int8, params) -> int8, s's shape: the same softmax's first half,
//       each visible key's exponential in units of 1/127 of its row's largest (the max's is
//       127), rounded; 0 for the keys a causal row does not see
//   integer_softmax_normalize(e int8, {axis, causal, queries}) -> int8: the second half, the
//       probabilities of exponentials e along `axis` (the scale unused). Composed, the two
//       keep each exponential as int8 in between, so that an accelerator computes it once
//       and keeps it in DRAM (runtime/kernels.hpp); the price is precision: within 1.3 units
//       of the exact softmax on rows of random scores, where integer_softmax is within one,
//       but each exponential's rounding (up to half a unit of the row's largest) adds up in
//       the sum: a long row of keys 5 to 6 nats below its largest loses them (2,048 keys: a
//       probability of 15 becomes 127; tests/host)
//   integer_context_normalize(context int32 [.., M, D], e int8 [.., M, N], {shift = 7}) -> int8
//       [.., M, D]: an attention's context with the softmax's normalization deferred past
//       probabilities . V: `context` the product of integer_softmax_exp's exponentials e (a row
//       of N keys a query, the leading dims context's) by V, each row normalized once by the
//       reciprocal of its exponentials' sum and requantized by `shift`, as the context of
//       integer_softmax_normalize's probabilities is, without rounding each probability to
//       int8 (runtime::integer_context_normalize)
//   integer_exp_for(scale): the fixed point of x * scale * log2(e) (runtime::IntegerExp);
//       ValueError when scale is outside [min_integer_softmax_scale, max_...] (the exponent's
//       multiplier would not fit the 7 bits VTA's ALU multiplies by, or lose precision)
//
//   auto p = host::integer_softmax(scores, {.axis = -1, .scale = 0.125});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace dlavm::host {

// Where a causal softmax's queries are: the other of the last two dims than the keys, or the
// dim just before the keys.
enum class CausalQueries : std::uint8_t { Other, Before };

struct IntegerSoftmaxParams {
  std::int64_t axis = -1;
  double scale = 0.125;
  bool causal = false;
  CausalQueries queries = CausalQueries::Other;
};

// The scales integer_exp_for accepts: the multiplier round(scale * log2(e) * 2^frac_bits) is
// in [32, 127] for some frac_bits in [7, 15].
inline constexpr double kMinIntegerSoftmaxScale = 31.5 / 32768 / 1.4426950408889634;
inline constexpr double kMaxIntegerSoftmaxScale = 127.5 / 128 / 1.4426950408889634;

// `who` starts the message ("%7 (integer_softmax)").
runtime::IntegerExp integer_exp_for(double scale, std::string_view who = "integer_softmax");
// The dim of a causal softmax's queries (`axis` the keys' dim, valid for `where`: one of the
// last two dims for Other, not the first for Before): the other of the last two dims, or the
// dim before the keys.
constexpr std::size_t integer_softmax_query_axis(std::size_t axis, std::size_t rank,
                                                 CausalQueries where = CausalQueries::Other) {
  if (where == CausalQueries::Before) return axis - 1;
  return axis + 1 == rank ? rank - 2 : rank - 1;
}
// Where runtime::integer_softmax finds a causal softmax's query index: the dim of the queries
// and whether it is the inner index (the queries after the keys); nullopt when not causal. The
// axis must be valid for p.queries (integer_softmax_causal_axis_error).
struct CausalQueryDim {
  std::size_t axis;
  bool inner;
};
constexpr std::optional<CausalQueryDim> integer_softmax_causal_queries(
    const IntegerSoftmaxParams& p, std::size_t axis, std::size_t rank) {
  if (!p.causal) return std::nullopt;
  const std::size_t q = integer_softmax_query_axis(axis, rank, p.queries);
  return CausalQueryDim{q, q > axis};
}
// Why a causal softmax cannot put its keys along `axis` of a rank-`rank` value with its queries
// `where`, or nullptr.
constexpr const char* integer_softmax_causal_axis_error(std::size_t axis, std::size_t rank,
                                                        CausalQueries where) {
  if (where == CausalQueries::Before)
    return axis == 0 ? "the queries are the dim before the keys, and the keys are the first dim"
                     : nullptr;
  return rank < 2 || axis + 2 < rank
             ? "the keys are one of the last two dims, the queries the other"
             : nullptr;
}
te::NDArray integer_softmax(const te::NDArray& s, const IntegerSoftmaxParams& p = {});
te::NDArray integer_softmax_exp(const te::NDArray& s, const IntegerSoftmaxParams& p = {});
te::NDArray integer_softmax_normalize(const te::NDArray& e, const IntegerSoftmaxParams& p = {});

// The largest shift integer_context_normalize takes (its rounding constant 2^(10 + shift) and
// the shift by 11 + shift stay within 64 bits).
inline constexpr std::int64_t kMaxContextShift = 31;
struct ContextNormalizeParams {
  std::int64_t shift = 7;  // the requantization of the context, in [0, kMaxContextShift]
};
te::NDArray integer_context_normalize(const te::NDArray& context, const te::NDArray& e,
                                      const ContextNormalizeParams& p = {});

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/integer_ops-inl.hpp>
#endif
