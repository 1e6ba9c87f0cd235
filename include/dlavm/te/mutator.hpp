// ExprMutator: the rewriting form of ExprFunctor. Each method rebuilds its node from the
// visited children (constants fold again) and returns the node itself when nothing changed.
// Index expressions pass through mutate_index, which passes override to rewrite indices
// (substituting loop variables, offsetting into a cache buffer, ...). The default methods share
// one compiled body, detail::ExprRebuilder.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/te/ops.hpp>

#include <utility>
#include <vector>

namespace dlavm::te {

namespace detail {

// The rebuilding traversal behind ExprMutator, written once for every pass (see
// tir::detail::StmtRebuilder): the pass is reached through two virtual functions.
class ExprRebuilder {
 protected:
  ~ExprRebuilder() = default;

  virtual Expr visit_child(const Expr& e) = 0;
  virtual ne::Expr mutate_index_hook(const ne::Expr& e) = 0;

  Expr rebuild(const CastNode& n, const Expr& e);
  Expr rebuild(const BinaryNode& n, const Expr& e);
  Expr rebuild(const NotNode& n, const Expr& e);
  Expr rebuild(const SelectNode& n, const Expr& e);
  Expr rebuild(const IndexNode& n, const Expr& e);
  Expr rebuild(const ReadNode& n, const Expr& e);
  Expr rebuild(const LoadNode& n, const Expr& e);
  Expr rebuild(const ReduceNode& n, const Expr& e);
  Expr rebuild(const CallNode& n, const Expr& e);
  // The indices through mutate_index, and whether any changed.
  std::pair<std::vector<ne::Expr>, bool> mutate_indices(const std::vector<ne::Expr>& in);
};

}  // namespace detail

template <class Derived>
class ExprMutator : public ExprFunctor<Derived, Expr>, protected detail::ExprRebuilder {
 public:
  ne::Expr mutate_index(const ne::Expr& e) { return e; }

  Expr visit_int(const IntImmNode&, const Expr& e) { return e; }
  Expr visit_cast(const CastNode& n, const Expr& e) { return rebuild(n, e); }
  Expr visit_binary(const BinaryNode& n, const Expr& e) { return rebuild(n, e); }
  Expr visit_not(const NotNode& n, const Expr& e) { return rebuild(n, e); }
  Expr visit_select(const SelectNode& n, const Expr& e) { return rebuild(n, e); }
  Expr visit_index(const IndexNode& n, const Expr& e) { return rebuild(n, e); }
  Expr visit_read(const ReadNode& n, const Expr& e) { return rebuild(n, e); }
  Expr visit_load(const LoadNode& n, const Expr& e) { return rebuild(n, e); }
  Expr visit_reduce(const ReduceNode& n, const Expr& e) { return rebuild(n, e); }
  Expr visit_call(const CallNode& n, const Expr& e) { return rebuild(n, e); }

 private:
  Expr visit_child(const Expr& e) final { return this->visit(e); }
  ne::Expr mutate_index_hook(const ne::Expr& e) final {
    return static_cast<Derived&>(*this).mutate_index(e);
  }
};

}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/mutator-inl.hpp>
#endif
