// Static dims: integer constants carried in the type, so that arithmetic on them happens at
// compile time and its results can appear in static_assert. They are Boost.Hana's integral
// constants: `16_c` is `boost::hana::llong<16>`, and Hana's operators
// combine them (+ - * / %, comparisons giving hana::bool_). This header adds what Hana lacks
// for dims: floor division and modulo (Python semantics, like ne::floordiv), min and max, and
// mixing with ne expressions, which gives an Expr.
//
//   using namespace dlavm::literals;
//   constexpr auto block = 16_c * 4_c;           // boost::hana::llong<64>
//   static_assert(block == 64_c && block.value == 64);
//   ne::Expr rows = token * block;               // with an Expr: an Expr, at run time
//
// Overflow and division by zero are compile errors (the arithmetic is a constant expression).
#pragma once

#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/int_math.hpp>
#include <dlavm/ne/ops.hpp>

#include <boost/hana/equal.hpp>
#include <boost/hana/greater.hpp>
#include <boost/hana/greater_equal.hpp>
#include <boost/hana/integral_constant.hpp>
#include <boost/hana/less.hpp>
#include <boost/hana/less_equal.hpp>
#include <boost/hana/minus.hpp>
#include <boost/hana/mult.hpp>
#include <boost/hana/negate.hpp>
#include <boost/hana/not_equal.hpp>
#include <boost/hana/plus.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

namespace dlavm::ne {

// The static dim V: Hana's integral constant of V.
template <std::int64_t V>
using IntConstant = boost::hana::llong<V>;

template <std::int64_t V>
inline constexpr IntConstant<V> int_c{};

template <class T>
struct is_int_constant : std::false_type {};
template <class T, T V>
struct is_int_constant<boost::hana::integral_constant<T, V>>
    : std::bool_constant<std::is_integral_v<T> && !std::is_same_v<T, bool>> {};
template <class T>
inline constexpr bool is_int_constant_v = is_int_constant<std::remove_cvref_t<T>>::value;

namespace detail {

// An operand that becomes an Expr when mixed with a static dim: Exprs, variables, axes. Plain
// integers stay with Hana (16_c * 4 is the integer 64) and constants with each other.
template <class T>
concept SymbolicOperand = std::is_convertible_v<T, Expr> && !is_int_constant_v<T> &&
                          !std::is_arithmetic_v<std::remove_cvref_t<T>>;

template <class T>
concept StaticDim = is_int_constant_v<T>;

}  // namespace detail

// floordiv / floormod / min / max of two static dims, at compile time.
template <detail::StaticDim A, detail::StaticDim B>
constexpr auto floordiv(A, B) {
  constexpr auto result = detail::checked_floor_div(A::value, B::value);
  static_assert(result.has_value(), "ne::floordiv of static dims divides by zero or overflows");
  return IntConstant<result.value_or(0)>{};
}
template <detail::StaticDim A, detail::StaticDim B>
constexpr auto floormod(A, B) {
  constexpr auto result = detail::checked_floor_mod(A::value, B::value);
  static_assert(result.has_value(), "ne::floormod of static dims divides by zero or overflows");
  return IntConstant<result.value_or(0)>{};
}
template <detail::StaticDim A, detail::StaticDim B>
constexpr auto min(A, B) {
  return IntConstant<(A::value < B::value ? A::value : B::value)>{};
}
template <detail::StaticDim A, detail::StaticDim B>
constexpr auto max(A, B) {
  return IntConstant<(A::value < B::value ? B::value : A::value)>{};
}

// A static dim mixed with an ne expression: the Expr operator. These overloads are more
// specialized than Hana's generic operators (which would treat the expression as a Hana value)
// and than ne's own Expr operators (which would need two conversions).
#define DLAVM_NE_MIXED_OPERATOR(op)                                        \
  template <detail::SymbolicOperand E, class T, T V>                       \
  Expr operator op(E&& e, boost::hana::integral_constant<T, V>) {          \
    return Expr(std::forward<E>(e)) op Expr(static_cast<std::int64_t>(V)); \
  }                                                                        \
  template <detail::SymbolicOperand E, class T, T V>                       \
  Expr operator op(boost::hana::integral_constant<T, V>, E&& e) {          \
    return Expr(static_cast<std::int64_t>(V)) op Expr(std::forward<E>(e)); \
  }
DLAVM_NE_MIXED_OPERATOR(+)
DLAVM_NE_MIXED_OPERATOR(-)
DLAVM_NE_MIXED_OPERATOR(*)
DLAVM_NE_MIXED_OPERATOR(==)
DLAVM_NE_MIXED_OPERATOR(!=)
DLAVM_NE_MIXED_OPERATOR(<)
DLAVM_NE_MIXED_OPERATOR(<=)
DLAVM_NE_MIXED_OPERATOR(>)
DLAVM_NE_MIXED_OPERATOR(>=)
#undef DLAVM_NE_MIXED_OPERATOR

}  // namespace dlavm::ne

namespace dlavm::ne::detail {
// The digits of a _c literal: decimal, 0x hex, 0b binary, 0 octal, ' separators; nullopt when
// the value does not fit int64. (Hana's own _c parser overflows on 19-digit values.)
template <char... Cs>
constexpr std::optional<std::int64_t> parse_literal() {
  constexpr char text[] = {Cs...};
  std::size_t i = 0;
  std::uint64_t base = 10;
  if (sizeof...(Cs) > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    i = 2;
  } else if (sizeof...(Cs) > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    i = 2;
  } else if (sizeof...(Cs) > 1 && text[0] == '0') {
    base = 8;
    i = 1;
  }
  std::int64_t value = 0;
  for (; i < sizeof...(Cs); ++i) {
    const char c = text[i];
    if (c == '\'') continue;
    std::int64_t digit = 0;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      digit = c - 'A' + 10;
    else
      return std::nullopt;
    if (static_cast<std::uint64_t>(digit) >= base) return std::nullopt;
    const auto scaled = checked_mul(value, static_cast<std::int64_t>(base));
    if (!scaled) return std::nullopt;
    const auto next = checked_add(*scaled, digit);
    if (!next) return std::nullopt;
    value = *next;
  }
  return value;
}
}  // namespace dlavm::ne::detail

namespace dlavm::literals {

// 16_c is boost::hana::llong<16>, the static dim 16.
template <char... Cs>
constexpr auto operator""_c() {
  constexpr auto value = ne::detail::parse_literal<Cs...>();
  static_assert(value.has_value(), "_c literal: not an integer that fits in int64");
  return ne::IntConstant<*value>{};
}

}  // namespace dlavm::literals
