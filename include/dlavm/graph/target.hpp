// graph::Target: what infer_type (and, in part 2, the build) compiles for: the VTA
// configuration and the op registry. Part 2 adds the strategy options here.
//
//   graph::Target target;                          // default VTA config, default_ops()
//   target.ops.add(my_custom_op);
//   auto typed = graph::infer_type(fn, target);
#pragma once

#include <dlavm/graph/op.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/vta/env.hpp>

namespace dlavm::graph {

struct Target {
  vta::Env env{};
  OpRegistry ops = default_ops();
};

}  // namespace dlavm::graph
