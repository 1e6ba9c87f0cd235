// host::dense and host::matmul: hand-derived values, wrap-around, broadcasting, and each
// against an independent formulation (naive loops, the other kernel).
#include <dlavm/host/linear.hpp>
#include <dlavm/host/transform.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <random>

namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;

TEST_CASE("host dense: hand-derived int8 values accumulate in int32") {
  auto x = te::NDArray::from_ints(DType::int8(), {2, 3}, {1, 2, 3, -4, 5, -6});
  auto w = te::NDArray::from_ints(DType::int8(), {2, 3}, {1, 0, -1, 127, 127, 127});
  auto y = host::dense(x, w);
  CHECK(y.dtype() == DType::int32());
  CHECK(y.shape() == std::vector<std::int64_t>{2, 2});
  CHECK(y.at({0, 0}) == 1 - 3);
  CHECK(y.at({0, 1}) == 127 * 6);
  CHECK(y.at({1, 0}) == -4 + 6);
  CHECK(y.at({1, 1}) == 127 * (-5));
  // int8 extremes do not overflow the int32 accumulator
  auto xm = te::NDArray::from_ints(DType::int8(), {1, 4}, {-128, -128, -128, -128});
  auto wm = te::NDArray::from_ints(DType::int8(), {1, 4}, {-128, -128, -128, -128});
  CHECK(host::dense(xm, wm).at({0, 0}) == 4 * 16384);
}

TEST_CASE("host dense: int32 products and sums wrap modulo 2^32") {
  auto x = te::NDArray::from_ints(DType::int32(), {1, 2}, {INT32_MAX, 65536});
  auto w = te::NDArray::from_ints(DType::int32(), {1, 2}, {2, 65536});
  // 2*(2^31-1) + 2^32 = 2^33 - 2 -> -2 modulo 2^32
  CHECK(host::dense(x, w).at({0, 0}) == -2);
  auto seed = 7u;
  auto a = te::NDArray::random(DType::int32(), {3, 5}, seed);
  auto b = te::NDArray::random(DType::int32(), {4, 5}, seed + 1);
  auto y = host::dense(a, b);
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 4; ++j) {
      std::uint64_t acc = 0;  // independent: 64-bit wrapping sum, then the int32 wrap
      for (std::int64_t k = 0; k < 5; ++k)
        acc += static_cast<std::uint64_t>(a.at({i, k})) * static_cast<std::uint64_t>(b.at({j, k}));
      CHECK(y.at({i, j}) == DType::int32().wrap(static_cast<std::int64_t>(acc)));
    }
}

TEST_CASE("host dense: leading dims are kept, float32 matches a double reference") {
  auto x = te::NDArray::random(DType::float32(), {2, 3, 7}, 1);
  auto w = te::NDArray::random(DType::float32(), {5, 7}, 2);
  auto y = host::dense(x, w);
  CHECK(y.dtype() == DType::float32());
  CHECK(y.shape() == std::vector<std::int64_t>{2, 3, 5});
  te::NDArray ref(DType::float32(), {2, 3, 5});
  for (std::int64_t a = 0; a < 2; ++a)
    for (std::int64_t b = 0; b < 3; ++b)
      for (std::int64_t n = 0; n < 5; ++n) {
        double acc = 0;
        for (std::int64_t k = 0; k < 7; ++k)
          acc += double(x.at_float({a, b, k})) * w.at_float({n, k});
        ref.set_float({a, b, n}, static_cast<float>(acc));
      }
  CHECK(te::allclose(y, ref, 1e-5, 1e-6));
}

TEST_CASE("host matmul: equals dense against the transposed weight, per batch") {
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    const std::int64_t m = 1 + rng() % 5, k = 1 + rng() % 9, n = 1 + rng() % 6;
    const DType t = round % 3 == 0   ? DType::float32()
                    : round % 3 == 1 ? DType::int8()
                                     : DType::int32();
    auto a = te::NDArray::random(t, {2, m, k}, rng());
    auto b = te::NDArray::random(t, {2, k, n}, rng());
    auto y = host::matmul(a, b);
    for (std::int64_t batch = 0; batch < 2; ++batch) {
      // slice the batch out with reshape-free index copies, then dense(a_b, b_b^T)
      te::NDArray ab(t, {m, k}), bt(t, {n, k});
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < k; ++j) {
          if (t.is_float())
            ab.set_float({i, j}, a.at_float({batch, i, j}));
          else
            ab.set({i, j}, a.at({batch, i, j}));
        }
      for (std::int64_t i = 0; i < k; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          if (t.is_float())
            bt.set_float({j, i}, b.at_float({batch, i, j}));
          else
            bt.set({j, i}, b.at({batch, i, j}));
        }
      auto d = host::dense(ab, bt);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          if (t.is_float())
            CHECK(y.at_float({batch, i, j}) == doctest::Approx(d.at_float({i, j})).epsilon(1e-5));
          else
            CHECK(y.at({batch, i, j}) == d.at({i, j}));
        }
    }
  }
}

TEST_CASE("host matmul: batch dims broadcast numpy-style") {
  auto a = te::NDArray::random(DType::int8(), {3, 1, 2, 4}, 5);
  auto b = te::NDArray::random(DType::int8(), {5, 4, 3}, 6);
  auto y = host::matmul(a, b);
  CHECK(y.shape() == std::vector<std::int64_t>{3, 5, 2, 3});
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 5; ++j)
      for (std::int64_t m = 0; m < 2; ++m)
        for (std::int64_t n = 0; n < 3; ++n) {
          std::int64_t acc = 0;
          for (std::int64_t k = 0; k < 4; ++k) acc += a.at({i, 0, m, k}) * b.at({j, k, n});
          CHECK(y.at({i, j, m, n}) == acc);
        }
}

TEST_CASE("host dense/matmul: mistakes name the kernel, the operands and the numbers") {
  auto x = te::NDArray::random(DType::int8(), {2, 3}, 1);
  CHECK_THROWS_WITH_AS(host::dense(x, te::NDArray::random(DType::int8(), {4, 5}, 1)),
                       doctest::Contains("host::dense: x [2, 3] has K = 3 but w [4, 5] has K = 5"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::dense(x, te::NDArray::random(DType::int32(), {4, 3}, 1)),
                       doctest::Contains("x is int8 and w is int32"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(
      host::dense(te::NDArray(DType::int16(), {2, 3}), te::NDArray(DType::int16(), {2, 3})),
      doctest::Contains("x is int16 and w is int16"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::dense(x, te::NDArray::random(DType::int8(), {3}, 1)),
                       doctest::Contains("w must have 2 dims, got shape [3]"), dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      host::matmul(x, te::NDArray::random(DType::int8(), {2, 3}, 1)),
      doctest::Contains("a [2, 3] has K = 3 (its last dim) but b [2, 3] has K = 2"),
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      host::matmul(te::NDArray(DType::int8(), {2, 1, 3}), te::NDArray(DType::int8(), {3, 3, 1})),
      doctest::Contains("batch dims [2] of a and [3] of b do not broadcast"), dlavm::ShapeError);
}
