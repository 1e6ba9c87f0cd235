// ne::substitute: replaces variables (by identity) with expressions, all at once: the
// replacements themselves are not substituted again. Constants fold as the tree is rebuilt;
// call ne::simplify on the result for a canonical form.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>

#include <initializer_list>
#include <span>
#include <utility>

namespace dlavm::ne {

using Substitution = std::pair<Var, Expr>;

// substitute(i*16 + j, {{i, 2}, {j, k + 1}}) -> 32 + (k + 1)
Expr substitute(const Expr& e, std::span<const Substitution> map);
inline Expr substitute(const Expr& e, std::initializer_list<Substitution> map) {
  return substitute(e, std::span<const Substitution>(map.begin(), map.size()));
}

}  // namespace dlavm::ne

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/substitute-inl.hpp>
#endif
