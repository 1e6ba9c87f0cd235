// ne::bounds and ne::can_prove: what the variables' ranges imply about an expression.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/interval.hpp>
#include <dlavm/ne/simplify.hpp>

namespace dlavm::ne {

// An inclusive interval holding every value e takes when its variables range over their
// [min, max] (for assignments under which e evaluates without error). Interval arithmetic on
// e and on simplify(e), intersected: cancellation (`x - x`) and divisibility
// (`floormod(i*16 + j, 16)`) are seen through. Endpoints saturate at the int64 limits.
Interval bounds(const Expr& e);

// True when cond is nonzero for every in-range assignment of its variables. False means "not
// proven", not "false".
bool can_prove(const Expr& cond);

}  // namespace dlavm::ne

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/bounds-inl.hpp>
#endif
