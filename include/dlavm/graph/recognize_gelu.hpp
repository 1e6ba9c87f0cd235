// The `recognize_gelu` pass: GELU written out in element-wise ops, as exporters write it
// before ONNX had Gelu (opset 20), becomes one gelu (its erf form):
//
//   y = x * 0.5 * (1 + erf(x / sqrt(2)))     (x * (1 / sqrt(2)) too; the three factors of the
//                                             product in any order and grouping, the sum's two
//                                             terms either way round)
//     -> gelu(x)
//
// when the constants are float32 scalars within 1e-5 of 0.5, 1 and sqrt(2) (or 1 / sqrt(2)),
// and every value between x and y is read inside the pattern only. gelu computes
// 0.5 * x * (1 + erf(x * (1 / sqrt(2)))) in float32: the same up to rounding. It needs no
// types.
//
//   auto fused = graph::recognize_gelu(fn, target);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function recognize_gelu(const Function& fn, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/recognize_gelu-inl.hpp>
#endif
