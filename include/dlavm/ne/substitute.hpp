// ne::substitute: replaces variables (by identity) with expressions, all at once: the
// replacements themselves are not substituted again. Constants fold as the tree is rebuilt;
// call ne::simplify on the result for a canonical form.
#pragma once

#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/mutator.hpp>

#include <initializer_list>
#include <span>
#include <utility>

namespace dlavm::ne {

using Substitution = std::pair<Var, Expr>;

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

// substitute(i*16 + j, {{i, 2}, {j, k + 1}}) -> 32 + (k + 1)
inline Expr substitute(const Expr& e, std::span<const Substitution> map) {
  for (const auto& [v, replacement] : map)
    if (!replacement.defined())
      raise<ValueError>("ne::substitute: undefined replacement for variable '{}'", v.name());
  return detail::Substituter(map).visit(e);
}
inline Expr substitute(const Expr& e, std::initializer_list<Substitution> map) {
  return substitute(e, std::span<const Substitution>(map.begin(), map.size()));
}

}  // namespace dlavm::ne
