// Integer helpers shared by the ne passes: floor division with Python semantics, overflow-
// checked int64 arithmetic, and a 128-bit type for interval arithmetic that must not overflow.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

// The symbolic dims, and every layer built on them, compute bounds in 128 bits. 32-bit targets
// (the boards' Cortex-A9) have no such type: they build the firmware runtime (and the hardware
// model, vta/hw, which reads no dims), and the program that compiles the model runs on a
// 64-bit host.
#ifndef __SIZEOF_INT128__
#error "dlavm's compiler layers need __int128 (a 64-bit target); 32-bit: dlavm/runtime.hpp alone"
#endif

namespace dlavm::ne::detail {

#ifdef __SIZEOF_INT128__
__extension__ using int128 = __int128;
#else
using int128 = std::int64_t;  // (the #error above fails the unit: this spares the errors after it)
#endif

inline constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
inline constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

// floor(a / b). Requires b != 0 and not (a == INT64_MIN && b == -1).
constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  const std::int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

// a - b * floor(a / b): the result has the sign of b. Requires b != 0.
constexpr std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  if (b == -1) return 0;  // a % -1 overflows for INT64_MIN
  const std::int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

constexpr int128 floor_div128(int128 a, int128 b) {
  const int128 q = a / b;
  const int128 r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

// Checked arithmetic: nullopt when the exact result does not fit in int64 (or b == 0 for the
// divisions).
constexpr std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
constexpr std::optional<std::int64_t> checked_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
constexpr std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
constexpr std::optional<std::int64_t> checked_floor_div(std::int64_t a, std::int64_t b) {
  if (b == 0 || (a == int64_min && b == -1)) return std::nullopt;
  return floor_div(a, b);
}
constexpr std::optional<std::int64_t> checked_floor_mod(std::int64_t a, std::int64_t b) {
  if (b == 0) return std::nullopt;
  return floor_mod(a, b);
}

// Clamps a 128-bit value into int64.
constexpr std::int64_t saturate(int128 v) {
  if (v > int64_max) return int64_max;
  if (v < int64_min) return int64_min;
  return static_cast<std::int64_t>(v);
}

constexpr std::int64_t gcd(std::int64_t a, std::int64_t b) {
  // Works on magnitudes in uint64 so that INT64_MIN does not overflow.
  std::uint64_t x = a < 0 ? 0 - static_cast<std::uint64_t>(a) : static_cast<std::uint64_t>(a);
  std::uint64_t y = b < 0 ? 0 - static_cast<std::uint64_t>(b) : static_cast<std::uint64_t>(b);
  while (y != 0) {
    const std::uint64_t t = x % y;
    x = y;
    y = t;
  }
  // gcd(INT64_MIN, INT64_MIN) = 2^63 does not fit; 1 is still a common divisor.
  return x > static_cast<std::uint64_t>(int64_max) ? 1 : static_cast<std::int64_t>(x);
}

}  // namespace dlavm::ne::detail

namespace dlavm::ne {

// ceil(a / b) for b > 0: how many tiles of b elements hold a elements.
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return -detail::floor_div(-a, b);
}

}  // namespace dlavm::ne
