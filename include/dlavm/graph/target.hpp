// graph::Target: what infer_type (and, in part 2, the build) compiles for: the VTA
// configuration and the op registry. Part 2 adds the strategy options here. This is the one
// graph header that includes the vta layer (vta::Env); the others stay free of it.
//
//   graph::Target target;                          // default VTA config, default_ops()
//   target.ops.add(my_custom_op);
//   auto typed = graph::infer_type(fn, target);
#pragma once

#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/vta/lower/env.hpp>

namespace dlavm::graph {

struct Target {
  vta::Env env{};
  OpRegistry ops = default_ops();
};

// infer_type for a target (graph/infer_type.hpp): part 1 places every call on the host.
inline Function infer_type(const Function& fn, const Target& target, const Attrs& global = {}) {
  return infer_type(fn, target.ops, global);
}

}  // namespace dlavm::graph
