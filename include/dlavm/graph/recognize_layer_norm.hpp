// The `recognize_layer_norm` pass: layer normalization written out in element-wise ops, as
// exporters write it before ONNX had LayerNormalization (opset 17), becomes one layer_norm:
//
//   m = reduce_mean(x, axes, keepdims = 1);  d = x - m
//   v = reduce_mean(pow(d, 2) | d * d, axes, keepdims = 1)
//   y = d / sqrt(v + epsilon) * gamma + beta
//     -> layer_norm(x, gamma, beta, {axis = -k, epsilon})
//
// when the axes are the last k dims (negative, or positive on a typed x), epsilon, gamma and
// beta float32 constants (gamma and beta of k dims), and every value between x and y is read
// inside the pattern only; the products and sums commute. Without `+ beta` the bias is zeros.
// The result computes the same in float32 up to rounding: layer_norm multiplies by the
// reciprocal of the square root where the written form divides. It needs no types.
//
//   auto fused = graph::recognize_layer_norm(fn, target);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function recognize_layer_norm(const Function& fn, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/recognize_layer_norm-inl.hpp>
#endif
