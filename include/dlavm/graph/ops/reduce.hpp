// Graph reduction ops (ONNX's ReduceSum, ReduceMean, ReduceMax, ReduceMin): typed builders and
// op records, one record per entry of host::kReduceOps. Semantics: host/reduce.hpp.
//
//   reduce_sum(x, axes = [], keepdims = 1), reduce_mean, reduce_max, reduce_min
//     axes: dims of x (negative from the end), each once; empty: every dim
//     -> x's dims with the reduced ones 1 (keepdims) or dropped; x's dtype
//   argmax(x, axis = 0, keepdims = 1, select_last_index = 0), argmin
//     axis: a dim of x (negative from the end), not of the constant 0
//     -> x's dims with the axis 1 (keepdims) or dropped; int64
// Dims may be symbolic, reduced or kept. The host runs float32 and integers (a mean: integers
// of at most 32 bits); the firmware kernel is runtime::reduce<kind> over the merged dims, and
// runtime::arg_reduce<kind> over x as [outer, extent, inner] around the axis (one record per
// entry of host::kArgReduceOps).
//
//   auto pooled = graph::reduce_mean(x, {.axes = {2, 3}});   // [N, C, H, W] -> [N, C, 1, 1]
//   auto label = graph::argmax(logits, {.axis = -1, .keepdims = false});   // [N] int64
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
// The call of the arg reduction of `kind` (host::arg_reduce_op(kind).name).
Expr arg_reduce(runtime::ArgReduce kind, Expr x, const host::ArgReduceParams& p = {});
Expr argmax(Expr x, const host::ArgReduceParams& p = {});
Expr argmin(Expr x, const host::ArgReduceParams& p = {});
host::ArgReduceParams arg_reduce_params(const Attrs& attrs);

void add_reduce_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/reduce-inl.hpp>
#endif
