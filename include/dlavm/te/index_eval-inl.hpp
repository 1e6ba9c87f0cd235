// Definitions for dlavm/te/index_eval.hpp (see core/api.hpp).
#pragma once

#include <dlavm/te/index_eval.hpp>

namespace dlavm::te {

namespace detail {
class IndexEvaluator : public ne::ExprFunctor<IndexEvaluator, std::int64_t> {
 public:
  explicit IndexEvaluator(const IndexEnv& env) : env_(env) {}
  std::int64_t visit_int(const ne::IntImmNode& n, const ne::Expr&) { return n.value; }
  std::int64_t visit_var(const ne::VarNode& n, const ne::Expr&) { return env_.lookup(n); }
  std::int64_t visit_binary(const ne::BinaryNode& n, const ne::Expr& self) {
    const auto a = visit(n.a);
    const auto b = visit(n.b);
    if (auto r = ne::detail::fold(n.kind(), a, b)) return *r;
    raise<ArithmeticError>("evaluating `{}`: {} with operands {} and {} {}", self,
                           ne::kind_name(n.kind()), a, b,
                           b == 0 ? "divides by zero" : "overflows int64");
  }
  std::int64_t visit_not(const ne::NotNode& n, const ne::Expr&) { return visit(n.a) == 0; }
  std::int64_t visit_select(const ne::SelectNode& n, const ne::Expr&) {
    const auto c = visit(n.cond);
    const auto t = visit(n.t);
    const auto f = visit(n.f);
    return c != 0 ? t : f;
  }

 private:
  const IndexEnv& env_;
};
}  // namespace detail

}  // namespace dlavm::te

namespace dlavm::te {

DLAVM_INLINE std::int64_t IndexEnv::eval(const ne::Expr& e) const {
  return detail::IndexEvaluator(*this).visit(e);
}

}  // namespace dlavm::te
