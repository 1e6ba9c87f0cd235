// Graph passes: every rewrite and analysis of a function before build is a Pass, one
// signature for all (a function and the target in, a function out), listed as data in a
// pipeline that can be printed, reordered, shortened and tested pass by pass, as Glow lists
// its FunctionPassPipeline and as vta::lower_passes lists lowering. What a pass learns that is
// not a node of the graph (the fused groups, their layouts, the states held packed) it attaches
// to the function it returns (Function::placement), for the passes after it and for build.
//
//   for (const auto& p : graph::default_passes()) fmt::print("{}\n", p.name);
//   auto placed = graph::run_passes(fn, target, graph::default_passes(),
//                                   {.after = [](const graph::Pass& p, const graph::Function& f) {
//                                      fmt::print("// after {}\n{}\n", p.name, f);
//                                    }});
//   fmt::print("{}", graph::to_string(graph::default_passes()));   // the numbered list
//
// The default pipeline (graph/pipeline.hpp) is graph::infer_type(fn, target)'s; a function
// run through another is built as its placement says (graph::build). Errors: a pass named in
// PassOptions::disabled that the pipeline lacks (ValueError listing the pipeline), and what
// each pass raises.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace dlavm::graph {

struct Target;

using PassFunction = std::function<Function(const Function&, const Target&)>;

struct Pass {
  std::string name{};     // "fold_rounding": what PassOptions::disabled and messages name
  std::string summary{};  // one line: what it does
  PassFunction run{};
};

struct PassOptions {
  // Called after each pass with the function it returned (printing it dumps the pipeline).
  std::function<void(const Pass&, const Function&)> after{};
  // Passes of the pipeline to skip, by name.
  std::vector<std::string> disabled{};
};

// Runs the passes in order, each on the function the one before returned.
Function run_passes(const Function& fn, const Target& target, std::span<const Pass> passes,
                    const PassOptions& options = {});

// The pipeline as a numbered list, a pass per line: "  1. type          types every call ...".
std::string to_string(std::span<const Pass> passes);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/pass-inl.hpp>
#endif
