// Definitions for dlavm/schedule/int_set.hpp (see core/api.hpp).
#pragma once

#include <dlavm/schedule/int_set.hpp>

namespace dlavm::schedule {

namespace detail {

bool provably_nonneg(const ne::Expr& e);
bool provably_nonpos(const ne::Expr& e);

class IntSetEvaluator : public ne::ExprFunctor<IntSetEvaluator, IntSet> {
 public:
  explicit IntSetEvaluator(const SweepMap& sweep) : sweep_(sweep) {}

  IntSet visit_int(const ne::IntImmNode&, const ne::Expr& e) { return IntSet::point(e); }
  IntSet visit_var(const ne::VarNode& n, const ne::Expr& e) {
    if (auto it = sweep_.find(n.id); it != sweep_.end()) return it->second;
    return IntSet::point(e);
  }
  IntSet visit_binary(const ne::BinaryNode& n, const ne::Expr& e) {
    const IntSet a = visit(n.a);
    const IntSet b = visit(n.b);
    if (a.is_point() && b.is_point() && a.lo.same_as(n.a) && b.lo.same_as(n.b))
      return IntSet::point(e);
    switch (n.kind()) {
      case ne::Kind::Add:
        return {a.lo + b.lo, a.hi + b.hi};
      case ne::Kind::Sub:
        return {a.lo - b.hi, a.hi - b.lo};
      case ne::Kind::Mul:
        if (b.is_point()) return scale(a, b.lo, e);
        if (a.is_point()) return scale(b, a.lo, e);
        return numeric(e);
      case ne::Kind::FloorDiv:
        if (b.is_point() && ne::bounds(b.lo).min > 0)
          return {ne::floordiv(a.lo, b.lo), ne::floordiv(a.hi, b.lo)};
        return numeric(e);
      case ne::Kind::FloorMod:
        if (a.is_point() && b.is_point()) return IntSet::point(ne::floormod(a.lo, b.lo));
        if (b.is_point() && ne::bounds(b.lo).min > 0) {
          // Within one period the residues are contiguous: lo..hi when they do not wrap.
          const ne::Expr span = ne::simplify(a.hi - a.lo);
          const ne::Expr lo_mod = ne::simplify(ne::floormod(a.lo, b.lo));
          if (ne::can_prove(lo_mod + span < b.lo)) return {lo_mod, lo_mod + span};
          return {0, b.lo - 1};
        }
        return numeric(e);
      case ne::Kind::Min:
        return {ne::min(a.lo, b.lo), ne::min(a.hi, b.hi)};
      case ne::Kind::Max:
        return {ne::max(a.lo, b.lo), ne::max(a.hi, b.hi)};
      default:
        return {0, 1};  // conditions
    }
  }
  IntSet visit_not(const ne::NotNode&, const ne::Expr&) { return {0, 1}; }
  IntSet visit_select(const ne::SelectNode& n, const ne::Expr&) {
    const IntSet t = visit(n.t);
    const IntSet f = visit(n.f);
    return {ne::min(t.lo, f.lo), ne::max(t.hi, f.hi)};
  }

 private:
  static IntSet scale(const IntSet& x, const ne::Expr& c, const ne::Expr& whole) {
    if (provably_nonneg(c)) return {x.lo * c, x.hi * c};
    if (provably_nonpos(c)) return {x.hi * c, x.lo * c};
    return numeric(whole);
  }
  // The fallback: numeric bounds over every variable's full range (sound, not tight).
  static IntSet numeric(const ne::Expr& e) {
    const auto b = ne::bounds(e);
    return {b.min, b.max};
  }
  const SweepMap& sweep_;
};

}  // namespace detail

}  // namespace dlavm::schedule

namespace dlavm::schedule::detail {

DLAVM_INLINE bool provably_nonneg(const ne::Expr& e) { return ne::bounds(e).min >= 0; }

DLAVM_INLINE bool provably_nonpos(const ne::Expr& e) { return ne::bounds(e).max <= 0; }

}  // namespace dlavm::schedule::detail

namespace dlavm::schedule {

DLAVM_INLINE IntSet eval_set(const ne::Expr& e, const SweepMap& sweep) {
  IntSet s = detail::IntSetEvaluator(sweep).visit(e);
  return {ne::simplify(s.lo), ne::simplify(s.hi)};
}

DLAVM_INLINE IntSet unite(const IntSet& a, const IntSet& b) {
  return {ne::simplify(ne::min(a.lo, b.lo)), ne::simplify(ne::max(a.hi, b.hi))};
}

}  // namespace dlavm::schedule
