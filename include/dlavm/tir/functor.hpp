// The one traversal idiom of TIR, as in ne and te: StmtFunctor dispatches on the statement
// kind (CRTP); StmtVisitor walks every child; StmtMutator rebuilds, returning the node itself
// when nothing changed. Values inside statements go through mutate_expr (te::Expr) and
// indices, extents and conditions through mutate_index (ne::Expr).
#pragma once

#include <dlavm/core/api.hpp>
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

namespace detail {

// The rebuilding traversal behind StmtMutator, written once for every pass. It reaches the
// pass only through the three virtual functions, so its code is compiled once (once per
// translation unit in header-only mode) instead of once per pass, as a CRTP default would be.
class StmtRebuilder {
 protected:
  ~StmtRebuilder() = default;

  virtual Stmt visit_child(const Stmt& s) = 0;
  virtual te::Expr mutate_expr_hook(const te::Expr& e) = 0;
  virtual ne::Expr mutate_index_hook(const ne::Expr& e) = 0;

  Stmt rebuild(const ForNode& n, const Stmt& s);
  Stmt rebuild(const AllocateNode& n, const Stmt& s);
  Stmt rebuild(const StoreNode& n, const Stmt& s);
  Stmt rebuild(const AttrNode& n, const Stmt& s);
  Stmt rebuild(const IfThenElseNode& n, const Stmt& s);
  Stmt rebuild(const EvaluateNode& n, const Stmt& s);
  Stmt rebuild(const SeqNode& n, const Stmt& s);
};

}  // namespace detail

template <class Derived>
class StmtMutator : public StmtFunctor<Derived, Stmt>, protected detail::StmtRebuilder {
 public:
  te::Expr mutate_expr(const te::Expr& e) { return e; }
  ne::Expr mutate_index(const ne::Expr& e) { return e; }

  Stmt visit_for(const ForNode& n, const Stmt& s) { return rebuild(n, s); }
  Stmt visit_allocate(const AllocateNode& n, const Stmt& s) { return rebuild(n, s); }
  Stmt visit_store(const StoreNode& n, const Stmt& s) { return rebuild(n, s); }
  Stmt visit_attr(const AttrNode& n, const Stmt& s) { return rebuild(n, s); }
  Stmt visit_if(const IfThenElseNode& n, const Stmt& s) { return rebuild(n, s); }
  Stmt visit_evaluate(const EvaluateNode& n, const Stmt& s) { return rebuild(n, s); }
  Stmt visit_seq(const SeqNode& n, const Stmt& s) { return rebuild(n, s); }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  Stmt visit_child(const Stmt& s) final { return this->visit(s); }
  te::Expr mutate_expr_hook(const te::Expr& e) final { return self().mutate_expr(e); }
  ne::Expr mutate_index_hook(const ne::Expr& e) final { return self().mutate_index(e); }
};

}  // namespace dlavm::tir

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tir/functor-inl.hpp>
#endif
