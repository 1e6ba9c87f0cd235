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
//   auto p = graph::integer_softmax(scores, {.scale = 0.125, .causal = true});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/integer_ops.hpp>

namespace dlavm::graph {

Expr integer_softmax(Expr s, const host::IntegerSoftmaxParams& p = {});
// The parameters in an integer_softmax call's attributes.
host::IntegerSoftmaxParams integer_softmax_params(const Attrs& attrs);

void add_integer_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/integer_ops-inl.hpp>
#endif
