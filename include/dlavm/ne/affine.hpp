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

#include <dlavm/core/api.hpp>
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
bool uses_any(const Expr& e, std::span<const Var> vars);
}  // namespace detail

std::optional<LinearForm> linear_form(const Expr& e, std::span<const Var> vars);

std::optional<LinearForm> linear_form(const Expr& e, std::initializer_list<Var> vars);

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
std::optional<SweptRange> swept_range(const Expr& e, std::span<const Sweep> sweep);
std::optional<SweptRange> swept_range(const Expr& e, std::initializer_list<Sweep> sweep);

}  // namespace dlavm::ne

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/affine-inl.hpp>
#endif
