// Graph ops dense and matmul: typed builders and their op records. Semantics: host/linear.hpp.
//
//   dense(x[..., K], w[N, K]) -> [..., N]
//   matmul(a[A..., M, K], b[B..., K, N]) -> [broadcast(A, B)..., M, N]
//   int8 x int8 -> int32, int32 x int32 -> int32 (wrap-around), float32 x float32 -> float32
//
//   auto y = graph::dense(x, graph::constant("w", w_array));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>

namespace dlavm::graph {

Expr dense(Expr x, Expr w);
Expr matmul(Expr a, Expr b);

// Adds the records of this family to `ops`.
void add_linear_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/linear-inl.hpp>
#endif
