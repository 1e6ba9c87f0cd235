// graph::Target: what infer_type and build compile for: the VTA configuration, the op
// registry and the VTA strategies. With a target, infer_type also places every call: on VTA
// when it belongs to a VTA group (graph/partition.hpp), else on the host.
//
//   graph::Target target;                          // default VTA config, ops, strategies
//   target.ops.add(my_custom_op);
//   auto typed = graph::infer_type(fn, target);
//   fmt::print("{}", typed);   // %0 = vta.conv2d(%x, %w) /* ret=(...), dtype=int32, device=vta */
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/node.hpp>
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

// Types every call (infer_type with target.ops), then places it (graph::partition, graph::place).
// A call neither device runs is a TypeError giving each device's reason.
Function infer_type(const Function& fn, const Target& target, const Attrs& global = {});

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/target-inl.hpp>
#endif
