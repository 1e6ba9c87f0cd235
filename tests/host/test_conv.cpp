// host::conv2d: a hand-derived case, and random shapes, strides and paddings against an
// im2col + host::dense formulation written here; groups and dilations against direct sums in
// double; host::conv2d_transpose against its gather form (each output summing the inputs that
// scatter onto it), a hand-derived case, and the zero-inserted-input identity.
#include <dlavm/host/conv.hpp>
#include <dlavm/host/linear.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

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

TEST_CASE("host conv2d: groups and dilations against direct sums in double") {
  std::mt19937 rng(77);
  for (int round = 0; round < 40; ++round) {
    const std::int64_t g = 1 + rng() % 3, cg = 1 + rng() % 3, og = 1 + rng() % 3;
    const std::int64_t kh = 1 + rng() % 3, kw = 1 + rng() % 3;
    const host::Conv2dParams p{
        .strides = {1 + static_cast<std::int64_t>(rng() % 2),
                    1 + static_cast<std::int64_t>(rng() % 2)},
        .padding = {static_cast<std::int64_t>(rng() % 2), static_cast<std::int64_t>(rng() % 2),
                    static_cast<std::int64_t>(rng() % 2), static_cast<std::int64_t>(rng() % 2)},
        .groups = g,
        .dilations = {1 + static_cast<std::int64_t>(rng() % 3),
                      1 + static_cast<std::int64_t>(rng() % 3)}};
    const std::int64_t h = (kh - 1) * p.dilations[0] + 1 + rng() % 4;
    const std::int64_t w = (kw - 1) * p.dilations[1] + 1 + rng() % 4;
    const bool is_float = round % 2 == 0;
    const DType t = is_float ? DType::float32() : DType::int8();
    auto x = te::NDArray::random(t, {2, g * cg, h, w}, rng());
    auto k = te::NDArray::random(t, {g * og, cg, kh, kw}, rng());
    auto y = host::conv2d(x, k, p);
    const std::int64_t oh =
        (h + p.padding[0] + p.padding[2] - (kh - 1) * p.dilations[0] - 1) / p.strides[0] + 1;
    const std::int64_t ow =
        (w + p.padding[1] + p.padding[3] - (kw - 1) * p.dilations[1] - 1) / p.strides[1] + 1;
    REQUIRE(y.shape() == std::vector<std::int64_t>{2, g * og, oh, ow});
    const auto at = [&](const te::NDArray& a, std::vector<std::int64_t> i) {
      return is_float ? double{a.at_float(i)} : static_cast<double>(a.at(i));
    };
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t o = 0; o < g * og; ++o)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            double sum = 0;
            for (std::int64_t c = 0; c < cg; ++c)
              for (std::int64_t ky = 0; ky < kh; ++ky)
                for (std::int64_t kx = 0; kx < kw; ++kx) {
                  const std::int64_t iy = oy * p.strides[0] - p.padding[0] + ky * p.dilations[0];
                  const std::int64_t ix = ox * p.strides[1] - p.padding[1] + kx * p.dilations[1];
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  sum += at(x, {b, (o / og) * cg + c, iy, ix}) * at(k, {o, c, ky, kx});
                }
            if (is_float)
              CHECK(y.at_float({b, o, oy, ox}) == doctest::Approx(sum).epsilon(1e-4));
            else
              CHECK(y.at({b, o, oy, ox}) == static_cast<std::int64_t>(sum));
          }
  }
  // a depthwise 3x3: each channel its own kernel
  auto x = te::NDArray::from_floats({1, 2, 1, 3}, {1, 2, 3, 10, 20, 30});
  auto k = te::NDArray::from_floats({2, 1, 1, 3}, {1, 1, 1, 0, 1, 0});
  auto y = host::conv2d(x, k, {.padding = {0, 1, 0, 1}, .groups = 2});
  CHECK(std::vector<float>(y.fdata().begin(), y.fdata().end()) ==
        std::vector<float>{3, 6, 5, 10, 20, 30});
  CHECK_THROWS_WITH_AS(host::conv2d(x, te::NDArray(DType::float32(), {3, 1, 1, 1}), {.groups = 2}),
                       doctest::Contains("w [3, 1, 1, 1] has 3 output channels, not a multiple of "
                                         "groups = 2"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::conv2d(x, k, {.dilations = {1, 0}}),
                       doctest::Contains("attribute 'dilations' is [1, 0]"), dlavm::ValueError);
}

TEST_CASE("host conv2d_transpose: against the gather form over random shapes") {
  std::mt19937 rng(91);
  for (int round = 0; round < 40; ++round) {
    const std::int64_t g = 1 + rng() % 2, cg = 1 + rng() % 3, og = 1 + rng() % 3;
    const std::int64_t kh = 1 + rng() % 3, kw = 1 + rng() % 3;
    host::ConvTranspose2dParams p{
        .strides = {1 + static_cast<std::int64_t>(rng() % 3),
                    1 + static_cast<std::int64_t>(rng() % 3)},
        .padding = {static_cast<std::int64_t>(rng() % 2), static_cast<std::int64_t>(rng() % 2),
                    static_cast<std::int64_t>(rng() % 2), static_cast<std::int64_t>(rng() % 2)},
        .groups = g,
        .dilations = {1 + static_cast<std::int64_t>(rng() % 2),
                      1 + static_cast<std::int64_t>(rng() % 2)}};
    for (std::size_t d = 0; d < 2; ++d)
      p.output_padding[d] = static_cast<std::int64_t>(
          rng() % static_cast<unsigned>(std::max(p.strides[d], p.dilations[d])));
    const std::int64_t h = 1 + rng() % 4, w = 1 + rng() % 4;
    const std::int64_t oh = host::transposed_extent(p, 0, h, kh);
    const std::int64_t ow = host::transposed_extent(p, 1, w, kw);
    if (oh < 1 || ow < 1) continue;
    auto x = te::NDArray::random_float({2, g * cg, h, w}, rng(), -1.0, 1.0);
    auto k = te::NDArray::random_float({g * cg, og, kh, kw}, rng(), -1.0, 1.0);
    auto y = host::conv2d_transpose(x, k, p);
    REQUIRE(y.shape() == std::vector<std::int64_t>{2, g * og, oh, ow});
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t o = 0; o < g * og; ++o)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            double sum = 0;  // the inputs whose windows reach (oy, ox)
            for (std::int64_t c = 0; c < cg; ++c)
              for (std::int64_t ky = 0; ky < kh; ++ky)
                for (std::int64_t kx = 0; kx < kw; ++kx) {
                  const std::int64_t ty = oy + p.padding[0] - ky * p.dilations[0];
                  const std::int64_t tx = ox + p.padding[1] - kx * p.dilations[1];
                  if (ty < 0 || tx < 0 || ty % p.strides[0] != 0 || tx % p.strides[1] != 0)
                    continue;
                  const std::int64_t iy = ty / p.strides[0], ix = tx / p.strides[1];
                  if (iy >= h || ix >= w) continue;
                  const std::int64_t ci = (o / og) * cg + c;
                  sum += double{x.at_float({b, ci, iy, ix})} * k.at_float({ci, o % og, ky, kx});
                }
            CHECK(y.at_float({b, o, oy, ox}) == doctest::Approx(sum).epsilon(1e-4));
          }
  }
}

TEST_CASE("host conv2d_transpose: a hand-derived case and the mistakes") {
  // stride 2 over [1, 2] with a [1, 1] kernel of 2 taps: [1, 1, 2, 2], the last cropped
  auto x = te::NDArray::from_floats({1, 1, 1, 2}, {1, 2});
  auto k = te::NDArray::from_floats({1, 1, 1, 2}, {1, 10});
  auto y = host::conv2d_transpose(x, k, {.strides = {1, 2}, .padding = {0, 0, 0, 1}});
  CHECK(y.shape() == std::vector<std::int64_t>{1, 1, 1, 3});
  CHECK(std::vector<float>(y.fdata().begin(), y.fdata().end()) == std::vector<float>{1, 10, 2});
  CHECK_THROWS_WITH_AS(host::conv2d_transpose(x, k, {.output_padding = {0, 1}}),
                       doctest::Contains("attribute 'output_padding' is [0, 1]"),
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::conv2d_transpose(x, te::NDArray(DType::float32(), {2, 1, 1, 1})),
      doctest::Contains("x [1, 1, 1, 2] has 1 channels but w [2, 1, 1, 1] takes 2"),
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::conv2d_transpose(x, k, {.padding = {0, 2, 0, 2}}),
                       doctest::Contains("the output would be 1x-1"), dlavm::ShapeError);
}
