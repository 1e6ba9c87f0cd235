// Host kernels for integer-only versions of transformer float ops, as an accelerator without
// floating point computes them (I-BERT's approach): integer_softmax. The arithmetic is
// runtime::integer_softmax's (runtime/kernels.hpp), which defines it step by step; this header
// adds the checks and the fixed point derived from the scores' scale.
//
//   integer_softmax(s int8, {axis = -1, scale = 0.125, causal = false}) -> int8, s's shape
//       probabilities in units of 1/127 of the scores s * scale along `axis` (at most 8191
//       keys); `causal`: the keys are dim `axis`, one of the last two, and the queries the
//       other, the last of the key positions (as causal_mask): query q of M sees keys up to
//       N - M + q, the others get 0.
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
#include <string_view>

namespace dlavm::host {

struct IntegerSoftmaxParams {
  std::int64_t axis = -1;
  double scale = 0.125;
  bool causal = false;
};

// The scales integer_exp_for accepts: the multiplier round(scale * log2(e) * 2^frac_bits) is
// in [32, 127] for some frac_bits in [7, 15].
inline constexpr double kMinIntegerSoftmaxScale = 31.5 / 32768 / 1.4426950408889634;
inline constexpr double kMaxIntegerSoftmaxScale = 127.5 / 128 / 1.4426950408889634;

// `who` starts the message ("%7 (integer_softmax)").
runtime::IntegerExp integer_exp_for(double scale, std::string_view who = "integer_softmax");
// The dim of a causal softmax's queries: the other of the last two dims than the keys' `axis`.
constexpr std::size_t integer_softmax_query_axis(std::size_t axis, std::size_t rank) {
  return axis + 1 == rank ? rank - 2 : rank - 1;
}
te::NDArray integer_softmax(const te::NDArray& s, const IntegerSoftmaxParams& p = {});

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/integer_ops-inl.hpp>
#endif
