// Inclusive integer intervals and the interval analysis of an expression as written (no
// rewriting). ne::bounds (ne/bounds.hpp) combines this with the simplifier for tighter results;
// the simplifier itself uses this analysis on the canonical pieces it builds.
//
// Endpoint arithmetic runs in 128 bits and saturates into int64, so the analysis never
// overflows. An interval is sound for every assignment of in-range values under which the
// expression evaluates without an error.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/int_math.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace dlavm::ne {

struct Interval {
  std::int64_t min = detail::int64_min;
  std::int64_t max = detail::int64_max;

  static constexpr Interval point(std::int64_t v) { return {v, v}; }
  static constexpr Interval everything() { return {}; }

  constexpr bool is_point() const { return min == max; }
  constexpr bool contains(std::int64_t v) const { return min <= v && v <= max; }
  constexpr bool excludes_zero() const { return min > 0 || max < 0; }
  constexpr bool is_zero() const { return min == 0 && max == 0; }
  friend constexpr bool operator==(Interval, Interval) = default;
};

// The smallest interval holding both.
constexpr Interval hull(Interval a, Interval b) {
  return {std::min(a.min, b.min), std::max(a.max, b.max)};
}
// The overlap of two intervals that both hold the value (an empty overlap cannot happen for
// sound inputs; it is resolved towards `a`).
constexpr Interval intersect(Interval a, Interval b) {
  const Interval r{std::max(a.min, b.min), std::min(a.max, b.max)};
  return r.min <= r.max ? r : a;
}

namespace detail {

constexpr Interval interval_from(std::initializer_list<int128> corners) {
  const auto [lo, hi] = std::minmax(corners);
  return {saturate(lo), saturate(hi)};
}

constexpr Interval interval_add(Interval a, Interval b) {
  return {saturate(int128{a.min} + b.min), saturate(int128{a.max} + b.max)};
}
constexpr Interval interval_sub(Interval a, Interval b) {
  return {saturate(int128{a.min} - b.max), saturate(int128{a.max} - b.min)};
}
constexpr Interval interval_mul(Interval a, Interval b) {
  return interval_from(
      {int128{a.min} * b.min, int128{a.min} * b.max, int128{a.max} * b.min, int128{a.max} * b.max});
}
constexpr Interval interval_scale(Interval a, std::int64_t c) {
  return interval_from({int128{a.min} * c, int128{a.max} * c});
}

// floor(a / b) over the nonzero values of b. floor(x / y) is monotone in x for a fixed y and
// in y on each side of zero, so the extremes are at the corners of each sign part.
constexpr Interval interval_floordiv(Interval a, Interval b) {
  bool any = false;
  Interval r{};
  auto part = [&](std::int64_t lo, std::int64_t hi) {
    const Interval p = interval_from({floor_div128(a.min, lo), floor_div128(a.min, hi),
                                      floor_div128(a.max, lo), floor_div128(a.max, hi)});
    r = any ? hull(r, p) : p;
    any = true;
  };
  if (b.min < 0) part(b.min, std::min<std::int64_t>(b.max, -1));
  if (b.max > 0) part(std::max<std::int64_t>(b.min, 1), b.max);
  return any ? r : Interval::everything();  // b == 0: never evaluates without an error
}

constexpr Interval interval_floormod(Interval a, Interval b) {
  if (b.is_point() && b.min != 0) {
    const std::int64_t d = b.min;
    const int128 k = floor_div128(a.min, d);
    if (k == floor_div128(a.max, d))  // a lies in one period: floormod(x, d) = x - k*d
      return {saturate(a.min - k * d), saturate(a.max - k * d)};
  }
  if (b.min > 0 && a.min >= 0) return {0, std::min<std::int64_t>(a.max, b.max - 1)};
  bool any = false;
  Interval r{};
  if (b.max > 0) {
    r = {0, b.max - 1};
    any = true;
  }
  if (b.min < 0) {
    const Interval n{b.min + 1, 0};
    r = any ? hull(r, n) : n;
    any = true;
  }
  return any ? r : Interval::everything();
}

constexpr Interval interval_truth(bool known_true, bool known_false) {
  if (known_true) return Interval::point(1);
  if (known_false) return Interval::point(0);
  return {0, 1};
}

constexpr Interval interval_compare(Kind k, Interval a, Interval b) {
  switch (k) {
    case Kind::LT:
      return interval_truth(a.max < b.min, a.min >= b.max);
    case Kind::LE:
      return interval_truth(a.max <= b.min, a.min > b.max);
    case Kind::GT:
      return interval_truth(a.min > b.max, a.max <= b.min);
    case Kind::GE:
      return interval_truth(a.min >= b.max, a.max < b.min);
    case Kind::EQ:
      return interval_truth(a.is_point() && a == b, a.max < b.min || b.max < a.min);
    case Kind::NE:
      return interval_truth(a.max < b.min || b.max < a.min, a.is_point() && a == b);
    default:
      return {0, 1};
  }
}

// The interval of k(a, b) from the intervals of its operands.
constexpr Interval interval_binary(Kind k, Interval a, Interval b) {
  switch (k) {
    case Kind::Add:
      return interval_add(a, b);
    case Kind::Sub:
      return interval_sub(a, b);
    case Kind::Mul:
      return interval_mul(a, b);
    case Kind::FloorDiv:
      return interval_floordiv(a, b);
    case Kind::FloorMod:
      return interval_floormod(a, b);
    case Kind::Min:
      return {std::min(a.min, b.min), std::min(a.max, b.max)};
    case Kind::Max:
      return {std::max(a.min, b.min), std::max(a.max, b.max)};
    case Kind::And:
      return interval_truth(a.excludes_zero() && b.excludes_zero(), a.is_zero() || b.is_zero());
    case Kind::Or:
      return interval_truth(a.excludes_zero() || b.excludes_zero(), a.is_zero() && b.is_zero());
    default:
      return interval_compare(k, a, b);
  }
}

// The interval of e as written, from its variables' ranges.
Interval interval_of(const Expr& e);

}  // namespace detail
}  // namespace dlavm::ne

template <>
struct fmt::formatter<dlavm::ne::Interval> : fmt::formatter<std::string_view> {
  format_context::iterator format(const dlavm::ne::Interval& i, format_context& ctx) const;
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/interval-inl.hpp>
#endif
