// ne::bounds and ne::can_prove.
#include <dlavm/ne.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

namespace ne = dlavm::ne;
using ne::Interval;

TEST_CASE("bounds: leaves and affine sums") {
  auto token = ne::var("token", 1, 2048);
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  CHECK(ne::bounds(7) == Interval{7, 7});
  CHECK(ne::bounds(token) == Interval{1, 2048});
  CHECK(ne::bounds(token * 4096 + 16) == Interval{4112, 2048 * 4096 + 16});
  CHECK(ne::bounds(i * 16 + j) == Interval{0, 255});
  CHECK(ne::bounds(i - j) == Interval{-15, 15});
  CHECK(ne::bounds(i - i) == Interval{0, 0});  // seen through the simplifier
  CHECK(ne::bounds((i * 16 + j) * 4 + 7 - i * 64) == Interval{7, 67});
  CHECK(fmt::format("{}", ne::bounds(i * 16 + j)) == "[0, 255]");
}

TEST_CASE("bounds: multiplication of mixed signs") {
  auto a = ne::var("a", -3, 5);
  auto b = ne::var("b", -7, 2);
  auto c = ne::var("c", -4, -2);
  CHECK(ne::bounds(a * b) == Interval{-35, 21});
  CHECK(ne::bounds(c * c) == Interval{4, 16});  // x*x with x < 0: both corners positive
  CHECK(ne::bounds(a * -2) == Interval{-10, 6});
  CHECK(ne::bounds(b * c) == Interval{-8, 28});
}

TEST_CASE("bounds: floordiv and floormod with floor semantics") {
  auto x = ne::var("x", -7, 9);
  auto y = ne::var("y", 2, 4);
  auto z = ne::var("z", -3, 3);
  auto k = ne::var("k", 0, 1000);
  CHECK(ne::bounds(ne::floordiv(x, 2)) == Interval{-4, 4});
  CHECK(ne::bounds(ne::floordiv(x, -2)) == Interval{-5, 3});
  CHECK(ne::bounds(ne::floormod(x, 4)) == Interval{0, 3});
  CHECK(ne::bounds(ne::floormod(x, -4)) == Interval{-3, 0});
  CHECK(ne::bounds(ne::floordiv(x, y)) == Interval{-4, 4});
  CHECK(ne::bounds(ne::floormod(x, y)) == Interval{0, 3});
  CHECK(ne::bounds(ne::floormod(k, y)) == Interval{0, 3});
  CHECK(ne::bounds(ne::floormod(y, 8)) == Interval{2, 4});   // one period: exact
  CHECK(ne::bounds(ne::floordiv(x, z)) == Interval{-9, 9});  // z = 0 excluded
  CHECK(ne::bounds(ne::floormod(x, z)) == Interval{-2, 2});
  CHECK(ne::bounds(ne::floormod(k * 16 + 5, 16)) == Interval{5, 5});
  CHECK(ne::bounds(ne::floordiv(k + 15, 16)) == Interval{0, 63});
}

TEST_CASE("bounds: ceildiv of a positive count by a symbolic positive factor is at least 1") {
  auto n = ne::var("n", 1, 100);
  auto f = ne::var("f", 1, 34);
  // Written as floordiv(n + f - 1, f), the bound loses that n >= 1 and f vary together.
  CHECK(ne::bounds(ne::floordiv(n + f - 1, f)).min == 0);
  CHECK(ne::bounds(ne::ceildiv(n, f)) == Interval{1, 100});
  CHECK(ne::bounds(ne::ceildiv(ne::ceildiv(n, f), 2)) == Interval{1, 50});
  CHECK(ne::bounds(ne::ceildiv(n, 4)) == Interval{1, 25});
  // The same value as floordiv(a + b - 1, b), negative and zero counts included.
  auto a = ne::var("a", -40, 40);
  auto b = ne::var("b", 1, 9);
  const auto lhs = ne::ceildiv(a, b);
  const auto rhs = ne::floordiv(a + b - 1, b);
  for (std::int64_t x = -40; x <= 40; ++x)
    for (std::int64_t y = 1; y <= 9; ++y) {
      const std::vector<ne::Binding> at{{"a", x}, {"b", y}};
      REQUIRE(ne::eval(lhs, at) == ne::eval(rhs, at));
    }
}

TEST_CASE("bounds: min, max, select, conditions") {
  auto a = ne::var("a", 0, 10);
  auto b = ne::var("b", 5, 20);
  CHECK(ne::bounds(ne::min(a, b)) == Interval{0, 10});
  CHECK(ne::bounds(ne::max(a, b)) == Interval{5, 20});
  CHECK(ne::bounds(ne::select(a < 3, a, b)) == Interval{0, 20});
  CHECK(ne::bounds(ne::select(b > 2, a, b)) == Interval{0, 10});
  CHECK(ne::bounds(a < b) == Interval{0, 1});
  CHECK(ne::bounds(a <= b + 10) == Interval{1, 1});
  CHECK(ne::bounds(a > b + 10) == Interval{0, 0});
  CHECK(ne::bounds(!(a > b + 10)) == Interval{1, 1});
  CHECK(ne::bounds((a < 100) && (b < 100)) == Interval{1, 1});
  CHECK(ne::bounds((a < 3) || (b < 1)) == Interval{0, 1});
}

TEST_CASE("bounds: endpoints saturate at the int64 limits") {
  auto big = ne::var("big", 0, INT64_MAX);
  auto neg = ne::var("neg", INT64_MIN, 0);
  CHECK(ne::bounds(big * 4) == Interval{0, INT64_MAX});
  CHECK(ne::bounds(big + big) == Interval{0, INT64_MAX});
  CHECK(ne::bounds(neg * 3) == Interval{INT64_MIN, 0});
  CHECK(ne::bounds(ne::floordiv(neg, -1)) == Interval{0, INT64_MAX});
}

TEST_CASE("can_prove") {
  auto token = ne::var("token", 1, 2048);
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  CHECK(ne::can_prove(token > 0));
  CHECK(ne::can_prove(token <= 2048));
  CHECK_FALSE(ne::can_prove(token < 2048));  // not provable (and false for token = 2048)
  CHECK(ne::can_prove(i * 16 + j < 256));
  CHECK_FALSE(ne::can_prove(i * 16 + j < 255));
  CHECK(ne::can_prove(ne::floormod(i * 16 + j, 16) == j));
  CHECK(ne::can_prove(ne::floordiv(i * 16 + j, 16) == i));
  CHECK(ne::can_prove(ne::floordiv(token * 64 + 63, 64) * 64 >= token * 64));
  // A min or max term is bounded by its operands: min(i, j) - max(i, j) <= i - i.
  CHECK(ne::can_prove(ne::min(i, j) <= ne::max(i, j)));
  CHECK(ne::can_prove(token - ne::min(token, 64) >= 0));
  CHECK(ne::equal(
      ne::simplify(1 - i * 64 + ne::min(token - 1, i * 64 + ne::min(token - i * 64, 64) - 1)),
      ne::simplify(ne::min(token - i * 64, 64))));
  CHECK_FALSE(ne::can_prove(ne::min(i, j) < ne::max(i, j)));  // false for i == j
  CHECK(ne::can_prove(ne::min(i, 3) <= 3));
  CHECK(ne::can_prove((i < 16) && (j >= 0)));
  CHECK_FALSE(ne::can_prove(i == j));
  CHECK(ne::can_prove(7));
  CHECK_FALSE(ne::can_prove(0));
}

TEST_CASE("bounds: a min or max term that clips the rest of a sum is distributed over it") {
  // a split's guarded extent: rows left in a block of 3 at row 6o + 3t of 10
  auto o = ne::var("o", 0, 1), t = ne::var("t", 0, 1);
  const auto extent = 1 - o * 6 - t * 3 + ne::min(o * 6 + t * 3 + 2, 9);
  CHECK(ne::bounds(extent).max == 3);
  // negated: r - max(p, q) = min(r - p, r - q)
  auto x = ne::var("x", 0, 5);
  CHECK(ne::bounds(x + 4 - ne::max(x, 2)).max == 4);
  CHECK(ne::bounds(x + 4 - ne::max(x, 2)).min == 2);
  // two clipping terms: each distributed in turn (x + x, x + 2, 3 + x, 3 + 2)
  CHECK(ne::bounds(ne::min(x, 3) + ne::min(x, 2)).max == 5);
  CHECK(ne::bounds(ne::min(x, 3) - ne::min(x, 2)).max == 1);
}

TEST_CASE("bounds: clipping terms nested in a scaled term are distributed too") {
  // a convolution window's columns in block o of a symbolic width w (the block clipped to the
  // last output column f = floordiv(w + 1, 3)): 1 - 3o + min(w + 5, 3*min(o, f) + 4) is 5
  // at most, not w + 6
  auto w = ne::var("w", 1, 50);
  const auto f = ne::floordiv(w + 1, 3);
  auto o = ne::var("o", 0, 17);
  const auto cols = 1 - o * 3 + ne::min(w + 5, ne::min(o, f) * 3 + 4);
  CHECK(ne::bounds(cols).max == 5);
  // a negative scale turns the min into a max: 10 - 2*min(x, 3) is at least 4
  auto x = ne::var("x", 0, 5);
  CHECK(ne::bounds(10 - ne::min(x, 3) * 2).min == 4);
  CHECK(ne::bounds(10 - ne::min(x, 3) * 2).max == 10);
}
