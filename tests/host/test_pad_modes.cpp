// host::pad's edge and reflect modes on hand-derived arrays, and the pads each refuses.
#include <dlavm/host/transform.hpp>

#include <doctest/doctest.h>

namespace host_pad_modes {

using namespace dlavm;
using host::PadMode;
using te::NDArray;

std::vector<std::int64_t> values(const NDArray& a) { return {a.data().begin(), a.data().end()}; }

TEST_CASE("pad: edge repeats the nearest element, reflect mirrors without repeating it") {
  const auto x = NDArray::from_ints(DType::int8(), {3}, {1, 2, 3});
  CHECK(values(host::pad(x, {.pad_before = {2}, .pad_after = {2}, .mode = PadMode::Edge})) ==
        std::vector<std::int64_t>{1, 1, 1, 2, 3, 3, 3});
  CHECK(values(host::pad(x, {.pad_before = {2}, .pad_after = {2}, .mode = PadMode::Reflect})) ==
        std::vector<std::int64_t>{3, 2, 1, 2, 3, 2, 1});
  // two dims: rows and columns mirrored independently
  const auto m = NDArray::from_ints(DType::int32(), {2, 2}, {1, 2, 3, 4});
  const auto r =
      host::pad(m, {.pad_before = {1, 1}, .pad_after = {1, 1}, .mode = PadMode::Reflect});
  CHECK(r.shape() == std::vector<std::int64_t>{4, 4});
  CHECK(values(r) == std::vector<std::int64_t>{4, 3, 4, 3, 2, 1, 2, 1, 4, 3, 4, 3, 2, 1, 2, 1});
  const auto f = NDArray::from_floats({2}, {0.5f, -1.5f});
  const auto e = host::pad(f, {.pad_before = {0}, .pad_after = {3}, .mode = PadMode::Edge});
  CHECK(std::vector<float>(e.fdata().begin(), e.fdata().end()) ==
        std::vector<float>{0.5f, -1.5f, -1.5f, -1.5f, -1.5f});
}

TEST_CASE("pad: reflect by more than the dim - 1 is a ShapeError naming the dim") {
  const auto x = NDArray::from_ints(DType::int8(), {2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(
      host::pad(x, {.pad_before = {0, 3}, .pad_after = {0, 0}, .mode = PadMode::Reflect}),
      doctest::Contains("reflect padding of dim 1 (3 elements) by 3 and 0"), ShapeError);
  CHECK_NOTHROW(host::pad(x, {.pad_before = {0, 5}, .pad_after = {1, 0}, .mode = PadMode::Edge}));
}

}  // namespace host_pad_modes
