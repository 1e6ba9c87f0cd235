// Definitions for dlavm/ne/structural.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/structural.hpp>

namespace dlavm::ne {

DLAVM_INLINE bool equal(const Expr& a, const Expr& b) {
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

DLAVM_INLINE int compare(const Expr& a, const Expr& b) {
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

}  // namespace dlavm::ne
