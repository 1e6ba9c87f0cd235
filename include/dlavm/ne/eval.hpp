// ne::eval: the value of an expression for given variable values, by walking the tree.
// For repeated evaluation use ne::compile (ne/compile.hpp), which does the same checks
// without the tree walk.
//
// Arithmetic is checked: int64 overflow and division or modulo by zero raise
// ArithmeticError naming the subexpression and its operand values. A variable without a
// value raises ValueError listing every unbound name; a value outside the variable's range
// raises ValueError too (bounds, simplification and buffer sizes rely on the ranges).
// Conditions are 0 or 1; both branches of a select are evaluated.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

namespace dlavm::ne {

// A value for the variables named `name`.
struct Binding {
  std::string_view name;
  std::int64_t value;
};

// The value of e with each variable bound by name.
std::int64_t eval(const Expr& e, std::span<const Binding> bindings);
inline std::int64_t eval(const Expr& e, std::initializer_list<Binding> bindings = {}) {
  return eval(e, std::span<const Binding>(bindings.begin(), bindings.size()));
}

}  // namespace dlavm::ne

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/eval-inl.hpp>
#endif
