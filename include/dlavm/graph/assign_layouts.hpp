// The `layout` pass: how each VTA group's kernel holds what it reads and writes, as its
// anchor's strategy lays them out (graph/strategy.hpp): each argument of the anchor in its
// packed layout (arg_layout), the result in result_layout, each epilogue operand as the result
// (a residual) or as a channel vector (a bias: [C/T, R, T]), and a result VTA returns as int32
// (Epilogue::int32_result) in byte planes. The function is placed (the `partition` pass); the
// one returned carries the layouts in its placement (Group::layouts). build then packs a value
// where a VTA group reads it in another layout than its producer left it, and unpacks where
// the host or the caller reads it (graph/build.hpp), so that consecutive VTA groups pass
// packed values to each other.
//
//   auto laid_out = graph::assign_layouts(graph::place(typed, target), target);
//   const auto& g = laid_out.placement()->groups[0];
//   fmt::print("{}\n", graph::to_string(g.layouts->inputs[0]));    // activation[1x16]
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function assign_layouts(const Function& placed, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/assign_layouts-inl.hpp>
#endif
