// Definitions for dlavm/ne/affine.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/affine.hpp>
#include <dlavm/ne/simplify-inl.hpp>

namespace dlavm::ne::detail {

DLAVM_INLINE bool uses_any(const Expr& e, std::span<const Var> vars) {
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

}  // namespace dlavm::ne::detail

namespace dlavm::ne {

DLAVM_INLINE std::optional<LinearForm> linear_form(const Expr& e, std::span<const Var> vars) {
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

DLAVM_INLINE std::optional<LinearForm> linear_form(const Expr& e, std::initializer_list<Var> vars) {
  return linear_form(e, std::span<const Var>(vars.begin(), vars.size()));
}

DLAVM_INLINE std::optional<SweptRange> swept_range(const Expr& e, std::span<const Sweep> sweep) {
  SweptRange r{simplify(e), simplify(e)};
  for (const Sweep& range : sweep) {
    const Var vars[] = {range.var};
    // The end of [min, min + extent - 1] that makes c*v least (lo) or greatest (hi).
    const auto eliminate = [&](Expr& end, bool least) -> bool {
      const auto form = linear_form(end, vars);
      const auto c = form ? simplify(form->strides[0]).as_int() : std::nullopt;
      if (!c) return false;
      if (*c == 0) return true;
      const Expr at = (*c > 0) == least ? range.min : range.min + range.extent - 1;
      end = simplify(form->offset + at * *c);
      return true;
    };
    if (!eliminate(r.lo, true) || !eliminate(r.hi, false)) return std::nullopt;
  }
  return r;
}

DLAVM_INLINE std::optional<SweptRange> swept_range(const Expr& e,
                                                   std::initializer_list<Sweep> sweep) {
  return swept_range(e, std::span<const Sweep>(sweep.begin(), sweep.size()));
}

}  // namespace dlavm::ne
