// host resize2d against ONNX Resize's examples (values derived by hand from the operator text
// and matching the backend tests' expected outputs), and against a reference written here the
// way ONNX's Python reference works (one dim at a time over the whole array, the n nearest
// source indices of the edge-padded dim chosen by distance, coefficient vectors), on random
// shapes, scales, sizes and modes; the errors with their messages.
#include <dlavm/host/image.hpp>

#include <doctest/doctest.h>

#include "index_loops.hpp"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace host_resize_test {

namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;
using Shape = std::vector<std::int64_t>;
using i64 = std::int64_t;
using C = host::ResizeCoordinates;
using N = host::ResizeNearest;

te::NDArray floats(Shape shape, std::vector<float> v) {
  return te::NDArray::from_floats(std::move(shape), v);
}
te::NDArray iota(Shape shape) {
  std::vector<float> v(static_cast<std::size_t>(shape[0] * shape[1] * shape[2] * shape[3]));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i + 1);
  return floats(std::move(shape), v);
}
// Row r (column c when r < 0) of the first plane of y.
std::vector<float> line(const te::NDArray& y, i64 r, i64 c = -1) {
  std::vector<float> out;
  for (i64 k = 0; k < y.shape()[r < 0 ? 2 : 3]; ++k)
    out.push_back(y.at_float({0, 0, r < 0 ? k : r, r < 0 ? c : k}));
  return out;
}

TEST_CASE("host resize2d: ONNX's nearest examples, each mode and transformation") {
  const auto x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  // upsample_scales_nearest: scales 2 x 3, half_pixel, round_prefer_floor
  CHECK(host::resize2d(x, {.scales = {2, 3}}) ==
        floats({1, 1, 4, 6},
               {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
  // downsample_scales_nearest: [[1, 2, 3, 4], [5, 6, 7, 8]] by 0.6 -> [[1, 3]]
  CHECK(host::resize2d(iota({1, 1, 2, 4}), {.scales = {0.6, 0.6}}) == floats({1, 1, 1, 2}, {1, 3}));
  // upsample_sizes_nearest_ceil_half_pixel: 4x4 -> 8x8, ceil; a row and a column:
  // c = i / 2 - 0.25 -> 0, 1, 1, 2, 2, 3, 3, 3 (4 clamped)
  const auto ceil = host::resize2d(iota({1, 1, 4, 4}), {.sizes = {8, 8}, .nearest_mode = N::Ceil});
  CHECK(line(ceil, 0) == std::vector<float>{1, 2, 2, 3, 3, 4, 4, 4});
  CHECK(line(ceil, -1, 0) == std::vector<float>{1, 5, 5, 9, 9, 13, 13, 13});
  // upsample_sizes_nearest_floor_align_corners: c = i * 3 / 7, floored
  const auto floor =
      host::resize2d(iota({1, 1, 4, 4}), {.sizes = {8, 8},
                                          .coordinate_transformation_mode = C::AlignCorners,
                                          .nearest_mode = N::Floor});
  CHECK(line(floor, 0) == std::vector<float>{1, 1, 1, 2, 2, 3, 3, 4});
  CHECK(floor.at_float({0, 0, 3, 0}) == 5);
  // upsample_sizes_nearest_round_prefer_ceil_asymmetric: c = i / 2, halves up
  const auto asym =
      host::resize2d(iota({1, 1, 4, 4}), {.sizes = {8, 8},
                                          .coordinate_transformation_mode = C::Asymmetric,
                                          .nearest_mode = N::RoundPreferCeil});
  CHECK(line(asym, 0) == std::vector<float>{1, 2, 2, 3, 3, 4, 4, 4});
  // round_prefer_floor keeps a half down: c = 0.5 -> 0
  CHECK(host::resize2d(iota({1, 1, 1, 4}),
                       {.sizes = {1, 8}, .coordinate_transformation_mode = C::Asymmetric})
            .at_float({0, 0, 0, 1}) == 1);
  // integers are copied
  const auto q = te::NDArray::from_ints(DType::int8(), {1, 1, 2, 2}, {-128, 127, 5, -5});
  CHECK(host::resize2d(q, {.scales = {1, 2}}) ==
        te::NDArray::from_ints(DType::int8(), {1, 1, 2, 4}, {-128, -128, 127, 127, 5, 5, -5, -5}));
}

TEST_CASE("host resize2d: ONNX's linear examples") {
  const auto x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  // upsample_scales_linear: c = i / 2 - 0.25, the edges repeat
  CHECK(te::allclose(host::resize2d(x, {.scales = {2, 2}, .mode = host::ResizeMode::Linear}),
                     floats({1, 1, 4, 4}, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25,
                                           3.5, 3, 3.25, 3.75, 4}),
                     0, 1e-6));
  // upsample_scales_linear_align_corners: c = i / 3
  // v = 1 + 2 * cy + cx with cy, cx in {0, 1/3, 2/3, 1}
  const float t = 1.0f / 3, u = 2.0f / 3;
  CHECK(te::allclose(host::resize2d(x, {.scales = {2, 2},
                                        .mode = host::ResizeMode::Linear,
                                        .coordinate_transformation_mode = C::AlignCorners}),
                     floats({1, 1, 4, 4}, {1, 1 + t, 1 + u, 2, 1 + u, 2, 2 + t, 2 + u, 2 + t, 2 + u,
                                           3, 3 + t, 3, 3 + t, 3 + u, 4}),
                     0, 1e-6));
  // downsample_scales_linear: [[1, 2, 3, 4], [5, 6, 7, 8]] by 0.6 -> [[2.6666665, 4.3333331]]
  CHECK(te::allclose(
      host::resize2d(iota({1, 1, 2, 4}), {.scales = {0.6, 0.6}, .mode = host::ResizeMode::Linear}),
      floats({1, 1, 1, 2}, {2.6666665f, 4.3333331f}), 0, 1e-6));
  // downsample_sizes_linear_pytorch_half_pixel: 4x4 -> 3x1; one column: c = 0 (L == 1)
  CHECK(te::allclose(
      host::resize2d(iota({1, 1, 4, 4}), {.sizes = {3, 1},
                                          .mode = host::ResizeMode::Linear,
                                          .coordinate_transformation_mode = C::PytorchHalfPixel}),
      floats({1, 1, 3, 1}, {1.6666666f, 7.0f, 12.333333f}), 0, 1e-5));
}

// ---- the reference: ONNX's way, one dim at a time ----------------------------------------

// The n indices nearest to x among [lo, hi), ties to the smaller, in ascending order.
std::vector<i64> nearest_indices(double x, std::size_t n, i64 lo, i64 hi) {
  std::vector<i64> all;
  for (i64 i = lo; i < hi; ++i) all.push_back(i);
  std::stable_sort(all.begin(), all.end(),
                   [&](i64 a, i64 b) { return std::abs(x - double(a)) < std::abs(x - double(b)); });
  all.resize(n);
  std::sort(all.begin(), all.end());
  return all;
}

// The source coordinate, from the operator text's formulas.
double source(i64 i, i64 in, double scale, C mode) {
  const double length = scale * double(in);
  switch (mode) {
    case C::HalfPixel:
      return (double(i) + 0.5) / scale - 0.5;
    case C::Asymmetric:
      return double(i) / scale;
    case C::AlignCorners:
      return length == 1 ? 0 : double(i) * double(in - 1) / (length - 1);
    case C::PytorchHalfPixel:
      return length == 1 ? 0 : (double(i) + 0.5) / scale - 0.5;
  }
  return 0;
}

// Coefficients on the two neighbours (floor(x), floor(x) + 1; x - 1 and x when x is integral).
std::vector<double> coefficients(double x, const host::Resize2dParams& p) {
  const double ratio = x == std::floor(x) ? 1.0 : x - std::floor(x);
  if (p.mode == host::ResizeMode::Linear) return {1 - ratio, ratio};
  if (ratio == 1.0) return {0, 1};
  switch (p.nearest_mode) {
    case N::RoundPreferFloor:
      return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    case N::RoundPreferCeil:
      return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    case N::Floor:
      return {1, 0};
    case N::Ceil:
      return {0, 1};
  }
  return {};
}

// data [rows, in, cols] resized along its middle dim to `out`, in double.
std::vector<double> resize_dim(const std::vector<double>& data, i64 rows, i64 in, i64 cols, i64 out,
                               double scale, const host::Resize2dParams& p) {
  std::vector<double> y(std::size_t(rows * out * cols));
  for (i64 i = 0; i < out; ++i) {
    const double x = source(i, in, scale, p.coordinate_transformation_mode);
    const auto c = coefficients(x, p);
    // the edge-padded dim [-1, in + 1): its two indices nearest to x, clamped back
    auto idx = nearest_indices(x, 2, -1, in + 1);
    for (auto& k : idx) k = std::clamp<i64>(k, 0, in - 1);
    for (i64 r = 0; r < rows; ++r)
      for (i64 j = 0; j < cols; ++j) {
        double s = 0;
        bool copy = p.mode == host::ResizeMode::Nearest;
        for (std::size_t t = 0; t < 2; ++t) {
          const double v = data[std::size_t((r * in + idx[t]) * cols + j)];
          if (copy) {
            if (c[t] == 1) s = v;
          } else {
            s += c[t] * v;
          }
        }
        y[std::size_t((r * out + i) * cols + j)] = s;
      }
  }
  return y;
}

te::NDArray reference_resize(const te::NDArray& x, const host::Resize2dParams& p) {
  const i64 planes = x.shape()[0] * x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const i64 oh =
      p.sizes.empty() ? i64(std::floor(double(h) * double(float(p.scales[0])))) : p.sizes[0];
  const i64 ow =
      p.sizes.empty() ? i64(std::floor(double(w) * double(float(p.scales[1])))) : p.sizes[1];
  const double sh = p.sizes.empty() ? double(float(p.scales[0])) : double(oh) / double(h);
  const double sw = p.sizes.empty() ? double(float(p.scales[1])) : double(ow) / double(w);
  std::vector<double> d(x.size());
  for (std::size_t i = 0; i < d.size(); ++i)
    d[i] = x.dtype().is_float() ? x.fdata()[i] : double(x.data()[i]);
  d = resize_dim(d, planes, h, w, oh, sh, p);
  d = resize_dim(d, planes * oh, w, 1, ow, sw, p);
  te::NDArray y(x.dtype(), {x.shape()[0], x.shape()[1], oh, ow});
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (x.dtype().is_float())
      y.fdata()[i] = float(d[i]);
    else
      y.data()[i] = i64(d[i]);
  }
  return y;
}

TEST_CASE("host resize2d: random resizes against ONNX's way of computing them") {
  std::mt19937_64 rng(59);
  const double scales[] = {0.3, 0.5, 0.6, 0.75, 1.0, 1.5, 2.0, 3.0, 2.5};
  const DType dtypes[] = {DType::float32(), DType::int8(), DType::uint8(), DType::int32(),
                          DType::int64()};
  int linear = 0, nearest = 0;
  for (int round = 0; round < 300; ++round) {
    host::Resize2dParams p;
    const Shape shape{1 + i64(rng() % 2), 1 + i64(rng() % 3), 1 + i64(rng() % 6),
                      1 + i64(rng() % 6)};
    if (rng() % 2)
      p.scales = {scales[rng() % 9], scales[rng() % 9]};
    else
      p.sizes = {i64(rng() % 9), i64(rng() % 9)};
    p.mode = rng() % 2 ? host::ResizeMode::Linear : host::ResizeMode::Nearest;
    p.coordinate_transformation_mode = static_cast<C>(rng() % 4);
    p.nearest_mode = static_cast<N>(rng() % 4);
    const DType t = p.mode == host::ResizeMode::Linear ? DType::float32() : dtypes[rng() % 5];
    // int64 within 2^40: the reference computes in double
    const auto x = t == DType::int64()
                       ? te::NDArray::random(t, shape, rng(), -(i64{1} << 40), i64{1} << 40)
                       : te::NDArray::random(t, shape, rng());
    CAPTURE(round);
    const auto y = host::resize2d(x, p);
    const auto want = reference_resize(x, p);
    REQUIRE(y.shape() == want.shape());
    if (p.mode == host::ResizeMode::Linear) {
      CHECK(te::allclose(y, want, 1e-6, 1e-6));
      ++linear;
    } else {
      CHECK(y == want);
      ++nearest;
    }
  }
  CHECK(linear > 100);
  CHECK(nearest > 100);
}

TEST_CASE("host resize2d: mistakes name the attribute, the numbers and the dtype") {
  const auto x = te::NDArray(DType::float32(), {1, 1, 2, 2});
  CHECK_THROWS_WITH_AS(host::resize2d(x, {}),
                       "host::resize2d: give exactly one of the attributes 'scales' [] and 'sizes' "
                       "[] (height, width)",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::resize2d(x, {.scales = {2, 2}, .sizes = {4, 4}}),
                       doctest::Contains("give exactly one of the attributes 'scales' [2, 2] and "
                                         "'sizes' [4, 4]"),
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::resize2d(x, {.scales = {1, 2, 2}}),
                       "host::resize2d: attribute 'scales' [1, 2, 2] has 3 entries; it takes 2 "
                       "(height, width)",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::resize2d(x, {.scales = {0, 2}}),
                       "host::resize2d: attribute 'scales' [0, 2] has 0; scales are > 0 and finite "
                       "floats",
                       dlavm::ValueError);
  CHECK_THROWS_AS(host::resize2d(x, {.scales = {1e39, 2}}), dlavm::ValueError);  // inf as float
  CHECK_THROWS_WITH_AS(host::resize2d(x, {.sizes = {-1, 2}}),
                       "host::resize2d: attribute 'sizes' [-1, 2] has -1; sizes are >= 0",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::resize2d(te::NDArray(DType::int8(), {1, 1, 2, 2}),
                     {.scales = {2, 2}, .mode = host::ResizeMode::Linear}),
      "host::resize2d: x is int8; mode linear computes in float32 only (cast it, or use mode "
      "nearest)",
      dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::resize2d(te::NDArray(DType::float32(), {2, 2}), {.scales = {2, 2}}),
                       "host::resize2d: x must have 4 dims, got shape [2, 2]", dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      host::resize2d(te::NDArray(DType::float32(), {1, 1, 0, 2}), {.sizes = {2, 2}}),
      "host::resize2d: x [1, 1, 0, 2] has no rows or no columns to resize", dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::resize2d(x, {.scales = {3e38, 1}}),
                       doctest::Contains("more than an array holds"), dlavm::ValueError);
}

}  // namespace host_resize_test
