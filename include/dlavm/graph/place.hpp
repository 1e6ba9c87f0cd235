// Placement for a target: graph::infer_type(fn, target) types every call (infer_type with
// target.ops), fuses VTA groups (graph::partition), folds what the groups' ALU would compute
// twice, and places each call: on VTA when it belongs to a VTA group, else on the host. The
// function it returns carries that placement (Function::placement), and graph::build uses it,
// so the placement printed is the one built; the printed calls are those that run:
//
//   fold: a rounding constant added after a constant bias (requantize to nearest, with only
//   additions between them) joins the bias, once, at placement: bias_add(x, b) ... requantize
//   (rounding="nearest", shift=s) becomes bias_add(x, %"b+2^(s-1)") ... requantize(rounding=
//   "floor"), the same values (the int32 additions commute) with an ALU pass fewer per tile.
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
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/graph/target.hpp>

#include <vector>

namespace dlavm::graph {

Function infer_type(const Function& fn, const Target& target, const Attrs& global = {});

// The workload of each VTA group of a placed function, in execution order.
std::vector<Workload> group_workloads(const Function& placed);
// The distinct workloads of a model's VTA kernels (each once, in the order they first run):
// what a tuner searches.
std::vector<Workload> workloads(const Function& fn, const Target& target);

// The workload of a VTA group.
Workload workload_of(const Group& g, const NodeNames& names);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/place-inl.hpp>
#endif
