// The graph passes of the VTA target, in order: what graph::infer_type(fn, target) runs, and
// so what graph::build runs on a function that is not placed yet. Each is a graph::Pass
// (graph/pass.hpp) with an entry point of its own, testable alone:
//
//   fold_batch_norm       graph::fold_batch_norm (graph/fold_batch_norm.hpp)
//   fold_scale_shift      graph::fold_scale_shift (graph/fold_scale_shift.hpp)
//   recognize_layer_norm  graph::recognize_layer_norm (graph/recognize_layer_norm.hpp)
//   recognize_gelu        graph::recognize_gelu (graph/recognize_gelu.hpp)
//   recognize_hard_swish  graph::recognize_hard_swish (graph/recognize_hard_swish.hpp)
//   type                  graph::detail::infer_types (graph/infer_type.hpp)
//   widen_accumulator_loads  graph::widen_accumulator_loads (graph/widen_accumulator_loads.hpp)
//   partition             graph::place (graph/partition.hpp)
//   fold_rounding         graph::fold_rounding (graph/fold_rounding.hpp)
//   layout                graph::assign_layouts (graph/assign_layouts.hpp)
//   match_states          graph::match_states (graph/match_states.hpp)
//
//   fmt::print("{}", graph::to_string(graph::default_passes()));   // docs/graph.md shows it
//   auto passes = graph::default_passes();
//   passes.insert(passes.begin(), {"my_rewrite", "...", my_rewrite});  // a rewrite of one's own
//   auto placed = graph::run_passes(fn, target, passes);
//   auto mod = graph::build(placed, target);                           // built as placed
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/pass.hpp>

#include <vector>

namespace dlavm::graph {

std::vector<Pass> default_passes();

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/pipeline-inl.hpp>
#endif
