// host softmax, log_softmax, layer_norm and gelu against double-precision formulas written here.
#include <dlavm/host/float_ops.hpp>

#include <doctest/doctest.h>

#include "index_loops.hpp"
#include <cmath>
#include <cstdint>
#include <limits>

namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;

namespace float_ops_test {

// sum over r of exp(x[idx with dim `axis` = r]), in double.
double sum_exp_along(const te::NDArray& x, std::vector<std::int64_t> idx, std::size_t axis) {
  double sum = 0;
  for (std::int64_t r = 0; r < x.shape()[axis]; ++r) {
    idx[axis] = r;
    sum += std::exp(double(x.at_float(idx)));
  }
  return sum;
}

// Calls check(y, index, axis) for each axis attribute of {-1, 0, 1} (`axis` normalized),
// y = op(x, axis), and each index of x.
template <class Op, class Check>
void each_axis_and_index(const te::NDArray& x, Op op, Check check) {
  for (std::int64_t attr : {-1, 0, 1}) {
    const auto y = op(x, host::SoftmaxParams{.axis = attr});
    const auto axis = static_cast<std::size_t>(attr < 0 ? attr + 3 : attr);
    dlavm_test::for_each_index(x.shape(),
                               [&](const std::vector<std::int64_t>& idx) { check(y, idx, axis); });
  }
}

}  // namespace float_ops_test

TEST_CASE("host softmax: rows sum to one and match a double reference, any axis") {
  auto x = te::NDArray::random_float({3, 4, 5}, 1, -20.0, 20.0);
  float_ops_test::each_axis_and_index(
      x, host::softmax,
      [&](const te::NDArray& y, const std::vector<std::int64_t>& idx, std::size_t axis) {
        CHECK(y.at_float(idx) == doctest::Approx(std::exp(double(x.at_float(idx))) /
                                                 float_ops_test::sum_exp_along(x, idx, axis))
                                     .epsilon(1e-5));
      });
  // large values: subtracting the max keeps exp finite
  auto big = te::NDArray::from_floats({3}, {1000.0f, 1000.0f, -1000.0f});
  auto p = host::softmax(big);
  CHECK(p.at_float({0}) == 0.5f);
  CHECK(p.at_float({2}) == 0.0f);
  auto with_nan =
      te::NDArray::from_floats({2, 2}, {std::numeric_limits<float>::quiet_NaN(), 1.0f, 1.0f, 1.0f});
  auto q = host::softmax(with_nan);
  CHECK(std::isnan(q.at_float({0, 1})));
  CHECK(q.at_float({1, 0}) == 0.5f);
  // rows of length 0: nothing to read
  CHECK(host::softmax(te::NDArray(DType::float32(), {3, 0})).shape() ==
        std::vector<std::int64_t>{3, 0});
  CHECK_THROWS_WITH_AS(
      host::softmax(te::NDArray(DType::int8(), {2})),
      doctest::Contains("host::softmax: x is int8; this op computes in float32 only"),
      dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::softmax(x, {.axis = 3}),
                       doctest::Contains("attribute 'axis' is 3, outside [-3, 3)"),
                       dlavm::ValueError);
}

TEST_CASE("host log_softmax: x - log(sum exp x) in double, any axis, and its edges") {
  auto x = te::NDArray::random_float({3, 4, 5}, 11, -30.0, 30.0);
  float_ops_test::each_axis_and_index(
      x, host::log_softmax,
      [&](const te::NDArray& y, const std::vector<std::int64_t>& idx, std::size_t axis) {
        CHECK(y.at_float(idx) ==
              doctest::Approx(double(x.at_float(idx)) -
                              std::log(float_ops_test::sum_exp_along(x, idx, axis)))
                  .epsilon(1e-5)
                  .scale(30));
      });
  // exp(log_softmax) is softmax
  auto p = host::softmax(x, {.axis = 1});
  auto l = host::log_softmax(x, {.axis = 1});
  for (std::size_t i = 0; i < x.size(); ++i)
    CHECK(std::exp(l.fdata()[i]) == doctest::Approx(p.fdata()[i]).epsilon(1e-5));
  // large values stay finite; -inf stays -inf; a NaN makes its row NaN
  const float inf = std::numeric_limits<float>::infinity();
  auto edges = te::NDArray::from_floats(
      {3, 2}, {1000.0f, 1000.0f, 0.0f, -inf, std::numeric_limits<float>::quiet_NaN(), 1.0f});
  auto e = host::log_softmax(edges);
  CHECK(e.at_float({0, 0}) == doctest::Approx(-std::log(2.0)));
  CHECK(e.at_float({1, 0}) == 0.0f);
  CHECK(e.at_float({1, 1}) == -inf);
  CHECK(std::isnan(e.at_float({2, 1})));
  CHECK(host::log_softmax(te::NDArray(DType::float32(), {2, 0})).shape() ==
        std::vector<std::int64_t>{2, 0});
  CHECK_THROWS_WITH_AS(
      host::log_softmax(te::NDArray(DType::int8(), {2})),
      doctest::Contains("host::log_softmax: x is int8; this op computes in float32 only"),
      dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::log_softmax(x, {.axis = -4}),
                       doctest::Contains("attribute 'axis' is -4, outside [-3, 3)"),
                       dlavm::ValueError);
}

TEST_CASE("host layer_norm: normalizes over the dims from axis, then scales and shifts") {
  auto x = te::NDArray::random_float({2, 3, 4}, 2, -3.0, 5.0);
  for (std::int64_t axis : {-1, 1}) {
    const std::vector<std::int64_t> norm =
        axis == -1 ? std::vector<std::int64_t>{4} : std::vector<std::int64_t>{3, 4};
    auto gamma = te::NDArray::random_float(norm, 3, 0.5, 2.0);
    auto beta = te::NDArray::random_float(norm, 4, -1.0, 1.0);
    auto y = host::layer_norm(x, gamma, beta, {.axis = axis, .epsilon = 1e-3});
    const std::size_t group = axis == -1 ? 4 : 12;
    for (std::size_t g = 0; g < x.size() / group; ++g) {
      double mean = 0, var = 0;
      for (std::size_t j = 0; j < group; ++j) mean += x.fdata()[g * group + j];
      mean /= double(group);
      for (std::size_t j = 0; j < group; ++j) var += std::pow(x.fdata()[g * group + j] - mean, 2);
      var /= double(group);
      for (std::size_t j = 0; j < group; ++j) {
        const double ref =
            (x.fdata()[g * group + j] - mean) / std::sqrt(var + 1e-3) * gamma.fdata()[j] +
            beta.fdata()[j];
        CHECK(y.fdata()[g * group + j] == doctest::Approx(ref).epsilon(1e-4));
      }
    }
  }
  auto g4 = te::NDArray::random_float({4}, 3, 0.5, 2.0);
  CHECK_THROWS_WITH_AS(
      host::layer_norm(x, g4, g4, {.axis = 1}),
      doctest::Contains(
          "gamma has shape [4], expected [3, 4] (the dims of x [2, 3, 4] from axis 1)"),
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::layer_norm(x, te::NDArray(DType::int32(), {4}), g4),
                       doctest::Contains("gamma is int32"), dlavm::TypeError);
}

TEST_CASE("host gelu: the erf form at known points") {
  auto x = te::NDArray::from_floats({5}, {0.0f, 1.0f, -1.0f, 3.0f, -10.0f});
  auto y = host::gelu(x);
  CHECK(y.at_float({0}) == 0.0f);
  CHECK(y.at_float({1}) == doctest::Approx(0.8413447460685429).epsilon(1e-6));
  CHECK(y.at_float({2}) == doctest::Approx(-0.15865525393145707).epsilon(1e-6));
  CHECK(y.at_float({3}) == doctest::Approx(2.9959502).epsilon(1e-6));
  CHECK(y.at_float({4}) == doctest::Approx(0.0).epsilon(1e-6));
  auto r = te::NDArray::random_float({50}, 5, -6.0, 6.0);
  auto g = host::gelu(r);
  for (std::size_t i = 0; i < 50; ++i) {
    const double v = r.fdata()[i];
    CHECK(g.fdata()[i] ==
          doctest::Approx(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))).epsilon(1e-5));
  }
  CHECK_THROWS_AS(host::gelu(te::NDArray(DType::int32(), {1})), dlavm::TypeError);
}

TEST_CASE("host batch_norm: per channel along axis, with running statistics") {
  auto x = te::NDArray::random_float({2, 3, 4}, 3, -3.0, 5.0);
  const auto stat = [](std::uint64_t seed, double lo, double hi) {
    return te::NDArray::random_float({3}, seed, lo, hi);
  };
  const auto gamma = stat(4, 0.5, 1.5), beta = stat(5, -1, 1), mean = stat(6, -1, 1),
             var = stat(7, 0.1, 2);
  auto y = host::batch_norm(x, gamma, beta, mean, var, {.axis = 1, .epsilon = 1e-3});
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t c = 0; c < 3; ++c)
      for (std::int64_t k = 0; k < 4; ++k) {
        const double want = (double(x.at_float({i, c, k})) - mean.at_float({c})) /
                                std::sqrt(double(var.at_float({c})) + 1e-3) * gamma.at_float({c}) +
                            beta.at_float({c});
        CHECK(y.at_float({i, c, k}) == doctest::Approx(want).epsilon(1e-5));
      }
  // the channel is the last dim with axis -1; a wrong length is refused by name
  auto x2 = te::NDArray::random_float({5, 3}, 8, -1, 1);
  auto y2 = host::batch_norm(x2, gamma, beta, mean, var, {.axis = -1});
  CHECK(y2.at_float({4, 2}) ==
        doctest::Approx((x2.at_float({4, 2}) - mean.at_float({2})) /
                            std::sqrt(double(var.at_float({2})) + 1e-5) * gamma.at_float({2}) +
                        beta.at_float({2}))
            .epsilon(1e-5));
  CHECK_THROWS_WITH_AS(host::batch_norm(x2, gamma, beta, mean, var, {.axis = 0}),
                       doctest::Contains("host::batch_norm: gamma has shape [3], expected [5]"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::batch_norm(te::NDArray(DType::int8(), {2, 3}), gamma, beta, mean, var),
                       doctest::Contains("x is int8"), dlavm::TypeError);
}
