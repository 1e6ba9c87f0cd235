// Epilogue rules: how an element-wise call joins a VTA group, as data the fusion pass
// (graph/partition.hpp) looks up by op name in graph::VtaStrategies, next to the anchors'
// strategies. A rule sees the group's state (its epilogue so far, the operands it reads, the
// dtype its value has in the graph) and the call, and either appends the call's ALU steps
// and operands or refuses, leaving the state as it was. What VTA's ALU can do (immediate
// ranges, shift widths) is decided here, from the configuration, not in the fusion pass.
//
//   bias_add(x, b)         b per output channel (int32), along the group's channel axis
//   add(x, y)              y of x's shape: int32, or cast(r, int32) of an int8 r, which is
//                          then loaded through VTA's ACC_8BIT path (the cast joins the group)
//   requantize(x, ...)     to int8, shift within the ALU's shift argument
//   relu(x), clip(x, ...)  bounds within the ALU's immediate
//   cast(x, int8)          the store's wrap-around; nothing may follow it in the group
//
//   for (const auto& [op, rule] : graph::default_epilogue_rules()) strategies.add_epilogue(op,
//   rule);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::graph {

// A VTA group's value as its epilogue grows.
struct FusionState {
  Epilogue epilogue;
  std::vector<Expr> operands;    // the values the epilogue reads, aligned with epilogue.inputs
  std::vector<Expr> absorbed;    // calls that join with the last one (a residual's cast)
  DType logical;                 // the dtype the group's value has in the graph
  bool wrapped = false;          // after cast(x, int8): the store's wrap must come last
  std::size_t channel_axis = 1;  // the result's axis of output channels
};

// The call a rule is asked about.
struct FusionCall {
  const CallNode& call;
  const Expr& expr;
  std::size_t chain;       // which argument is the group's value
  std::string_view label;  // "%3 (clip)", for messages
  const vta::Env& env;
  // Whether a call outside every group has `call` as its only user (so it may join with it).
  std::function<bool(const Expr&)> absorbable;
};

// Appends the call's steps to `state` and returns true, or returns false leaving it as it was.
using EpilogueRule = std::function<bool(FusionState& state, const FusionCall& call)>;

// bias_add, add, requantize, relu, clip and cast, as the header describes.
std::vector<std::pair<std::string, EpilogueRule>> default_epilogue_rules();

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy/fusion-inl.hpp>
#endif
