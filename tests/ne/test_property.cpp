// Property tests over random expression trees and random in-range variable values:
//   simplify(e) evaluates equal to e; every value lies in bounds(e); compiled code agrees with
//   eval (including which inputs raise ArithmeticError); simplification is idempotent; floor
//   division and modulo agree with a reference on random operands.
// Seeded, so failures reproduce; the failing tree is printed.
#include <dlavm/ne.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ne = dlavm::ne;

namespace {

class TreeGen {
 public:
  explicit TreeGen(std::uint64_t seed) : rng_(seed) {
    vars_ = {ne::var("a", 0, 15), ne::var("b", -8, 8), ne::var("c", 1, 32), ne::var("d", -20, -1),
             ne::var("e", 3, 3)};
  }

  const std::vector<ne::Var>& vars() const { return vars_; }
  std::mt19937_64& rng() { return rng_; }

  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }

  ne::Expr leaf() {
    if (uniform(0, 9) < 6) return vars_[static_cast<std::size_t>(uniform(0, 4))];
    return uniform(-10, 10);
  }

  // A divisor: mostly a nonzero constant, sometimes an expression (which may be zero).
  ne::Expr divisor(int depth) {
    if (uniform(0, 9) < 7) {
      std::int64_t d = 0;
      while (d == 0) d = uniform(-9, 9);
      return d;
    }
    ne::Expr e = tree(depth);
    if (e.as_int() == 0) return 7;  // a constant zero divisor raises at construction
    return e;
  }

  // Values stay far from int64 overflow: one factor of every product is shallow.
  ne::Expr tree(int depth) {
    if (depth == 0 || uniform(0, 9) < 2) return leaf();
    const int d = depth - 1;
    switch (uniform(0, 18)) {
      case 0:
        return tree(d) + tree(d);
      case 1:
        return tree(d) - tree(d);
      case 2:
        return tree(d) * leaf();
      case 3:
        return tree(std::min(d, 1)) * tree(d);
      case 4:
        return ne::floordiv(tree(d), divisor(d));
      case 5:
        return ne::floormod(tree(d), divisor(d));
      case 6:
        return ne::min(tree(d), tree(d));
      case 7:
        return ne::max(tree(d), tree(d));
      case 8:
        return tree(d) == tree(d);
      case 9:
        return tree(d) != tree(d);
      case 10:
        return tree(d) < tree(d);
      case 11:
        return tree(d) <= tree(d);
      case 12:
        return tree(d) > tree(d);
      case 13:
        return tree(d) >= tree(d);
      case 14:
        return tree(d) && tree(d);
      case 15:
        return tree(d) || tree(d);
      case 16:
        return !tree(d);
      case 17:
        return ne::select(tree(d), tree(d), tree(d));
      default:
        return tree(d) + leaf() * uniform(-20, 20);  // affine-looking
    }
  }

 private:
  std::mt19937_64 rng_;
  std::vector<ne::Var> vars_;
};

}  // namespace

TEST_CASE("property: simplify, bounds, eval and compile agree on random trees") {
  TreeGen gen(20240607);
  constexpr int kTrees = 4000;
  constexpr int kSamples = 10;
  int evaluated = 0;
  int raised = 0;
  int idempotent_failures = 0;
  for (int t = 0; t < kTrees; ++t) {
    const ne::Expr e = gen.tree(5);
    const ne::Expr s = ne::simplify(e);
    const ne::Interval range = ne::bounds(e);
    const auto compiled = ne::compile(e, gen.vars());
    const auto raw = ne::compile(e, gen.vars(), {.simplify = false});
    if (!ne::equal(ne::simplify(s), s)) {
      ++idempotent_failures;
      MESSAGE("not idempotent: " << ne::to_string(e) << "\n  once:  " << ne::to_string(s)
                                 << "\n  twice: " << ne::to_string(ne::simplify(s)));
    }
    for (int k = 0; k < kSamples; ++k) {
      std::array<std::int64_t, 5> values{};
      std::array<ne::Binding, 5> bindings{};
      for (std::size_t v = 0; v < values.size(); ++v) {
        const auto& var = gen.vars()[v];
        values[v] = gen.uniform(var.min(), var.max());
        bindings[v] = {var.name(), values[v]};
      }
      const std::string where = fmt::format("e = {}\n  s = {}\n  a={} b={} c={} d={} e={}", e, s,
                                            values[0], values[1], values[2], values[3], values[4]);
      INFO(where);
      std::int64_t want = 0;
      try {
        want = ne::eval(e, bindings);
      } catch (const dlavm::ArithmeticError&) {
        ++raised;
        // the unsimplified compiled code raises exactly when eval does
        CHECK_THROWS_AS(raw(values), dlavm::ArithmeticError);
        continue;
      }
      ++evaluated;
      REQUIRE(ne::eval(s, bindings) == want);
      REQUIRE(range.contains(want));
      REQUIRE(compiled(values) == want);
      REQUIRE(raw(values) == want);
    }
  }
  CHECK(idempotent_failures == 0);
  // division by an expression that is zero is rare enough not to hide the rest
  CHECK(evaluated > kTrees * kSamples * 9 / 10);
  MESSAGE("evaluated " << evaluated << ", raised ArithmeticError " << raised);
}

TEST_CASE("property: bounds are tight for single affine forms") {
  // For a*x + b*y + c with independent x and y the interval is exact: both ends are reached.
  TreeGen gen(7);
  for (int t = 0; t < 500; ++t) {
    auto x = ne::var("x", gen.uniform(-50, 0), gen.uniform(0, 50));
    auto y = ne::var("y", gen.uniform(-50, 0), gen.uniform(0, 50));
    const std::int64_t a = gen.uniform(-9, 9);
    const std::int64_t b = gen.uniform(-9, 9);
    const std::int64_t c = gen.uniform(-100, 100);
    const ne::Expr e = x * a + y * b + c;
    const ne::Interval r = ne::bounds(e);
    std::int64_t lo = INT64_MAX;
    std::int64_t hi = INT64_MIN;
    for (std::int64_t vx : {x.min(), x.max()})
      for (std::int64_t vy : {y.min(), y.max()}) {
        const std::int64_t v = a * vx + b * vy + c;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    REQUIRE(r == ne::Interval{lo, hi});
  }
}

TEST_CASE("property: floordiv/floormod follow floor semantics on random operands") {
  std::mt19937_64 rng(99);
  std::uniform_int_distribution<std::int64_t> big(-(std::int64_t{1} << 40), std::int64_t{1} << 40);
  std::uniform_int_distribution<std::int64_t> small(-1000, 1000);
  auto x = ne::var("x", INT64_MIN, INT64_MAX);
  auto y = ne::var("y", INT64_MIN, INT64_MAX);
  const auto q = ne::compile(ne::floordiv(x, y), {x, y});
  const auto r = ne::compile(ne::floormod(x, y), {x, y});
  for (int k = 0; k < 20000; ++k) {
    const std::int64_t a = big(rng);
    std::int64_t b = small(rng);
    if (b == 0) b = 1;
    // reference: mathematical floor through long double (exact at these magnitudes)
    const auto want_q = static_cast<std::int64_t>(
        std::floor(static_cast<long double>(a) / static_cast<long double>(b)));
    const std::int64_t want_r = a - b * want_q;
    REQUIRE(q({a, b}) == want_q);
    REQUIRE(r({a, b}) == want_r);
    REQUIRE(ne::eval(ne::floordiv(x, y), {{"x", a}, {"y", b}}) == want_q);
    REQUIRE(ne::floormod(a, b).as_int() == want_r);
    // the remainder has the sign of the divisor and is smaller in magnitude
    REQUIRE((want_r == 0 || (want_r < 0) == (b < 0)));
    REQUIRE(std::abs(want_r) < std::abs(b));
  }
}
