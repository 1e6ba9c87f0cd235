// ne::eval, ne::compile and ne::substitute, including their errors, and floor semantics
// against a hand-written reference.
#include <dlavm/ne.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace ne = dlavm::ne;

namespace {
// Reference floor division: through long double, exact for the small values used here.
std::int64_t ref_floordiv(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(
      std::floor(static_cast<long double>(a) / static_cast<long double>(b)));
}
std::int64_t ref_floormod(std::int64_t a, std::int64_t b) { return a - b * ref_floordiv(a, b); }

std::string message_of(auto&& f) {
  try {
    f();
  } catch (const dlavm::Error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("eval: every operator") {
  auto x = ne::var("x", -100, 100);
  auto y = ne::var("y", -100, 100);
  auto at = [&](const ne::Expr& e, std::int64_t vx, std::int64_t vy) {
    return ne::eval(e, {{"x", vx}, {"y", vy}});
  };
  CHECK(at(x + y, 3, 4) == 7);
  CHECK(at(x - y, 3, 4) == -1);
  CHECK(at(x * y, 3, -4) == -12);
  CHECK(at(ne::floordiv(x, y), -7, 2) == -4);
  CHECK(at(ne::floormod(x, y), -7, 2) == 1);
  CHECK(at(ne::min(x, y), 3, 4) == 3);
  CHECK(at(ne::max(x, y), 3, 4) == 4);
  CHECK(at(x == y, 3, 3) == 1);
  CHECK(at(x != y, 3, 3) == 0);
  CHECK(at(x < y, 3, 4) == 1);
  CHECK(at(x <= y, 4, 4) == 1);
  CHECK(at(x > y, 3, 4) == 0);
  CHECK(at(x >= y, 3, 4) == 0);
  CHECK(at(x && y, 3, 0) == 0);
  CHECK(at(x && y, 3, -2) == 1);
  CHECK(at(x || y, 0, 0) == 0);
  CHECK(at(x || y, 0, 5) == 1);
  CHECK(at(!x, 0, 0) == 1);
  CHECK(at(!x, 9, 0) == 0);
  CHECK(at(ne::select(x < y, x, y), 3, 4) == 3);
  CHECK(at(ne::select(x, 10, 20), -1, 0) == 10);
  auto token = ne::var("token", 1, 2048);
  CHECK(ne::eval(token * 4096 + 16, {{"token", 37}}) == 151568);
  CHECK(ne::eval(ne::Expr(5)) == 5);
}

TEST_CASE("floordiv/floormod match floor semantics for every sign combination") {
  auto a = ne::var("a", -50, 50);
  auto b = ne::var("b", -9, 9);
  const ne::Expr q = ne::floordiv(a, b);
  const ne::Expr r = ne::floormod(a, b);
  const auto fq = ne::compile(q, {a, b}, {.simplify = false});
  const auto fr = ne::compile(r, {a, b}, {.simplify = false});
  int checked = 0;
  for (std::int64_t va = -50; va <= 50; ++va) {
    for (std::int64_t vb = -9; vb <= 9; ++vb) {
      if (vb == 0) continue;
      const std::int64_t want_q = ref_floordiv(va, vb);
      const std::int64_t want_r = ref_floormod(va, vb);
      REQUIRE(ne::eval(q, {{"a", va}, {"b", vb}}) == want_q);
      REQUIRE(ne::eval(r, {{"a", va}, {"b", vb}}) == want_r);
      REQUIRE(fq({va, vb}) == want_q);
      REQUIRE(fr({va, vb}) == want_r);
      REQUIRE((ne::floordiv(va, vb).as_int() == want_q));  // constant folding
      REQUIRE((ne::floormod(va, vb).as_int() == want_r));
      ++checked;
    }
  }
  CHECK(checked == 101 * 18);
  // the int64 extremes
  CHECK(ne::floordiv(INT64_MIN, 2).as_int() == INT64_MIN / 2);
  CHECK(ne::floormod(INT64_MIN, -1).as_int() == 0);
  CHECK(ne::floormod(INT64_MAX, INT64_MIN).as_int() == -1);
  CHECK(ne::floordiv(INT64_MAX, INT64_MIN).as_int() == -1);
}

TEST_CASE("eval errors: unbound variables are all listed") {
  auto token = ne::var("token", 1, 2048);
  auto batch = ne::var("batch", 1, 8);
  auto head = ne::var("head", 1, 32);
  const ne::Expr e = token * 4096 + batch * head;
  CHECK(message_of([&] {
          ne::eval(e, {{"batch", 2}});
        }) == "ne::eval of `(token*4096) + (batch*head)`: no value for variables token, head");
  CHECK(message_of([&] {
          ne::eval(e, {{"batch", 2}, {"head", 1}});
        }) == "ne::eval of `(token*4096) + (batch*head)`: no value for variable token");
  CHECK_THROWS_AS(ne::eval(e), dlavm::ValueError);
}

TEST_CASE("eval errors: out-of-range values") {
  auto token = ne::var("token", 1, 2048);
  CHECK(message_of([&] {
          ne::eval(token + 1, {{"token", 4096}});
        }) == "ne::eval of `token + 1`: variable 'token' = 4096 is outside its range [1, 2048]");
  CHECK_THROWS_AS(ne::eval(token, {{"token", 0}}), dlavm::ValueError);
}

TEST_CASE("eval errors: division by zero and int64 overflow name the expression and values") {
  auto x = ne::var("x", -10, 10);
  auto y = ne::var("y", 0, 8);
  CHECK(message_of([&] {
          ne::eval(ne::floordiv(x, y - 3) + 1, {{"x", 7}, {"y", 3}});
        }) ==
        "ne::eval of `floordiv(x, y - 3) + 1`: `floordiv(x, y - 3)` divides by zero with `x` = 7 "
        "and `y - 3` = 0");
  CHECK(message_of([&] {
          ne::eval(ne::floormod(x, y), {{"x", 7}, {"y", 0}});
        }) ==
        "ne::eval of `floormod(x, y)`: `floormod(x, y)` takes a modulo by zero with `x` = 7 and "
        "`y` = 0");
  auto big = ne::var("big", 0, INT64_MAX);
  CHECK(message_of([&] {
          ne::eval(big * 4 + 1, {{"big", INT64_MAX / 2}});
        }) ==
        "ne::eval of `(big*4) + 1`: `big*4` overflows int64 with `big` = 4611686018427387903 "
        "and `4` = 4");
  CHECK_THROWS_AS(ne::eval(big + big, {{"big", INT64_MAX}}), dlavm::ArithmeticError);
  CHECK_THROWS_AS(ne::eval(0 - big - big, {{"big", INT64_MAX}}), dlavm::ArithmeticError);
  auto m = ne::var("m", INT64_MIN, 0);
  CHECK_THROWS_AS(ne::eval(ne::floordiv(m, x), {{"m", INT64_MIN}, {"x", -1}}),
                  dlavm::ArithmeticError);
  CHECK(ne::eval(ne::floormod(m, x), {{"m", INT64_MIN}, {"x", -1}}) == 0);
  // both branches of a select are evaluated
  CHECK_THROWS_AS(ne::eval(ne::select(y != 0, ne::floordiv(x, y), 0), {{"x", 1}, {"y", 0}}),
                  dlavm::ArithmeticError);
}

TEST_CASE("compile: explicit and collected parameter order") {
  auto token = ne::var("token", 1, 2048);
  auto batch = ne::var("batch", 1, 8);
  const ne::Expr e = token * 4096 + batch * 16 + 16;
  const auto f = ne::compile(e, {token, batch});
  CHECK(f({37, 2}) == 37 * 4096 + 2 * 16 + 16);
  const auto g = ne::compile(e, {batch, token});
  CHECK(g({2, 37}) == 37 * 4096 + 2 * 16 + 16);
  const auto h = ne::compile(e);  // creation order: token, batch
  REQUIRE(h.params().size() == 2);
  CHECK(h.params()[0].id() == token.id());
  const std::vector<std::int64_t> args{37, 2};
  CHECK(h(args) == 37 * 4096 + 2 * 16 + 16);
  CHECK(fmt::format("{}", h.expr()) == "(token*4096) + (batch*16) + 16");
  CHECK(ne::compile(ne::Expr(5))({}) == 5);
  CHECK(ne::compile(token, {token})({9}) == 9);
  // unused parameters are allowed; constants are folded by simplification
  CHECK(ne::compile(ne::Expr(3) * 4 + batch - batch, {token, batch})({1, 1}) == 12);
}

TEST_CASE("compile: shares common subexpressions and spills beyond 64 registers") {
  auto x = ne::var("x", 0, 10);
  auto y = ne::var("y", 0, 10);
  const ne::Expr s = ne::floordiv(x * 3 + y, 4);
  const auto f = ne::compile(s * s + s, {x, y}, {.simplify = false});
  CHECK(f.num_instructions() == 5);  // x*3, +y, floordiv, s*s, +s: s is computed once
  CHECK(f({5, 7}) == 5 * 5 + 5);
  ne::Expr chain = x;  // a tree (no sharing), so eval's walk stays linear
  for (int k = 1; k <= 100; ++k) chain = ne::max(chain - y + 1, ne::Expr(k));
  const auto g = ne::compile(chain, {x, y}, {.simplify = false});
  CHECK(g.num_registers() > 64);
  CHECK(g({3, 2}) == ne::eval(chain, {{"x", 3}, {"y", 2}}));
  CHECK(g({3, 2}) == 100);
}

TEST_CASE("compile errors: arguments, ranges, overflow, division by zero") {
  auto token = ne::var("token", 1, 2048);
  auto y = ne::var("y", 0, 3);
  auto big = ne::var("big", 0, INT64_MAX);
  const auto f = ne::compile(token * 4096 + 16, {token});
  CHECK(message_of([&] {
          f({1, 2});
        }) == "ne::compile of `(token*4096) + 16`: called with 2 arguments, expected 1 (token)");
  CHECK(message_of([&] { f({5000}); }) ==
        "ne::compile of `(token*4096) + 16`: variable 'token' = 5000 is outside its range "
        "[1, 2048]");
  CHECK_THROWS_AS(f({0}), dlavm::ValueError);
  const auto g = ne::compile(ne::floordiv(token, y), {token, y});
  CHECK(g({7, 2}) == 3);
  CHECK(message_of([&] {
          g({7, 0});
        }) ==
        "ne::compile of `floordiv(token, y)`: `floordiv(token, y)` divides by zero with `token` "
        "= 7 and `y` = 0");
  const auto h = ne::compile(big * 2, {big});
  CHECK(h({5}) == 10);
  CHECK(message_of([&] { h({INT64_MAX}); }) ==
        "ne::compile of `big*2`: `big*2` overflows int64 with `big` = 9223372036854775807 and "
        "`2` = 2");
  CHECK(message_of([&] { (void)ne::compile(token + y, {token}); }) ==
        "ne::compile of `token + y`: variable 'y' is not among the parameters (token)");
}

TEST_CASE("substitute: by identity, simultaneous, folding constants") {
  auto i = ne::var("i", 0, 15);
  auto j = ne::var("j", 0, 15);
  auto k = ne::var("k", 0, 15);
  const ne::Expr e = i * 16 + j;
  CHECK(fmt::format("{}", ne::substitute(e, {{i, 2}})) == "32 + j");
  CHECK(fmt::format("{}", ne::substitute(e, {{i, 2}, {j, 3}})) == "35");
  CHECK(fmt::format("{}", ne::substitute(e, {{i, j}, {j, i}})) == "(j*16) + i");  // swap
  CHECK(fmt::format("{}", ne::substitute(e, {{j, k + 1}})) == "(i*16) + (k + 1)");
  auto other_i = ne::var("i", 0, 15);  // same name, different variable
  CHECK(ne::substitute(e, {{other_i, 5}}).same_as(e));
  CHECK(ne::eval(ne::substitute(ne::select(i < j, i, j), {{j, 7}}), {{"i", 3}}) == 3);
  CHECK(ne::substitute(!(i < j), {{i, 9}, {j, 2}}).as_int() == 1);
  CHECK_THROWS_AS(ne::substitute(ne::floordiv(k, j), {{j, 0}}), dlavm::ArithmeticError);
  CHECK_THROWS_AS(ne::substitute(e, {{i, ne::Expr()}}), dlavm::ValueError);
}

TEST_CASE("compile: constant operands on either side become immediates, errors keep order") {
  auto x = ne::var("x", INT64_MIN, INT64_MAX);
  auto y = ne::var("y", -5, 5);
  const auto sub = ne::compile(ne::Expr(-2) - x, {x}, {.simplify = false});
  CHECK(sub({5}) == -7);
  CHECK(message_of([&] { sub({INT64_MAX}); }) ==
        "ne::compile of `-2 - x`: `-2 - x` overflows int64 with `-2` = -2 and `x` = "
        "9223372036854775807");
  const auto mul = ne::compile(3 * x, {x}, {.simplify = false});
  CHECK(message_of([&] { mul({INT64_MAX}); }) ==
        "ne::compile of `3*x`: `3*x` overflows int64 with `3` = 3 and `x` = 9223372036854775807");
  const auto div = ne::compile(ne::floordiv(x, -1), {x}, {.simplify = false});
  CHECK(div({7}) == -7);
  CHECK_THROWS_AS(div({INT64_MIN}), dlavm::ArithmeticError);
  const ne::Expr flags = (3 < y) + (3 <= y) * 2 + (3 > y) * 4 + (3 >= y) * 8 + (3 == y) * 16 +
                         (3 != y) * 32 + (y < 3) * 64 + (y <= 3) * 128 + (y > 3) * 256 +
                         (y >= 3) * 512 + ne::min(y, 1) * 1024 + ne::max(1, y) * 4096 +
                         ne::floormod(y, 3) + ne::floordiv(y, 4) * 3 + (10 - y) * 5;
  const auto f = ne::compile(flags, {y}, {.simplify = false});
  const auto g = ne::compile(flags, {y});
  for (std::int64_t v = -5; v <= 5; ++v) {
    CHECK(f({v}) == ne::eval(flags, {{"y", v}}));
    CHECK(g({v}) == ne::eval(flags, {{"y", v}}));
  }
  // simplification can leave a division by a zero it computed: a run-time error, not a crash
  const auto z = ne::compile(ne::floordiv(y, y - y), {y});
  CHECK(fmt::format("{}", z.expr()) == "floordiv(y, 0)");
  CHECK_THROWS_AS(z({1}), dlavm::ArithmeticError);
}
