// host reductions (host/reduce.hpp): every op of kReduceOps over random shapes, axes (negative
// ones, none = all) and keepdims, against a reference that walks each output's elements with
// index loops (integers exactly in int64; float sums in the same ascending order, so equal);
// empty reductions, NaN and -0 by hand; the axes, dtypes and shapes refused.
#include <dlavm/host/reduce.hpp>

#include <doctest/doctest.h>

#include "index_loops.hpp"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace reduce_test {

namespace host = dlavm::host;
namespace rt = dlavm::runtime;
namespace te = dlavm::te;
using dlavm::DType;
using dlavm_test::for_each_index;

struct Expected {
  std::vector<std::int64_t> shape;  // with keepdims
  std::vector<double> values;       // per output, row-major
};

// The reduction written from the header comment: for each output index, the elements of its
// reduced dims in row-major order.
Expected reference(const std::string& op, const te::NDArray& x, const std::vector<bool>& reduced) {
  Expected e;
  std::vector<std::int64_t> inner;  // the reduced dims' extents
  for (std::size_t k = 0; k < x.ndim(); ++k) {
    e.shape.push_back(reduced[k] ? 1 : x.shape()[k]);
    if (reduced[k]) inner.push_back(x.shape()[k]);
  }
  const DType t = x.dtype();
  for_each_index(e.shape, [&](const std::vector<std::int64_t>& o) {
    std::vector<double> v;
    for_each_index(inner, [&](const std::vector<std::int64_t>& r) {
      auto i = o;
      std::size_t next = 0;
      for (std::size_t k = 0; k < i.size(); ++k)
        if (reduced[k]) i[k] = r[next++];
      v.push_back(t.is_float() ? double{x.at_float(i)} : static_cast<double>(x.at(i)));
    });
    const auto n = static_cast<std::int64_t>(v.size());
    double out = 0;
    if (op == "reduce_sum" || op == "reduce_mean") {
      if (t.is_float()) {
        float s = n == 0 ? 0.0f : static_cast<float>(v[0]);  // float, in order
        for (std::int64_t j = 1; j < n; ++j)
          s += static_cast<float>(v[static_cast<std::size_t>(j)]);
        out = op == "reduce_sum" ? s : (n == 0 ? NAN : double{s / static_cast<float>(n)});
      } else {
        std::int64_t s = 0;
        for (double d : v) s += static_cast<std::int64_t>(d);
        out = static_cast<double>(op == "reduce_sum" ? t.wrap(s) : (n == 0 ? 0 : s / n));
      }
    } else {
      const bool max = op == "reduce_max";
      if (n == 0) {
        out = t.is_float() ? (max ? -INFINITY : INFINITY)
                           : static_cast<double>(max ? t.min_value() : t.max_value());
      } else {
        out = v[0];
        for (double d : v)
          if (std::isnan(d) || std::isnan(out))
            out = std::isnan(out) ? out : d;
          else if (max ? d > out : d < out)
            out = d;
      }
    }
    e.values.push_back(out);
  });
  return e;
}

std::vector<double> values_of(const te::NDArray& y) {
  std::vector<double> out;
  if (y.dtype().is_float())
    for (float f : y.fdata()) out.push_back(f);
  else
    for (std::int64_t v : y.data()) out.push_back(static_cast<double>(v));
  return out;
}

void check_values(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got[i]));
    else
      CHECK(got[i] == want[i]);
  }
}

TEST_CASE("host reductions: random shapes, axes and keepdims against index loops") {
  std::mt19937 rng(61);
  int outputs = 0;
  for (const auto& op : host::kReduceOps) {
    CAPTURE(op.name);
    CHECK(host::reduce_op(op.kind).name == op.name);  // the table is in the enum's order
    for (DType t : {DType::float32(), DType::int8(), DType::int32(), DType::uint8()}) {
      CAPTURE(t);
      for (int round = 0; round < 25; ++round) {
        std::vector<std::int64_t> shape(rng() % 5);
        for (auto& d : shape) d = static_cast<std::int64_t>(rng() % 4) + (round % 5 == 0 ? 0 : 1);
        // axes: each dim with probability 1/2, some written negative, in any order
        host::ReduceParams p{.keepdims = rng() % 2 == 0};
        std::vector<bool> reduced(shape.size(), false);
        for (std::size_t k = 0; k < shape.size(); ++k)
          if (rng() % 2 == 0) {
            reduced[k] = true;
            const auto axis = static_cast<std::int64_t>(k);
            p.axes.push_back(rng() % 2 == 0 ? axis
                                            : axis - static_cast<std::int64_t>(shape.size()));
          }
        std::shuffle(p.axes.begin(), p.axes.end(), rng);
        if (p.axes.empty()) reduced.assign(shape.size(), true);  // none: every dim
        auto x = t.is_float() ? te::NDArray::random_float(shape, rng(), -50.0, 50.0)
                              : te::NDArray::random(t, shape, rng());
        const std::string shape_text = host::detail::shape_str(shape);
        CAPTURE(shape_text);
        auto y = host::reduce(op.kind, x, p);
        const auto want = reference(std::string(op.name), x, reduced);
        if (p.keepdims) {
          CHECK(y.shape() == want.shape);
        } else {
          std::vector<std::int64_t> kept;
          for (std::size_t k = 0; k < shape.size(); ++k)
            if (!reduced[k]) kept.push_back(shape[k]);
          CHECK(y.shape() == kept);
        }
        CHECK(y.dtype() == t);
        check_values(values_of(y), want.values);
        outputs += static_cast<int>(want.values.size());
      }
    }
  }
  CHECK(outputs > 500);
}

TEST_CASE("host reductions: wrap, truncation, empty reductions, NaN and -0 by hand") {
  const auto x = te::NDArray::from_ints(DType::int8(), {2, 3}, {100, 100, 57, -7, 0, 0});
  const auto ints = [](const te::NDArray& a) {
    return std::vector<std::int64_t>(a.data().begin(), a.data().end());
  };
  // 257 wraps to 1; a mean of 257 / 3 = 85 and -7 / 3 = -2 (toward zero, not -3)
  CHECK(ints(host::reduce(rt::Reduce::Sum, x, {.axes = {1}})) == std::vector<std::int64_t>{1, -7});
  CHECK(ints(host::reduce(rt::Reduce::Mean, x, {.axes = {-1}})) ==
        std::vector<std::int64_t>{85, -2});
  auto all = host::reduce(rt::Reduce::Maximum, x, {.keepdims = false});
  CHECK(all.shape().empty());
  CHECK(all.data()[0] == 100);
  CHECK(host::reduce(rt::Reduce::Minimum, x).shape() == std::vector<std::int64_t>{1, 1});
  // over no element: ONNX's identities at the dtype's width
  const auto empty = te::NDArray(DType::int8(), {2, 0});
  CHECK(ints(host::reduce(rt::Reduce::Maximum, empty, {.axes = {1}})) ==
        std::vector<std::int64_t>{-128, -128});
  CHECK(ints(host::reduce(rt::Reduce::Minimum, empty, {.axes = {1}})) ==
        std::vector<std::int64_t>{127, 127});
  CHECK(ints(host::reduce(rt::Reduce::Minimum, te::NDArray(DType::uint8(), {0}))) ==
        std::vector<std::int64_t>{255});
  CHECK(ints(host::reduce(rt::Reduce::Sum, empty, {.axes = {1}})) ==
        std::vector<std::int64_t>{0, 0});
  CHECK(ints(host::reduce(rt::Reduce::Mean, empty, {.axes = {1}})) ==
        std::vector<std::int64_t>{0, 0});
  CHECK(host::reduce(rt::Reduce::Sum, empty, {.axes = {0}}).shape() ==
        std::vector<std::int64_t>{1, 0});  // no output at all
  const auto fe = te::NDArray(DType::float32(), {0, 3});
  CHECK(std::isnan(host::reduce(rt::Reduce::Mean, fe, {.axes = {0}}).at_float({0, 1})));
  CHECK(host::reduce(rt::Reduce::Maximum, fe, {.axes = {0}}).at_float({0, 2}) == -INFINITY);
  // NaN wins a maximum and a minimum; -0 and +0: the first; a sum of -0s is -0
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto f = te::NDArray::from_floats({2, 3}, {1.0f, nan, 3.0f, -0.0f, 0.0f, -0.0f});
  auto m = host::reduce(rt::Reduce::Maximum, f, {.axes = {1}, .keepdims = false});
  CHECK(std::isnan(m.at_float({0})));
  CHECK(std::signbit(m.at_float({1})));
  CHECK(std::isnan(host::reduce(rt::Reduce::Minimum, f, {.axes = {1}}).at_float({0, 0})));
  const auto zeros = te::NDArray::from_floats({2}, {-0.0f, -0.0f});
  CHECK(std::signbit(host::reduce(rt::Reduce::Sum, zeros).at_float({0})));
  // int32 sums wrap; their means are exact
  const auto big = te::NDArray::from_ints(DType::int32(), {2}, {INT32_MAX, INT32_MAX});
  CHECK(host::reduce(rt::Reduce::Sum, big).at({0}) == -2);
  CHECK(host::reduce(rt::Reduce::Mean, big).at({0}) == INT32_MAX);
}

TEST_CASE("host reductions: bad axes, wide means and too many groups are refused") {
  const auto x = te::NDArray::random_float({2, 3, 4}, 1, -1.0, 1.0);
  CHECK_THROWS_WITH_AS(
      host::reduce(rt::Reduce::Sum, x, {.axes = {0, 3}}),
      doctest::Contains("host::reduce_sum: attribute 'axes' is [0, 3]: axis 3 is outside [-3, "
                        "3) for x [2, 3, 4], of 3 dims"),
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::reduce(rt::Reduce::Maximum, x, {.axes = {1, -2}}),
      doctest::Contains(
          "host::reduce_max: attribute 'axes' is [1, -2]: dim 1 of x [2, 3, 4] is named twice"),
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::reduce(rt::Reduce::Mean, te::NDArray(DType::int64(), {2})),
                       doctest::Contains("host::reduce_mean: x is int64; a mean takes integers "
                                         "of at most 32 bits, or float32"),
                       dlavm::TypeError);
  CHECK_NOTHROW(host::reduce(rt::Reduce::Sum, te::NDArray(DType::int64(), {2})));
  // rank 9, every other dim reduced: 9 groups; dims of 1 do not count
  const auto deep = te::NDArray(DType::int8(), {2, 2, 2, 2, 2, 2, 2, 2, 2});
  CHECK_THROWS_WITH_AS(host::reduce(rt::Reduce::Sum, deep, {.axes = {0, 2, 4, 6, 8}}),
                       doctest::Contains("makes 9 groups of dims kept and reduced in turn; at "
                                         "most 8"),
                       dlavm::ShapeError);
  const auto ones = te::NDArray(DType::int8(), {2, 1, 2, 1, 2, 1, 2, 1, 2});
  CHECK(host::reduce(rt::Reduce::Sum, ones, {.axes = {0, 2, 4, 6, 8}}).size() == 1);
}

TEST_CASE("host merge_reduction: neighbours of one kind merge, ones drop, one dim at least") {
  const std::vector<std::int64_t> shape{2, 3, 1, 4, 5, 6};
  const auto m = host::merge_reduction(std::span<const std::int64_t>(shape),
                                       {true, true, false, false, false, true});
  CHECK(m.shape == std::vector<std::int64_t>{6, 20, 6});
  CHECK(m.reduced == std::vector<bool>{true, false, true});
  const std::vector<std::int64_t> ones{1, 1};
  const auto none = host::merge_reduction(std::span<const std::int64_t>(ones), {true, false});
  CHECK(none.shape == std::vector<std::int64_t>{1});
  CHECK(none.reduced == std::vector<bool>{false});
}

}  // namespace reduce_test
