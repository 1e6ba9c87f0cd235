// The `channel_weights` pass: in a VTA group whose anchor's strategy can (AnchorStrategy::
// channel_weights), a constant bias is added by the GEMM core instead of the ALU. Its values
// become int8 weights against a constant input row (graph/layout.hpp's ChannelWeights layout),
// one GEMM micro-op per output tile where the ALU's ADD took an ALU pass of two cycles
// (vta::gemm_into_acc then moves those GEMMs into the accumulator). The values are the same:
// the weights add exactly the bias.
//
// An epilogue operand of kind Channel becomes ChannelWeights when:
//   - its value is a constant and every element lies within +-channel_weights_bound(BLOCK_IN)
//     (241,998 at VTA's default), which the int8 weights can add;
//   - a tile's BATCH rows fit a weight tile's BLOCK_OUT rows (the input row is read from one);
//   - the strategy still supports the group with the changed epilogue (its weight and input
//     buffers now hold the bias's tiles too).
// Anything else keeps its ALU ADD. The function must be placed (the `partition` pass) and the
// pass runs before `layout`, which gives the operand its layout; a pass that places the
// function again (`fold_rounding`) must run before it.
//
//   auto weighted = graph::channel_weights(graph::place(typed, target), target);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function channel_weights(const Function& placed, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/channel_weights-inl.hpp>
#endif
