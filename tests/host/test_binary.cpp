// host binary ops (host/elementwise.hpp's sub, div, pow, maximum, minimum, prelu, with add and
// mul): every op of kBinaryOps on random shapes and broadcasts against index loops and the
// header comment's formulas written here (integers exactly in int64, then wrapped); integer
// division, NaN and signed zeros by hand; the shapes and dtypes each op refuses.
#include <dlavm/host/elementwise.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "index_loops.hpp"
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace binary_test {

namespace host = dlavm::host;
namespace rt = dlavm::runtime;
namespace te = dlavm::te;
using dlavm::DType;
using dlavm_test::for_each_index;
using dlavm_test::operand_index;

// The float32 result of op at (a, b), from the header comment.
float ref_float(const std::string& op, float a, float b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return a / b;
  if (op == "pow") return std::pow(a, b);
  if (op == "maximum" || op == "minimum") {
    if (a != a) return a;  // NaN
    if (b != b) return b;
    const bool second = op == "maximum" ? a < b : b < a;  // equal operands keep the first
    return second ? b : a;
  }
  if (op == "prelu") return a < 0 ? a * b : a;
  FAIL("no reference for ", op);
  return 0;
}

// The integer result, exact in int64 (operands of at most 32 bits), then wrapped to t.
std::int64_t ref_int(const std::string& op, std::int64_t a, std::int64_t b, DType t) {
  if (op == "add") return t.wrap(a + b);
  if (op == "sub") return t.wrap(a - b);
  if (op == "mul") return t.wrap(a * b);
  if (op == "div") return b == 0 ? 0 : t.wrap(a / b);  // C++ truncates toward zero
  if (op == "maximum") return a > b ? a : b;
  if (op == "minimum") return a < b ? a : b;
  if (op == "prelu") return a < 0 ? t.wrap(a * b) : a;
  FAIL("no reference for ", op);
  return 0;
}

std::vector<std::int64_t> ints(const te::NDArray& a) { return {a.data().begin(), a.data().end()}; }

TEST_CASE("host binary ops: every op and dtype on random broadcasts, against index loops") {
  std::mt19937 rng(51);
  int checked = 0;
  for (const auto& op : host::kBinaryOps) {
    const std::string name(op.name);
    CAPTURE(name);
    CHECK(host::binary_op(op.kind).name == op.name);  // the table is in the enum's order
    for (DType t : {DType::float32(), DType::int8(), DType::int32(), DType::uint8()}) {
      if (t.is_integral() && !rt::takes_integers(op.kind)) continue;
      CAPTURE(t);
      for (int round = 0; round < 12; ++round) {
        // an output shape; operands drop leading dims and set some dims to 1 (prelu: only the
        // slope, which may not stretch x)
        std::vector<std::int64_t> out(rng() % 5);
        for (auto& d : out) d = 1 + static_cast<std::int64_t>(rng() % 4);
        const auto operand = [&] {
          std::vector<std::int64_t> s(
              out.begin() + static_cast<std::ptrdiff_t>(rng() % (out.size() + 1)), out.end());
          for (auto& d : s)
            if (rng() % 3 == 0) d = 1;
          return s;
        };
        const auto as = op.kind == rt::Binary::Prelu ? out : operand();
        const auto bs = operand();
        auto a = te::NDArray::random(t, as, rng());
        auto b = te::NDArray::random(t, bs, rng());
        auto y = host::binary(op.kind, a, b);
        const auto shape = y.shape();
        if (op.kind == rt::Binary::Prelu) CHECK(shape == as);
        for_each_index(shape, [&](const std::vector<std::int64_t>& i) {
          const auto ia = operand_index(i, as), ib = operand_index(i, bs);
          if (t.is_float()) {
            const float want = ref_float(name, a.at_float(ia), b.at_float(ib));
            if (std::isnan(want))
              CHECK(std::isnan(y.at_float(i)));
            else
              CHECK(y.at_float(i) == want);
          } else {
            CHECK(y.at(i) == ref_int(name, a.at(ia), b.at(ib), t));
          }
          ++checked;
        });
      }
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("host div: truncation toward zero, division by zero and the minimum by -1") {
  auto a = te::NDArray::from_ints(DType::int8(), {6}, {-7, 7, -7, -128, 5, 0});
  auto b = te::NDArray::from_ints(DType::int8(), {6}, {2, -2, -2, -1, 0, 0});
  CHECK(ints(host::binary(rt::Binary::Div, a, b)) ==
        std::vector<std::int64_t>{-3, -3, 3, -128, 0, 0});
  auto big = te::NDArray::from_ints(DType::int64(), {2}, {INT64_MIN, INT64_MIN});
  auto by = te::NDArray::from_ints(DType::int64(), {2}, {-1, 2});
  CHECK(ints(host::binary(rt::Binary::Div, big, by)) ==
        std::vector<std::int64_t>{INT64_MIN, INT64_MIN / 2});
  auto u = te::NDArray::from_ints(DType::uint8(), {3}, {250, 255, 9});
  auto ud = te::NDArray::from_ints(DType::uint8(), {3}, {7, 0, 255});
  CHECK(ints(host::binary(rt::Binary::Div, u, ud)) == std::vector<std::int64_t>{35, 0, 0});
  const float inf = std::numeric_limits<float>::infinity();
  auto f = host::binary(rt::Binary::Div, te::NDArray::from_floats({3}, {1.0f, -1.0f, 0.0f}),
                        te::NDArray::from_floats({1}, {0.0f}));
  CHECK(f.at_float({0}) == inf);
  CHECK(f.at_float({1}) == -inf);
  CHECK(std::isnan(f.at_float({2})));
  CHECK(host::binary(rt::Binary::Div, te::NDArray::from_floats({1}, {1.0f}),
                     te::NDArray::from_floats({1}, {-0.0f}))
            .at_float({0}) == -inf);
}

TEST_CASE("host maximum, minimum, pow, sub and prelu: NaN, signed zeros and wrap by hand") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = te::NDArray::from_floats({4}, {nan, 1.0f, -0.0f, 0.0f});
  auto b = te::NDArray::from_floats({4}, {1.0f, nan, 0.0f, -0.0f});
  for (rt::Binary k : {rt::Binary::Maximum, rt::Binary::Minimum}) {
    auto y = host::binary(k, a, b);
    CHECK(std::isnan(y.at_float({0})));
    CHECK(std::isnan(y.at_float({1})));
    CHECK(std::signbit(y.at_float({2})));  // the first of equal operands
    CHECK_FALSE(std::signbit(y.at_float({3})));
  }
  auto p = host::binary(rt::Binary::Pow, te::NDArray::from_floats({4}, {nan, -8.0f, -2.0f, 4.0f}),
                        te::NDArray::from_floats({4}, {0.0f, 1.0f / 3, 3.0f, 0.5f}));
  CHECK(p.at_float({0}) == 1.0f);
  CHECK(std::isnan(p.at_float({1})));
  CHECK(p.at_float({2}) == -8.0f);
  CHECK(p.at_float({3}) == 2.0f);
  auto i = te::NDArray::from_ints(DType::int8(), {3}, {-128, 127, -100});
  auto j = te::NDArray::from_ints(DType::int8(), {3}, {1, -1, 3});
  CHECK(ints(host::binary(rt::Binary::Sub, i, j)) == std::vector<std::int64_t>{127, -128, -103});
  CHECK(ints(host::binary(rt::Binary::Prelu, i, j)) == std::vector<std::int64_t>{-128, 127, -44});
  // prelu: a slope per channel of [N, C, H, W] as [C, 1, 1]
  auto x = te::NDArray::from_floats({1, 2, 1, 2}, {-1.0f, 2.0f, -4.0f, -0.0f});
  auto slope = te::NDArray::from_floats({2, 1, 1}, {0.5f, 0.25f});
  auto y = host::binary(rt::Binary::Prelu, x, slope);
  CHECK(y.shape() == x.shape());
  CHECK(y.at_float({0, 0, 0, 0}) == -0.5f);
  CHECK(y.at_float({0, 0, 0, 1}) == 2.0f);
  CHECK(y.at_float({0, 1, 0, 0}) == -1.0f);
  CHECK(std::signbit(y.at_float({0, 1, 0, 1})));
}

TEST_CASE("host binary ops: shapes and dtypes they refuse, naming the op") {
  auto x = te::NDArray::from_floats({2, 1}, {1.0f, 2.0f});
  auto wide = te::NDArray::from_floats({3}, {1.0f, 2.0f, 3.0f});
  CHECK_THROWS_WITH_AS(
      host::binary(rt::Binary::Prelu, x, wide),
      doctest::Contains("host::prelu: the slope's shape [3] would stretch x [2, 1] to [2, 3]"),
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::binary(rt::Binary::Sub, wide, te::NDArray::from_floats({2}, {1, 2})),
                       doctest::Contains("host::sub: shapes [3] and [2] do not broadcast"),
                       dlavm::ShapeError);
  auto i = te::NDArray::from_ints(DType::int32(), {2}, {1, 2});
  CHECK_THROWS_WITH_AS(host::binary(rt::Binary::Pow, i, i),
                       doctest::Contains("host::pow: a is int32; this op computes in float32 only"),
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::binary(rt::Binary::Maximum, i, wide),
                       doctest::Contains("host::maximum: operands are int32 and float32"),
                       dlavm::TypeError);
}

}  // namespace binary_test
