// graph::Target: what infer_type and build compile for: the VTA configuration, the op
// registry, and the VTA strategies with the epilogue rules. graph::infer_type(fn, target)
// (graph/place.hpp) types and places a function for it.
//
//   graph::Target target;                          // default VTA config, ops, strategies
//   target.ops.add(my_custom_op);
//   auto typed = graph::infer_type(fn, target);
#pragma once

#include <dlavm/graph/op.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/strategy.hpp>
#include <dlavm/vta/lower/env.hpp>

namespace dlavm::graph {

struct Target {
  vta::Env env{};
  OpRegistry ops = default_ops();
  VtaStrategies strategies = default_vta_strategies();
};

}  // namespace dlavm::graph
