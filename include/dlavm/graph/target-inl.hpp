// Definitions for graph/target.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

DLAVM_INLINE Function infer_type(const Function& fn, const Target& target, const Attrs& global) {
  const Function typed = infer_type(fn, target.ops, global);
  return place(typed, partition(typed, target));
}

}  // namespace dlavm::graph
