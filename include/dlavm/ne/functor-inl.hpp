// Definitions for dlavm/ne/functor.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/functor.hpp>

namespace dlavm::ne {

DLAVM_INLINE std::vector<Var> free_vars(const Expr& e) {
  struct Collect : ExprVisitor<Collect> {
    std::unordered_set<const Node*> seen;  // shared subtrees are visited once
    std::vector<Var> vars;
    void visit_var(const VarNode&, const Expr& v) {
      if (seen.insert(v.get()).second) vars.emplace_back(v);
    }
    void visit_binary(const BinaryNode& n, const Expr& self) {
      if (seen.insert(self.get()).second) ExprVisitor<Collect>::visit_binary(n, self);
    }
    void visit_select(const SelectNode& n, const Expr& self) {
      if (seen.insert(self.get()).second) ExprVisitor<Collect>::visit_select(n, self);
    }
  } collect;
  collect.visit(e);
  auto& vars = collect.vars;
  std::sort(vars.begin(), vars.end(), [](const Var& a, const Var& b) { return a.id() < b.id(); });
  vars.erase(std::unique(vars.begin(), vars.end(),
                         [](const Var& a, const Var& b) { return a.id() == b.id(); }),
             vars.end());
  return vars;
}

}  // namespace dlavm::ne
