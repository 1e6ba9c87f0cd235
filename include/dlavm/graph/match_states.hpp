// The `match_states` pass: finds the growing states (a KV cache) that the module can hold
// packed, as the DRAM bytes of the weight VTA reads (graph::ModuleState::packed), so that a
// run appends its new positions in place instead of concatenating the whole state on the host
// and packing it again. A growing state qualifies by the structure of its update, not by the
// names of the ops in it:
//   - its next value appends rows to it along its growing dim: a call whose op says it is its
//     arguments one after another along that axis (OpRecord::concat_axis), of two arguments,
//     the state first; nothing else reads the state, and the next value has one reader
//     besides the state;
//   - that reader is a VTA kernel that holds it in matmul_weight layout (the layout pass's
//     Group::layouts; a weight is appended along K or N), or a host call whose op permutes its
//     dims (OpRecord::permutation), read only by such kernels, each in the same layout.
// Any other state stays an array, updated on the host.
//
//   auto laid_out = graph::assign_layouts(graph::place(typed, target), target);
//   auto matched = graph::match_states(laid_out, target);
//   for (const auto& h : matched.placement()->held) fmt::print("state {}\n", h.state);
//
// The function must have been through the `layout` pass; the one returned carries the states
// held packed in its placement (Partition::held).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function match_states(const Function& laid_out, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/match_states-inl.hpp>
#endif
