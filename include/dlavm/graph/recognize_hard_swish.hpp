// The `recognize_hard_swish` pass: hard swish written out in element-wise ops, as Paddle's
// exporter and PyTorch's before opset 14 write it, becomes one hard_swish:
//
//   y = x * clip(x + 3, 0, 6) / 6          (the division a product with 1/6 too, in any order
//   y = x * (clip(x + 3, 0, 6) / 6)         and grouping; the sum's terms either way round)
//   y = x * hard_sigmoid(x, alpha = 1/6, beta = 0.5)
//     -> hard_swish(x)
//
// when the constants are float32 scalars within 1e-5 of 3, 0, 6 and 1/6 (0.5), and every value
// between x and y is read inside the pattern only. hard_swish computes
// x * max(0, min(1, x / 6 + 0.5)) in float32: the same up to rounding. One call for four saves
// three passes over the tensor (a mobile CNN has one after most convolutions). It needs no
// types.
//
//   auto fused = graph::recognize_hard_swish(fn, target);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function recognize_hard_swish(const Function& fn, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/recognize_hard_swish-inl.hpp>
#endif
