// ne::linear_form: strides and offsets read off index expressions.
#include <dlavm/ne.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace ne = dlavm::ne;

TEST_CASE("linear_form: constant strides of a flattened index") {
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  const auto form = ne::linear_form((i * 16 + j) * 4 + 7, {i, j});
  REQUIRE(form.has_value());
  CHECK(form->offset.as_int() == 7);
  REQUIRE(form->strides.size() == 2);
  CHECK(form->strides[0].as_int() == 64);
  CHECK(form->strides[1].as_int() == 4);
  // order follows the list given
  const auto swapped = ne::linear_form((i * 16 + j) * 4 + 7, {j, i});
  REQUIRE(swapped.has_value());
  CHECK(swapped->strides[0].as_int() == 4);
  CHECK(swapped->strides[1].as_int() == 64);
  // a variable that does not occur has stride 0
  auto k = ne::var("k", 0, 3);
  const auto with_k = ne::linear_form(i * 2, {i, k});
  REQUIRE(with_k.has_value());
  CHECK(with_k->strides[1].as_int() == 0);
  CHECK(with_k->offset.as_int() == 0);
}

TEST_CASE("linear_form: symbolic strides and offsets") {
  auto token = ne::var("token", 1, 2048);
  auto base = ne::var("base", 0, 1 << 20);
  auto i = ne::var("i", 0, 63);
  auto j = ne::var("j", 0, 15);
  // a row-major [token, 64] tensor at base, element (i, j*4)
  const auto form = ne::linear_form(base + i * token * 64 + j * 4 + token, {i, j});
  REQUIRE(form.has_value());
  CHECK(fmt::format("{}", form->offset) == "token + base");
  CHECK(fmt::format("{}", form->strides[0]) == "token*64");
  CHECK(form->strides[1].as_int() == 4);
  // terms of the same variable merge: i*token + i*3
  const auto merged = ne::linear_form(i * token + i * 3 + 1, {i});
  REQUIRE(merged.has_value());
  CHECK(fmt::format("{}", merged->strides[0]) == "token + 3");
  CHECK(merged->offset.as_int() == 1);
  // distributes products: (i + 1)*token
  const auto dist = ne::linear_form((i + 1) * token, {i});
  REQUIRE(dist.has_value());
  CHECK(fmt::format("{}", dist->strides[0]) == "token");
  CHECK(fmt::format("{}", dist->offset) == "token");
}

TEST_CASE("linear_form: split loops simplify back to affine") {
  auto outer = ne::var("outer", 0, 3);
  auto inner = ne::var("inner", 0, 15);
  const ne::Expr fused = outer * 16 + inner;
  const auto form =
      ne::linear_form(ne::floordiv(fused, 16) * 256 + ne::floormod(fused, 16) * 2, {outer, inner});
  REQUIRE(form.has_value());
  CHECK(form->strides[0].as_int() == 256);
  CHECK(form->strides[1].as_int() == 2);
}

TEST_CASE("linear_form: nullopt when not affine in the listed variables") {
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  auto t = ne::var("t", 0, 100);
  CHECK_FALSE(ne::linear_form(i * i, {i}).has_value());
  CHECK_FALSE(ne::linear_form(i * j, {i, j}).has_value());
  CHECK_FALSE(ne::linear_form(ne::floordiv(i * 3 + j, 2), {i}).has_value());
  CHECK_FALSE(ne::linear_form(ne::min(i, 4) + j, {i, j}).has_value());
  CHECK_FALSE(ne::linear_form(ne::select(t < 3, i, 0), {i}).has_value());
  // ...but fine in other variables
  const auto in_j = ne::linear_form(i * j + ne::floordiv(t, 2), {j});
  REQUIRE(in_j.has_value());
  CHECK(fmt::format("{}", in_j->strides[0]) == "i");
  CHECK(fmt::format("{}", in_j->offset) == "floordiv(t, 2)");
  // i*j is linear in j alone
  const auto only = ne::linear_form(i * j * 2 + 5, std::vector<ne::Var>{j});
  REQUIRE(only.has_value());
  CHECK(fmt::format("{}", only->strides[0]) == "i*2");
}

TEST_CASE("swept_range: an axis ranges over its symbolic extent, not its variable's range") {
  auto n = ne::var("n", 1, 100);
  auto i = ne::var("i", 0, 99);
  CHECK(ne::bounds(n - 1 - i) == ne::Interval{-99, 99});
  const auto r = ne::swept_range(n - 1 - i, {{i, 0, n}});
  REQUIRE(r.has_value());
  CHECK(fmt::format("[{}, {}]", r->lo, r->hi) == "[0, n - 1]");
  // A triangular k in [0, i + 1) is listed before the i it depends on.
  auto k = ne::var("k", 0, 7);
  auto j = ne::var("j", 0, 7);
  const auto t = ne::swept_range(j * 8 + k, {{k, 0, j + 1}, {j, 0, 8}});
  REQUIRE(t.has_value());
  CHECK(fmt::format("[{}, {}]", t->lo, t->hi) == "[0, 63]");
  // Negative coefficients take the other end; ends stay in the variables not swept.
  const auto neg = ne::swept_range(i * 2 - k, {{k, i, n - i}, {i, 0, n}});
  REQUIRE(neg.has_value());
  CHECK(fmt::format("[{}, {}]", neg->lo, neg->hi) == "[1 - n, n - 1]");
  // Not affine in a swept variable, or a symbolic coefficient: no exact range.
  CHECK_FALSE(ne::swept_range(ne::floordiv(i, 2), {{i, 0, n}}).has_value());
  CHECK_FALSE(ne::swept_range(i * i, {{i, 0, n}}).has_value());
  CHECK_FALSE(ne::swept_range(i * n, {{i, 0, n}}).has_value());
  // The range of i names n, and n is then swept: floordiv(n, 2) is not affine in it.
  CHECK_FALSE(ne::swept_range(i, {{i, 0, ne::floordiv(n, 2) + 1}, {n, 1, 3}}).has_value());
}

TEST_CASE("swept_range: random affine expressions over triangular domains, against enumeration") {
  std::mt19937 rng(2024);
  auto coeff = [&] { return std::uniform_int_distribution<int>(-3, 3)(rng); };
  auto n = ne::var("n", 1, 6);
  auto i = ne::var("i", 0, 5);
  auto k = ne::var("k", 0, 5);
  for (int round = 0; round < 200; ++round) {
    const int ci = coeff(), ck = coeff(), cn = coeff(), c0 = coeff();
    const bool upper = (round % 2) == 0;  // k in [i, n), or k in [0, i + 1)
    const ne::Expr kmin = upper ? ne::Expr(i) : ne::Expr(0);
    const ne::Expr kext = upper ? n - i : i + 1;
    const auto e = i * ci + k * ck + n * cn + c0;
    const auto r = ne::swept_range(e, {{k, kmin, kext}, {i, 0, n}});
    REQUIRE(r.has_value());
    for (std::int64_t nv = 1; nv <= 6; ++nv) {
      std::int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (std::int64_t iv = 0; iv < nv; ++iv) {
        const std::int64_t k0 = upper ? iv : 0, k1 = upper ? nv : iv + 1;
        for (std::int64_t kv = k0; kv < k1; ++kv) {
          const auto v = ci * iv + ck * kv + cn * nv + c0;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
      }
      INFO(fmt::format("{} for n = {}: [{}, {}]", e, nv, r->lo, r->hi));
      CHECK(ne::eval(r->lo, {{"n", nv}}) == lo);
      CHECK(ne::eval(r->hi, {{"n", nv}}) == hi);
    }
  }
}
