// Graph reduction ops (ONNX's ReduceSum, ReduceMean, ReduceMax, ReduceMin): typed builders and
// op records, one record per entry of host::kReduceOps. Semantics: host/reduce.hpp.
//
//   reduce_sum(x, axes = [], keepdims = 1), reduce_mean, reduce_max, reduce_min
//     axes: dims of x (negative from the end), each once; empty: every dim
//     -> x's dims with the reduced ones 1 (keepdims) or dropped; x's dtype
// Dims may be symbolic, reduced or kept. The host runs float32 and integers (a mean: integers
// of at most 32 bits); the firmware kernel is runtime::reduce<kind> over the merged dims.
//
//   auto pooled = graph::reduce_mean(x, {.axes = {2, 3}});   // [N, C, H, W] -> [N, C, 1, 1]
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/reduce.hpp>

namespace dlavm::graph {

// The call of the reduction of `kind` (host::reduce_op(kind).name).
Expr reduce(runtime::Reduce kind, Expr x, const host::ReduceParams& p = {});
Expr reduce_sum(Expr x, const host::ReduceParams& p = {});
Expr reduce_mean(Expr x, const host::ReduceParams& p = {});
Expr reduce_max(Expr x, const host::ReduceParams& p = {});
Expr reduce_min(Expr x, const host::ReduceParams& p = {});
// The parameters in a reduction call's (normalized) attributes.
host::ReduceParams reduce_params(const Attrs& attrs);

void add_reduce_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/reduce-inl.hpp>
#endif
