// host::conv2d: a hand-derived case, and random shapes, strides and paddings against an
// im2col + host::dense formulation written here.
#include <dlavm/host/conv.hpp>
#include <dlavm/host/linear.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <random>

namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;

namespace {

// Rows of patches: row (n, oy, ox) holds x[n, c, oy*sh - pt + ky, ox*sw - pl + kx] for c, ky, kx
// (0 outside x), so that conv2d = dense(patches, w as [O, C*KH*KW]).
te::NDArray im2col(const te::NDArray& x, std::int64_t kh, std::int64_t kw,
                   const host::Conv2dParams& p, std::int64_t oh, std::int64_t ow) {
  const auto& s = x.shape();
  const std::int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  te::NDArray cols(x.dtype(), {n * oh * ow, c * kh * kw});
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox)
        for (std::int64_t ic = 0; ic < c; ++ic)
          for (std::int64_t ky = 0; ky < kh; ++ky)
            for (std::int64_t kx = 0; kx < kw; ++kx) {
              const std::int64_t iy = oy * p.strides[0] - p.padding[0] + ky;
              const std::int64_t ix = ox * p.strides[1] - p.padding[1] + kx;
              const std::int64_t row = (b * oh + oy) * ow + ox, col = (ic * kh + ky) * kw + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              if (x.dtype().is_float())
                cols.set_float({row, col}, x.at_float({b, ic, iy, ix}));
              else
                cols.set({row, col}, x.at({b, ic, iy, ix}));
            }
  return cols;
}

te::NDArray as_matrix(const te::NDArray& w) {
  const auto& s = w.shape();
  te::NDArray m(w.dtype(), {s[0], s[1] * s[2] * s[3]});
  if (w.dtype().is_float())
    std::copy(w.fdata().begin(), w.fdata().end(), m.fdata().begin());
  else
    std::copy(w.data().begin(), w.data().end(), m.data().begin());
  return m;
}

}  // namespace

TEST_CASE("host conv2d: a hand-derived 3x3 case with padding and stride") {
  // x: one channel 3x3 with values 1..9; w: 2x2 of ones; stride 2, padding 1 on every side.
  auto x = te::NDArray::from_ints(DType::int8(), {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto w = te::NDArray::from_ints(DType::int8(), {1, 1, 2, 2}, {1, 1, 1, 1});
  auto y = host::conv2d(x, w, {.strides = {2, 2}, .padding = {1, 1, 1, 1}});
  // OH = floor((3 + 2 - 2) / 2) + 1 = 2; windows start at rows/cols -1 and 1
  CHECK(y.shape() == std::vector<std::int64_t>{1, 1, 2, 2});
  CHECK(y.at({0, 0, 0, 0}) == 1);
  CHECK(y.at({0, 0, 0, 1}) == 2 + 3);
  CHECK(y.at({0, 0, 1, 0}) == 4 + 7);
  CHECK(y.at({0, 0, 1, 1}) == 5 + 6 + 8 + 9);
  // asymmetric padding: only bottom/right
  auto z = host::conv2d(x, w, {.strides = {1, 1}, .padding = {0, 0, 1, 1}});
  CHECK(z.shape() == std::vector<std::int64_t>{1, 1, 3, 3});
  CHECK(z.at({0, 0, 2, 2}) == 9);
  CHECK(z.at({0, 0, 0, 2}) == 3 + 6);
}

TEST_CASE("host conv2d: equals im2col + dense for random shapes, strides and paddings") {
  std::mt19937 rng(2024);
  for (int round = 0; round < 40; ++round) {
    const DType t = round % 4 == 0   ? DType::float32()
                    : round % 4 == 1 ? DType::int32()
                                     : DType::int8();
    const std::int64_t n = 1 + rng() % 2, c = 1 + rng() % 4, o = 1 + rng() % 5;
    const std::int64_t kh = 1 + rng() % 3, kw = 1 + rng() % 3;
    const std::int64_t h = kh + rng() % 6, w = kw + rng() % 6;
    host::Conv2dParams p{.strides = {1 + std::int64_t(rng() % 3), 1 + std::int64_t(rng() % 3)},
                         .padding = {std::int64_t(rng() % 3), std::int64_t(rng() % 3),
                                     std::int64_t(rng() % 3), std::int64_t(rng() % 3)}};
    auto x = te::NDArray::random(t, {n, c, h, w}, rng());
    auto wt = te::NDArray::random(t, {o, c, kh, kw}, rng());
    auto y = host::conv2d(x, wt, p);
    const std::int64_t oh = (h + p.padding[0] + p.padding[2] - kh) / p.strides[0] + 1;
    const std::int64_t ow = (w + p.padding[1] + p.padding[3] - kw) / p.strides[1] + 1;
    REQUIRE(y.shape() == std::vector<std::int64_t>{n, o, oh, ow});
    auto d = host::dense(im2col(x, kh, kw, p, oh, ow), as_matrix(wt));  // [n*oh*ow, o]
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t oc = 0; oc < o; ++oc)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            const std::int64_t row = (b * oh + oy) * ow + ox;
            if (t.is_float())
              CHECK(y.at_float({b, oc, oy, ox}) ==
                    doctest::Approx(d.at_float({row, oc})).epsilon(1e-5));
            else
              CHECK(y.at({b, oc, oy, ox}) == d.at({row, oc}));
          }
  }
}

TEST_CASE("host conv2d: mistakes name the attribute or operand and the numbers") {
  auto x = te::NDArray::random(DType::int8(), {1, 3, 5, 5}, 1);
  auto w = te::NDArray::random(DType::int8(), {4, 3, 3, 3}, 2);
  CHECK_THROWS_WITH_AS(host::conv2d(x, w, {.strides = {0, 1}}),
                       doctest::Contains("host::conv2d: attribute 'strides' is [0, 1]"),
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::conv2d(x, w, {.padding = {0, -1, 0, 0}}),
                       doctest::Contains("attribute 'padding' is [0, -1, 0, 0]"),
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::conv2d(x, te::NDArray::random(DType::int8(), {4, 2, 3, 3}, 2)),
      doctest::Contains("x [1, 3, 5, 5] has 3 channels but w [4, 2, 3, 3] expects 2"),
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::conv2d(te::NDArray(DType::int8(), {1, 3, 2, 2}), w),
                       doctest::Contains("the 3x3 kernel is larger than the padded 2x2 input"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::conv2d(te::NDArray(DType::float32(), {1, 3, 5, 5}), w),
                       doctest::Contains("x is float32 and w is int8"), dlavm::TypeError);
}
