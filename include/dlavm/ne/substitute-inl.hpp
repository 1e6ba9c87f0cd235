// Definitions for dlavm/ne/substitute.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne/mutator.hpp>
#include <dlavm/ne/substitute.hpp>

namespace dlavm::ne {

namespace detail {
class Substituter : public ExprMutator<Substituter> {
 public:
  explicit Substituter(std::span<const Substitution> map) : map_(map) {}
  Expr visit_var(const VarNode& n, const Expr& e) {
    for (const auto& [v, replacement] : map_)
      if (v.id() == n.id) return replacement;
    return e;
  }

 private:
  std::span<const Substitution> map_;
};
}  // namespace detail

DLAVM_INLINE Expr substitute(const Expr& e, std::span<const Substitution> map) {
  for (const auto& [v, replacement] : map)
    if (!replacement.defined())
      raise<ValueError>("ne::substitute: undefined replacement for variable '{}'", v.name());
  return detail::Substituter(map).visit(e);
}
}  // namespace dlavm::ne
