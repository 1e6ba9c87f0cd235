// ne::linear_form: reads an index expression as offset + sum(stride_k * var_k), the form DMA
// and tensorize passes match against.
//
//   linear_form((i*16 + j)*4 + 7, {i, j})  ->  offset 7, strides {64, 4}
//   linear_form(token*64*i + base, {i})     ->  offset base, strides {token*64}
//
// Offset and strides may involve other variables but not the listed ones. nullopt when the
// expression is not linear in the listed variables (i*i, floordiv(i, 2), min(i, j), ...).
//
// ne::swept_range: the least and greatest value of an affine expression while some variables
// sweep ranges whose ends may name other variables (an axis i over [0, n), a triangular k over
// [0, i + 1)), as expressions in the variables that stay fixed:
//
//   swept_range(n - 1 - i, {{i, 0, n}})  ->  [0, n - 1]     (bounds(n - 1 - i) is [-99, 99])
#pragma once

#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

namespace dlavm::ne {

struct LinearForm {
  Expr offset;                // free of the listed variables
  std::vector<Expr> strides;  // one per listed variable, in the order given
};

namespace detail {
// Whether e mentions any of vars.
inline bool uses_any(const Expr& e, std::span<const Var> vars) {
  struct Finder : ExprVisitor<Finder> {
    std::span<const Var> vars;
    bool found = false;
    void visit_var(const VarNode& n, const Expr&) {
      for (const Var& v : vars) found = found || v.id() == n.id;
    }
  } finder;
  finder.vars = vars;
  finder.visit(e);
  return finder.found;
}
}  // namespace detail

inline std::optional<LinearForm> linear_form(const Expr& e, std::span<const Var> vars) {
  using namespace detail;
  const Expr canonical = simplify(e);
  LinearSum s;
  try {
    s = to_sum(canonical);
  } catch (const CoefficientOverflow&) {
    return std::nullopt;
  }
  LinearSum offset;
  offset.constant = s.constant;
  std::vector<LinearSum> strides(vars.size());
  for (const Term& t : s.terms) {
    if (!uses_any(t.atom, vars)) {
      offset.terms.push_back(t);
      continue;
    }
    // The atom is var_k, or a product with exactly one factor var_k and no other factor
    // mentioning a listed variable.
    std::vector<Expr> factors;
    collect_factors(t.atom, factors);
    std::optional<std::size_t> which;
    std::optional<std::size_t> at;
    for (std::size_t f = 0; f < factors.size(); ++f) {
      const auto* v = factors[f].as<VarNode>();
      std::optional<std::size_t> k;
      for (std::size_t i = 0; v != nullptr && i < vars.size(); ++i)
        if (vars[i].id() == v->id) k = i;
      if (k) {
        if (which) return std::nullopt;  // i*j or i*i
        which = k;
        at = f;
      } else if (uses_any(factors[f], vars)) {
        return std::nullopt;  // floordiv(i, 2), min(i, 4), (i + 1)*token*...
      }
    }
    if (!which) return std::nullopt;
    Expr rest;
    for (std::size_t f = 0; f < factors.size(); ++f) {
      if (f == *at) continue;
      rest = rest.defined() ? make_binary(Kind::Mul, rest, factors[f]) : factors[f];
    }
    if (rest.defined())
      strides[*which].terms.push_back({t.coeff, rest});
    else
      strides[*which].constant += t.coeff;  // distinct atoms: no overflow
  }
  LinearForm result;
  result.offset = build(offset);
  for (auto& stride : strides) {
    try {
      normalize(stride);
    } catch (const CoefficientOverflow&) {
      return std::nullopt;
    }
    result.strides.push_back(build(stride));
  }
  return result;
}

inline std::optional<LinearForm> linear_form(const Expr& e, std::initializer_list<Var> vars) {
  return linear_form(e, std::span<const Var>(vars.begin(), vars.size()));
}

// A variable that sweeps [min, min + extent); min and extent may name other variables.
struct Sweep {
  Var var;
  Expr min;
  Expr extent;
};

// The least and greatest value of an expression.
struct SweptRange {
  Expr lo;
  Expr hi;
};

// The range of e while the variables of `sweep` take every value of their ranges, as
// expressions in the other variables. A range may name the variables listed after it, which
// are swept next (list triangular axes before the axes they depend on). For every value of
// the other variables that leaves no range empty, both ends are attained. nullopt unless e
// and every range end are affine with constant coefficients in the swept variables.
inline std::optional<SweptRange> swept_range(const Expr& e, std::span<const Sweep> sweep) {
  SweptRange r{simplify(e), simplify(e)};
  for (const auto& [v, min, extent] : sweep) {
    const Var vars[] = {v};
    // The end of [min, min + extent - 1] that makes c*v least (lo) or greatest (hi).
    const auto eliminate = [&](Expr& end, bool least) -> bool {
      const auto form = linear_form(end, vars);
      const auto c = form ? simplify(form->strides[0]).as_int() : std::nullopt;
      if (!c) return false;
      if (*c == 0) return true;
      const Expr at = (*c > 0) == least ? min : min + extent - 1;
      end = simplify(form->offset + at * *c);
      return true;
    };
    if (!eliminate(r.lo, true) || !eliminate(r.hi, false)) return std::nullopt;
  }
  return r;
}
inline std::optional<SweptRange> swept_range(const Expr& e, std::initializer_list<Sweep> sweep) {
  return swept_range(e, std::span<const Sweep>(sweep.begin(), sweep.size()));
}

}  // namespace dlavm::ne
