// Structural equality, a total order and hashing of ne expressions. Two expressions are
// equal when they have the same shape, the same constants and the same variables (by
// identity: two `ne::var("i", 0, 15)` calls make different variables). The order sorts
// variables by creation, so canonical forms that use it print the same on every run.
#pragma once

#include <dlavm/ne/expr.hpp>

#include <cstddef>
#include <cstdint>

namespace dlavm::ne {

inline bool equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.hash() != b.hash() || a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::IntImm:
      return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case Kind::Var:
      return a.as<VarNode>()->id == b.as<VarNode>()->id;
    case Kind::Not:
      return equal(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case Kind::Select: {
      const auto* x = a.as<SelectNode>();
      const auto* y = b.as<SelectNode>();
      return equal(x->cond, y->cond) && equal(x->t, y->t) && equal(x->f, y->f);
    }
    default: {
      const auto* x = a.as<BinaryNode>();
      const auto* y = b.as<BinaryNode>();
      return equal(x->a, y->a) && equal(x->b, y->b);
    }
  }
}

// A total order consistent with `equal`: negative, zero or positive like strcmp. Compares the
// kind first (constants < variables < Add < ... < Select), then constants by value, variables
// by creation order, and composite nodes by their operands left to right.
inline int compare(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return 0;
  if (a.kind() != b.kind()) return a.kind() < b.kind() ? -1 : 1;
  auto three_way = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  switch (a.kind()) {
    case Kind::IntImm:
      return three_way(a.as<IntImmNode>()->value, b.as<IntImmNode>()->value);
    case Kind::Var:
      return three_way(a.as<VarNode>()->id, b.as<VarNode>()->id);
    case Kind::Not:
      return compare(a.as<NotNode>()->a, b.as<NotNode>()->a);
    case Kind::Select: {
      const auto* x = a.as<SelectNode>();
      const auto* y = b.as<SelectNode>();
      if (int c = compare(x->cond, y->cond)) return c;
      if (int c = compare(x->t, y->t)) return c;
      return compare(x->f, y->f);
    }
    default: {
      const auto* x = a.as<BinaryNode>();
      const auto* y = b.as<BinaryNode>();
      if (int c = compare(x->a, y->a)) return c;
      return compare(x->b, y->b);
    }
  }
}

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
