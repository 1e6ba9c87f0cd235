// Static dims: integer constants carried in the type, so that arithmetic on them happens at
// compile time and its results can appear in static_assert.
//
//   using namespace dlavm::literals;
//   constexpr auto block = 16_c * 4_c;           // ne::IntConstant<64>
//   static_assert(block == 64_c && block.value == 64);
//   ne::Expr rows = token * block;               // with an Expr: an Expr, at run time
//
// IntConstant<V> is a std::integral_constant<std::int64_t, V>, converts implicitly to Expr,
// and supports + - * (unary -), floordiv, floormod, min, max and comparisons with other
// constants. Overflow and division by zero are compile errors.
#pragma once

#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/int_math.hpp>

#include <cstdint>
#include <type_traits>

namespace dlavm::ne {

template <std::int64_t V>
struct IntConstant : std::integral_constant<std::int64_t, V> {
  operator Expr() const { return Expr(V); }  // NOLINT(google-explicit-constructor)
};

template <class T>
struct is_int_constant : std::false_type {};
template <std::int64_t V>
struct is_int_constant<IntConstant<V>> : std::true_type {};
template <class T>
inline constexpr bool is_int_constant_v = is_int_constant<std::remove_cvref_t<T>>::value;

template <std::int64_t V>
inline constexpr IntConstant<V> int_c{};

#define DLAVM_NE_CONSTANT_RESULT(expr)                                            \
  constexpr auto result = expr;                                                   \
  static_assert(result.has_value(),                                               \
                "ne::IntConstant arithmetic overflows int64 or divides by zero"); \
  return IntConstant<result.value_or(0)> {}

template <std::int64_t A, std::int64_t B>
constexpr auto operator+(IntConstant<A>, IntConstant<B>) {
  DLAVM_NE_CONSTANT_RESULT(detail::checked_add(A, B));
}
template <std::int64_t A, std::int64_t B>
constexpr auto operator-(IntConstant<A>, IntConstant<B>) {
  DLAVM_NE_CONSTANT_RESULT(detail::checked_sub(A, B));
}
template <std::int64_t A, std::int64_t B>
constexpr auto operator*(IntConstant<A>, IntConstant<B>) {
  DLAVM_NE_CONSTANT_RESULT(detail::checked_mul(A, B));
}
template <std::int64_t A>
constexpr auto operator-(IntConstant<A>) {
  DLAVM_NE_CONSTANT_RESULT(detail::checked_sub(0, A));
}
template <std::int64_t A, std::int64_t B>
constexpr auto floordiv(IntConstant<A>, IntConstant<B>) {
  DLAVM_NE_CONSTANT_RESULT(detail::checked_floor_div(A, B));
}
template <std::int64_t A, std::int64_t B>
constexpr auto floormod(IntConstant<A>, IntConstant<B>) {
  DLAVM_NE_CONSTANT_RESULT(detail::checked_floor_mod(A, B));
}
template <std::int64_t A, std::int64_t B>
constexpr auto min(IntConstant<A>, IntConstant<B>) {
  return IntConstant<(A < B ? A : B)>{};
}
template <std::int64_t A, std::int64_t B>
constexpr auto max(IntConstant<A>, IntConstant<B>) {
  return IntConstant<(A < B ? B : A)>{};
}

template <std::int64_t A, std::int64_t B>
constexpr std::bool_constant<A == B> operator==(IntConstant<A>, IntConstant<B>) {
  return {};
}
template <std::int64_t A, std::int64_t B>
constexpr std::bool_constant<A != B> operator!=(IntConstant<A>, IntConstant<B>) {
  return {};
}
template <std::int64_t A, std::int64_t B>
constexpr std::bool_constant<(A < B)> operator<(IntConstant<A>, IntConstant<B>) {
  return {};
}
template <std::int64_t A, std::int64_t B>
constexpr std::bool_constant<(A <= B)> operator<=(IntConstant<A>, IntConstant<B>) {
  return {};
}
template <std::int64_t A, std::int64_t B>
constexpr std::bool_constant<(A > B)> operator>(IntConstant<A>, IntConstant<B>) {
  return {};
}
template <std::int64_t A, std::int64_t B>
constexpr std::bool_constant<(A >= B)> operator>=(IntConstant<A>, IntConstant<B>) {
  return {};
}

#undef DLAVM_NE_CONSTANT_RESULT

namespace detail {
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
}  // namespace detail

}  // namespace dlavm::ne

namespace dlavm::literals {

// 16_c is ne::IntConstant<16>.
template <char... Cs>
constexpr auto operator""_c() {
  constexpr auto value = ne::detail::parse_literal<Cs...>();
  static_assert(value.has_value(), "_c literal: not an integer that fits in int64");
  return ne::IntConstant<*value>{};
}

}  // namespace dlavm::literals
