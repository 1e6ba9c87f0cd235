// The one traversal idiom of ne: ExprFunctor dispatches on the node kind to a method of the
// derived class (CRTP, no virtual calls):
//   visit_int(const IntImmNode&, const Expr&)   visit_var(const VarNode&, const Expr&)
//   visit_binary(const BinaryNode&, const Expr&) (every binary kind; switch on node.kind())
//   visit_not(const NotNode&, const Expr&)      visit_select(const SelectNode&, const Expr&)
// The Expr argument is the visited expression itself, so that a pass can return it unchanged
// without allocating. ExprVisitor (below) recurses into children by default; ExprMutator
// (ne/mutator.hpp) rebuilds by default. The printer, bounds, simplifier, evaluator, compiler
// and substitution are all written this way.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace dlavm::ne {

template <class Derived, class R>
class ExprFunctor {
 public:
  R visit(const Expr& e) {
    auto& self = static_cast<Derived&>(*this);
    const Node* n = e.get();
    switch (e.kind()) {
      case Kind::IntImm:
        return self.visit_int(static_cast<const IntImmNode&>(*n), e);
      case Kind::Var:
        return self.visit_var(static_cast<const VarNode&>(*n), e);
      case Kind::Not:
        return self.visit_not(static_cast<const NotNode&>(*n), e);
      case Kind::Select:
        return self.visit_select(static_cast<const SelectNode&>(*n), e);
      default:
        return self.visit_binary(static_cast<const BinaryNode&>(*n), e);
    }
  }
};

// Read-only traversal: by default visits every child, in order. Override a method to act on
// a kind; call the base method to keep descending.
template <class Derived>
class ExprVisitor : public ExprFunctor<Derived, void> {
 public:
  void visit_int(const IntImmNode&, const Expr&) {}
  void visit_var(const VarNode&, const Expr&) {}
  void visit_binary(const BinaryNode& n, const Expr&) {
    this->visit(n.a);
    this->visit(n.b);
  }
  void visit_not(const NotNode& n, const Expr&) { this->visit(n.a); }
  void visit_select(const SelectNode& n, const Expr&) {
    this->visit(n.cond);
    this->visit(n.t);
    this->visit(n.f);
  }
};

// The distinct variables of e, in creation order (the order `ne::compile(e)` takes them).
std::vector<Var> free_vars(const Expr& e);

}  // namespace dlavm::ne

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/functor-inl.hpp>
#endif
