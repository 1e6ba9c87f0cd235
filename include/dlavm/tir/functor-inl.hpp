// Definitions for dlavm/tir/functor.hpp (see core/api.hpp): StmtMutator's default traversal.
#pragma once

#include <dlavm/tir/functor.hpp>

#include <utility>
#include <vector>

namespace dlavm::tir::detail {

DLAVM_INLINE Stmt StmtRebuilder::rebuild(const ForNode& n, const Stmt& s) {
  auto lo = mutate_index_hook(n.min);
  auto ext = mutate_index_hook(n.extent);
  auto body = visit_child(n.body);
  if (lo.same_as(n.min) && ext.same_as(n.extent) && body.same_as(n.body)) return s;
  return make_for(n.var, lo, ext, n.for_kind, body);
}

DLAVM_INLINE Stmt StmtRebuilder::rebuild(const AllocateNode& n, const Stmt& s) {
  auto body = visit_child(n.body);
  return body.same_as(n.body) ? s : make_allocate(n.buffer, body);
}

DLAVM_INLINE Stmt StmtRebuilder::rebuild(const StoreNode& n, const Stmt& s) {
  bool changed = false;
  std::vector<ne::Expr> indices;
  indices.reserve(n.indices.size());
  for (const auto& i : n.indices) {
    indices.push_back(mutate_index_hook(i));
    changed = changed || !indices.back().same_as(i);
  }
  auto value = mutate_expr_hook(n.value);
  if (!changed && value.same_as(n.value)) return s;
  return make_store(n.buffer, std::move(indices), value);
}

DLAVM_INLINE Stmt StmtRebuilder::rebuild(const AttrNode& n, const Stmt& s) {
  auto value = mutate_index_hook(n.value);
  auto body = visit_child(n.body);
  return body.same_as(n.body) && value.same_as(n.value) ? s : make_attr(n.key, n.node, value, body);
}

DLAVM_INLINE Stmt StmtRebuilder::rebuild(const IfThenElseNode& n, const Stmt& s) {
  auto c = mutate_index_hook(n.cond);
  auto t = visit_child(n.then_case);
  auto e = n.else_case.defined() ? visit_child(n.else_case) : Stmt();
  if (c.same_as(n.cond) && t.same_as(n.then_case) && e.same_as(n.else_case)) return s;
  return make_if(c, t, e);
}

DLAVM_INLINE Stmt StmtRebuilder::rebuild(const EvaluateNode& n, const Stmt& s) {
  auto v = mutate_expr_hook(n.value);
  return v.same_as(n.value) ? s : make_evaluate(v);
}

DLAVM_INLINE Stmt StmtRebuilder::rebuild(const SeqNode& n, const Stmt& s) {
  std::vector<Stmt> out;
  out.reserve(n.seq.size());
  bool changed = false;
  for (const auto& part : n.seq) {
    out.push_back(visit_child(part));
    changed = changed || !out.back().same_as(part);
  }
  return changed ? make_seq(out) : s;
}

}  // namespace dlavm::tir::detail
