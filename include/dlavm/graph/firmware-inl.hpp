// Definitions for graph/firmware.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/firmware.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>

namespace dlavm::graph {

DLAVM_INLINE ne::Expr element_count(std::span<const ne::Expr> shape) {
  ne::Expr n = 1;
  for (const auto& d : shape) n = n * d;
  return ne::simplify(n);
}

}  // namespace dlavm::graph
