// host unary math ops (host/unary.hpp): every op of kUnaryOps against a reference written here
// in double over index loops, on random shapes; the edge values (NaN, -0, infinities) and the
// integer wrap-around of abs and neg by hand; the dtype each op refuses.
#include <dlavm/host/unary.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "index_loops.hpp"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace unary_test {

namespace host = dlavm::host;
namespace rt = dlavm::runtime;
namespace te = dlavm::te;
using dlavm::DType;
using dlavm_test::for_each_index;

// y of x per op name, in double, from the header comment's formulas.
const std::map<std::string, std::function<double(double)>>& references() {
  static const std::map<std::string, std::function<double(double)>> r = {
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"exp", [](double v) { return std::exp(v); }},
      {"log", [](double v) { return std::log(v); }},
      {"sqrt", [](double v) { return std::sqrt(v); }},
      {"erf", [](double v) { return std::erf(v); }},
      {"abs", [](double v) { return std::fabs(v); }},
      {"neg", [](double v) { return -v; }},
      {"hard_sigmoid", [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); }},
      {"hard_swish", [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }},
      {"leaky_relu", [](double v) { return v < 0 ? 0.01 * v : v; }},
      {"reciprocal", [](double v) { return 1 / v; }},
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"round", [](double v) { return std::nearbyint(v); }},
      {"sign", [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : v); }},
      {"sin", [](double v) { return std::sin(v); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"tan", [](double v) { return std::tan(v); }},
      {"asin", [](double v) { return std::asin(v); }},
      {"acos", [](double v) { return std::acos(v); }},
      {"atan", [](double v) { return std::atan(v); }},
      {"sinh", [](double v) { return std::sinh(v); }},
      {"cosh", [](double v) { return std::cosh(v); }},
      {"asinh", [](double v) { return std::asinh(v); }},
      {"acosh", [](double v) { return std::acosh(v); }},
      {"atanh", [](double v) { return std::atanh(v); }},
      {"softplus", [](double v) { return std::log(1 + std::exp(v)); }},
      {"softsign", [](double v) { return v / (1 + std::fabs(v)); }},
      {"mish", [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); }},
      {"elu", [](double v) { return v < 0 ? std::exp(v) - 1 : v; }},
      {"selu",
       [](double v) {
         const double alpha = 1.6732632423543772, gamma = 1.0507009873554805;
         return v <= 0 ? gamma * alpha * (std::exp(v) - 1) : gamma * v;
       }},
      {"celu", [](double v) { return std::max(0.0, v) + std::min(0.0, std::exp(v) - 1); }},
      {"thresholded_relu", [](double v) { return v > 1 ? v : 0.0; }},
  };
  return r;
}

std::vector<std::int64_t> random_shape(std::mt19937& rng) {
  std::vector<std::int64_t> s(rng() % 4);
  for (auto& d : s) d = 1 + static_cast<std::int64_t>(rng() % 5);
  return s;
}

void check_close(float got, double want) {
  if (std::isnan(want))
    CHECK(std::isnan(got));
  else if (std::isinf(want))
    CHECK(got == want);
  else
    CHECK(got == doctest::Approx(want).epsilon(2e-6));
}

TEST_CASE("host unary ops: every op of the table against double over random shapes") {
  REQUIRE(std::size(host::kUnaryOps) == references().size());
  std::mt19937 rng(41);
  for (const auto& op : host::kUnaryOps) {
    CAPTURE(op.name);
    CHECK(host::unary_op(op.kind).name == op.name);  // the table is in the enum's order
    const auto& ref = references().at(std::string(op.name));
    for (int round = 0; round < 8; ++round) {
      const auto shape = random_shape(rng);
      auto x = te::NDArray::random_float(shape, rng(), -6.0, 6.0);
      auto y = host::unary(op.kind, x);
      REQUIRE(y.shape() == shape);
      REQUIRE(y.dtype() == DType::float32());
      for_each_index(shape, [&](const std::vector<std::int64_t>& i) {
        check_close(y.at_float(i), ref(double{x.at_float(i)}));
      });
    }
  }
}

TEST_CASE("host unary ops: NaN, signed zeros and infinities by hand") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = te::NDArray::from_floats({5}, {nan, -0.0f, 0.0f, -inf, inf});
  // a NaN stays NaN through every op but thresholded_relu (ONNX's x > alpha ? x : 0)
  for (const auto& op : host::kUnaryOps) {
    CAPTURE(op.name);
    if (op.kind == rt::Unary::ThresholdedRelu)
      CHECK(host::unary(op.kind, x).at_float({0}) == 0.0f);
    else
      CHECK(std::isnan(host::unary(op.kind, x).at_float({0})));
  }
  const auto at = [&](rt::Unary k, std::int64_t i) { return host::unary(k, x).at_float({i}); };
  using U = rt::Unary;
  CHECK_FALSE(std::signbit(at(U::Abs, 1)));  // abs(-0) = +0
  CHECK(std::signbit(at(U::Neg, 2)));        // neg(0) = -0
  CHECK(std::signbit(at(U::Sqrt, 1)));       // sqrt(-0) = -0
  CHECK(std::signbit(at(U::LeakyRelu, 1)));  // -0 is not below 0
  CHECK(at(U::Log, 2) == -inf);
  CHECK(std::isnan(at(U::Log, 3)));
  CHECK(std::isnan(at(U::Sqrt, 3)));
  CHECK(at(U::Sigmoid, 3) == 0.0f);
  CHECK(at(U::Sigmoid, 4) == 1.0f);
  CHECK(at(U::Tanh, 3) == -1.0f);
  CHECK(at(U::Erf, 4) == 1.0f);
  CHECK(at(U::Exp, 3) == 0.0f);
  CHECK(at(U::Exp, 4) == inf);
  CHECK(at(U::HardSigmoid, 3) == 0.0f);
  CHECK(at(U::HardSigmoid, 4) == 1.0f);
  CHECK(std::isnan(at(U::HardSwish, 3)));  // -inf * 0, as the formula (and ONNX's) has it
  CHECK(at(U::HardSwish, 4) == inf);
  CHECK(at(U::LeakyRelu, 3) == -inf);
  CHECK(at(U::Reciprocal, 1) == -inf);
  CHECK(at(U::Reciprocal, 4) == 0.0f);
  CHECK(at(U::Sign, 1) == 0.0f);
  CHECK(at(U::Sign, 3) == -1.0f);
  CHECK(at(U::Softplus, 4) == inf);
  CHECK(at(U::Softplus, 3) == 0.0f);
  CHECK(std::isnan(at(U::Softsign, 3)));  // -inf / inf, as the formula (and ONNX's) has it
  CHECK(at(U::Elu, 3) == -1.0f);
  CHECK(at(U::Floor, 3) == -inf);
  CHECK(at(U::Acosh, 2) != at(U::Acosh, 2));  // below 1: NaN
  // round: halves to even, like ONNX's (numpy's) round
  auto halves = host::unary(U::Round, te::NDArray::from_floats({4}, {0.5f, 1.5f, -2.5f, 2.6f}));
  CHECK(std::vector<float>(halves.fdata().begin(), halves.fdata().end()) ==
        std::vector<float>{0.0f, 2.0f, -2.0f, 3.0f});
  // the ramps' corners: hard_swish is 0 from -3 down and x from 3 up
  auto corners = te::NDArray::from_floats({4}, {-3.0f, -1.5f, 1.5f, 3.0f});
  auto hs = host::unary(U::HardSwish, corners);
  CHECK(hs.at_float({0}) == 0.0f);
  CHECK(hs.at_float({1}) == doctest::Approx(-0.375));
  CHECK(hs.at_float({3}) == 3.0f);
}

TEST_CASE("host unary ops: the coefficients of hard_sigmoid and leaky_relu") {
  auto x = te::NDArray::from_floats({4}, {-4.0f, -1.0f, 0.5f, 2.0f});
  auto h = host::hard_sigmoid(x, {.alpha = 0.5, .beta = 0.25});
  CHECK(h.at_float({0}) == 0.0f);  // -1.75 clamps
  CHECK(h.at_float({2}) == 0.5f);  // 0.25 + 0.25
  CHECK(h.at_float({3}) == 1.0f);  // 1.25 clamps
  auto d = host::hard_sigmoid(x);  // ONNX's 0.2 and 0.5
  CHECK(d.at_float({1}) == doctest::Approx(0.3));
  CHECK(host::unary(rt::Unary::HardSigmoid, x) == d);  // the table's defaults are the same
  auto l = host::leaky_relu(x, {.alpha = 0.5});
  CHECK(l.at_float({0}) == -2.0f);
  CHECK(l.at_float({3}) == 2.0f);
  CHECK(host::leaky_relu(x).at_float({0}) == doctest::Approx(-0.04));
  CHECK(host::default_coefficients(rt::Unary::LeakyRelu).alpha == 0.01);
  CHECK(host::default_coefficients(rt::Unary::Sigmoid).alpha == 0.0);
}

TEST_CASE("host unary ops: the coefficients of elu, selu, celu and thresholded_relu") {
  auto x = te::NDArray::from_floats({4}, {-2.0f, -0.5f, 0.5f, 2.0f});
  auto e = host::elu(x, {.alpha = 2});
  CHECK(e.at_float({0}) == doctest::Approx(2 * (std::exp(-2.0) - 1)));
  CHECK(e.at_float({3}) == 2.0f);
  auto s = host::selu(x, {.alpha = 2, .gamma = 3});
  CHECK(s.at_float({1}) == doctest::Approx(3 * (2 * std::exp(-0.5) - 2)));
  CHECK(s.at_float({2}) == 1.5f);
  auto c = host::celu(x, {.alpha = 2});
  CHECK(c.at_float({0}) == doctest::Approx(2 * (std::exp(-1.0) - 1)));
  auto t = host::thresholded_relu(x, {.alpha = 0.5});
  // 0.5 is not above 0.5
  CHECK(std::vector<float>(t.fdata().begin(), t.fdata().end()) == std::vector<float>{0, 0, 0, 2});
  CHECK(host::default_coefficients(rt::Unary::Selu).beta == host::SeluParams{}.gamma);
}

TEST_CASE("host sign: integers") {
  const auto sign = [](DType t, std::vector<std::int64_t> v) {
    const auto n = static_cast<std::int64_t>(v.size());
    const auto y = host::unary(rt::Unary::Sign, te::NDArray::from_ints(t, {n}, v));
    return std::vector<std::int64_t>(y.data().begin(), y.data().end());
  };
  CHECK(sign(DType::int8(), {-128, -3, 0, 127}) == std::vector<std::int64_t>{-1, -1, 0, 1});
  CHECK(sign(DType::uint8(), {0, 255}) == std::vector<std::int64_t>{0, 1});
}

TEST_CASE("host abs and neg: every integer dtype wraps at its own width") {
  const auto ints = [](const te::NDArray& a) {
    return std::vector<std::int64_t>(a.data().begin(), a.data().end());
  };
  using U = rt::Unary;
  auto i8 = te::NDArray::from_ints(DType::int8(), {5}, {-128, -7, 0, 5, 127});
  CHECK(ints(host::unary(U::Abs, i8)) == std::vector<std::int64_t>{-128, 7, 0, 5, 127});
  CHECK(ints(host::unary(U::Neg, i8)) == std::vector<std::int64_t>{-128, 7, 0, -5, -127});
  auto u8 = te::NDArray::from_ints(DType::uint8(), {3}, {0, 1, 255});
  CHECK(ints(host::unary(U::Abs, u8)) == std::vector<std::int64_t>{0, 1, 255});
  CHECK(ints(host::unary(U::Neg, u8)) == std::vector<std::int64_t>{0, 255, 1});
  auto i4 = te::NDArray::from_ints(DType::int_bits(4), {3}, {-8, -3, 7});
  CHECK(ints(host::unary(U::Abs, i4)) == std::vector<std::int64_t>{-8, 3, 7});
  CHECK(ints(host::unary(U::Neg, i4)) == std::vector<std::int64_t>{-8, 3, -7});
  auto i64 = te::NDArray::from_ints(DType::int64(), {2}, {INT64_MIN, -INT64_MAX});
  CHECK(ints(host::unary(U::Abs, i64)) == std::vector<std::int64_t>{INT64_MIN, INT64_MAX});
  // random int16 and int32 against the wrap computed here
  std::mt19937 rng(42);
  for (DType t : {DType::int16(), DType::int32()}) {
    auto x = te::NDArray::random(t, {3, 7}, rng());
    auto a = host::unary(U::Abs, x), n = host::unary(U::Neg, x);
    for_each_index({3, 7}, [&](const std::vector<std::int64_t>& i) {
      CHECK(a.at(i) == t.wrap(x.at(i) < 0 ? -x.at(i) : x.at(i)));
      CHECK(n.at(i) == t.wrap(-x.at(i)));
    });
  }
}

TEST_CASE("host unary ops: integers are refused by the float32-only ops, naming the op") {
  auto x = te::NDArray::from_ints(DType::int8(), {2}, {1, 2});
  for (const auto& op : host::kUnaryOps) {
    CAPTURE(op.name);
    if (rt::takes_integers(op.kind)) {
      CHECK_NOTHROW(host::unary(op.kind, x));
      continue;
    }
    const std::string message =
        fmt::format("host::{}: x is int8; this op computes in float32 only", op.name);
    CHECK_THROWS_WITH_AS(host::unary(op.kind, x), doctest::Contains(message.c_str()),
                         dlavm::TypeError);
  }
}

}  // namespace unary_test
