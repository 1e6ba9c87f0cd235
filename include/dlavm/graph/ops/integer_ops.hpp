// Graph op integer_softmax: typed builder and op record. Semantics: host/integer_ops.hpp (the
// arithmetic step by step: runtime/kernels.hpp).
//
//   integer_softmax(s int8, axis = -1, scale = 0.125, causal = false, queries = "other")
//       -> int8, s's shape
//       probabilities in units of 1/127; at most 8191 keys along axis (its maximum, for a
//       symbolic dim); causal: the keys provably at least as many as the queries, which are
//       the other of the last two dims ("other", axis one of them) or the dim before the keys
//       ("before", any axis but the first)
//
//   integer_softmax_exp(s int8, axis, scale, causal, queries) -> int8, s's shape
//       the first half of the same softmax: each exponential in units of 1/127 of its row's
//       largest (host::integer_softmax_exp)
//   integer_softmax_normalize(e int8, axis = -1, causal = false, queries = "other") -> int8
//       the second half: the probabilities of those exponentials. Composed, a softmax whose
//       exponentials an accelerator computes once, at a price in precision: each rounded to
//       int8 in between (host/integer_ops.hpp: within 1.3 units of the exact softmax on random
//       rows, far more on a long row of small exponentials)
//   integer_context_normalize(context int32 [.., M, D], e int8 [.., M, N], shift = 7) -> int8
//       [.., M, D]
//       an attention's context with the softmax's normalization deferred past probabilities . V:
//       context the product of integer_softmax_exp's exponentials e by V, each row normalized
//       once by the reciprocal of its exponentials' sum, then requantized by `shift`
//       (host::integer_context_normalize): the leading dims context's and e's alike, at most
//       8191 keys N (its maximum), shift in [0, 31]
//
//   auto p = graph::integer_softmax(scores, {.scale = 0.125, .causal = true});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/integer_ops.hpp>

namespace dlavm::graph {

Expr integer_softmax(Expr s, const host::IntegerSoftmaxParams& p = {});
Expr integer_softmax_exp(Expr s, const host::IntegerSoftmaxParams& p = {});
// (p.scale unused)
Expr integer_softmax_normalize(Expr e, const host::IntegerSoftmaxParams& p = {});
Expr integer_context_normalize(Expr context, Expr e, const host::ContextNormalizeParams& p = {});
// The parameters in an integer_softmax or integer_softmax_exp call's attributes, and in an
// integer_softmax_normalize call's (the scale left at its default).
host::IntegerSoftmaxParams integer_softmax_params(const Attrs& attrs);
host::IntegerSoftmaxParams integer_softmax_normalize_params(const Attrs& attrs);
host::ContextNormalizeParams integer_context_normalize_params(const Attrs& attrs);

void add_integer_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/integer_ops-inl.hpp>
#endif
