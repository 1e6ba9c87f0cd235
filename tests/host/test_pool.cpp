// host pooling: hand-derived windows (padding never wins the max, floor division of negative
// sums), and random cases against window sums and maxima written here.
#include <dlavm/host/pool.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;

TEST_CASE("host max_pool2d: padding never wins, even over negative values") {
  auto x = te::NDArray::from_ints(DType::int8(), {1, 1, 2, 2}, {-5, -7, -9, -3});
  auto y = host::max_pool2d(x, {.pool_size = {2, 2}, .strides = {1, 1}, .padding = {1, 1, 1, 1}});
  CHECK(y.shape() == std::vector<std::int64_t>{1, 1, 3, 3});
  CHECK(y.at({0, 0, 0, 0}) == -5);  // the window holds x[0, 0] and padding only
  CHECK(y.at({0, 0, 0, 1}) == -5);
  CHECK(y.at({0, 0, 0, 2}) == -7);
  CHECK(y.at({0, 0, 1, 1}) == -3);
  CHECK(y.at({0, 0, 2, 0}) == -9);
  CHECK(y.at({0, 0, 2, 2}) == -3);
  // float: NaN in a window makes it NaN, other windows are unaffected
  auto f = te::NDArray::from_floats({1, 1, 1, 4},
                                    {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f, 2.0f});
  auto g = host::max_pool2d(f, {.pool_size = {1, 2}, .strides = {1, 2}});
  CHECK(std::isnan(g.at_float({0, 0, 0, 0})));
  CHECK(g.at_float({0, 0, 0, 1}) == 3.0f);
}

TEST_CASE("host avg_pool2d: count_include_pad, and integer floor division") {
  auto x = te::NDArray::from_ints(DType::int32(), {1, 1, 2, 2}, {-7, 2, 4, 6});
  const host::Pool2dParams p{.pool_size = {2, 2}, .strides = {1, 1}, .padding = {1, 1, 0, 0}};
  auto with_pad = host::avg_pool2d(x, p);
  CHECK(with_pad.shape() == std::vector<std::int64_t>{1, 1, 2, 2});
  CHECK(with_pad.at({0, 0, 0, 0}) == -2);  // floor(-7 / 4) = -2
  CHECK(with_pad.at({0, 0, 0, 1}) == -2);  // floor((-7 + 2) / 4) = floor(-1.25)
  CHECK(with_pad.at({0, 0, 1, 1}) == 1);   // floor(5 / 4)
  auto p2 = p;
  p2.count_include_pad = false;
  auto without = host::avg_pool2d(x, p2);
  CHECK(without.at({0, 0, 0, 0}) == -7);
  CHECK(without.at({0, 0, 0, 1}) == -3);  // floor(-5 / 2)
  CHECK(without.at({0, 0, 1, 0}) == -2);  // floor(-3 / 2)
  CHECK(without.at({0, 0, 1, 1}) == 1);   // floor(5 / 4)
}

TEST_CASE("host pools: random windows against sums and maxima written here") {
  std::mt19937 rng(99);
  for (int round = 0; round < 30; ++round) {
    const bool is_float = round % 3 == 0;
    const DType t = is_float ? DType::float32() : DType::int8();
    const std::int64_t kh = 1 + rng() % 3, kw = 1 + rng() % 3;
    const std::int64_t h = kh + rng() % 5, w = kw + rng() % 5;
    host::Pool2dParams p{.pool_size = {kh, kw},
                         .strides = {1 + std::int64_t(rng() % 2), 1 + std::int64_t(rng() % 3)},
                         .padding = {std::int64_t(rng() % kh), std::int64_t(rng() % kw),
                                     std::int64_t(rng() % kh), std::int64_t(rng() % kw)},
                         .count_include_pad = rng() % 2 == 0};
    auto x = te::NDArray::random(t, {2, 3, h, w}, rng());
    auto mx = host::max_pool2d(x, p);
    auto av = host::avg_pool2d(x, p);
    const std::int64_t oh = (h + p.padding[0] + p.padding[2] - kh) / p.strides[0] + 1;
    const std::int64_t ow = (w + p.padding[1] + p.padding[3] - kw) / p.strides[1] + 1;
    REQUIRE(mx.shape() == std::vector<std::int64_t>{2, 3, oh, ow});
    REQUIRE(av.shape() == mx.shape());
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t c = 0; c < 3; ++c)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            double best = -1e300, sum = 0;
            std::int64_t isum = 0, count = 0;
            for (std::int64_t ky = 0; ky < kh; ++ky)
              for (std::int64_t kx = 0; kx < kw; ++kx) {
                const std::int64_t iy = oy * p.strides[0] - p.padding[0] + ky;
                const std::int64_t ix = ox * p.strides[1] - p.padding[1] + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const double v =
                    is_float ? x.at_float({n, c, iy, ix}) : double(x.at({n, c, iy, ix}));
                best = std::max(best, v);
                sum += v;
                if (!is_float) isum += x.at({n, c, iy, ix});
                ++count;
              }
            REQUIRE(count > 0);
            const std::int64_t divisor = p.count_include_pad ? kh * kw : count;
            if (is_float) {
              CHECK(mx.at_float({n, c, oy, ox}) == best);
              CHECK(av.at_float({n, c, oy, ox}) == doctest::Approx(sum / divisor).epsilon(1e-5));
            } else {
              CHECK(mx.at({n, c, oy, ox}) == std::int64_t(best));
              CHECK(av.at({n, c, oy, ox}) == std::int64_t(std::floor(double(isum) / divisor)));
            }
          }
  }
}

TEST_CASE("host global_avg_pool2d: floor of the plane average") {
  auto x = te::NDArray::random(DType::int8(), {2, 3, 5, 7}, 4);
  auto y = host::global_avg_pool2d(x);
  CHECK(y.shape() == std::vector<std::int64_t>{2, 3, 1, 1});
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t c = 0; c < 3; ++c) {
      std::int64_t s = 0;
      for (std::int64_t i = 0; i < 5; ++i)
        for (std::int64_t j = 0; j < 7; ++j) s += x.at({n, c, i, j});
      CHECK(y.at({n, c, 0, 0}) == std::int64_t(std::floor(double(s) / 35)));
    }
  auto f = te::NDArray::from_floats({1, 1, 2, 2}, {1.0f, 2.0f, 3.0f, 4.5f});
  CHECK(host::global_avg_pool2d(f).at_float({0, 0, 0, 0}) == 10.5f / 4);
}

TEST_CASE("host pools: mistakes name the attribute and the numbers") {
  auto x = te::NDArray::random(DType::int8(), {1, 1, 4, 4}, 1);
  CHECK_THROWS_WITH_AS(host::max_pool2d(x, {}),
                       doctest::Contains("host::max_pool2d: attribute 'pool_size' is [0, 0]"),
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::max_pool2d(x, {.pool_size = {2, 2}, .padding = {2, 0, 0, 0}}),
      doctest::Contains(
          "'padding' is [2, 0, 0, 0] for pool_size [2, 2]; each pad must be in [0, 2)"),
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::avg_pool2d(x, {.pool_size = {5, 1}}),
                       doctest::Contains("the 5x1 window is larger than the padded 4x4 input"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::avg_pool2d(x, {.pool_size = {1, 1}, .strides = {1, 0}}),
                       doctest::Contains("attribute 'strides' is [1, 0]"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::global_avg_pool2d(te::NDArray(DType::int64(), {1, 1, 2, 2})),
                       doctest::Contains("x is int64; averages take integers of at most 32 bits"),
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::global_avg_pool2d(te::NDArray(DType::int8(), {1, 2, 2})),
                       doctest::Contains("x must have 4 dims, got shape [1, 2, 2]"),
                       dlavm::ShapeError);
}
