// Definitions for dlavm/ne/bounds.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <vector>

namespace dlavm::ne {

namespace detail {

// The terms of a sum with their coefficients, through Add, Sub and products with a constant
// (3 * min(a, b) is the term min(a, b) with coefficient 3).
inline void sum_terms(const Expr& e, std::int64_t coef,
                      std::vector<std::pair<Expr, std::int64_t>>& out) {
  if (const auto* b = e.as<BinaryNode>()) {
    if (e.kind() == Kind::Add || e.kind() == Kind::Sub) {
      sum_terms(b->a, coef, out);
      sum_terms(b->b, e.kind() == Kind::Add ? coef : -coef, out);
      return;
    }
    if (e.kind() == Kind::Mul) {
      const Expr& c = b->a.is_const() ? b->a : b->b;
      const Expr& x = b->a.is_const() ? b->b : b->a;
      std::int64_t scaled = 0;
      if (c.is_const() && std::llabs(*c.as_int()) < (std::int64_t{1} << 20) &&
          std::llabs(coef) < (std::int64_t{1} << 20)) {
        scaled = coef * *c.as_int();
        sum_terms(x, scaled, out);
        return;
      }
    }
  }
  out.emplace_back(e, coef);
}

// How deep distributed_bounds recurses: each level removes one min or max.
inline constexpr int kMaxDistribution = 4;

Interval bounds_at(const Expr& e, int depth);

// r + c * min(p, q) = min(r + c*p, r + c*q) for c > 0 (max for c < 0, and likewise for max): a
// sum whose min or max terms clip the rest, as a split's guarded extent
// `1 - 3x + min(w + 5, 3 * min(x, f) + 4)`, bounded with the rest cancelled inside each branch
// (each branch bounded the same way, one min or max fewer): at most 5 there, not w + 6.
// nullopt when the sum has no such term.
inline std::optional<Interval> distributed_bounds(const Expr& e, int depth) {
  std::vector<std::pair<Expr, std::int64_t>> terms;
  sum_terms(e, 1, terms);
  std::optional<std::size_t> clip;
  for (std::size_t k = 0; k < terms.size() && !clip; ++k)
    if (terms[k].first.kind() == Kind::Min || terms[k].first.kind() == Kind::Max) clip = k;
  if (!clip || terms.size() < 2) return std::nullopt;
  Expr rest = 0;
  for (std::size_t k = 0; k < terms.size(); ++k)
    if (k != *clip) rest = rest + terms[k].first * terms[k].second;
  const auto* mm = terms[*clip].first.as<BinaryNode>();
  const std::int64_t coef = terms[*clip].second;
  const Interval p = bounds_at(simplify(rest + mm->a * coef), depth + 1);
  const Interval q = bounds_at(simplify(rest + mm->b * coef), depth + 1);
  // c * min(a, b) = max(c*a, c*b) for c < 0
  const bool is_min = (terms[*clip].first.kind() == Kind::Min) == (coef > 0);
  if (is_min) return Interval{std::min(p.min, q.min), std::min(p.max, q.max)};
  return Interval{std::max(p.min, q.min), std::max(p.max, q.max)};
}

inline Interval bounds_at(const Expr& e, int depth) {
  const Expr s = simplify(e);
  Interval out = intersect(interval_of(e), interval_of(s));
  if (depth < kMaxDistribution)
    if (auto d = distributed_bounds(s, depth)) out = intersect(out, *d);
  return out;
}

}  // namespace detail

DLAVM_INLINE Interval bounds(const Expr& e) { return detail::bounds_at(e, 0); }

DLAVM_INLINE bool can_prove(const Expr& cond) { return bounds(cond).excludes_zero(); }

}  // namespace dlavm::ne
