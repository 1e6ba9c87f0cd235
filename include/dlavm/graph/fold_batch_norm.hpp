// The `fold_batch_norm` pass: a batch_norm whose input is a convolution or a dense layer with a
// constant float32 weight (and, between them, possibly a bias_add of a constant), read by the
// batch_norm alone, becomes that layer with its weight scaled per output channel and a bias,
// as exporters' inference graphs are meant to run:
//
//   batch_norm(conv2d(x, %w) [bias_add %b], %gamma, %beta, %mean, %var, epsilon)
//     -> bias_add(conv2d(x, %w'), %b')
//   s = gamma / sqrt(var + epsilon),  w'[o, ...] = w[o, ...] * s[o],  b' = (b - mean) * s + beta
//
// in float32 (b = 0 without a bias_add). dense(x, %w[N, K]) folds the same way, with the
// batch_norm along x's last dim. Every other batch_norm stays, an op the host runs. The pass
// needs no types; it runs first in graph::default_passes().
//
//   auto folded = graph::fold_batch_norm(fn, target);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function fold_batch_norm(const Function& fn, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/fold_batch_norm-inl.hpp>
#endif
