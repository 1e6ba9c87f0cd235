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
  // Whether a VTA kernel may return an int32 value (a convolution's or a dense layer's sums
  // that the host rescales, as an ONNX QLinearConv needs) as four byte planes
  // (graph/strategy/epilogue.hpp). On by default: the multiply-accumulates are the work, and
  // the host's rescale of the sums costs a few operations per output. Four planes store four
  // times the bytes of an int8 result, and the host reassembles them; off, such a group runs
  // wholly on the host.
  bool int32_results = true;
};

}  // namespace dlavm::graph
