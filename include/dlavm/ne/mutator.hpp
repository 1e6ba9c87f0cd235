// ExprMutator: the rewriting form of ExprFunctor. By default every method rebuilds its node
// from the visited children with ne::binary / ne::select (so constants fold), and returns the
// node itself, without allocating, when no child changed. Override the kinds a pass rewrites.
#pragma once

#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/ops.hpp>

namespace dlavm::ne {

template <class Derived>
class ExprMutator : public ExprFunctor<Derived, Expr> {
 public:
  Expr visit_int(const IntImmNode&, const Expr& e) { return e; }
  Expr visit_var(const VarNode&, const Expr& e) { return e; }
  Expr visit_binary(const BinaryNode& n, const Expr& e) {
    Expr a = this->visit(n.a);
    Expr b = this->visit(n.b);
    if (a.same_as(n.a) && b.same_as(n.b)) return e;
    return binary(n.kind(), a, b);
  }
  Expr visit_not(const NotNode& n, const Expr& e) {
    Expr a = this->visit(n.a);
    if (a.same_as(n.a)) return e;
    return !a;
  }
  Expr visit_select(const SelectNode& n, const Expr& e) {
    Expr c = this->visit(n.cond);
    Expr t = this->visit(n.t);
    Expr f = this->visit(n.f);
    if (c.same_as(n.cond) && t.same_as(n.t) && f.same_as(n.f)) return e;
    return select(c, t, f);
  }
};

}  // namespace dlavm::ne
