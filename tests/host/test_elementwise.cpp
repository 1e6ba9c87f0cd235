// host element-wise ops, requantize and cast: broadcasting against index loops written here,
// wrap-around, and the rounding/saturation rules with hand-derived values.
#include <dlavm/host/elementwise.hpp>
#include <dlavm/host/quantize.hpp>

#include <doctest/doctest.h>

#include "index_loops.hpp"
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;

namespace {

using dlavm_test::for_each_index;
using dlavm_test::operand_index;

std::vector<std::int64_t> random_shape(std::mt19937& rng, std::size_t rank) {
  std::vector<std::int64_t> s(rank);
  for (auto& d : s) d = 1 + rng() % 4;
  return s;
}

}  // namespace

TEST_CASE("host add/mul: random broadcasts against index loops, with wrap-around") {
  std::mt19937 rng(5);
  for (int round = 0; round < 60; ++round) {
    const DType t = round % 3 == 0   ? DType::float32()
                    : round % 3 == 1 ? DType::int8()
                                     : DType::int32();
    // an output shape, and two operands that drop leading dims and set some dims to 1
    const auto out = random_shape(rng, 1 + rng() % 4);
    auto operand = [&] {
      std::vector<std::int64_t> s(out.begin() + std::int64_t(rng() % (out.size() + 1)), out.end());
      for (auto& d : s)
        if (rng() % 3 == 0) d = 1;
      return s;
    };
    const auto as = operand(), bs = operand();
    auto a = te::NDArray::random(t, as, rng());
    auto b = te::NDArray::random(t, bs, rng());
    auto sum = host::add(a, b);
    auto prod = host::mul(a, b);
    // the expected shape: numpy's rule, computed here per dim
    std::vector<std::int64_t> expect(std::max(as.size(), bs.size()));
    for (std::size_t k = 0; k < expect.size(); ++k) {
      const std::size_t from_end = expect.size() - 1 - k;
      const std::int64_t da = from_end < as.size() ? as[as.size() - 1 - from_end] : 1;
      const std::int64_t db = from_end < bs.size() ? bs[bs.size() - 1 - from_end] : 1;
      expect[k] = std::max(da, db);
    }
    REQUIRE(sum.shape() == expect);
    REQUIRE(prod.shape() == expect);
    for_each_index(expect, [&](const std::vector<std::int64_t>& i) {
      const auto ia = operand_index(i, as), ib = operand_index(i, bs);
      if (t.is_float()) {
        CHECK(sum.at_float(i) == a.at_float(ia) + b.at_float(ib));
        CHECK(prod.at_float(i) == a.at_float(ia) * b.at_float(ib));
      } else {
        CHECK(sum.at(i) == t.wrap(a.at(ia) + b.at(ib)));
        CHECK(prod.at(i) == t.wrap(a.at(ia) * b.at(ib)));
      }
    });
  }
  auto x = te::NDArray::from_ints(DType::int8(), {2}, {127, -128});
  CHECK(host::add(x, x).at({0}) == -2);
  CHECK(host::mul(x, x).at({1}) == 0);  // 16384 mod 256
  auto big = te::NDArray::from_ints(DType::int64(), {1}, {INT64_MAX});
  CHECK(host::add(big, big).at({0}) == -2);  // wraps without signed overflow
}

TEST_CASE("host bias_add: along axis 1 by default, any axis when given") {
  auto x = te::NDArray::random(DType::int32(), {2, 3, 4}, 1);
  auto b = te::NDArray::from_ints(DType::int32(), {3}, {10, INT32_MAX, -30});
  auto y = host::bias_add(x, b);
  for_each_index({2, 3, 4}, [&](const std::vector<std::int64_t>& i) {
    CHECK(y.at(i) == DType::int32().wrap(x.at(i) + b.at({i[1]})));
  });
  auto b4 = te::NDArray::random(DType::int32(), {4}, 2);
  auto z = host::bias_add(x, b4, {.axis = -1});
  for_each_index({2, 3, 4}, [&](const std::vector<std::int64_t>& i) {
    CHECK(z.at(i) == DType::int32().wrap(x.at(i) + b4.at({i[2]})));
  });
  CHECK_THROWS_WITH_AS(host::bias_add(x, b4),
                       doctest::Contains("b must have shape [3] (dim 1 of x [2, 3, 4]), got [4]"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::bias_add(x, b, {.axis = 3}),
                       doctest::Contains("attribute 'axis' is 3, outside [-3, 3)"),
                       dlavm::ValueError);
}

TEST_CASE("host relu and clip") {
  auto x = te::NDArray::from_ints(DType::int8(), {5}, {-128, -1, 0, 1, 127});
  auto r = host::relu(x);
  CHECK(std::vector<std::int64_t>(r.data().begin(), r.data().end()) ==
        std::vector<std::int64_t>{0, 0, 0, 1, 127});
  auto c =
      host::clip(x, {.lo = -1.5, .hi = 0.5});  // integer bounds ceil(-1.5) = -1, floor(0.5) = 0
  CHECK(std::vector<std::int64_t>(c.data().begin(), c.data().end()) ==
        std::vector<std::int64_t>{-1, -1, 0, 0, 0});
  auto wide = host::clip(x, {.lo = -1e9, .hi = 1e9});  // bounds beyond int8 saturate
  CHECK(wide == x);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto f = te::NDArray::from_floats({4}, {-2.0f, nan, 0.25f, 3.0f});
  auto fr = host::relu(f);
  CHECK(fr.at_float({0}) == 0.0f);
  CHECK(std::isnan(fr.at_float({1})));
  auto fc = host::clip(f, {.lo = -1, .hi = 1});
  CHECK(fc.at_float({0}) == -1.0f);
  CHECK(std::isnan(fc.at_float({1})));
  CHECK(fc.at_float({2}) == 0.25f);
  CHECK(fc.at_float({3}) == 1.0f);
  CHECK_THROWS_WITH_AS(host::clip(x, {.lo = 2, .hi = 1}),
                       doctest::Contains("host::clip: attribute 'lo' (2) is greater than 'hi' (1)"),
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::clip(x, {.lo = 0.2, .hi = 0.8}),
                       doctest::Contains("no int8 value lies in [lo, hi] = [0.2, 0.8]"),
                       dlavm::ValueError);
}

TEST_CASE("host requantize: floor and nearest rounding, saturation, wrap of the rounding add") {
  auto x = te::NDArray::from_ints(DType::int32(), {8}, {0, 127, 128, 383, 384, -129, -128, 100000});
  auto floor8 = host::requantize(x, {.shift = 8});
  CHECK(floor8.dtype() == DType::int8());
  CHECK(std::vector<std::int64_t>(floor8.data().begin(), floor8.data().end()) ==
        std::vector<std::int64_t>{0, 0, 0, 1, 1, -1, -1, 127});
  auto near8 = host::requantize(x, {.shift = 8, .rounding = host::Rounding::Nearest});
  // +128 then >> 8: 127 -> 0, 128 -> 1 (tie up), 383 -> 1, 384 -> 2, -129 -> -1, -128 -> 0
  CHECK(std::vector<std::int64_t>(near8.data().begin(), near8.data().end()) ==
        std::vector<std::int64_t>{0, 0, 1, 1, 2, -1, 0, 127});
  auto relu6 =
      host::requantize(x, {.shift = 0, .lo = 0, .hi = 6, .rounding = host::Rounding::Nearest});
  CHECK(relu6.at({1}) == 6);  // shift 0 adds nothing
  CHECK(relu6.at({5}) == 0);
  // the rounding add wraps in int32, as VTA's ALU: INT32_MAX + 2^7 becomes negative
  auto top = te::NDArray::from_ints(DType::int32(), {1}, {INT32_MAX});
  CHECK(host::requantize(top, {.shift = 8, .rounding = host::Rounding::Nearest}).at({0}) ==
        std::max<std::int64_t>(-128, (std::int64_t{INT32_MIN} + 127) >> 8));
  auto wide =
      host::requantize(x, {.shift = 4, .lo = -1000, .hi = 1000, .out_dtype = DType::int16()});
  CHECK(wide.dtype() == DType::int16());
  CHECK(wide.at({7}) == 1000);
  CHECK(wide.at({3}) == 383 >> 4);
  // random values against the formula evaluated here in int64
  auto r = te::NDArray::random(DType::int32(), {200}, 3, -1 << 20, 1 << 20);
  for (std::int64_t shift : {1, 5, 9}) {
    auto y = host::requantize(r, {.shift = shift, .rounding = host::Rounding::Nearest});
    for (std::int64_t i = 0; i < 200; ++i) {
      const std::int64_t v = r.at({i}) + (std::int64_t{1} << (shift - 1));
      CHECK(y.at({i}) ==
            std::clamp<std::int64_t>(
                static_cast<std::int64_t>(std::floor(double(v) / double(1 << shift))), -128, 127));
    }
  }
}

TEST_CASE("host requantize: mistakes name the attribute") {
  auto x = te::NDArray::from_ints(DType::int32(), {1}, {0});
  CHECK_THROWS_WITH_AS(
      host::requantize(x, {.shift = 32}),
      doctest::Contains("attribute 'shift' is 32; for int32 input it must be in [0, 32)"),
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::requantize(x, {.shift = 1, .lo = 0, .hi = 300}),
      doctest::Contains("[lo, hi] = [0, 300] does not fit out_dtype int8 ([-128, 127])"),
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::requantize(x, {.shift = 1, .lo = 5, .hi = 1}),
                       doctest::Contains("'lo' (5) is greater than 'hi' (1)"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::requantize(te::NDArray(DType::float32(), {1}), {.shift = 1}),
                       doctest::Contains("x is float32; requantize takes a signed integer"),
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::requantize(x, {.shift = 1, .out_dtype = DType::float32()}),
                       doctest::Contains("'out_dtype' is float32"), dlavm::TypeError);
  CHECK(host::parse_rounding("nearest") == host::Rounding::Nearest);
  CHECK(!host::parse_rounding("round"));
  CHECK(host::rounding_name(host::Rounding::Floor) == "floor");
}

TEST_CASE("host cast: wrap, nearest, half-to-even, saturation, NaN") {
  auto i = te::NDArray::from_ints(DType::int32(), {4}, {300, -129, 16777217, INT32_MIN});
  auto i8 = host::cast(i, DType::int8());
  CHECK(i8.at({0}) == 44);
  CHECK(i8.at({1}) == 127);
  auto f = host::cast(i, DType::float32());
  CHECK(f.at_float({0}) == 300.0f);
  CHECK(f.at_float({2}) == 16777216.0f);  // 2^24 + 1 is not a float: nearest, ties to even
  CHECK(f.at_float({3}) == -2147483648.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto g = te::NDArray::from_floats(
      {10}, {2.5f, 3.5f, -1.5f, -2.5f, 0.49999997f, 1e10f, -1e10f, nan, inf, -0.5f});
  auto gi = host::cast(g, DType::int32());
  CHECK(std::vector<std::int64_t>(gi.data().begin(), gi.data().end()) ==
        std::vector<std::int64_t>{2, 4, -2, -2, 0, INT32_MAX, INT32_MIN, 0, INT32_MAX, 0});
  auto g8 = host::cast(g, DType::int8());
  CHECK(g8.at({5}) == 127);
  CHECK(g8.at({6}) == -128);
  auto gu = host::cast(g, DType::uint8());
  CHECK(gu.at({2}) == 0);  // -2 saturates at 0
  CHECK(host::cast(g, DType::float32()) == g);
  CHECK(host::float_to_int(9.2233720368547758e18f, DType::int64()) == INT64_MAX);
  CHECK(host::float_to_int(-9.2233720368547758e18f, DType::int64()) == INT64_MIN);
  CHECK_THROWS_AS(host::cast(i, DType::parse("float16")), dlavm::TypeError);
}
