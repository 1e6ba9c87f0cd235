// TE conveniences that TVM users reach for, lowered and interpreted: arithmetic on axes in
// indices, fuse of more than two loops, floordiv/floormod of values. Each is checked against
// plain C++ loops.
#include <dlavm/schedule.hpp>
#include <dlavm/tir.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <climits>

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

}  // namespace conveniences
