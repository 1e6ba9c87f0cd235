// Placement for a target: graph::infer_type(fn, target) runs the target's graph passes
// (graph::default_passes(), graph/pipeline.hpp): it types every call, fuses VTA groups and
// places each call (on VTA when it belongs to a VTA group, else on the host), folds what the
// groups' ALU would compute twice, gives each VTA group its packed layouts, and finds the
// growing states to hold packed. The function it returns carries that placement
// (Function::placement), and graph::build uses it, so the placement printed is the one built;
// the printed calls are those that run.
//
//   auto typed = graph::infer_type(fn, target);
//   fmt::print("{}", typed);   // %0 = vta.conv2d(%x, %w) /* ret=(...), dtype=int32, device=vta */
//   for (const auto& w : graph::workloads(fn, target)) fmt::print("{}\n", graph::to_string(w));
//
// A call neither device runs is a TypeError giving each device's reason.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/pipeline.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/graph/target.hpp>

#include <vector>

namespace dlavm::graph {

// `global` holds options for the whole function; none are defined yet, so any key is an error.
Function infer_type(const Function& fn, const Target& target, const Attrs& global = {});

// The workload of each VTA group of a placed function, in execution order.
std::vector<Workload> group_workloads(const Function& placed);
// The distinct workloads of a model's VTA kernels (each once, in the order they first run):
// what a tuner searches.
std::vector<Workload> workloads(const Function& fn, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/place-inl.hpp>
#endif
