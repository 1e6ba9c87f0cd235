// Definitions for dlavm/te/iter_var.hpp (see core/api.hpp).
#pragma once

#include <dlavm/te/iter_var.hpp>

namespace dlavm::te {

DLAVM_INLINE IterVar make_iter_var(std::string name, ne::Expr min, ne::Expr extent, IterKind kind) {
  const auto lo = ne::bounds(min);
  const auto ext = ne::bounds(extent);
  if (ext.max < 1)
    raise<ShapeError>("axis '{}' has extent {} which is never positive (at most {})", name, extent,
                      ext.max);
  if (const auto e = extent.as_int(); e && *e < 1)
    raise<ShapeError>("axis '{}' has extent {}, which must be at least 1", name, *e);
  const std::int64_t hi = ne::detail::saturate(ne::detail::int128{lo.max} + ext.max - 1);
  auto v = ne::var(std::move(name), lo.min, hi);
  return IterVar(make_ref<IterVarNode>(v, Range{min, extent}, kind));
}

DLAVM_INLINE IterVar reduce_axis(std::pair<ne::Expr, ne::Expr> bounds, std::string name) {
  auto [lo, hi] = std::move(bounds);
  return make_iter_var(std::move(name), lo, ne::simplify(hi - lo), IterKind::Reduce);
}

}  // namespace dlavm::te
