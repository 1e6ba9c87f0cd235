// ne::simplify: rewrites an expression into a canonical form with the same value.
//
// Arithmetic (+, -, * and what they reach) becomes a linear sum
//     constant + c1*m1 + c2*m2 + ...
// whose monomials m_i (a variable, a product of factors, or any non-arithmetic node, itself
// simplified) are sorted by ne::compare and distinct, with nonzero coefficients. Building the
// sum flattens the whole +,-,* tree once and sorts once, so an n-term sum costs O(n log n).
// Products of sums are distributed while the result stays small (kMaxDistributedTerms).
//
// On top of the sums, using the variables' ranges (interval analysis, ne/interval.hpp):
//   floordiv(c*x + r, d) -> (c/d)*x + floordiv(r, d)  when d divides c, and the remaining
//       floordiv folds to a constant when r provably stays within one multiple of d;
//       common factors of r and d cancel; floordiv(floordiv(x, a), b) -> floordiv(x, a*b)
//   floormod(c*x + r, d) -> floormod(r, d), -> r - k*d when r stays within [k*d, (k+1)*d);
//       floormod(g*r, g*d) -> g*floormod(r, d); floormod(floormod(x, k*d), d) -> floormod(x, d)
//   floordiv(x, d)*d + floormod(x, d) -> x (with any common coefficient)
//   min/max, comparisons, &&, ||, !, select fold when the interval of the difference of the
//       operands (or of the condition) decides them; !(a < b) -> a >= b, and so on.
// A variable whose range is a single value becomes that constant. Rewrites never change the
// value of an expression that evaluates without error; they may remove an error (x*0 -> 0).
// If a coefficient would overflow int64, that part of the expression is left as written.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>

namespace dlavm::ne {

// The canonical form of e (see the top of this file). Idempotent; never raises for a defined
// expression.
Expr simplify(const Expr& e);

}  // namespace dlavm::ne

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/simplify-inl.hpp>
#endif
