// Operators that build ne expressions. Constant operands are folded on the spot (`4 * 4` is
// the constant 16), nothing else is rewritten: ne::simplify does that. Division or modulo by
// a constant zero raises ArithmeticError here, when the expression is written.
//
// floordiv/floormod follow Python: floordiv(-7, 2) == -4, floormod(-7, 2) == 1. Conditions
// (comparisons, &&, ||, !) have the value 0 or 1; any nonzero value counts as true.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/int_math.hpp>
#include <dlavm/ne/printer.hpp>

#include <cstdint>
#include <optional>

namespace dlavm::ne {

namespace detail {

// The value of k(a, b) on constants; nullopt when it overflows int64 or divides by zero.
constexpr std::optional<std::int64_t> fold(Kind k, std::int64_t a, std::int64_t b) {
  switch (k) {
    case Kind::Add:
      return checked_add(a, b);
    case Kind::Sub:
      return checked_sub(a, b);
    case Kind::Mul:
      return checked_mul(a, b);
    case Kind::FloorDiv:
      return checked_floor_div(a, b);
    case Kind::FloorMod:
      return checked_floor_mod(a, b);
    case Kind::Min:
      return a < b ? a : b;
    case Kind::Max:
      return a < b ? b : a;
    case Kind::EQ:
      return a == b;
    case Kind::NE:
      return a != b;
    case Kind::LT:
      return a < b;
    case Kind::LE:
      return a <= b;
    case Kind::GT:
      return a > b;
    case Kind::GE:
      return a >= b;
    case Kind::And:
      return a != 0 && b != 0;
    case Kind::Or:
      return a != 0 || b != 0;
    default:
      return std::nullopt;
  }
}

inline void check_divisor(Kind k, const Expr& a, const Expr& b) {
  if ((k == Kind::FloorDiv || k == Kind::FloorMod) && b.as_int() == 0)
    raise<ArithmeticError>("{}({}, 0): {} by constant zero", call_name(k), a,
                           k == Kind::FloorDiv ? "division" : "modulo");
}

}  // namespace detail

// k(a, b) for any binary kind, folded when both operands are constants and the result is
// defined. The generic builder behind the operators, and what mutators rebuild with.
inline Expr binary(Kind k, const Expr& a, const Expr& b) {
  if (!is_binary(k)) raise<ValueError>("ne::binary: {} is not a binary kind", kind_name(k));
  if (!a.defined() || !b.defined())
    raise<ValueError>("ne::binary: {} of an undefined Expr", kind_name(k));
  detail::check_divisor(k, a, b);
  const auto x = a.as_int();
  const auto y = b.as_int();
  if (x && y) {
    if (auto folded = detail::fold(k, *x, *y)) return detail::make_int(*folded);
  }
  return detail::make_binary(k, a, b);
}

inline Expr operator+(const Expr& a, const Expr& b) { return binary(Kind::Add, a, b); }
inline Expr operator-(const Expr& a, const Expr& b) { return binary(Kind::Sub, a, b); }
inline Expr operator*(const Expr& a, const Expr& b) { return binary(Kind::Mul, a, b); }
inline Expr operator-(const Expr& a) { return binary(Kind::Mul, a, -1); }
inline Expr floordiv(const Expr& a, const Expr& b) { return binary(Kind::FloorDiv, a, b); }
inline Expr floormod(const Expr& a, const Expr& b) { return binary(Kind::FloorMod, a, b); }
// ceil(a / b) for b > 0 (loop counts of splits), written floordiv(a - 1, b) + 1. The value is
// that of floordiv(a + b - 1, b), but interval bounds see it is at least 1 whenever a is:
// floordiv(n + f - 1, f) with a symbolic f bounds to 0 when n and f vary independently.
inline Expr ceildiv(const Expr& a, const Expr& b) { return floordiv(a - 1, b) + 1; }
inline Expr min(const Expr& a, const Expr& b) { return binary(Kind::Min, a, b); }
inline Expr max(const Expr& a, const Expr& b) { return binary(Kind::Max, a, b); }

// Comparisons build conditions; for structural equality use ne::equal.
inline Expr operator==(const Expr& a, const Expr& b) { return binary(Kind::EQ, a, b); }
inline Expr operator!=(const Expr& a, const Expr& b) { return binary(Kind::NE, a, b); }
inline Expr operator<(const Expr& a, const Expr& b) { return binary(Kind::LT, a, b); }
inline Expr operator<=(const Expr& a, const Expr& b) { return binary(Kind::LE, a, b); }
inline Expr operator>(const Expr& a, const Expr& b) { return binary(Kind::GT, a, b); }
inline Expr operator>=(const Expr& a, const Expr& b) { return binary(Kind::GE, a, b); }
inline Expr operator&&(const Expr& a, const Expr& b) { return binary(Kind::And, a, b); }
inline Expr operator||(const Expr& a, const Expr& b) { return binary(Kind::Or, a, b); }

inline Expr operator!(const Expr& a) {
  if (const auto x = a.as_int()) return detail::make_int(*x == 0);
  return detail::make_not(a);
}

// cond ? t : f, with cond nonzero meaning true. Both branches are evaluated.
inline Expr select(const Expr& cond, const Expr& t, const Expr& f) {
  if (!cond.defined() || !t.defined() || !f.defined())
    raise<ValueError>("ne::select of an undefined Expr");
  if (const auto c = cond.as_int()) return *c != 0 ? t : f;
  return detail::make_select(cond, t, f);
}

inline Expr& operator+=(Expr& a, const Expr& b) { return a = a + b; }
inline Expr& operator-=(Expr& a, const Expr& b) { return a = a - b; }
inline Expr& operator*=(Expr& a, const Expr& b) { return a = a * b; }
// A Var stays a variable: compound assignment would turn it into another expression.
Expr& operator+=(Var&, const Expr&) = delete;
Expr& operator-=(Var&, const Expr&) = delete;
Expr& operator*=(Var&, const Expr&) = delete;

}  // namespace dlavm::ne
