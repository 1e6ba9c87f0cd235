// ExprMutator: the rewriting form of ExprFunctor. Each method rebuilds its node from the
// visited children (constants fold again) and returns the node itself when nothing changed.
// Index expressions pass through mutate_index, which passes override to rewrite indices
// (substituting loop variables, offsetting into a cache buffer, ...).
#pragma once

#include <dlavm/te/expr.hpp>
#include <dlavm/te/ops.hpp>

#include <utility>
#include <vector>

namespace dlavm::te {

template <class Derived>
class ExprMutator : public ExprFunctor<Derived, Expr> {
 public:
  ne::Expr mutate_index(const ne::Expr& e) { return e; }

  Expr visit_int(const IntImmNode&, const Expr& e) { return e; }
  Expr visit_cast(const CastNode& n, const Expr& e) {
    Expr v = this->visit(n.value);
    return v.same_as(n.value) ? e : cast(n.dtype(), v);
  }
  Expr visit_binary(const BinaryNode& n, const Expr& e) {
    Expr a = this->visit(n.a);
    Expr b = this->visit(n.b);
    return a.same_as(n.a) && b.same_as(n.b) ? e : binary(n.kind(), a, b);
  }
  Expr visit_not(const NotNode& n, const Expr& e) {
    Expr a = this->visit(n.a);
    return a.same_as(n.a) ? e : !a;
  }
  Expr visit_select(const SelectNode& n, const Expr& e) {
    Expr c = this->visit(n.cond);
    Expr t = this->visit(n.t);
    Expr f = this->visit(n.f);
    return c.same_as(n.cond) && t.same_as(n.t) && f.same_as(n.f) ? e : select(c, t, f);
  }
  Expr visit_index(const IndexNode& n, const Expr& e) {
    ne::Expr i = self().mutate_index(n.index);
    if (i.same_as(n.index)) return e;
    if (n.dtype() == bool_type) {
      if (const auto c = i.as_int()) return detail::make_const(*c != 0, bool_type);
      return Expr(make_ref<IndexNode>(i, bool_type));
    }
    return index_value(i, n.dtype());
  }
  Expr visit_read(const ReadNode& n, const Expr& e) {
    auto [indices, changed] = mutate_indices(n.indices);
    return changed ? Expr(make_ref<ReadNode>(n.op, n.dtype(), std::move(indices))) : e;
  }
  Expr visit_load(const LoadNode& n, const Expr& e) {
    auto [indices, changed] = mutate_indices(n.indices);
    return changed ? load(n.buffer, std::move(indices)) : e;
  }
  Expr visit_reduce(const ReduceNode& n, const Expr& e) {
    Expr s = this->visit(n.source);
    return s.same_as(n.source) ? e : reduce(n.combiner, s, n.axes);
  }
  Expr visit_call(const CallNode& n, const Expr& e) {
    std::vector<Expr> args;
    bool changed = false;
    for (const auto& a : n.args) {
      args.push_back(this->visit(a));
      changed = changed || !args.back().same_as(a);
    }
    return changed ? call(n.name, n.dtype(), std::move(args), n.buffers) : e;
  }

 protected:
  std::pair<std::vector<ne::Expr>, bool> mutate_indices(const std::vector<ne::Expr>& in) {
    std::vector<ne::Expr> out;
    out.reserve(in.size());
    bool changed = false;
    for (const auto& i : in) {
      out.push_back(self().mutate_index(i));
      changed = changed || !out.back().same_as(i);
    }
    return {std::move(out), changed};
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace dlavm::te
