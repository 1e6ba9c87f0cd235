// ne::simplify: the canonical forms later passes rely on.
#include <dlavm/ne.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>

namespace ne = dlavm::ne;

namespace {
std::string simp(const ne::Expr& e) { return fmt::format("{}", ne::simplify(e)); }
}  // namespace

TEST_CASE("simplify: sums collect terms, fold constants and cancel") {
  auto token = ne::var("token", 1, 2048);
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  CHECK(simp(token * 4096 + 16) == "(token*4096) + 16");
  CHECK(simp(16 + 4096 * token) == "(token*4096) + 16");
  CHECK(simp(j + i) == "i + j");  // variables in creation order
  CHECK(simp(i + j + i + 3 - 1) == "(i*2) + j + 2");
  CHECK(ne::simplify(i - i).as_int() == 0);
  CHECK(ne::simplify((i + j) - (j + i)).as_int() == 0);
  CHECK(simp((i * 16 + j) * 4 + 7) == "(i*64) + (j*4) + 7");
  CHECK(simp((i * 16 + j) * 4 + 7 - i * 64) == "(j*4) + 7");
  CHECK(simp(i - j) == "i - j");
  CHECK(simp(j * -1 + i * 2) == "(i*2) - j");
  CHECK(simp(16 - token) == "16 - token");
  CHECK(simp(0 - token - 3) == "(token*-1) - 3");
  CHECK(simp(i * 0 + j) == "j");
  CHECK(simp(i * 1) == "i");
  CHECK(simp(ne::Expr(3) * 4 + 2) == "14");
}

TEST_CASE("simplify: products of sums are distributed, monomials sorted") {
  auto x = ne::var("x", -10, 10);
  auto y = ne::var("y", -10, 10);
  CHECK(simp(y * x) == "x*y");
  CHECK(ne::simplify(y * x - x * y).as_int() == 0);
  CHECK(simp((x + 1) * (y + 2)) == "(x*2) + y + (x*y) + 2");
  CHECK(ne::simplify((x + 1) * y - x * y - y).as_int() == 0);
  CHECK(simp(x * x * 3) == "x*x*3");
}

TEST_CASE("simplify: floordiv and floormod by constants, using bounds and divisibility") {
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  auto k = ne::var("k", 0, 1000);
  auto n = ne::var("n", -20, 20);
  CHECK(simp(ne::floormod(i * 16 + j, 16)) == "j");
  CHECK(simp(ne::floordiv(i * 16 + j, 16)) == "i");
  CHECK(simp(ne::floordiv(i * 16 + j + 32, 16)) == "i + 2");
  CHECK(simp(ne::floormod(i * 16 + j + 32, 16)) == "j");
  CHECK(simp(ne::floordiv(j, 16)) == "0");
  CHECK(simp(ne::floormod(j, 16)) == "j");
  CHECK(simp(ne::floordiv(k * 16 + j, 16)) == "k");
  CHECK(simp(ne::floordiv(k * 8 + j, 16)) == "floordiv(j + (k*8), 16)");  // j is older
  CHECK(simp(ne::floordiv(k * 32 + j * 16 + 3, 16)) == "j + (k*2)");
  CHECK(simp(ne::floordiv(k, 1)) == "k");
  CHECK(simp(ne::floordiv(k, -1)) == "k*-1");
  CHECK(simp(ne::floormod(k, 1)) == "0");
  // common factors cancel
  CHECK(simp(ne::floordiv(k * 4 + 2, 8)) == "floordiv((k*2) + 1, 4)");
  CHECK(simp(ne::floormod(k * 4 + 2, 8)) == "floormod((k*2) + 1, 4)*2");
  CHECK(simp(ne::floormod(k * 6, 4)) == "floormod(k*3, 2)*2");
  // whole multiples leave the quotient
  CHECK(simp(ne::floordiv(k + 35, 16)) == "floordiv(k + 3, 16) + 2");
  CHECK(simp(ne::floormod(k + 35, 16)) == "floormod(k + 3, 16)");
  // nested
  CHECK(simp(ne::floordiv(ne::floordiv(k, 4), 8)) == "floordiv(k, 32)");
  CHECK(simp(ne::floormod(ne::floormod(k, 64), 16)) == "floormod(k, 16)");
  CHECK(simp(ne::floormod(ne::floormod(k, 60), 16)) == "floormod(floormod(k, 60), 16)");
  // negative ranges: floor semantics
  CHECK(simp(ne::floordiv(n, 64)) == "floordiv(n, 64)");
  CHECK(simp(ne::floordiv(n + 20, 64)) == "0");
  CHECK(simp(ne::floordiv(n - 30, 64)) == "-1");
  CHECK(simp(ne::floormod(n - 30, 64)) == "n + 34");
  CHECK(simp(ne::floordiv(n, -64)) == "floordiv(n, -64)");
  // the constant is reduced into (d, 0] for a negative divisor d
  CHECK(simp(ne::floordiv(n + 20, -64)) == "floordiv(n - 44, -64) - 1");
  CHECK(simp(ne::floordiv(n + 21, -64)) == "-1");
  CHECK(simp(ne::floormod(n + 21, -64)) == "n - 43");
}

TEST_CASE("simplify: split and fuse round trip: floordiv(x, d)*d + floormod(x, d) -> x") {
  auto i = ne::var("i", 0, 1023);
  auto t = ne::var("t", 1, 2048);
  CHECK(simp(ne::floordiv(i, 16) * 16 + ne::floormod(i, 16)) == "i");
  CHECK(simp(ne::floormod(i, 16) + ne::floordiv(i, 16) * 16) == "i");
  CHECK(simp(ne::floordiv(i + t, 8) * 24 + ne::floormod(i + t, 8) * 3 + 1) == "(i*3) + (t*3) + 1");
  // a different divisor or coefficient does not combine
  CHECK(simp(ne::floordiv(i, 16) * 8 + ne::floormod(i, 16)) ==
        "(floordiv(i, 16)*8) + floormod(i, 16)");
  // fuse then split: the index of an outer/inner pair
  auto outer = ne::var("outer", 0, 63);
  auto inner = ne::var("inner", 0, 15);
  const ne::Expr fused = outer * 16 + inner;
  CHECK(simp(ne::floordiv(fused, 16)) == "outer");
  CHECK(simp(ne::floormod(fused, 16)) == "inner");
}

TEST_CASE("simplify: floordiv and floormod by symbolic divisors") {
  auto x = ne::var("x", 0, 7);
  auto y = ne::var("y", 8, 64);
  auto z = ne::var("z", -3, 3);
  CHECK(simp(ne::floordiv(x, y)) == "0");
  CHECK(simp(ne::floormod(x, y)) == "x");
  CHECK(simp(ne::floordiv(y, y)) == "1");
  CHECK(simp(ne::floormod(y, y)) == "0");
  CHECK(simp(ne::floordiv(0, y)) == "0");
  CHECK(simp(ne::floordiv(x, z)) == "floordiv(x, z)");
  CHECK(simp(ne::floordiv(z, z)) == "floordiv(z, z)");  // z may be 0
}

TEST_CASE("simplify: min, max, comparisons, logic and select decided by bounds") {
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  auto t = ne::var("t", 1, 2048);
  CHECK(simp(ne::min(i * 16 + j, 255)) == "(i*16) + j");
  CHECK(simp(ne::max(i * 16 + j, 255)) == "255");
  CHECK(simp(ne::min(i, i + 1)) == "i");
  CHECK(simp(ne::max(i, i + 1)) == "i + 1");
  CHECK(simp(ne::min(j, i)) == "min(i, j)");  // commutative: canonical order
  CHECK(simp(ne::max(i, j)) == "max(i, j)");
  CHECK(simp(ne::min(t, 4096)) == "t");
  CHECK(simp(ne::min(t, 100)) == "min(t, 100)");
  CHECK(simp(i * 16 + j < 256) == "1");
  CHECK(simp(i * 16 + j < 255) == "((i*16) + j) < 255");
  CHECK(simp(i + 1 > i) == "1");
  CHECK(simp(i == i) == "1");
  CHECK(simp(i != i + 1) == "1");
  CHECK(simp(t <= 0) == "0");
  CHECK(simp(t >= 1) == "1");
  CHECK(simp(t == 0) == "0");
  CHECK(simp((i < j) && (t > 0)) == "i < j");
  CHECK(simp((i < j) && (t < 0)) == "0");
  CHECK(simp((i < j) || (t > 0)) == "1");
  CHECK(simp((i < j) || (t < 0)) == "i < j");
  CHECK(simp(i && (t > 0)) == "i != 0");
  CHECK(simp((i < j) && (i < j)) == "i < j");
  CHECK(simp(!(i < j)) == "i >= j");
  CHECK(simp(!(i == j)) == "i != j");
  CHECK(simp(!(t > 0)) == "0");
  CHECK(simp(!!(i < j)) == "i < j");
  CHECK(simp(!i) == "!i");
  CHECK(simp(ne::select(t > 0, i, j)) == "i");
  CHECK(simp(ne::select(t < 0, i, j)) == "j");
  CHECK(simp(ne::select(i < j, i + 1, 1 + i)) == "i + 1");
  CHECK(simp(ne::select(i < j, i, j)) == "select(i < j, i, j)");
}

TEST_CASE("simplify: a variable with a single value is a constant") {
  auto one = ne::var("one", 7, 7);
  auto x = ne::var("x", 0, 9);
  CHECK(simp(one * x + one) == "(x*7) + 7");
}

TEST_CASE("simplify: large coefficients that would overflow are left as written") {
  auto x = ne::var("x", 0, 1);
  const ne::Expr e = x * INT64_MAX * 4;
  const ne::Expr s = ne::simplify(e);
  CHECK(ne::eval(s, {{"x", 0}}) == 0);
  CHECK_THROWS_AS(ne::eval(s, {{"x", 1}}), dlavm::ArithmeticError);
  CHECK(ne::equal(ne::simplify(ne::Expr(INT64_MAX) + 1), ne::Expr(INT64_MAX) + 1));
  CHECK(simp(x * INT64_MAX - x * INT64_MAX) == "0");
}

TEST_CASE("simplify: canonical forms are independent of how the sum was written") {
  auto a = ne::var("a", 0, 100);
  auto b = ne::var("b", 0, 100);
  auto c = ne::var("c", 0, 100);
  const ne::Expr e1 = (a + b) * 2 + c - 1;
  const ne::Expr e2 = c + b * 2 + (a - 1) + a;
  const ne::Expr e3 = 2 * (c - c + b) + (2 * a - (1 - c));
  CHECK(ne::equal(ne::simplify(e1), ne::simplify(e2)));
  CHECK(ne::equal(ne::simplify(e1), ne::simplify(e3)));
  CHECK(simp(e1) == "(a*2) + (b*2) + c - 1");
  // and simplification is idempotent
  CHECK(ne::equal(ne::simplify(ne::simplify(e3)), ne::simplify(e3)));
}

TEST_CASE("simplify: a 1000-term affine sum") {
  std::vector<ne::Var> vars;
  for (int k = 0; k < 100; ++k) vars.push_back(ne::var(fmt::format("v{}", k), 0, 10));
  ne::Expr sum = 0;
  for (int k = 0; k < 1000; ++k)
    sum = sum + vars[static_cast<std::size_t>(k * 7 % 100)] * (k % 5 + 1);
  const ne::Expr s = ne::simplify(sum);
  // each variable appears 10 times, always with the same coefficient c in 1..5
  const auto form = ne::linear_form(s, vars);
  REQUIRE(form.has_value());
  CHECK(form->offset.as_int() == 0);
  std::int64_t total = 0;
  for (const auto& stride : form->strides) {
    REQUIRE(stride.is_const());
    CHECK(*stride.as_int() % 10 == 0);
    total += *stride.as_int();
  }
  CHECK(total == 3000);  // sum of (k % 5 + 1) over k < 1000
  CHECK(ne::simplify(s - sum).as_int() == 0);
}
