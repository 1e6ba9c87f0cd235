// Definitions for dlavm/ne/bounds.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/bounds.hpp>

namespace dlavm::ne {

DLAVM_INLINE Interval bounds(const Expr& e) {
  return intersect(detail::interval_of(e), detail::interval_of(simplify(e)));
}

DLAVM_INLINE bool can_prove(const Expr& cond) { return bounds(cond).excludes_zero(); }

}  // namespace dlavm::ne
