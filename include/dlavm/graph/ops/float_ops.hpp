// Graph ops softmax, log_softmax, layer_norm, gelu, causal_mask and batch_norm: typed builders
// and op records. Semantics: host/float_ops.hpp. Their type rules take any dtype; the host runs
// them in float32 only, so until a device computes them in integers, infer_type rejects other
// dtypes as "no device supports".
//
//   softmax(x, axis = -1), log_softmax(x, axis = -1)
//   layer_norm(x, gamma, beta, axis = -1, epsilon = 1e-5): gamma, beta = the dims of x from axis
//   gelu(x)
//   causal_mask(x[..., M, N]): N provably >= M (the queries are the last M of N positions)
//   batch_norm(x, gamma, beta, mean, var, axis = 1, epsilon = 1e-5): the four [C], C = x's dim
//                                     at axis (graph's fold_batch_norm pass folds it away)
//
//   auto h = graph::gelu(graph::dense(graph::layer_norm(x, g, b), w));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/float_ops.hpp>

namespace dlavm::graph {

Expr softmax(Expr x, const host::SoftmaxParams& p = {});
Expr log_softmax(Expr x, const host::SoftmaxParams& p = {});
Expr layer_norm(Expr x, Expr gamma, Expr beta, const host::LayerNormParams& p = {});
Expr gelu(Expr x);
Expr causal_mask(Expr x);
Expr batch_norm(Expr x, Expr gamma, Expr beta, Expr mean, Expr var,
                const host::BatchNormParams& p = {});
host::BatchNormParams batch_norm_params(const Attrs& attrs);
// The parameters in a layer_norm call's attributes.
host::LayerNormParams layer_norm_params(const Attrs& attrs);

void add_float_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/float_ops-inl.hpp>
#endif
