// The one traversal idiom of TIR, as in ne and te: StmtFunctor dispatches on the statement
// kind (CRTP); StmtVisitor walks every child; StmtMutator rebuilds, returning the node itself
// when nothing changed. Values inside statements go through mutate_expr (te::Expr) and
// indices, extents and conditions through mutate_index (ne::Expr).
#pragma once

#include <dlavm/tir/stmt.hpp>

#include <utility>
#include <vector>

namespace dlavm::tir {

template <class Derived, class R>
class StmtFunctor {
 public:
  R visit(const Stmt& s) {
    auto& self = static_cast<Derived&>(*this);
    const StmtNode* n = s.get();
    switch (s.kind()) {
      case StmtKind::For:
        return self.visit_for(static_cast<const ForNode&>(*n), s);
      case StmtKind::Allocate:
        return self.visit_allocate(static_cast<const AllocateNode&>(*n), s);
      case StmtKind::Store:
        return self.visit_store(static_cast<const StoreNode&>(*n), s);
      case StmtKind::Attr:
        return self.visit_attr(static_cast<const AttrNode&>(*n), s);
      case StmtKind::IfThenElse:
        return self.visit_if(static_cast<const IfThenElseNode&>(*n), s);
      case StmtKind::Evaluate:
        return self.visit_evaluate(static_cast<const EvaluateNode&>(*n), s);
      case StmtKind::Seq:
        return self.visit_seq(static_cast<const SeqNode&>(*n), s);
    }
    return self.visit_seq(static_cast<const SeqNode&>(*n), s);
  }
};

template <class Derived>
class StmtVisitor : public StmtFunctor<Derived, void> {
 public:
  void visit_for(const ForNode& n, const Stmt&) { this->visit(n.body); }
  void visit_allocate(const AllocateNode& n, const Stmt&) { this->visit(n.body); }
  void visit_store(const StoreNode&, const Stmt&) {}
  void visit_attr(const AttrNode& n, const Stmt&) { this->visit(n.body); }
  void visit_if(const IfThenElseNode& n, const Stmt&) {
    this->visit(n.then_case);
    if (n.else_case.defined()) this->visit(n.else_case);
  }
  void visit_evaluate(const EvaluateNode&, const Stmt&) {}
  void visit_seq(const SeqNode& n, const Stmt&) {
    for (const auto& s : n.seq) this->visit(s);
  }
};

template <class Derived>
class StmtMutator : public StmtFunctor<Derived, Stmt> {
 public:
  te::Expr mutate_expr(const te::Expr& e) { return e; }
  ne::Expr mutate_index(const ne::Expr& e) { return e; }

  Stmt visit_for(const ForNode& n, const Stmt& s) {
    auto lo = self().mutate_index(n.min);
    auto ext = self().mutate_index(n.extent);
    auto body = this->visit(n.body);
    if (lo.same_as(n.min) && ext.same_as(n.extent) && body.same_as(n.body)) return s;
    return make_for(n.var, lo, ext, n.for_kind, body);
  }
  Stmt visit_allocate(const AllocateNode& n, const Stmt& s) {
    auto body = this->visit(n.body);
    return body.same_as(n.body) ? s : make_allocate(n.buffer, body);
  }
  Stmt visit_store(const StoreNode& n, const Stmt& s) {
    bool changed = false;
    std::vector<ne::Expr> indices;
    for (const auto& i : n.indices) {
      indices.push_back(self().mutate_index(i));
      changed = changed || !indices.back().same_as(i);
    }
    auto value = self().mutate_expr(n.value);
    if (!changed && value.same_as(n.value)) return s;
    return make_store(n.buffer, std::move(indices), value);
  }
  Stmt visit_attr(const AttrNode& n, const Stmt& s) {
    auto value = self().mutate_index(n.value);
    auto body = this->visit(n.body);
    return body.same_as(n.body) && value.same_as(n.value) ? s
                                                          : make_attr(n.key, n.node, value, body);
  }
  Stmt visit_if(const IfThenElseNode& n, const Stmt& s) {
    auto c = self().mutate_index(n.cond);
    auto t = this->visit(n.then_case);
    auto e = n.else_case.defined() ? this->visit(n.else_case) : Stmt();
    if (c.same_as(n.cond) && t.same_as(n.then_case) && e.same_as(n.else_case)) return s;
    return make_if(c, t, e);
  }
  Stmt visit_evaluate(const EvaluateNode& n, const Stmt& s) {
    auto v = self().mutate_expr(n.value);
    return v.same_as(n.value) ? s : make_evaluate(v);
  }
  Stmt visit_seq(const SeqNode& n, const Stmt& s) {
    std::vector<Stmt> out;
    bool changed = false;
    for (const auto& part : n.seq) {
      out.push_back(this->visit(part));
      changed = changed || !out.back().same_as(part);
    }
    return changed ? make_seq(out) : s;
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace dlavm::tir
