// host reshape, transpose, flatten, concat and pad against index arithmetic written here.
#include <dlavm/host/transform.hpp>

#include <doctest/doctest.h>

#include "index_loops.hpp"
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;
using Shape = std::vector<std::int64_t>;

namespace {

using dlavm_test::for_each_index;

te::NDArray iota(DType t, Shape shape) {
  te::NDArray a(t, std::move(shape));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (t.is_float())
      a.fdata()[i] = static_cast<float>(i) + 0.5f;
    else
      a.set_flat(i, static_cast<std::int64_t>(i));
  }
  return a;
}

}  // namespace

TEST_CASE("host reshape: 0 copies, -1 infers, elements keep their order") {
  auto x = iota(DType::int32(), {2, 3, 4});
  auto y = host::reshape(x, {.newshape = {0, -1}});
  CHECK(y.shape() == Shape{2, 12});
  CHECK(y.data()[17] == 17);
  CHECK(host::reshape(x, {.newshape = {4, 0, 2}}).shape() == Shape{4, 3, 2});
  CHECK(host::reshape(x, {.newshape = {-1}}).shape() == Shape{24});
  CHECK(host::reshape(iota(DType::float32(), {6}), {.newshape = {3, 2}}).at_float({2, 1}) == 5.5f);
  CHECK_THROWS_WITH_AS(
      host::reshape(x, {.newshape = {5, -1}}),
      doctest::Contains(
          "cannot reshape [2, 3, 4] (24 elements) to [5, -1]: 24 is not a multiple of 5"),
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      host::reshape(x, {.newshape = {5, 5}}),
      doctest::Contains("cannot reshape [2, 3, 4] (24 elements) to [5, 5] (25 elements)"),
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::reshape(x, {.newshape = {-1, -1}}),
                       doctest::Contains("more than one -1"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::reshape(x, {.newshape = {-2, 12}}),
                       doctest::Contains("has -2; entries are >= 1, 0 or -1"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::reshape(x, {.newshape = {1, 1, 1, 0}}),
                       doctest::Contains("copies dim 3 (0) but x has 3 dims"), dlavm::ValueError);
}

TEST_CASE("host transpose: random permutations against index arithmetic") {
  std::mt19937 rng(3);
  // (extents of 1 and neighbours that stay neighbours: the kernel drops and merges those dims)
  for (int round = 0; round < 150; ++round) {
    const std::size_t rank = 1 + rng() % 5;
    Shape shape(rank);
    for (auto& d : shape) d = 1 + rng() % 4;
    std::vector<std::int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const DType t = round % 2 ? DType::float32() : DType::int8();
    auto x = te::NDArray::random(t, shape, rng());
    auto y = host::transpose(x, {.perm = perm});
    Shape out(rank);
    for (std::size_t k = 0; k < rank; ++k) out[k] = shape[std::size_t(perm[k])];
    REQUIRE(y.shape() == out);
    for_each_index(out, [&](const Shape& i) {
      Shape src(rank);
      for (std::size_t k = 0; k < rank; ++k) src[std::size_t(perm[k])] = i[k];
      if (t.is_float())
        CHECK(y.at_float(i) == x.at_float(src));
      else
        CHECK(y.at(i) == x.at(src));
    });
  }
  auto x = iota(DType::int8(), {2, 3});
  CHECK(host::transpose(x).shape() == Shape{3, 2});  // empty perm reverses
  CHECK(host::transpose(x, {.perm = {-1, 0}}).at({2, 1}) == x.at({1, 2}));
  // no elements, or one
  CHECK(host::transpose(te::NDArray(DType::int8(), {2, 0, 3}), {.perm = {2, 1, 0}}).shape() ==
        Shape{3, 0, 2});
  const std::vector<std::int64_t> seven{7};
  const auto one = te::NDArray::from_ints(DType::int8(), {1, 1, 1}, seven);
  CHECK(host::transpose(one, {.perm = {2, 0, 1}}).at({0, 0, 0}) == 7);
  CHECK_THROWS_WITH_AS(
      host::transpose(x, {.perm = {0, 0}}),
      doctest::Contains("attribute 'perm' [0, 0] is not a permutation of the 2 dims"),
      dlavm::ValueError);
  CHECK_THROWS_AS(host::transpose(x, {.perm = {0}}), dlavm::ValueError);
}

TEST_CASE("host flatten and concat") {
  auto x = iota(DType::int32(), {2, 3, 4});
  CHECK(host::flatten(x).shape() == Shape{2, 12});
  CHECK(host::flatten(x, {.axis = 0}).shape() == Shape{1, 24});
  CHECK(host::flatten(x, {.axis = 3}).shape() == Shape{24, 1});
  CHECK(host::flatten(x, {.axis = -1}).shape() == Shape{6, 4});
  CHECK(host::flatten(x, {.axis = -1}).data()[23] == 23);
  CHECK_THROWS_WITH_AS(host::flatten(x, {.axis = 4}),
                       doctest::Contains("attribute 'axis' is 4, outside [-3, 3]"),
                       dlavm::ValueError);

  auto a = iota(DType::int32(), {2, 1, 3});
  auto b = te::NDArray::random(DType::int32(), {2, 2, 3}, 9);
  std::vector<const te::NDArray*> xs{&a, &b, &a};
  auto c = host::concat(xs, {.axis = 1});
  REQUIRE(c.shape() == Shape{2, 4, 3});
  for_each_index(c.shape(), [&](const Shape& i) {
    const std::int64_t j = i[1];
    const auto& src = j == 0 ? a : j < 3 ? b : a;
    const std::int64_t local = j == 0 ? 0 : j < 3 ? j - 1 : 0;
    CHECK(c.at(i) == src.at({i[0], local, i[2]}));
  });
  CHECK(host::concat(xs, {.axis = -2}) == c);
  auto d = host::concat(std::vector<const te::NDArray*>{&b, &b}, {.axis = 0});
  CHECK(d.shape() == Shape{4, 2, 3});
  CHECK(d.at({3, 1, 2}) == b.at({1, 1, 2}));
  auto f = iota(DType::float32(), {2, 1, 3});
  CHECK_THROWS_WITH_AS(host::concat(std::vector<const te::NDArray*>{&a, &f}, {.axis = 1}),
                       doctest::Contains("operands are int32 and float32"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(
      host::concat(xs, {.axis = 0}),
      doctest::Contains(
          "input 1 has shape [2, 2, 3], input 0 has [2, 1, 3]; only dim 0 may differ"),
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::concat(std::vector<const te::NDArray*>{}, {}),
                       doctest::Contains("at least one input"), dlavm::ValueError);
}

TEST_CASE("host pad: interior copied, borders hold the value") {
  std::mt19937 rng(8);
  for (int round = 0; round < 20; ++round) {
    const std::size_t rank = 1 + rng() % 4;
    Shape shape(rank), before(rank), after(rank), out(rank);
    for (std::size_t k = 0; k < rank; ++k) {
      shape[k] = 1 + rng() % 3;
      before[k] = rng() % 3;
      after[k] = rng() % 3;
      out[k] = shape[k] + before[k] + after[k];
    }
    const DType t = round % 2 ? DType::float32() : DType::int8();
    auto x = te::NDArray::random(t, shape, rng());
    auto y = host::pad(x, {.pad_before = before, .pad_after = after, .value = -3});
    REQUIRE(y.shape() == out);
    for_each_index(out, [&](const Shape& i) {
      Shape src(rank);
      bool inside = true;
      for (std::size_t k = 0; k < rank; ++k) {
        src[k] = i[k] - before[k];
        inside = inside && src[k] >= 0 && src[k] < shape[k];
      }
      if (t.is_float())
        CHECK(y.at_float(i) == (inside ? x.at_float(src) : -3.0f));
      else
        CHECK(y.at(i) == (inside ? x.at(src) : -3));
    });
  }
  auto x = iota(DType::int8(), {2, 2});
  CHECK_THROWS_WITH_AS(
      host::pad(x, {.pad_before = {1}, .pad_after = {1, 1}}),
      doctest::Contains("'pad_before' [1] and 'pad_after' [1, 1] need one entry per dim (2)"),
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::pad(x, {.pad_before = {0, -1}, .pad_after = {0, 0}}),
                       doctest::Contains("pads must be >= 0"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::pad(x, {.pad_before = {0, 1}, .pad_after = {0, 0}, .value = 0.5}),
                       doctest::Contains("attribute 'value' 0.5 is not a int8 value"),
                       dlavm::ValueError);
  CHECK_THROWS_AS(host::pad(x, {.pad_before = {0, 1}, .pad_after = {0, 0}, .value = 200}),
                  dlavm::ValueError);
}
