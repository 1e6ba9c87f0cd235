// Definitions for dlavm/ne/eval.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/printer.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace dlavm::ne {

namespace detail {

[[noreturn]] inline void raise_unbound(const Expr& root, std::span<const Binding> bindings) {
  std::vector<std::string_view> missing;
  for (const Var& v : free_vars(root)) {
    bool bound = false;
    for (const Binding& b : bindings) bound = bound || b.name == v.name();
    bool listed = false;
    for (auto name : missing) listed = listed || name == v.name();
    if (!bound && !listed) missing.push_back(v.name());
  }
  raise<ValueError>("ne::eval of `{}`: no value for variable{} {}", root,
                    missing.size() == 1 ? "" : "s", fmt::join(missing, ", "));
}

inline void check_in_range(const VarNode& v, std::int64_t value, std::string_view who,
                           const Expr& root) {
  if (value < v.min || value > v.max) [[unlikely]]
    raise<ValueError>("{} of `{}`: variable '{}' = {} is outside its range [{}, {}]", who, root,
                      v.name, value, v.min, v.max);
}

[[noreturn]] inline void raise_arithmetic(std::string_view who, const Expr& root, const Expr& node,
                                          const Expr& a, std::int64_t va, const Expr& b,
                                          std::int64_t vb) {
  const bool by_zero = (node.kind() == Kind::FloorDiv || node.kind() == Kind::FloorMod) && vb == 0;
  raise<ArithmeticError>(
      "{} of `{}`: `{}` {} with `{}` = {} and `{}` = {}", who, root, node,
      by_zero ? (node.kind() == Kind::FloorDiv ? "divides by zero" : "takes a modulo by zero")
              : "overflows int64",
      a, va, b, vb);
}

class Evaluator : public ExprFunctor<Evaluator, std::int64_t> {
 public:
  Evaluator(const Expr& root, std::span<const Binding> bindings)
      : root_(root), bindings_(bindings) {}

  std::int64_t visit_int(const IntImmNode& n, const Expr&) { return n.value; }
  std::int64_t visit_var(const VarNode& n, const Expr&) {
    for (const Binding& b : bindings_) {
      if (b.name == n.name) {
        check_in_range(n, b.value, "ne::eval", root_);
        return b.value;
      }
    }
    raise_unbound(root_, bindings_);
  }
  std::int64_t visit_binary(const BinaryNode& n, const Expr& e) {
    const std::int64_t a = visit(n.a);
    const std::int64_t b = visit(n.b);
    if (const auto r = fold(n.kind(), a, b)) return *r;
    raise_arithmetic("ne::eval", root_, e, n.a, a, n.b, b);
  }
  std::int64_t visit_not(const NotNode& n, const Expr&) { return visit(n.a) == 0; }
  std::int64_t visit_select(const SelectNode& n, const Expr&) {
    const std::int64_t c = visit(n.cond);
    const std::int64_t t = visit(n.t);
    const std::int64_t f = visit(n.f);
    return c != 0 ? t : f;
  }

 private:
  const Expr& root_;
  std::span<const Binding> bindings_;
};

}  // namespace detail

// eval(token*4096 + 16, {{"token", 37}}) == 151568
DLAVM_INLINE std::int64_t eval(const Expr& e, std::span<const Binding> bindings) {
  return detail::Evaluator(e, bindings).visit(e);
}

}  // namespace dlavm::ne
