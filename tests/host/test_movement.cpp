// host strided_slice, take, broadcast_to and tile against references written here from the
// ONNX operator texts (index lists built by stepping, the source index of each output index),
// on random shapes and parameters of every dtype, hand-derived values (ONNX's own examples)
// and the errors with their messages.
#include <dlavm/host/transform.hpp>

#include <doctest/doctest.h>

#include "index_loops.hpp"
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

namespace host_movement_test {

namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;
using dlavm_test::for_each_index;
using Shape = std::vector<std::int64_t>;
using i64 = std::int64_t;
constexpr i64 kMax = std::numeric_limits<i64>::max();
constexpr i64 kMin = std::numeric_limits<i64>::min();

const DType kDtypes[] = {DType::float32(), DType::int8(), DType::uint8(), DType::int32(),
                         DType::int64()};

// y[iy] == x[ix], in the storage of their dtype.
bool same_at(const te::NDArray& y, const Shape& iy, const te::NDArray& x, const Shape& ix) {
  if (x.dtype().is_float()) return y.at_float(iy) == x.at_float(ix);
  return y.at(iy) == x.at(ix);
}

// y[iy] = x[ix], in the storage of their dtype.
void copy_at(te::NDArray& y, const Shape& iy, const te::NDArray& x, const Shape& ix) {
  if (x.dtype().is_float())
    y.set_float(iy, x.at_float(ix));
  else
    y.set(iy, x.at(ix));
}

// The indices a slice reads along a dim of n elements, by the operator text: negative bounds
// plus n, then clamped, then stepped from begin towards end.
std::vector<i64> slice_indices(i64 begin, i64 end, i64 step, i64 n) {
  __extension__ typedef __int128 i128;
  const auto adjust = [&](i64 v) { return v < 0 ? i128(v) + n : i128(v); };
  i128 b = adjust(begin), e = adjust(end);
  if (step > 0) {
    b = std::clamp<i128>(b, 0, n);
    e = std::clamp<i128>(e, 0, n);
  } else {
    b = std::clamp<i128>(b, 0, i128(n) - 1);
    e = std::clamp<i128>(e, -1, i128(n) - 1);
  }
  std::vector<i64> out;
  for (i128 i = b; step > 0 ? i < e : i > e; i += step) out.push_back(static_cast<i64>(i));
  return out;
}

te::NDArray reference_slice(const te::NDArray& x, const host::StridedSliceParams& p) {
  std::vector<std::vector<i64>> picks(x.ndim());
  for (std::size_t k = 0; k < x.ndim(); ++k) {
    picks[k].resize(static_cast<std::size_t>(x.shape()[k]));
    std::iota(picks[k].begin(), picks[k].end(), 0);
  }
  for (std::size_t j = 0; j < p.begin.size(); ++j) {
    const i64 a = p.axes.empty() ? i64(j) : p.axes[j];
    const auto k = static_cast<std::size_t>(a < 0 ? a + i64(x.ndim()) : a);
    picks[k] = slice_indices(p.begin[j], p.end[j], p.step.empty() ? 1 : p.step[j], x.shape()[k]);
  }
  Shape out;
  for (const auto& v : picks) out.push_back(i64(v.size()));
  te::NDArray y(x.dtype(), out);
  for_each_index(out, [&](const Shape& i) {
    Shape from(i.size());
    for (std::size_t k = 0; k < i.size(); ++k) from[k] = picks[k][std::size_t(i[k])];
    copy_at(y, i, x, from);
  });
  return y;
}

i64 random_bound(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
      return kMax;
    case 1:
      return kMin;
    default:
      return i64(rng() % 17) - 8;
  }
}

TEST_CASE("host strided_slice: ONNX's examples, reversal and the clamping corners") {
  auto x = te::NDArray::from_ints(DType::int32(), {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(host::strided_slice(x, {.begin = {1, 0}, .end = {2, 3}, .step = {1, 2}, .axes = {0, 1}}) ==
        te::NDArray::from_ints(DType::int32(), {1, 2}, {5, 7}));
  CHECK(host::strided_slice(x, {.begin = {0, 1}, .end = {-1, 1000}}) ==
        te::NDArray::from_ints(DType::int32(), {1, 3}, {2, 3, 4}));
  // reversed along dim 1: from the last element to before the first
  CHECK(host::strided_slice(x, {.begin = {-1}, .end = {kMin}, .step = {-1}, .axes = {-1}}) ==
        te::NDArray::from_ints(DType::int32(), {2, 4}, {4, 3, 2, 1, 8, 7, 6, 5}));
  // every other element backwards from index 2; a huge step takes one element
  CHECK(host::strided_slice(x, {.begin = {2}, .end = {kMin}, .step = {-2}, .axes = {1}}) ==
        te::NDArray::from_ints(DType::int32(), {2, 2}, {3, 1, 7, 5}));
  CHECK(host::strided_slice(x, {.begin = {1}, .end = {kMax}, .step = {kMax}, .axes = {1}}) ==
        te::NDArray::from_ints(DType::int32(), {2, 1}, {2, 6}));
  CHECK(host::strided_slice(x, {.begin = {-1}, .end = {kMin}, .step = {kMin}, .axes = {1}}) ==
        te::NDArray::from_ints(DType::int32(), {2, 1}, {4, 8}));
  // a begin before -n clamps to 0 with a negative step, as the operator text says (numpy,
  // ONNX's Python reference, would give nothing): x[0] alone
  CHECK(host::strided_slice(x, {.begin = {-10}, .end = {kMin}, .step = {-1}, .axes = {1}}) ==
        te::NDArray::from_ints(DType::int32(), {2, 1}, {1, 5}));
  // empty slices: begin past end, and an empty dim
  CHECK(host::strided_slice(x, {.begin = {3}, .end = {1}, .axes = {1}}).shape() == Shape{2, 0});
  CHECK(host::strided_slice(te::NDArray(DType::int8(), {0, 3}),
                            {.begin = {-1}, .end = {kMin}, .step = {-1}})
            .shape() == Shape{0, 3});
  // no entries: a copy (a scalar too)
  auto s = te::NDArray::from_ints(DType::int64(), {}, {kMin});
  CHECK(host::strided_slice(s, {}) == s);

  const auto f = te::NDArray::from_floats({3}, {0.5f, -1.0f, 2.0f});
  CHECK(host::strided_slice(f, {.begin = {1}, .end = {3}}) ==
        te::NDArray::from_floats({2}, {-1.0f, 2.0f}));
}

TEST_CASE("host strided_slice: random slices of every dtype against stepped index lists") {
  std::mt19937_64 rng(41);
  int elements = 0;
  for (int round = 0; round < 400; ++round) {
    const std::size_t rank = 1 + rng() % 4;
    Shape shape(rank);
    for (auto& d : shape) d = i64(rng() % 6);  // empty dims too
    host::StridedSliceParams p;
    std::vector<i64> dims(rank);
    std::iota(dims.begin(), dims.end(), 0);
    std::shuffle(dims.begin(), dims.end(), rng);
    const std::size_t n = rng() % (rank + 1);
    const bool with_axes = n < rank || rng() % 2 == 0;
    for (std::size_t j = 0; j < n; ++j) {
      p.begin.push_back(random_bound(rng));
      p.end.push_back(random_bound(rng));
      i64 step = i64(rng() % 7) - 3;
      if (step == 0) step = rng() % 2 ? kMax : kMin;
      p.step.push_back(step);
      if (with_axes) p.axes.push_back(dims[j] - (rng() % 2 ? i64(rank) : 0));
    }
    if (rng() % 4 == 0 && std::all_of(p.step.begin(), p.step.end(), [](i64 v) { return v == 1; }))
      p.step.clear();
    const DType t = kDtypes[round % 5];
    const auto x = te::NDArray::random(t, shape, rng());
    CAPTURE(round);
    const auto y = host::strided_slice(x, p);
    const auto want = reference_slice(x, p);
    REQUIRE(y.shape() == want.shape());
    CHECK(y == want);
    elements += static_cast<int>(y.size());
  }
  CHECK(elements > 1000);
}

TEST_CASE("host strided_slice: slice_axis resolves ONNX's bounds") {
  const auto check = [](i64 b, i64 e, i64 s, i64 n, host::SliceAxis want) {
    CAPTURE(b);
    CAPTURE(e);
    CAPTURE(s);
    CAPTURE(n);
    const auto got = host::slice_axis(b, e, s, n);
    CHECK(got.start == want.start);
    CHECK(got.step == want.step);
    CHECK(got.extent == want.extent);
  };
  check(0, kMax, 1, 5, {0, 1, 5});
  check(-2, kMax, 1, 5, {3, 1, 2});
  check(1, -1, 2, 6, {1, 2, 2});       // 1, 3
  check(-1, kMin, -1, 5, {4, -1, 5});  // 4, 3, 2, 1, 0
  check(10, 0, -3, 5, {4, -3, 2});     // 4, 1
  check(2, 2, 1, 5, {0, 1, 0});        // empty: start 0
  check(3, kMax, 100, 5, {3, 1, 1});   // one element: step 1
  check(0, kMax, -1, 0, {0, 1, 0});
}

TEST_CASE("host strided_slice: mistakes name the attribute and the numbers") {
  auto x = te::NDArray(DType::int8(), {2, 3});
  CHECK_THROWS_WITH_AS(host::strided_slice(x, {.begin = {0}, .end = {1}, .step = {0}}),
                       "host::strided_slice: attribute 'step' [0] has 0 at entry 0",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::strided_slice(x, {.begin = {0, 0}, .end = {1}}),
                       "host::strided_slice: attributes 'begin' [0, 0], 'end' [1], 'step' [] and "
                       "'axes' [] need one entry per sliced dim ('step' and 'axes' may be empty)",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::strided_slice(x, {.begin = {0}, .end = {1}, .axes = {2}}),
                       "host::strided_slice: axis 2 (entry 0) is outside [-2, 2) for x's 2 dims",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::strided_slice(x, {.begin = {0, 0}, .end = {1, 1}, .axes = {1, -1}}),
                       "host::strided_slice: attribute 'axes' [1, -1] slices dim 1 twice",
                       dlavm::ValueError);
  // three entries for a 2-D x: the third has no dim
  CHECK_THROWS_AS(host::strided_slice(x, {.begin = {0, 0, 0}, .end = {1, 1, 1}}),
                  dlavm::ValueError);
}

// take by the operator text: output index (a, j, b) reads x at (a, indices[j] (+ n if < 0), b).
te::NDArray reference_take(const te::NDArray& x, const te::NDArray& indices, std::size_t axis) {
  Shape out(x.shape().begin(), x.shape().begin() + std::ptrdiff_t(axis));
  out.insert(out.end(), indices.shape().begin(), indices.shape().end());
  out.insert(out.end(), x.shape().begin() + std::ptrdiff_t(axis) + 1, x.shape().end());
  te::NDArray y(x.dtype(), out);
  const std::size_t r = indices.ndim();
  for_each_index(out, [&](const Shape& i) {
    const Shape j(i.begin() + std::ptrdiff_t(axis), i.begin() + std::ptrdiff_t(axis + r));
    i64 at = indices.at(j);
    if (at < 0) at += x.shape()[axis];
    Shape from(i.begin(), i.begin() + std::ptrdiff_t(axis));
    from.push_back(at);
    from.insert(from.end(), i.begin() + std::ptrdiff_t(axis + r), i.end());
    copy_at(y, i, x, from);
  });
  return y;
}

TEST_CASE("host take: ONNX's Gather examples and negative indices") {
  // ONNX Gather, axis 0: data [[1.0, 1.2], [2.3, 3.4], [4.5, 5.7]], indices [[0, 1], [1, 2]]
  const auto data = te::NDArray::from_floats({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  const auto idx = te::NDArray::from_ints(DType::int64(), {2, 2}, {0, 1, 1, 2});
  CHECK(host::take(data, idx) ==
        te::NDArray::from_floats({2, 2, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f}));
  // axis 1: data [[1.0, 1.2, 1.9], [2.3, 3.4, 3.9], [4.5, 5.7, 5.9]], indices [[0, 2]]
  const auto d3 =
      te::NDArray::from_floats({3, 3}, {1.0f, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f});
  CHECK(host::take(d3, te::NDArray::from_ints(DType::int32(), {1, 2}, {0, 2}), {.axis = 1}) ==
        te::NDArray::from_floats({3, 1, 2}, {1.0f, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f}));
  // negative indices count from the end; a scalar index drops the dim
  const auto v = te::NDArray::from_ints(DType::uint8(), {4}, {10, 20, 30, 255});
  CHECK(host::take(v, te::NDArray::from_ints(DType::int32(), {3}, {-1, 0, -4})) ==
        te::NDArray::from_ints(DType::uint8(), {3}, {255, 10, 10}));
  CHECK(host::take(d3, te::NDArray::from_ints(DType::int64(), {}, {-2}), {.axis = -1}) ==
        te::NDArray::from_floats({3}, {1.2f, 3.4f, 5.7f}));
  // no indices: an empty result
  CHECK(host::take(d3, te::NDArray(DType::int64(), {0})).shape() == Shape{0, 3});
}

TEST_CASE("host take: random gathers of every dtype along every axis") {
  std::mt19937_64 rng(43);
  for (int round = 0; round < 200; ++round) {
    const std::size_t rank = 1 + rng() % 4;
    Shape shape(rank);
    for (auto& d : shape) d = 1 + i64(rng() % 4);
    const std::size_t axis = rng() % rank;
    Shape ishape(rng() % 3);
    for (auto& d : ishape) d = i64(rng() % 4);
    const i64 n = shape[axis];
    const auto indices =
        te::NDArray::random(round % 2 ? DType::int32() : DType::int64(), ishape, rng(), -n, n - 1);
    const auto x = te::NDArray::random(kDtypes[round % 5], shape, rng());
    CAPTURE(round);
    const i64 a = rng() % 2 ? i64(axis) : i64(axis) - i64(rank);
    CHECK(host::take(x, indices, {.axis = a}) == reference_take(x, indices, axis));
  }
}

TEST_CASE("host take: an index outside the dim is an error naming it, not a read") {
  const auto x = te::NDArray(DType::int8(), {3, 2});
  CHECK_THROWS_WITH_AS(
      host::take(x, te::NDArray::from_ints(DType::int32(), {2}, {0, 3})),
      "host::take: index 3 (element 1 of the indices) is outside [-3, 3) for dim 0 of x [3, 2]",
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::take(x, te::NDArray::from_ints(DType::int64(), {1}, {kMin}), {.axis = 1}),
      "host::take: index -9223372036854775808 (element 0 of the indices) is outside [-2, 2) for "
      "dim 1 of x [3, 2]",
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::take(te::NDArray(DType::int8(), {0, 2}),
                                  te::NDArray::from_ints(DType::int32(), {1}, {0})),
                       doctest::Contains("is outside [0, 0) for dim 0"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::take(x, te::NDArray::from_ints(DType::int8(), {1}, {0})),
                       "host::take: indices is int8; indices are int32 or int64 (cast them first)",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::take(x, te::NDArray::from_ints(DType::int32(), {1}, {0}), {.axis = 2}),
                       "host::take: attribute 'axis' is 2, outside [-2, 2) for 2 dims",
                       dlavm::ValueError);
}

// The source index of output index i under numpy broadcasting: x's dims aligned at the end,
// a dim of 1 read at 0.
Shape broadcast_source(const Shape& i, const Shape& x) {
  Shape from(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) from[k] = x[k] == 1 ? 0 : i[i.size() - x.size() + k];
  return from;
}

TEST_CASE("host broadcast_to: ONNX's Expand examples, both ways") {
  // dim_changed: x [3, 1] to shape [2, 1, 6] -> [2, 3, 6]
  const auto x = te::NDArray::from_floats({3, 1}, {1.0f, 2.0f, 3.0f});
  const auto y = host::broadcast_to(x, {.shape = {2, 1, 6}});
  REQUIRE(y.shape() == Shape{2, 3, 6});
  for_each_index(y.shape(), [&](const Shape& i) { CHECK(y.at_float(i) == float(i[1] + 1)); });
  // dim_unchanged: shape [3, 4] -> [3, 4]; a shape shorter than x keeps x's leading dims
  CHECK(host::broadcast_to(x, {.shape = {3, 4}}).shape() == Shape{3, 4});
  CHECK(host::broadcast_to(x, {.shape = {1}}).shape() == Shape{3, 1});
  CHECK(host::broadcast_to(x, {.shape = {}}) == x);
  // a scalar everywhere; dims of 0
  const auto s = te::NDArray::from_ints(DType::int64(), {}, {kMax});
  const auto t = host::broadcast_to(s, {.shape = {2, 2}});
  CHECK(t == te::NDArray::from_ints(DType::int64(), {2, 2}, {kMax, kMax, kMax, kMax}));
  CHECK(host::broadcast_to(x, {.shape = {0, 1, 1}}).shape() == Shape{0, 3, 1});
  CHECK(host::broadcast_to(te::NDArray(DType::int8(), {0, 1}), {.shape = {1, 5}}).shape() ==
        Shape{0, 5});
}

TEST_CASE("host broadcast_to: random broadcasts of every dtype") {
  std::mt19937_64 rng(47);
  for (int round = 0; round < 200; ++round) {
    const std::size_t rank = rng() % 5;
    Shape full(rank);
    for (auto& d : full) d = 1 + i64(rng() % 4);
    // x and shape: each a suffix of `full` with some dims replaced by 1
    const auto part = [&]() {
      Shape s(full.begin() + std::ptrdiff_t(rng() % (rank + 1)), full.end());
      for (auto& d : s)
        if (rng() % 3 == 0) d = 1;
      return s;
    };
    const Shape xs = part(), target = part();
    const auto x = te::NDArray::random(kDtypes[round % 5], xs, rng());
    CAPTURE(round);
    const auto y = host::broadcast_to(x, {.shape = target});
    REQUIRE(y.shape() == *host::broadcast_shapes(xs, target));
    for_each_index(y.shape(),
                   [&](const Shape& i) { CHECK(same_at(y, i, x, broadcast_source(i, xs))); });
  }
}

TEST_CASE("host broadcast_to and tile: mistakes") {
  const auto x = te::NDArray(DType::int8(), {3, 2});
  CHECK_THROWS_WITH_AS(host::broadcast_to(x, {.shape = {4, 2}}),
                       "host::broadcast_to: x [3, 2] and shape [4, 2] do not broadcast (aligned at "
                       "the last dims, each pair must be equal or one of them 1)",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::broadcast_to(x, {.shape = {-1, 2}}),
                       "host::broadcast_to: attribute 'shape' [-1, 2] has -1; dims are >= 0",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::tile(x, {.repeats = {2}}),
                       "host::tile: attribute 'repeats' [2] has 1 entries; x has 2 dims",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::tile(x, {.repeats = {1, -2}}),
                       "host::tile: attribute 'repeats' [1, -2] has -2; repeats are >= 0",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::tile(x, {.repeats = {kMax, 1}}),
                       doctest::Contains("dim 0 of x (3) repeated 9223372036854775807 times "
                                         "overflows int64"),
                       dlavm::ValueError);
}

TEST_CASE("host tile: ONNX's example and random tiles of every dtype") {
  // ONNX Tile's precomputed example: [[0, 1], [2, 3]] repeated [2, 2]
  const auto x = te::NDArray::from_ints(DType::int32(), {2, 2}, {0, 1, 2, 3});
  CHECK(host::tile(x, {.repeats = {2, 2}}) ==
        te::NDArray::from_ints(DType::int32(), {4, 4},
                               {0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3}));
  CHECK(host::tile(x, {.repeats = {0, 3}}).shape() == Shape{0, 6});
  std::mt19937_64 rng(53);
  for (int round = 0; round < 150; ++round) {
    const std::size_t rank = rng() % 4;
    Shape shape(rank), repeats(rank);
    for (auto& d : shape) d = i64(rng() % 4);
    for (auto& r : repeats) r = i64(rng() % 4);
    const auto x = te::NDArray::random(kDtypes[round % 5], shape, rng());
    const auto y = host::tile(x, {.repeats = repeats});
    Shape out(rank);
    for (std::size_t k = 0; k < rank; ++k) out[k] = shape[k] * repeats[k];
    CAPTURE(round);
    REQUIRE(y.shape() == out);
    for_each_index(out, [&](const Shape& i) {
      Shape from(rank);
      for (std::size_t k = 0; k < rank; ++k) from[k] = i[k] % shape[k];
      CHECK(same_at(y, i, x, from));
    });
  }
}

}  // namespace host_movement_test
