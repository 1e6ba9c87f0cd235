// The `fold_rounding` pass: in a VTA group, a requantize that rounds to nearest adds 2^(s-1)
// before its shift, one ALU pass per tile; where a constant bias comes before it with only
// additions between, that constant joins the bias instead, once, at compile time (the int32
// additions commute, so the values are the same):
//
//   bias_add(x, %b) ... requantize(rounding="nearest", shift=s)
//     -> bias_add(x, %"b+2^(s-1)") ... requantize(rounding="floor", shift=s)
//
// One fold per group. The function must be placed (the `partition` pass); the one returned is
// placed again, its groups' epilogues one step shorter, with the biases the GEMM core adds, the
// layouts and the states held packed made again where the function had them (the pass may run
// after `channel_weights`, `layout` and `match_states`). It matches the two ops whose semantics it
// rewrites by name: bias_add's operand and requantize's `rounding` attribute.
//
//   auto folded = graph::fold_rounding(graph::place(typed, target), target);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function fold_rounding(const Function& placed, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/fold_rounding-inl.hpp>
#endif
