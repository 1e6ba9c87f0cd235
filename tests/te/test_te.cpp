#include <dlavm/te.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <type_traits>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
using dlavm::DType;

TEST_CASE("te: elementwise compute evaluates like a loop, with int8 wrap-around") {
  auto A = te::placeholder(te::shape(3, 5), DType::int8(), "A");
  auto B = te::placeholder(te::shape(3, 5), DType::int8(), "B");
  auto C = te::compute(
      te::shape(3, 5), [&](auto i, auto j) { return A(i, j) + B(i, j); }, "C");
  CHECK(C.dtype() == DType::int8());
  auto a = te::NDArray::random(DType::int8(), {3, 5}, 1);
  auto b = te::NDArray::random(DType::int8(), {3, 5}, 2);
  auto c = te::evaluate(C, {{A, a}, {B, b}});
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 5; ++j)
      CHECK(c.at({i, j}) == DType::int8().wrap(a.at({i, j}) + b.at({i, j})));
}

TEST_CASE("te: GEMM with two reduction axes matches naive loops") {
  const int m = 4, n = 3, bk = 16;
  auto A = te::placeholder(te::shape(1, n, 1, bk), DType::int8(), "A");
  auto B = te::placeholder(te::shape(m, n, bk, bk), DType::int8(), "B");
  auto ko = te::reduce_axis({0, n}, "ko");
  auto ki = te::reduce_axis({0, bk}, "ki");
  auto C = te::compute(te::shape(1, m, 1, bk),
                       [&](auto bo, auto co, auto bi, auto ci) {
                         return te::sum(te::cast(DType::int32(), A(bo, ko, bi, ki)) *
                                            te::cast(DType::int32(), B(co, ko, ci, ki)),
                                        {ko, ki});
                       },
                       "C", {"bo", "co", "bi", "ci"});
  CHECK(C.op()->reduce_axis.size() == 2);
  CHECK(C.op()->axis[1].name() == "co");
  auto a = te::NDArray::random(DType::int8(), {1, n, 1, bk}, 3);
  auto b = te::NDArray::random(DType::int8(), {m, n, bk, bk}, 4);
  auto c = te::evaluate(C, {{A, a}, {B, b}});
  for (std::int64_t co = 0; co < m; ++co)
    for (std::int64_t ci = 0; ci < bk; ++ci) {
      std::int64_t acc = 0;
      for (std::int64_t k = 0; k < n; ++k)
        for (std::int64_t kk = 0; kk < bk; ++kk) acc += a.at({0, k, 0, kk}) * b.at({co, k, ci, kk});
      CHECK(c.at({0, co, 0, ci}) == acc);
    }
}

TEST_CASE("te: padding through select reads only inside the input") {
  auto X = te::placeholder(te::shape(4), DType::int32(), "X");
  auto P = te::compute(
      te::shape(6), [&](auto i) { return te::select(i >= 1 && i < 5, X(i - 1), 0); }, "P");
  auto x = te::NDArray::random(DType::int32(), {4}, 5, -100, 100);
  auto p = te::evaluate(P, {{X, x}});
  CHECK(p.at({0}) == 0);
  CHECK(p.at({5}) == 0);
  for (std::int64_t i = 1; i < 5; ++i) CHECK(p.at({i}) == x.at({i - 1}));
}

TEST_CASE("te: symbolic dims are bound by name at evaluation") {
  auto token = ne::var("token", 1, 2048);
  auto A = te::placeholder(te::shape(token, 16), DType::int32(), "A");
  auto S = te::compute(
      te::shape(token, 16), [&](auto i, auto j) { return (A(i, j) >> 2) + 1; }, "S");
  auto a = te::NDArray::random(DType::int32(), {5, 16}, 6);
  auto s = te::evaluate(S, {{A, a}}, {{"token", 5}});
  CHECK(s.shape() == std::vector<std::int64_t>{5, 16});
  CHECK(s.at({4, 15}) == (a.at({4, 15}) >> 2) + 1);
  CHECK_THROWS_AS(te::evaluate(S, {{A, a}}, {{"token", 6}}), dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(te::evaluate(S, {{A, a}}), doctest::Contains("token"), dlavm::ValueError);
}

TEST_CASE("te: shifts, min/max and casts follow hardware semantics") {
  auto A = te::placeholder(te::shape(1), DType::int32(), "A");
  auto R = te::compute(
      te::shape(1),
      [&](auto i) { return te::cast(DType::int8(), te::min(te::max(A(i) >> 3, 0), 127)); }, "R");
  for (std::int64_t v : {-1000, -1, 0, 7, 8, 1016, 1017, 100000}) {
    te::NDArray a(DType::int32(), {1});
    a.set({0}, v);
    CHECK(te::evaluate(R, {{A, a}}).at({0}) ==
          std::min<std::int64_t>(std::max<std::int64_t>(v >> 3, 0), 127));
  }
  CHECK(te::detail::apply_binary(te::ExprKind::Shr, DType::int32(), 64, -2) == 256);
  CHECK(te::detail::apply_binary(te::ExprKind::Shl, DType::int32(), 1, 31) == INT32_MIN);
  CHECK(te::detail::apply_binary(te::ExprKind::Add, DType::int8(), 127, 1) == -128);
}

TEST_CASE("te: printing is readable and stable") {
  auto A = te::placeholder(te::shape(16), DType::int8(), "A");
  auto k = te::reduce_axis({0, 16}, "k");
  auto S = te::compute(
      te::shape(1), [&](auto) { return te::sum(te::cast(DType::int32(), A(k)), {k}); }, "S");
  CHECK(fmt::format("{}", S.op()->body) == "sum(cast(int32, A[k]), axis=[k])");
  CHECK(fmt::format("{}", A) == "A: int8[16]");
}

TEST_CASE("te: user mistakes raise precise errors") {
  auto A = te::placeholder(te::shape(4, 4), DType::int8(), "A");
  auto W = te::placeholder(te::shape(4, 4), DType::int32(), "W");
  CHECK_THROWS_WITH_AS(A(1), doctest::Contains("'A' has 2 dims but is indexed with 1"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(4, 4), [&](auto i, auto j) { return A(i, j) + W(i, j); }, "X"),
                       doctest::Contains("int8 and int32"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(4, 4), [&](auto i, auto j) { return A(i, j) + 300; }, "X"),
                       doctest::Contains("300"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(4, 4), [&](auto i, auto j) { return A(i + 1, j); }, "X"),
                       doctest::Contains("out of bounds"), dlavm::ShapeError);
  CHECK_THROWS_AS(te::placeholder(te::shape(4, 0), DType::int8(), "Z"), dlavm::ShapeError);
  auto k = te::reduce_axis({0, 4}, "k");
  CHECK_THROWS_AS(te::compute(
                      te::shape(4), [&](auto i) { return te::sum(A(i, k), {k}) + 1; }, "X"),
                  dlavm::ScheduleError);
  CHECK_THROWS_AS(te::reduce_axis({0, 0}, "empty"), dlavm::ShapeError);
}

TEST_CASE("te: reads are checked over the axes' own extents, which may be symbolic") {
  auto n = ne::var("n", 1, 100);
  auto Y = te::placeholder(te::shape(n, 4), DType::int32(), "Y");
  // i < n: n - 1 - i is in [0, n - 1], although its interval over independent n, i is wider.
  auto Z = te::compute(
      te::shape(n, 4), [&](auto i, auto j) { return Y(n - 1 - i, j); }, "Z");
  for (std::int64_t v : {1, 2, 9}) {
    auto y = te::NDArray::random(DType::int32(), {v, 4}, 5);
    auto z = te::evaluate(Z, {{Y, y}}, {{"n", v}});
    for (std::int64_t i = 0; i < v; ++i)
      for (std::int64_t j = 0; j < 4; ++j) CHECK(z.at({i, j}) == y.at({v - 1 - i, j}));
  }
  // A reduction over [i, n) and a mirrored read inside it stay in bounds too.
  auto S = te::compute(
      te::shape(n, 4),
      [&](auto i, auto j) {
        auto k = te::reduce_axis({i, n}, "k");
        return te::sum(Y(k.var(), j) + Y(n - 1 - k.var() + i, j), {k});
      },
      "S");
  CHECK(S.op()->reduce_axis.size() == 1);
  // A reduction bounded by another one is swept first, whatever order te::sum lists them in.
  auto k1 = te::reduce_axis({0, n}, "k1");
  auto k2 = te::reduce_axis({0, k1.var() + 1}, "k2");
  CHECK_NOTHROW(te::compute(
      te::shape(4),
      [&](auto j) {
        return te::sum(Y(k2, j), {k2, k1});
      },
      "T"));
  // Reads that do leave the tensor for some n are still refused, with the exact range.
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(n, 4), [&](auto i, auto j) { return Y(n - i, j); }, "Z"),
                       "compute 'Z' reads tensor 'Y' out of bounds: index n - i0 of dim 0 ranges "
                       "over [1, n] but the dim is n",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(n, 4), [&](auto i, auto j) { return Y(n - 2 - i, j); }, "Z"),
                       "compute 'Z' reads tensor 'Y' out of bounds: index n - 2 - i0 of dim 0 "
                       "ranges over [-1, n - 2] but the dim is n",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(n + 1, 4), [&](auto i, auto j) { return Y(i, j); }, "Z"),
                       "compute 'Z' reads tensor 'Y' out of bounds: index i0 of dim 0 ranges over "
                       "[0, n] but the dim is n",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(n, 4),
                           [&](auto i, auto j) {
                             auto k = te::reduce_axis({i, n}, "k");
                             return te::sum(Y(k.var() + 1, j), {k});
                           },
                           "Z"),
                       "compute 'Z' reads tensor 'Y' out of bounds: index k + 1 of dim 0 ranges "
                       "over [1, n] but the dim is n",
                       dlavm::ShapeError);
  // A reduction that can be empty (n <= 5) still has its reads checked where it is not.
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(4),
                           [&](auto j) {
                             auto k = te::reduce_axis({0, n - 5}, "k");
                             return te::sum(Y(k.var() + 10, j), {k});
                           },
                           "Z"),
                       "compute 'Z' reads tensor 'Y' out of bounds: index k + 10 of dim 0 ranges "
                       "over [10, n + 4] but the dim is n",
                       dlavm::ShapeError);
}

TEST_CASE("te: an int8 sum met by an int32 operand names the compute and the cast it lacks") {
  // The VTA GEMM with the casts inside te::sum forgotten: C_buf accumulates in int8, and the
  // mistake shows only at the bias add of the next compute.
  auto A = te::placeholder(te::shape(2, 16), DType::int8(), "A");
  auto B = te::placeholder(te::shape(4, 16), DType::int8(), "B");
  auto bias = te::placeholder(te::shape(2, 4), DType::int32(), "bias");
  auto A_buf = te::compute(
      te::shape(2, 16), [&](auto i, auto k) { return A(i, k); }, "A_buf");
  auto B_buf = te::compute(
      te::shape(4, 16), [&](auto j, auto k) { return B(j, k); }, "B_buf");
  auto k = te::reduce_axis({0, 16}, "k");
  auto C_buf = te::compute(te::shape(2, 4),
                           [&](auto i, auto j) { return te::sum(A_buf(i, k) * B_buf(j, k), {k}); },
                           "C_buf", {"i", "j"});
  CHECK(C_buf.dtype() == DType::int8());
  const auto sum_hint =
      "compute 'C_buf' produces int8 because its te::sum adds int8 values (A_buf[i, k]*B_buf[j, "
      "k]): cast the operands inside te::sum to the accumulator type, te::sum(te::cast(int32, "
      "A_buf[i, k]) * te::cast(int32, B_buf[j, k]), ...), rather than the int32 operand to int8";
  CHECK_THROWS_WITH_AS(
      te::compute(te::shape(2, 4), [&](auto i, auto j) { return C_buf(i, j) + bias(i, j); },
                  "C_bias", {"i", "j"}),
      (std::string("compute 'C_bias': operator +: operands have types int8 and "
                   "int32 (C_buf[i, j] is int8, bias[i, j] is int32); ") +
       sum_hint)
          .c_str(),
      dlavm::TypeError);
  // Through arithmetic and a copy of C_buf, operands either way round.
  auto C = te::compute(
      te::shape(2, 4), [&](auto i, auto j) { return C_buf(i, j); }, "C");
  CHECK_THROWS_WITH_AS(
      te::compute(te::shape(2, 4), [&](auto i, auto j) { return bias(i, j) - (C(i, j) >> 2); }, "D",
                  {"i", "j"}),
      (std::string("compute 'D': operator -: operands have types int32 and int8 "
                   "(bias[i, j] is int32, (C[i, j] >> 2) is int8); ") +
       sum_hint)
          .c_str(),
      dlavm::TypeError);
  // An int8 operand that no sum decided: casting one operand is the fix.
  CHECK_THROWS_WITH_AS(
      te::compute(te::shape(2, 4), [&](auto i, auto j) { return A(i, j) + bias(i, j); }, "E",
                  {"i", "j"}),
      "compute 'E': operator +: operands have types int8 and int32 (A[i, j] is "
      "int8, bias[i, j] is int32); convert one with te::cast",
      dlavm::TypeError);
  // Branches of a select get the same explanation; other kinds of error keep their kind.
  CHECK_THROWS_WITH_AS(
      te::compute(te::shape(2, 4),
                  [&](auto i, auto j) { return te::select(i < 1, C_buf(i, j), bias(i, j)); }, "F",
                  {"i", "j"}),
      (std::string("compute 'F': te::select: branches have types int8 and int32 "
                   "(C_buf[i, j] is int8, bias[i, j] is int32); ") +
       sum_hint)
          .c_str(),
      dlavm::TypeError);
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(2, 4), [&](auto i, auto j) { return A(i, j, 0); }, "G"),
                       "compute 'G': tensor 'A' has 2 dims but is indexed with 3",
                       dlavm::ShapeError);
}

TEST_CASE("te: arithmetic on axes indexes tensors like arithmetic on their variables") {
  using namespace dlavm::literals;
  auto A = te::placeholder(te::shape(9, 6), DType::int32(), "A");
  auto B = te::placeholder(te::shape(4, 9), DType::int32(), "B");
  // A difference along k (k + 1, k from a reduce axis), a stride-2 window (i * 2 + dy), an
  // axis starting at 1 read at k - 1, a mirrored read (8 - k, unary minus), a static dim.
  auto k = te::reduce_axis({0, 8}, "k");
  auto D = te::compute(
      te::shape(4), [&](auto i) { return te::sum(B(i, k + 1) - B(i, k), {k}); }, "D");
  auto dy = te::reduce_axis({0, 3}, "dy");
  auto P = te::compute(
      te::shape(4, 6), [&](auto i, auto j) { return te::max(A(i * 2 + dy, j), {dy}); }, "P");
  auto k1 = te::reduce_axis({1, 9}, "k1");
  auto S = te::compute(
      te::shape(4), [&](auto i) { return te::sum(B(i, k1 - 1) * B(i, -k1 + 9), {k1}); }, "S");
  auto kk = te::reduce_axis({0, 2}, "kk");
  auto T = te::compute(
      te::shape(3, 6),
      [&](auto i, auto j) {
        return te::sum(te::select(kk < 1, A(2_c * kk + i, j), A(kk * 3_c + i, j)), {kk});
      },
      "T");
  auto a = te::NDArray::random(DType::int32(), {9, 6}, 11, -50, 50);
  auto b = te::NDArray::random(DType::int32(), {4, 9}, 12, -50, 50);
  const auto d = te::evaluate(D, {{B, b}});
  const auto p = te::evaluate(P, {{A, a}});
  const auto s = te::evaluate(S, {{B, b}});
  const auto t = te::evaluate(T, {{A, a}});
  for (std::int64_t i = 0; i < 4; ++i) {
    std::int64_t diff = 0, prod = 0;
    for (std::int64_t kv = 0; kv < 8; ++kv) diff += b.at({i, kv + 1}) - b.at({i, kv});
    for (std::int64_t kv = 1; kv < 9; ++kv) prod += b.at({i, kv - 1}) * b.at({i, 9 - kv});
    CHECK(d.at({i}) == diff);
    CHECK(s.at({i}) == prod);
    for (std::int64_t j = 0; j < 6; ++j) {
      std::int64_t m = INT32_MIN;
      for (std::int64_t w = 0; w < 3; ++w) m = std::max(m, a.at({i * 2 + w, j}));
      CHECK(p.at({i, j}) == m);
    }
  }
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 6; ++j) CHECK(t.at({i, j}) == a.at({i, j}) + a.at({i + 3, j}));
  // The index expressions are ne expressions over the axes' variables.
  static_assert(std::is_same_v<decltype(k + 1), ne::Expr>);
  static_assert(std::is_same_v<decltype(2 * k - dy), ne::Expr>);
  static_assert(std::is_same_v<decltype(16_c * k), ne::Expr>);
  static_assert(std::is_same_v<decltype(k < dy), ne::Expr>);
  static_assert(std::is_same_v<decltype(k == k), bool>);  // identity of axes, as before
  CHECK(fmt::format("{}", D.op()->body) == "sum((B[i0, k + 1] - B[i0, k]), axis=[k])");
  CHECK(fmt::format("{}", P.op()->body) == "max(A[(i0*2) + dy, i1], axis=[dy])");
  // Reads through axis arithmetic are bounds-checked like any other.
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(4), [&](auto i) { return te::sum(B(i, k + 2), {k}); }, "X"),
                       "compute 'X' reads tensor 'B' out of bounds: index k + 2 of dim 1 ranges "
                       "over [2, 9] but the dim is 9",
                       dlavm::ShapeError);
}

TEST_CASE("te: floordiv/floormod round down and / % truncate, like TVM's and C++'s") {
  auto A = te::placeholder(te::shape(40), DType::int32(), "A");
  auto B = te::placeholder(te::shape(40), DType::int32(), "B");
  auto Q = te::compute(
      te::shape(40), [&](auto i) { return te::floordiv(A(i), B(i)); }, "Q");
  auto R = te::compute(
      te::shape(40), [&](auto i) { return te::floormod(A(i), B(i)); }, "R");
  auto T = te::compute(
      te::shape(40), [&](auto i) { return A(i) / B(i) + A(i) % 3; }, "T");
  auto a = te::NDArray::random(DType::int32(), {40}, 41, -100, 100);
  auto b = te::NDArray::random(DType::int32(), {40}, 42, -9, 9);
  for (std::int64_t i = 0; i < 40; ++i)
    if (b.at({i}) == 0) b.set({i}, i % 2 ? 7 : -7);
  const auto q = te::evaluate(Q, {{A, a}, {B, b}});
  const auto r = te::evaluate(R, {{A, a}, {B, b}});
  const auto t = te::evaluate(T, {{A, a}, {B, b}});
  for (std::int64_t i = 0; i < 40; ++i) {
    const auto x = a.at({i}), y = b.at({i});
    const auto down = static_cast<std::int64_t>(std::floor(static_cast<double>(x) / y));
    CHECK(q.at({i}) == down);
    CHECK(r.at({i}) == x - y * down);
    CHECK(t.at({i}) == x / y + x % 3);
  }
  CHECK(fmt::format("{}", Q.op()->body) == "floordiv(A[i0], B[i0])");
  CHECK(fmt::format("{}", R.op()->body) == "floormod(A[i0], B[i0])");
  CHECK(fmt::format("{}", T.op()->body) == "((A[i0] / B[i0]) + (A[i0] % 3))");
  // Constants fold with the same rules; the most negative value over -1 wraps.
  const auto c = [](std::int64_t v) { return te::make_const(v, DType::int32()); };
  const auto value = [](const te::Expr& e) { return e.as<te::IntImmNode>()->value; };
  CHECK(value(te::floordiv(c(-7), c(2))) == -4);
  CHECK(value(te::floormod(c(-7), c(2))) == 1);
  CHECK(value(te::floormod(c(7), c(-2))) == -1);
  CHECK(value(c(-7) / c(2)) == -3);
  CHECK(value(c(-7) % c(2)) == -1);
  CHECK(value(te::floordiv(c(INT32_MIN), c(-1))) == INT32_MIN);
  CHECK(value(te::floordiv(te::make_const(-128, DType::int8()), -1)) == -128);
  // Indices keep ne's floordiv: te::floordiv of axes is an index expression.
  auto H = te::compute(
      te::shape(20), [&](auto i) { return A(te::floordiv(i, 2) + te::floormod(i, 2) * 20); }, "H");
  const auto h = te::evaluate(H, {{A, a}});
  for (std::int64_t i = 0; i < 20; ++i) CHECK(h.at({i}) == a.at({i / 2 + (i % 2) * 20}));
  // A constant zero divisor is refused when written; a zero met while evaluating names the
  // expression and the dividend.
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(40), [&](auto i) { return te::floormod(A(i), 0); }, "Z"),
                       "compute 'Z': te::floormod: A[i0] divided by constant zero",
                       dlavm::ArithmeticError);
  CHECK_THROWS_WITH_AS(te::compute(
                           te::shape(40), [&](auto i) { return A(i) / 0; }, "Z"),
                       "compute 'Z': operator /: A[i0] divided by constant zero",
                       dlavm::ArithmeticError);
  b.set({3}, 0);
  CHECK_THROWS_WITH_AS(
      te::evaluate(Q, {{A, a}, {B, b}}),
      fmt::format("`floordiv(A[i0], B[i0])` divides {} by zero", a.at({3})).c_str(),
      dlavm::ArithmeticError);
}
