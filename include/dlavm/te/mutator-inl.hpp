// Definitions for dlavm/te/mutator.hpp (see core/api.hpp): ExprMutator's default traversal.
#pragma once

#include <dlavm/te/mutator.hpp>

#include <utility>
#include <vector>

namespace dlavm::te::detail {

DLAVM_INLINE Expr ExprRebuilder::rebuild(const CastNode& n, const Expr& e) {
  Expr v = visit_child(n.value);
  return v.same_as(n.value) ? e : cast(n.dtype(), v);
}

DLAVM_INLINE Expr ExprRebuilder::rebuild(const BinaryNode& n, const Expr& e) {
  Expr a = visit_child(n.a);
  Expr b = visit_child(n.b);
  return a.same_as(n.a) && b.same_as(n.b) ? e : binary(n.kind(), a, b);
}

DLAVM_INLINE Expr ExprRebuilder::rebuild(const NotNode& n, const Expr& e) {
  Expr a = visit_child(n.a);
  return a.same_as(n.a) ? e : !a;
}

DLAVM_INLINE Expr ExprRebuilder::rebuild(const SelectNode& n, const Expr& e) {
  Expr c = visit_child(n.cond);
  Expr t = visit_child(n.t);
  Expr f = visit_child(n.f);
  return c.same_as(n.cond) && t.same_as(n.t) && f.same_as(n.f) ? e : select(c, t, f);
}

DLAVM_INLINE Expr ExprRebuilder::rebuild(const IndexNode& n, const Expr& e) {
  ne::Expr i = mutate_index_hook(n.index);
  if (i.same_as(n.index)) return e;
  if (n.dtype() == bool_type) {
    if (const auto c = i.as_int()) return make_const(*c != 0, bool_type);
    return Expr(make_ref<IndexNode>(i, bool_type));
  }
  return index_value(i, n.dtype());
}

DLAVM_INLINE Expr ExprRebuilder::rebuild(const ReadNode& n, const Expr& e) {
  auto [indices, changed] = mutate_indices(n.indices);
  return changed ? Expr(make_ref<ReadNode>(n.op, n.dtype(), std::move(indices))) : e;
}

DLAVM_INLINE Expr ExprRebuilder::rebuild(const LoadNode& n, const Expr& e) {
  auto [indices, changed] = mutate_indices(n.indices);
  return changed ? load(n.buffer, std::move(indices)) : e;
}

DLAVM_INLINE Expr ExprRebuilder::rebuild(const ReduceNode& n, const Expr& e) {
  Expr s = visit_child(n.source);
  return s.same_as(n.source) ? e : reduce(n.combiner, s, n.axes);
}

DLAVM_INLINE Expr ExprRebuilder::rebuild(const CallNode& n, const Expr& e) {
  std::vector<Expr> args;
  args.reserve(n.args.size());
  bool changed = false;
  for (const auto& a : n.args) {
    args.push_back(visit_child(a));
    changed = changed || !args.back().same_as(a);
  }
  return changed ? call(n.name, n.dtype(), std::move(args), n.buffers) : e;
}

DLAVM_INLINE std::pair<std::vector<ne::Expr>, bool> ExprRebuilder::mutate_indices(
    const std::vector<ne::Expr>& in) {
  std::vector<ne::Expr> out;
  out.reserve(in.size());
  bool changed = false;
  for (const auto& i : in) {
    out.push_back(mutate_index_hook(i));
    changed = changed || !out.back().same_as(i);
  }
  return {std::move(out), changed};
}

}  // namespace dlavm::te::detail
