// Definitions for dlavm/ne/simplify.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/int_math.hpp>
#include <dlavm/ne/interval.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/ne/structural.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlavm::ne {
namespace detail {

// Raised inside the simplifier when a coefficient overflows; the rewrite that hit it is
// abandoned and the node kept as written.
struct CoefficientOverflow {};

inline std::int64_t add_or_bail(std::int64_t a, std::int64_t b) {
  if (auto r = checked_add(a, b)) return *r;
  throw CoefficientOverflow{};
}
inline std::int64_t mul_or_bail(std::int64_t a, std::int64_t b) {
  if (auto r = checked_mul(a, b)) return *r;
  throw CoefficientOverflow{};
}

struct Term {
  std::int64_t coeff;
  Expr atom;  // never a constant, a sum or a product by a constant
};

// constant + sum(coeff * atom): the canonical form of arithmetic.
struct LinearSum {
  std::int64_t constant = 0;
  std::vector<Term> terms;

  bool is_zero() const { return constant == 0 && terms.empty(); }
};

// Adds scale * x to s, where x is already simplified (a canonical form): walks its sum and
// scaled-term structure without rewriting anything.
inline void add_canonical(const Expr& x, std::int64_t scale, LinearSum& s) {
  switch (x.kind()) {
    case Kind::IntImm:
      s.constant = add_or_bail(s.constant, mul_or_bail(scale, x.as<IntImmNode>()->value));
      return;
    case Kind::Add: {
      const auto* n = x.as<BinaryNode>();
      add_canonical(n->a, scale, s);
      add_canonical(n->b, scale, s);
      return;
    }
    case Kind::Sub: {
      const auto* n = x.as<BinaryNode>();
      add_canonical(n->a, scale, s);
      add_canonical(n->b, mul_or_bail(scale, -1), s);
      return;
    }
    case Kind::Mul: {
      const auto* n = x.as<BinaryNode>();
      if (const auto c = n->b.as_int()) {
        add_canonical(n->a, mul_or_bail(scale, *c), s);
        return;
      }
      break;
    }
    default:
      break;
  }
  s.terms.push_back({scale, x});
}

inline LinearSum to_sum(const Expr& x) {
  LinearSum s;
  add_canonical(x, 1, s);
  return s;
}

// The factors of a monomial: the operands of a chain of non-constant products.
inline void collect_factors(const Expr& x, std::vector<Expr>& out) {
  if (x.kind() == Kind::Mul) {
    const auto* n = x.as<BinaryNode>();
    collect_factors(n->a, out);
    collect_factors(n->b, out);
  } else {
    out.push_back(x);
  }
}

// The canonical monomial a*b: factors sorted by ne::compare, multiplied left to right.
inline Expr product_atom(const Expr& a, const Expr& b) {
  std::vector<Expr> factors;
  collect_factors(a, factors);
  collect_factors(b, factors);
  std::stable_sort(factors.begin(), factors.end(), ExprLess{});
  Expr acc = factors.front();
  for (std::size_t i = 1; i < factors.size(); ++i)
    acc = make_binary(Kind::Mul, std::move(acc), factors[i]);
  return acc;
}

inline bool is_const_div(const Expr& x, Kind k, const Expr** num, std::int64_t* d) {
  if (x.kind() != k) return false;
  const auto* n = x.as<BinaryNode>();
  const auto c = n->b.as_int();
  if (!c) return false;
  *num = &n->a;
  *d = *c;
  return true;
}

// floordiv(x, d)*c*d + floormod(x, d)*c -> x*c. Returns whether anything was rewritten.
inline bool recombine_div_mod(LinearSum& s) {
  bool changed = false;
  std::vector<bool> used(s.terms.size(), false);
  std::vector<Term> extra;
  for (std::size_t i = 0; i < s.terms.size(); ++i) {
    const Expr* x = nullptr;
    std::int64_t d = 0;
    if (used[i] || !is_const_div(s.terms[i].atom, Kind::FloorMod, &x, &d)) continue;
    const auto want = checked_mul(s.terms[i].coeff, d);
    if (!want) continue;
    for (std::size_t j = 0; j < s.terms.size(); ++j) {
      const Expr* y = nullptr;
      std::int64_t e = 0;
      if (used[j] || s.terms[j].coeff != *want ||
          !is_const_div(s.terms[j].atom, Kind::FloorDiv, &y, &e) || e != d || !equal(*x, *y))
        continue;
      used[i] = used[j] = true;
      LinearSum inner;
      add_canonical(*x, s.terms[i].coeff, inner);
      s.constant = add_or_bail(s.constant, inner.constant);
      extra.insert(extra.end(), inner.terms.begin(), inner.terms.end());
      changed = true;
      break;
    }
  }
  if (!changed) return false;
  std::vector<Term> kept;
  for (std::size_t i = 0; i < s.terms.size(); ++i)
    if (!used[i]) kept.push_back(std::move(s.terms[i]));
  kept.insert(kept.end(), extra.begin(), extra.end());
  s.terms = std::move(kept);
  return true;
}

// Sorts the terms, merges equal monomials and drops zero coefficients.
inline void normalize(LinearSum& s) {
  for (;;) {
    std::stable_sort(s.terms.begin(), s.terms.end(),
                     [](const Term& x, const Term& y) { return compare(x.atom, y.atom) < 0; });
    std::size_t out = 0;
    for (std::size_t i = 0; i < s.terms.size(); ++i) {
      if (out > 0 && equal(s.terms[out - 1].atom, s.terms[i].atom)) {
        s.terms[out - 1].coeff = add_or_bail(s.terms[out - 1].coeff, s.terms[i].coeff);
      } else {
        if (out != i) s.terms[out] = std::move(s.terms[i]);
        ++out;
      }
    }
    s.terms.resize(out);
    std::erase_if(s.terms, [](const Term& t) { return t.coeff == 0; });
    if (!recombine_div_mod(s)) return;
  }
}

inline Expr term_expr(std::int64_t coeff, const Expr& atom) {
  return coeff == 1 ? atom : make_binary(Kind::Mul, atom, make_int(coeff));
}

// The expression of a normalized sum: terms in order, negative coefficients as subtraction,
// the constant last (or first, `16 - x`, when the first term is negative).
inline Expr build(const LinearSum& s) {
  if (s.terms.empty()) return make_int(s.constant);
  Expr acc;
  bool constant_done = s.constant == 0;
  for (const Term& t : s.terms) {
    const bool negative = t.coeff < 0 && t.coeff != int64_min;
    if (!acc.defined()) {
      if (negative && s.constant > 0) {
        acc = make_int(s.constant);
        constant_done = true;
      } else {
        acc = term_expr(t.coeff, t.atom);
        continue;
      }
    }
    acc = negative ? make_binary(Kind::Sub, std::move(acc), term_expr(-t.coeff, t.atom))
                   : make_binary(Kind::Add, std::move(acc), term_expr(t.coeff, t.atom));
  }
  if (!constant_done) {
    acc = (s.constant < 0 && s.constant != int64_min)
              ? make_binary(Kind::Sub, std::move(acc), make_int(-s.constant))
              : make_binary(Kind::Add, std::move(acc), make_int(s.constant));
  }
  return acc;
}

// The interval of a sum. Terms are bounded one by one, which loses their correlation; for a
// min or max term the sum with that term replaced by each operand bounds it from one side
// (c*min(a, b) <= c*a for c > 0, and so on), which recovers `x - min(x, 64) >= 0` and the
// min(token - i*64, 64)-shaped extents of partial blocks. `depth` limits the nesting.
inline Interval interval_of_sum(const LinearSum& s, int depth = 2) {
  Interval acc = Interval::point(s.constant);
  for (const Term& t : s.terms)
    acc = interval_add(acc, interval_scale(interval_of(t.atom), t.coeff));
  if (depth == 0) return acc;
  for (std::size_t k = 0; k < s.terms.size(); ++k) {
    const Term& t = s.terms[k];
    const auto kind = t.atom.kind();
    if (kind != Kind::Min && kind != Kind::Max) continue;
    // Whether replacing the term by an operand gives an upper (else a lower) bound.
    const bool upper = (kind == Kind::Min) == (t.coeff > 0);
    const auto* mm = t.atom.as<BinaryNode>();
    for (const Expr* operand : {&mm->a, &mm->b}) {
      try {
        LinearSum r;
        r.constant = s.constant;
        for (std::size_t j = 0; j < s.terms.size(); ++j)
          if (j != k) r.terms.push_back(s.terms[j]);
        add_canonical(*operand, t.coeff, r);
        normalize(r);
        const Interval i = interval_of_sum(r, depth - 1);
        if (upper)
          acc.max = std::min(acc.max, i.max);
        else
          acc.min = std::max(acc.min, i.min);
      } catch (const CoefficientOverflow&) {
      }
    }
  }
  return acc;
}

// a - b as a normalized sum, for deciding comparisons, min and max.
inline LinearSum difference(const Expr& a, const Expr& b) {
  LinearSum s;
  add_canonical(a, 1, s);
  add_canonical(b, -1, s);
  normalize(s);
  return s;
}

// Whether x always has the value 0 or 1.
inline bool is_boolean(const Expr& x) {
  const Interval i = interval_of(x);
  return i.min >= 0 && i.max <= 1;
}
inline Expr as_boolean(const Expr& x) {
  return is_boolean(x) ? x : make_binary(Kind::NE, x, make_int(0));
}

constexpr Kind negate_comparison(Kind k) {
  switch (k) {
    case Kind::EQ:
      return Kind::NE;
    case Kind::NE:
      return Kind::EQ;
    case Kind::LT:
      return Kind::GE;
    case Kind::LE:
      return Kind::GT;
    case Kind::GT:
      return Kind::LE;
    case Kind::GE:
      return Kind::LT;
    default:
      return k;
  }
}

class Simplifier : public ExprFunctor<Simplifier, Expr> {
 public:
  // Products of sums are distributed only while the product has at most this many terms.
  static constexpr std::size_t kMaxDistributedTerms = 64;

  Expr visit_int(const IntImmNode&, const Expr& e) { return e; }
  Expr visit_var(const VarNode& n, const Expr& e) { return n.min == n.max ? make_int(n.min) : e; }

  Expr visit_binary(const BinaryNode& n, const Expr& e) {
    switch (n.kind()) {
      case Kind::Add:
      case Kind::Sub:
      case Kind::Mul:
        return arith(n, e);
      case Kind::FloorDiv:
        return div(visit(n.a), visit(n.b));
      case Kind::FloorMod:
        return mod(visit(n.a), visit(n.b));
      case Kind::Min:
      case Kind::Max:
        return min_max(n.kind(), visit(n.a), visit(n.b));
      case Kind::And:
      case Kind::Or:
        return logic(n.kind(), visit(n.a), visit(n.b));
      default:
        return comparison(n.kind(), visit(n.a), visit(n.b));
    }
  }

  Expr visit_not(const NotNode& n, const Expr&) {
    Expr a = visit(n.a);
    const Interval i = interval_of(a);
    if (i.excludes_zero()) return make_int(0);
    if (i.is_zero()) return make_int(1);
    if (is_comparison(a.kind())) {
      const auto* c = a.as<BinaryNode>();
      return make_binary(negate_comparison(a.kind()), c->a, c->b);
    }
    if (const auto* inner = a.as<NotNode>(); inner && is_boolean(inner->a)) return inner->a;
    return make_not(std::move(a));
  }

  Expr visit_select(const SelectNode& n, const Expr&) {
    Expr c = visit(n.cond);
    const Interval i = interval_of(c);
    if (i.excludes_zero()) return visit(n.t);
    if (i.is_zero()) return visit(n.f);
    Expr t = visit(n.t);
    Expr f = visit(n.f);
    if (equal(t, f)) return t;
    return make_select(std::move(c), std::move(t), std::move(f));
  }

 private:
  // +, -, *: flatten into one sum, normalize once.
  Expr arith(const BinaryNode& n, const Expr& e) {
    try {
      LinearSum s;
      collect(e, 1, s);
      normalize(s);
      return build(s);
    } catch (const CoefficientOverflow&) {
      return binary(n.kind(), visit(n.a), visit(n.b));
    }
  }

  // Adds scale * e to s, where e is not simplified yet.
  void collect(const Expr& e, std::int64_t scale, LinearSum& s) {
    switch (e.kind()) {
      case Kind::IntImm:
        s.constant = add_or_bail(s.constant, mul_or_bail(scale, e.as<IntImmNode>()->value));
        return;
      case Kind::Add: {
        const auto* n = e.as<BinaryNode>();
        collect(n->a, scale, s);
        collect(n->b, scale, s);
        return;
      }
      case Kind::Sub: {
        const auto* n = e.as<BinaryNode>();
        collect(n->a, scale, s);
        collect(n->b, mul_or_bail(scale, -1), s);
        return;
      }
      case Kind::Mul: {
        const auto* n = e.as<BinaryNode>();
        if (const auto c = n->b.as_int()) return collect(n->a, mul_or_bail(scale, *c), s);
        if (const auto c = n->a.as_int()) return collect(n->b, mul_or_bail(scale, *c), s);
        Expr x = visit(n->a);
        Expr y = visit(n->b);
        if (const auto c = y.as_int()) return add_canonical(x, mul_or_bail(scale, *c), s);
        if (const auto c = x.as_int()) return add_canonical(y, mul_or_bail(scale, *c), s);
        return multiply(x, y, scale, s);
      }
      default:
        add_canonical(visit(e), scale, s);
    }
  }

  // Adds scale * x * y to s for simplified, non-constant x and y.
  static void multiply(const Expr& x, const Expr& y, std::int64_t scale, LinearSum& s) {
    const LinearSum sx = to_sum(x);
    const LinearSum sy = to_sum(y);
    const std::size_t nx = sx.terms.size() + (sx.constant != 0);
    const std::size_t ny = sy.terms.size() + (sy.constant != 0);
    if (nx == 1 && ny == 1 && sx.constant == 0 && sy.constant == 0) {
      const std::int64_t c = mul_or_bail(sx.terms[0].coeff, sy.terms[0].coeff);
      s.terms.push_back({mul_or_bail(scale, c), product_atom(sx.terms[0].atom, sy.terms[0].atom)});
      return;
    }
    if (nx * ny > kMaxDistributedTerms) {
      s.terms.push_back({scale, product_atom(x, y)});
      return;
    }
    s.constant = add_or_bail(s.constant, mul_or_bail(scale, mul_or_bail(sx.constant, sy.constant)));
    for (const Term& t : sx.terms)
      if (sy.constant != 0)
        s.terms.push_back({mul_or_bail(scale, mul_or_bail(t.coeff, sy.constant)), t.atom});
    for (const Term& t : sy.terms)
      if (sx.constant != 0)
        s.terms.push_back({mul_or_bail(scale, mul_or_bail(t.coeff, sx.constant)), t.atom});
    for (const Term& a : sx.terms)
      for (const Term& b : sy.terms)
        s.terms.push_back(
            {mul_or_bail(scale, mul_or_bail(a.coeff, b.coeff)), product_atom(a.atom, b.atom)});
  }

  // floordiv(a, b) for simplified a and b.
  Expr div(const Expr& a, const Expr& b) {
    const auto divisor = b.as_int();
    if (!divisor) return div_symbolic(a, b);
    std::int64_t d = *divisor;
    if (d == 0) return make_binary(Kind::FloorDiv, a, b);  // evaluation reports it
    if (const auto x = a.as_int()) {
      if (const auto r = checked_floor_div(*x, d)) return make_int(*r);
      return make_binary(Kind::FloorDiv, a, b);
    }
    if (d == 1) return a;
    try {
      LinearSum s = to_sum(a);
      if (d == -1) {
        for (Term& t : s.terms) t.coeff = mul_or_bail(t.coeff, -1);
        s.constant = mul_or_bail(s.constant, -1);
        return build(s);
      }
      const Expr* inner = nullptr;
      std::int64_t d1 = 0;
      if (s.constant == 0 && s.terms.size() == 1 && s.terms[0].coeff == 1 && d > 0 &&
          is_const_div(s.terms[0].atom, Kind::FloorDiv, &inner, &d1) && d1 > 0) {
        if (const auto dd = checked_mul(d1, d)) return div(*inner, make_int(*dd));
      }
      LinearSum q;
      LinearSum r;
      for (Term& t : s.terms) {
        if (t.coeff % d == 0)
          q.terms.push_back({t.coeff / d, std::move(t.atom)});
        else
          r.terms.push_back(std::move(t));
      }
      q.constant = floor_div(s.constant, d);
      r.constant = floor_mod(s.constant, d);
      d = reduce_by_common_factor(r, d);
      const Interval i = interval_of_sum(r);
      const std::int64_t lo = floor_div(i.min, d);
      if (lo == floor_div(i.max, d)) {
        q.constant = add_or_bail(q.constant, lo);
        return build(q);
      }
      Expr rest = make_binary(Kind::FloorDiv, build(r), make_int(d));
      if (q.is_zero()) return rest;
      q.terms.push_back({1, std::move(rest)});
      normalize(q);
      return build(q);
    } catch (const CoefficientOverflow&) {
      return make_binary(Kind::FloorDiv, a, b);
    }
  }

  static Expr div_symbolic(const Expr& a, const Expr& b) {
    const Interval ib = interval_of(b);
    if (a.as_int() == 0) return a;
    if (ib.excludes_zero() && equal(a, b)) return make_int(1);
    const Interval ia = interval_of(a);
    if (ib.min > 0 && ia.min >= 0 && ia.max < ib.min) return make_int(0);
    return make_binary(Kind::FloorDiv, a, b);
  }

  // Divides r and d by the positive gcd of d and all of r; returns the new d.
  static std::int64_t reduce_by_common_factor(LinearSum& r, std::int64_t d) {
    std::int64_t g = gcd(d, r.constant);
    for (const Term& t : r.terms) g = gcd(g, t.coeff);
    if (g <= 1) return d;
    for (Term& t : r.terms) t.coeff /= g;
    r.constant /= g;
    return d / g;
  }

  // floormod(a, b) for simplified a and b.
  Expr mod(const Expr& a, const Expr& b) {
    const auto divisor = b.as_int();
    if (!divisor) return mod_symbolic(a, b);
    std::int64_t d = *divisor;
    if (d == 0) return make_binary(Kind::FloorMod, a, b);
    if (const auto x = a.as_int()) return make_int(floor_mod(*x, d));
    if (d == 1 || d == -1) return make_int(0);
    try {
      LinearSum s = to_sum(a);
      const Expr* inner = nullptr;
      std::int64_t d1 = 0;
      if (s.constant == 0 && s.terms.size() == 1 && s.terms[0].coeff == 1 &&
          is_const_div(s.terms[0].atom, Kind::FloorMod, &inner, &d1) && d1 != 0 && d1 % d == 0)
        return mod(*inner, b);
      LinearSum r;
      for (Term& t : s.terms)
        if (t.coeff % d != 0) r.terms.push_back(std::move(t));
      r.constant = floor_mod(s.constant, d);
      const std::int64_t reduced = reduce_by_common_factor(r, d);
      const std::int64_t g = d / reduced;  // positive
      d = reduced;
      const Interval i = interval_of_sum(r);
      const std::int64_t k = floor_div(i.min, d);
      LinearSum result;
      if (k == floor_div(i.max, d)) {  // one period: floormod(r, d) = r - k*d
        r.constant = add_or_bail(r.constant, mul_or_bail(-k, d));
        result = std::move(r);
      } else {
        result.terms.push_back({1, make_binary(Kind::FloorMod, build(r), make_int(d))});
      }
      if (g != 1) {
        for (Term& t : result.terms) t.coeff = mul_or_bail(t.coeff, g);
        result.constant = mul_or_bail(result.constant, g);
      }
      return build(result);
    } catch (const CoefficientOverflow&) {
      return make_binary(Kind::FloorMod, a, b);
    }
  }

  static Expr mod_symbolic(const Expr& a, const Expr& b) {
    const Interval ib = interval_of(b);
    if (a.as_int() == 0) return a;
    if (ib.excludes_zero() && equal(a, b)) return make_int(0);
    const Interval ia = interval_of(a);
    if (ib.min > 0 && ia.min >= 0 && ia.max < ib.min) return a;
    return make_binary(Kind::FloorMod, a, b);
  }

  static Expr min_max(Kind k, Expr a, Expr b) {
    const auto x = a.as_int();
    const auto y = b.as_int();
    if (x && y) return make_int(*fold(k, *x, *y));
    if (equal(a, b)) return a;
    try {
      const Interval i = interval_of_sum(difference(a, b));  // a - b
      const bool a_le_b = i.max <= 0;
      const bool a_ge_b = i.min >= 0;
      if (k == Kind::Min ? a_le_b : a_ge_b) return a;
      if (k == Kind::Min ? a_ge_b : a_le_b) return b;
    } catch (const CoefficientOverflow&) {
    }
    // Commutative: canonical operand order, a constant last (`min(t, 100)`).
    if (a.is_const() || (!b.is_const() && compare(a, b) > 0)) std::swap(a, b);
    return make_binary(k, std::move(a), std::move(b));
  }

  static Expr comparison(Kind k, const Expr& a, const Expr& b) {
    const auto x = a.as_int();
    const auto y = b.as_int();
    if (x && y) return make_int(*fold(k, *x, *y));
    try {
      const Interval i = interval_compare(k, interval_of_sum(difference(a, b)), Interval::point(0));
      if (i.is_point()) return make_int(i.min);
    } catch (const CoefficientOverflow&) {
    }
    return make_binary(k, a, b);
  }

  static Expr logic(Kind k, const Expr& a, const Expr& b) {
    const Interval ia = interval_of(a);
    const Interval ib = interval_of(b);
    if (k == Kind::And) {
      if (ia.is_zero() || ib.is_zero()) return make_int(0);
      if (ia.excludes_zero() && ib.excludes_zero()) return make_int(1);
      if (ia.excludes_zero()) return as_boolean(b);
      if (ib.excludes_zero()) return as_boolean(a);
    } else {
      if (ia.excludes_zero() || ib.excludes_zero()) return make_int(1);
      if (ia.is_zero() && ib.is_zero()) return make_int(0);
      if (ia.is_zero()) return as_boolean(b);
      if (ib.is_zero()) return as_boolean(a);
    }
    if (equal(a, b)) return as_boolean(a);
    return make_binary(k, a, b);
  }
};

}  // namespace detail

// The canonical form of e (see the top of this file). Idempotent; never raises for a defined
// expression.
DLAVM_INLINE Expr simplify(const Expr& e) { return detail::Simplifier().visit(e); }

}  // namespace dlavm::ne
