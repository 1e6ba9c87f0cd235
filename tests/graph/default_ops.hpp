// Shared by the graph tests: one default op registry, built once.
#pragma once

#include <dlavm/graph/ops.hpp>

namespace dlavm_test {

inline const dlavm::graph::OpRegistry& ops() {
  static const dlavm::graph::OpRegistry registry = dlavm::graph::default_ops();
  return registry;
}

}  // namespace dlavm_test
