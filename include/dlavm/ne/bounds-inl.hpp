// Definitions for dlavm/ne/bounds.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>

#include <vector>

namespace dlavm::ne {

namespace detail {

// The terms of a sum, with their signs (+1 or -1), through Add and Sub.
inline void sum_terms(const Expr& e, int sign, std::vector<std::pair<Expr, int>>& out) {
  if (const auto* b = e.as<BinaryNode>(); b && (e.kind() == Kind::Add || e.kind() == Kind::Sub)) {
    sum_terms(b->a, sign, out);
    sum_terms(b->b, e.kind() == Kind::Add ? sign : -sign, out);
    return;
  }
  out.emplace_back(e, sign);
}

// r + min(p, q) = min(r + p, r + q) (and likewise max, and with the term negated): a sum whose
// one min or max term clips the rest, as a split's guarded extent `1 - x + min(x + 2, 9)`,
// bounded with the rest cancelled inside each branch (at most 3 there, not 10). nullopt when
// the sum has no single such term.
inline std::optional<Interval> distributed_bounds(const Expr& e) {
  std::vector<std::pair<Expr, int>> terms;
  sum_terms(e, 1, terms);
  std::optional<std::size_t> clip;
  for (std::size_t k = 0; k < terms.size(); ++k)
    if (terms[k].first.kind() == Kind::Min || terms[k].first.kind() == Kind::Max) {
      if (clip) return std::nullopt;
      clip = k;
    }
  if (!clip || terms.size() < 2) return std::nullopt;
  Expr rest = 0;
  for (std::size_t k = 0; k < terms.size(); ++k)
    if (k != *clip) rest = terms[k].second > 0 ? rest + terms[k].first : rest - terms[k].first;
  const auto* mm = terms[*clip].first.as<BinaryNode>();
  const int sign = terms[*clip].second;
  const Expr p = simplify(sign > 0 ? rest + mm->a : rest - mm->a);
  const Expr q = simplify(sign > 0 ? rest + mm->b : rest - mm->b);
  // -min(a, b) = max(-a, -b)
  const bool is_min = (terms[*clip].first.kind() == Kind::Min) == (sign > 0);
  return interval_of(is_min ? min(p, q) : max(p, q));
}

}  // namespace detail

DLAVM_INLINE Interval bounds(const Expr& e) {
  const Expr s = simplify(e);
  Interval out = intersect(detail::interval_of(e), detail::interval_of(s));
  if (auto d = detail::distributed_bounds(s)) out = intersect(out, *d);
  return out;
}

DLAVM_INLINE bool can_prove(const Expr& cond) { return bounds(cond).excludes_zero(); }

}  // namespace dlavm::ne
