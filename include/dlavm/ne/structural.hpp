// Structural equality, a total order and hashing of ne expressions. Two expressions are
// equal when they have the same shape, the same constants and the same variables (by
// identity: two `ne::var("i", 0, 15)` calls make different variables). The order sorts
// variables by creation, so canonical forms that use it print the same on every run.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>

#include <cstddef>
#include <cstdint>

namespace dlavm::ne {

bool equal(const Expr& a, const Expr& b);

// A total order consistent with `equal`: negative, zero or positive like strcmp. Compares the
// kind first (constants < variables < Add < ... < Select), then constants by value, variables
// by creation order, and composite nodes by their operands left to right.
int compare(const Expr& a, const Expr& b);

// Function objects for hash containers keyed by structure:
//   std::unordered_map<ne::Expr, int, ne::ExprHash, ne::ExprEqual>
struct ExprHash {
  std::size_t operator()(const Expr& e) const { return e.hash(); }
};
struct ExprEqual {
  bool operator()(const Expr& a, const Expr& b) const { return equal(a, b); }
};
// Orders by ne::compare, for std::map / std::sort.
struct ExprLess {
  bool operator()(const Expr& a, const Expr& b) const { return compare(a, b) < 0; }
};

}  // namespace dlavm::ne

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/structural-inl.hpp>
#endif
