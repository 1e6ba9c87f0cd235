// graph::build: a function compiled for a target into a graph::Module. The pipeline, each
// step its own entry point:
//   infer_type(fn, target)   types and places every call (graph/target.hpp)
//   partition(typed, target) fuses VTA groups: anchor + epilogue (graph/partition.hpp)
//   per VTA group            the anchor's strategy declares the kernel and its schedule, with
//                            knobs from the ScheduleChooser; vta::build compiles it
//   layouts                  each value a VTA group reads is packed for it (constants now,
//                            at build time; others by a pack step on the host), and each
//                            value a host call or the caller reads is unpacked after VTA:
//                            conversions are inserted only at the boundaries, so consecutive
//                            VTA groups pass packed values to each other
//
//   auto mod = graph::build(fn, target, {.name = "resnet18"});
//   auto out = mod.run(dev, {{"data", image}});
//
// Errors are those of infer_type and the strategies (a symbolic dim without a usable
// maximum), and CapacityError when no tiling of a VTA group fits its SRAMs.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/strategy.hpp>
#include <dlavm/graph/target.hpp>

#include <memory>
#include <string>

namespace dlavm::graph {

struct BuildOptions {
  std::string name = "main";
  // The tilings of the VTA kernels; null: each strategy's default.
  std::shared_ptr<const ScheduleChooser> chooser = nullptr;
};

Module build(const Function& fn, const Target& target, const BuildOptions& options = {});

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/build-inl.hpp>
#endif
