// Evaluating ne index expressions under an environment that binds variables by identity
// (loop variables of the same name in different loops stay distinct), falling back to
// bindings by name for the symbolic dims (`{"token", 37}`). Used by te::evaluate and by the
// TIR interpreter.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace dlavm::te {

class IndexEnv {
 public:
  explicit IndexEnv(std::span<const ne::Binding> symbols = {}) : symbols_(symbols) {}

  // Binds v (shadowing outer bindings of it) and returns the slot to update it through.
  std::size_t push(const ne::Var& v, std::int64_t value) {
    scope_.emplace_back(v.id(), value);
    return scope_.size() - 1;
  }
  void pop() { scope_.pop_back(); }
  void set(std::size_t slot, std::int64_t value) { scope_[slot].second = value; }

  std::int64_t lookup(const ne::VarNode& v) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->first == v.id) return it->second;
    for (const auto& b : symbols_) {
      if (b.name != v.name) continue;
      if (b.value < v.min || b.value > v.max)
        raise<ValueError>("symbolic dim '{}' = {} is outside its range [{}, {}]", v.name, b.value,
                          v.min, v.max);
      return b.value;
    }
    raise<ValueError>(
        "no value for variable '{}': no enclosing loop binds it and no symbolic dim of that name "
        "was given (bind symbolic dims by name, e.g. {{\"{}\", 1}})",
        v.name, v.name);
  }

  std::int64_t eval(const ne::Expr& e) const;

 private:
  std::vector<std::pair<std::uint64_t, std::int64_t>> scope_;
  std::span<const ne::Binding> symbols_;
};

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

inline std::int64_t IndexEnv::eval(const ne::Expr& e) const {
  return detail::IndexEvaluator(*this).visit(e);
}

}  // namespace dlavm::te
