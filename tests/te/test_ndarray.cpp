// te::NDArray: float32 storage next to the integer one, the accessors of each kind, exact
// equality and allclose.
#include <dlavm/te/ndarray.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

namespace te = dlavm::te;
using dlavm::DType;

TEST_CASE("ndarray: float32 arrays hold floats and start at zero") {
  te::NDArray a(DType::float32(), {2, 3});
  CHECK(a.dtype() == DType::float32());
  CHECK(a.size() == 6);
  for (float v : a.fdata()) CHECK(v == 0.0f);
  a.set_float({1, 2}, 0.1f);
  CHECK(a.at_float({1, 2}) == 0.1f);
  CHECK(a.fdata()[5] == 0.1f);  // row-major
  a.fdata()[0] = -2.5f;
  CHECK(a.at_float({0, 0}) == -2.5f);
  // float values are stored as given (no integer wrapping)
  a.set_float({0, 1}, 1e30f);
  CHECK(a.at_float({0, 1}) == 1e30f);
}

TEST_CASE("ndarray: the accessors of the other kind raise TypeError naming the dtype") {
  te::NDArray f(DType::float32(), {2});
  te::NDArray i(DType::int8(), {2});
  CHECK_THROWS_WITH_AS(f.data(), doctest::Contains("data() on a float32 array"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(f.at({0}), doctest::Contains("at() on a float32 array"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(f.set({0}, 1), doctest::Contains("float32"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(f.set_flat(0, 1), doctest::Contains("float32"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(i.fdata(), doctest::Contains("fdata() on a int8 array"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(i.at_float({0}), doctest::Contains("int8"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(i.set_float({0}, 1.0f), doctest::Contains("int8"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(te::NDArray(DType::parse("float16"), {2}),
                       doctest::Contains("float16: float32 is the only float type"),
                       dlavm::TypeError);
  CHECK_THROWS_AS(te::NDArray(DType::parse("float64"), {2}), dlavm::TypeError);
  // out-of-range indices are still ShapeErrors for floats
  CHECK_THROWS_AS(f.at_float({2}), dlavm::ShapeError);
}

TEST_CASE("ndarray: from_ints wraps, from_floats copies, counts are checked") {
  auto a = te::NDArray::from_ints(DType::int8(), {2, 2}, {1, 127, 128, -129});
  CHECK(a.at({0, 1}) == 127);
  CHECK(a.at({1, 0}) == -128);
  CHECK(a.at({1, 1}) == 127);
  auto f = te::NDArray::from_floats({3}, {0.5f, -1.0f, 2.0f});
  CHECK(f.at_float({1}) == -1.0f);
  CHECK_THROWS_WITH_AS(te::NDArray::from_floats({2, 2}, {1.0f}),
                       doctest::Contains("1 values for shape [2, 2], which holds 4"),
                       dlavm::ShapeError);
  CHECK_THROWS_AS(te::NDArray::from_ints(DType::int32(), {3}, {1, 2}), dlavm::ShapeError);
}

TEST_CASE("ndarray: random float arrays are reproducible and in range") {
  auto a = te::NDArray::random(DType::float32(), {64}, 7);
  auto b = te::NDArray::random(DType::float32(), {64}, 7);
  auto c = te::NDArray::random(DType::float32(), {64}, 8);
  CHECK(a == b);
  CHECK_FALSE(a == c);
  bool negative = false, positive = false;
  for (float v : a.fdata()) {
    CHECK(v >= -1.0f);
    CHECK(v <= 1.0f);
    negative = negative || v < 0;
    positive = positive || v > 0;
  }
  CHECK(negative);
  CHECK(positive);
  auto r = te::NDArray::random(DType::float32(), {100}, 3, 10, 20);
  for (float v : r.fdata()) {
    CHECK(v >= 10.0f);
    CHECK(v <= 20.0f);
  }
  auto d = te::NDArray::random_float({5}, 1, -0.25, 0.25);
  for (float v : d.fdata()) CHECK(std::abs(v) <= 0.25f);
  CHECK_THROWS_WITH_AS(te::NDArray::random_float({5}, 1, 1.0, 1.0),
                       doctest::Contains("empty range"), dlavm::ValueError);
}

TEST_CASE("ndarray: == is exact, NaN equals NaN; allclose follows numpy") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = te::NDArray::from_floats({3}, {1.0f, nan, -0.5f});
  auto b = te::NDArray::from_floats({3}, {1.0f, nan, -0.5f});
  CHECK(a == b);
  b.set_float({0}, std::nextafter(1.0f, 2.0f));
  CHECK_FALSE(a == b);
  // different dtypes or shapes are never equal
  CHECK_FALSE(te::NDArray(DType::float32(), {2}) == te::NDArray(DType::int32(), {2}));
  CHECK_FALSE(te::NDArray(DType::float32(), {2}) == te::NDArray(DType::float32(), {1, 2}));

  auto x = te::NDArray::from_floats({2}, {1.0f, 100.0f});
  auto y = te::NDArray::from_floats({2}, {1.0f + 1e-6f, 100.0f + 5e-4f});
  CHECK(te::allclose(x, y, 1e-5, 1e-8));
  CHECK_FALSE(te::allclose(x, y, 1e-7, 1e-8));
  CHECK(te::allclose(x, y, 0.0, 1e-3));
  CHECK_FALSE(te::allclose(x, y, 0.0, 1e-4));
  CHECK_FALSE(te::allclose(x, te::NDArray::from_floats({1, 2}, {1.0f, 100.0f})));  // shape
  CHECK_FALSE(te::allclose(a, a));  // NaN is close to nothing
  // integer and float arrays of one shape compare by value
  auto i = te::NDArray::from_ints(DType::int32(), {2}, {1, 100});
  CHECK(te::allclose(i, x));
}

TEST_CASE("NDArray::reshape moves the elements into another shape of the same size") {
  auto a = dlavm::te::NDArray::from_ints(dlavm::DType::int8(), {2, 3}, {1, 2, 3, 4, 5, 6});
  const auto* before = a.data().data();
  auto b = std::move(a).reshape({3, 1, 2});
  CHECK(b.shape() == std::vector<std::int64_t>{3, 1, 2});
  CHECK(b.data().data() == before);  // not copied
  CHECK(b.data()[5] == 6);
  CHECK_THROWS_WITH_AS(std::move(b).reshape({4}),
                       "NDArray::reshape: 6 elements cannot take the shape [4]", dlavm::ShapeError);
}
