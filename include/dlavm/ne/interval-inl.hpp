// Definitions for dlavm/ne/interval.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/interval.hpp>

namespace dlavm::ne::detail {

class IntervalAnalysis : public ExprFunctor<IntervalAnalysis, Interval> {
 public:
  Interval visit_int(const IntImmNode& n, const Expr&) { return Interval::point(n.value); }
  Interval visit_var(const VarNode& n, const Expr&) { return {n.min, n.max}; }
  Interval visit_binary(const BinaryNode& n, const Expr&) {
    return interval_binary(n.kind(), visit(n.a), visit(n.b));
  }
  Interval visit_not(const NotNode& n, const Expr&) {
    const Interval a = visit(n.a);
    return interval_truth(a.is_zero(), a.excludes_zero());
  }
  Interval visit_select(const SelectNode& n, const Expr&) {
    const Interval c = visit(n.cond);
    if (c.excludes_zero()) return visit(n.t);
    if (c.is_zero()) return visit(n.f);
    return hull(visit(n.t), visit(n.f));
  }
};

DLAVM_INLINE Interval interval_of(const Expr& e) { return IntervalAnalysis().visit(e); }

}  // namespace dlavm::ne::detail

DLAVM_INLINE fmt::format_context::iterator fmt::formatter<dlavm::ne::Interval>::format(
    const dlavm::ne::Interval& i, format_context& ctx) const {
  return fmt::formatter<std::string_view>::format(fmt::format("[{}, {}]", i.min, i.max), ctx);
}
