// TE conveniences that TVM users reach for, lowered and interpreted: arithmetic on axes in
// indices, fuse of more than two loops, floordiv/floormod of values. Each is checked against
// plain C++ loops.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <cmath>

namespace te = dlavm::te;
namespace tir = dlavm::tir;
using dlavm::DType;

namespace conveniences {

TEST_CASE("conveniences: a stride-2 window and a shifted read through axis arithmetic lower") {
  // P[i, j] = max over dy of A[i * 2 + dy, j]; D[i] = sum over k of B[i, k + 1] - B[i, k].
  auto A = te::placeholder(te::shape(9, 6), DType::int32(), "A");
  auto B = te::placeholder(te::shape(4, 9), DType::int32(), "B");
  auto dy = te::reduce_axis({0, 3}, "dy");
  auto P = te::compute(
      te::shape(4, 6), [&](auto i, auto j) { return te::max(A(i * 2 + dy, j), {dy}); }, "P");
  auto k = te::reduce_axis({0, 8}, "k");
  auto D = te::compute(
      te::shape(4), [&](auto i) { return te::sum(B(i, k + 1) - B(i, k), {k}); }, "D");
  auto s = te::create_schedule(std::vector{P, D});
  auto [jo, ji] = s[P].split(s[P].axis(1), 4);
  s[P].reorder({jo, dy, ji});
  auto [ko, ki] = s[D].split(k, 3);
  auto f = te::lower(s, {A, B, P, D});
  auto a = te::NDArray::random(DType::int32(), {9, 6}, 21, -1000, 1000);
  auto b = te::NDArray::random(DType::int32(), {4, 9}, 22, -1000, 1000);
  te::NDArray p(DType::int32(), {4, 6}), d(DType::int32(), {4});
  tir::run(f, {&a, &b, &p, &d});
  for (std::int64_t i = 0; i < 4; ++i) {
    for (std::int64_t j = 0; j < 6; ++j) {
      std::int64_t m = INT32_MIN;
      for (std::int64_t w = 0; w < 3; ++w) m = std::max(m, a.at({i * 2 + w, j}));
      CHECK(p.at({i, j}) == m);
    }
    std::int64_t diff = 0;
    for (std::int64_t kv = 0; kv < 8; ++kv) diff += b.at({i, kv + 1}) - b.at({i, kv});
    CHECK(d.at({i}) == diff);
  }
  (void)ko, (void)ki;
}

TEST_CASE("conveniences: floordiv, floormod, / and % run in the TIR interpreter") {
  // Requantization with a rounding-down scale: Y = floordiv(X, S) + floormod(X, 7) - X / S % 5.
  auto X = te::placeholder(te::shape(6, 10), DType::int32(), "X");
  auto S = te::placeholder(te::shape(10), DType::int32(), "S");
  auto Y = te::compute(
      te::shape(6, 10),
      [&](auto i, auto j) {
        return te::floordiv(X(i, j), S(j)) + te::floormod(X(i, j), 7) - X(i, j) / S(j) % 5;
      },
      "Y");
  auto s = te::create_schedule(Y);
  auto fused = s[Y].fuse(s[Y].axis(0), s[Y].axis(1));
  s[Y].split(fused, 8);
  auto f = te::lower(s, {X, S, Y});
  CHECK(tir::to_string(f).find("floordiv(X[") != std::string::npos);
  auto x = te::NDArray::random(DType::int32(), {6, 10}, 51, -1000, 1000);
  auto sc = te::NDArray::random(DType::int32(), {10}, 52, -20, 20);
  for (std::int64_t j = 0; j < 10; ++j)
    if (sc.at({j}) == 0) sc.set({j}, 3);
  te::NDArray y(DType::int32(), {6, 10});
  tir::run(f, {&x, &sc, &y});
  for (std::int64_t i = 0; i < 6; ++i)
    for (std::int64_t j = 0; j < 10; ++j) {
      const auto v = x.at({i, j}), d = sc.at({j});
      const auto down = static_cast<std::int64_t>(std::floor(static_cast<double>(v) / d));
      const auto mod7 = ((v % 7) + 7) % 7;
      CHECK(y.at({i, j}) == down + mod7 - v / d % 5);
    }
  // A zero divisor met at run time names the expression.
  sc.set({4}, 0);
  CHECK_THROWS_AS(tir::run(f, {&x, &sc, &y}), dlavm::ArithmeticError);
}

}  // namespace conveniences
