// graph::build: a function compiled for a target into a graph::Module. What to build is
// decided by the graph passes (graph/pipeline.hpp); build carries it out, making no decision
// of its own:
//   the passes               BuildOptions::passes (graph::default_passes(), what
//                            infer_type(fn, target) runs): types, fuses VTA groups (anchor +
//                            epilogue), places every call, gives each VTA group its layouts,
//                            finds the states to hold packed; a function placed for this
//                            target (by infer_type or graph::run_passes) is built with the
//                            placement it carries, so what was printed is what is built
//   per VTA group            its Workload; the anchor's strategy gives the knob space, the
//                            Chooser picks the knobs, the strategy declares the kernel and
//                            its schedule; vta::build compiles it (with a second tiling
//                            for the rows' minimum, BuildOptions::specialize_min_rows)
//   layout steps             each value a VTA group reads is packed in the layout the pass
//                            gave it (constants now, at build time; others by a pack step on
//                            the host), and each value a host call or the caller reads is
//                            unpacked after VTA: conversions only at the boundaries, so
//                            consecutive VTA groups pass packed values to each other; a state
//                            held packed gets an append step instead
//
//   auto mod = graph::build(fn, target, {.name = "resnet18"});
//   auto out = graph::Executor(mod, dev).run({{"data", image}});
//
// Errors are those of infer_type and the strategies (a symbolic dim without a usable
// maximum), CapacityError when no tiling of a VTA group fits its SRAMs, and ValueError for a
// placed function whose passes lacked `layout`.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/pass.hpp>
#include <dlavm/graph/pipeline.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/strategy.hpp>
#include <dlavm/graph/target.hpp>

#include <memory>
#include <string>

namespace dlavm::graph {

struct BuildOptions {
  std::string name = "main";
  // Chooses the knobs of each VTA kernel's schedule; null: the default Chooser (each
  // strategy's least estimated cost).
  std::shared_ptr<const Chooser> chooser = nullptr;
  // How the module lays out its memory (graph::plan_memory).
  PlanOptions plan = {};
  // For a VTA kernel whose rows are symbolic (AnchorStrategy::row_dims), a program with two
  // tilings: the chosen one, and one chosen for the rows' dims at their minima (a decode
  // step's one token), used when the dims take those values. False: one tiling serves all.
  bool specialize_min_rows = true;
  // The graph passes a function that is not placed for the target goes through first
  // (graph/pipeline.hpp); a function placed already is built as its placement says.
  std::vector<Pass> passes = default_passes();
};

Module build(const Function& fn, const Target& target, const BuildOptions& options = {});

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/build-inl.hpp>
#endif
