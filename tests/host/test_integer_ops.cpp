// host integer_softmax: hand-derived rows, the exponential against 2^(x * scale * log2 e), the
// probabilities against a double softmax quantized to 1/127, causal rows against the softmax of
// their visible prefix, both key axes, and the errors.
#include <dlavm/host/float_ops.hpp>
#include <dlavm/host/integer_ops.hpp>
#include <dlavm/host/transform.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace host = dlavm::host;
namespace runtime = dlavm::runtime;
namespace te = dlavm::te;
using dlavm::DType;

namespace integer_ops_test {

te::NDArray int8_row(const std::vector<std::int64_t>& v) {
  te::NDArray a(DType::int8(), {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) a.set_flat(i, v[i]);
  return a;
}

std::vector<std::int64_t> values(const te::NDArray& a) {
  return {a.data().begin(), a.data().end()};
}

// softmax of s * scale in double, rounded to units of 1/127
std::vector<double> float_probs(const std::vector<std::int64_t>& s, double scale) {
  const auto m = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (auto v : s) sum += std::exp(double(v - m) * scale);
  std::vector<double> p;
  for (auto v : s) p.push_back(std::exp(double(v - m) * scale) / sum * 127.0);
  return p;
}

}  // namespace integer_ops_test

using namespace integer_ops_test;

TEST_CASE("host integer_softmax: rows worked out by hand") {
  // scale 1/8: multiplier round(0.125 * log2(e) * 2^9) = 92 with 9 fraction bits
  const auto fixed = host::integer_exp_for(0.125);
  CHECK(fixed.multiplier == 92);
  CHECK(fixed.frac_bits == 9);
  // equal scores: e = 2^18 each, S = 2^19, R = floor(127 * 2^23 / 2^19) = 2032,
  // y = (2^18 * 2032 + 2^22) >> 23 = 64
  CHECK(values(host::integer_softmax(int8_row({5, 5}))) == std::vector<std::int64_t>{64, 64});
  CHECK(values(host::integer_softmax(int8_row({-7}))) == std::vector<std::int64_t>{127});
  // x = -255: t = 23460, z = 45, z + 4 >= 23, e = 0
  CHECK(values(host::integer_softmax(int8_row({127, -128}))) == std::vector<std::int64_t>{127, 0});
  // x = -8 (e^-1): t = 736, u = 184, z = 1, r = 56,
  // v = (45 * 56 - 22120) * 56 + 2^22 = 3096704, e = v >> 5 = 96772; S = 2^18 + 96772,
  // R = floor(127 * 2^23 / 358916) = 2968, y = (96772 * 2968 + 2^22) >> 23 = 34 and
  // (2^18 * 2968 + 2^22) >> 23 = 93 (the float softmax: 34.15 and 92.85)
  CHECK(runtime::integer_exp(-8, fixed) == 96772);
  CHECK(values(host::integer_softmax(int8_row({0, -8}))) == std::vector<std::int64_t>{93, 34});
  // empty rows
  CHECK(host::integer_softmax(te::NDArray(DType::int8(), {3, 0})).shape() ==
        std::vector<std::int64_t>{3, 0});
}

TEST_CASE("host integer_softmax: the exponential within 2.1% of 2^(x * scale * log2 e)") {
  for (double scale : {0.125, 0.05, 0.3, 0.01}) {
    const auto fixed = host::integer_exp_for(scale);
    CHECK(fixed.multiplier >= 32);
    CHECK(fixed.multiplier <= 127);
    std::int32_t last = 0;
    for (std::int32_t x = -255; x <= 0; ++x) {
      const std::int32_t e = runtime::integer_exp(x, fixed);
      CHECK(e >= last);  // monotonic in x
      last = e;
      const double ideal = std::exp(x * scale) * (1 << 18);
      // the multiplier's rounding (at most 0.5 / 64 of the exponent) and the fraction's
      // truncation dominate; below 2^10 units the shift's truncation does
      if (ideal > 1024) CHECK(std::abs(e / ideal - 1) < 0.021);
      if (ideal <= 1024) CHECK(std::abs(e - ideal) < 0.021 * 1024 + 1);
    }
    CHECK(runtime::integer_exp(0, fixed) == 1 << 18);
  }
}

TEST_CASE("runtime integer_exp and integer_exp8 against their fixed point's exact exponential") {
  // For every fixed point host::integer_exp_for gives, against 2^(-t / 2^frac_bits) with
  // t = -x * multiplier: the only error is the quadratic's and the shifts' (the quadratics'
  // coefficients fitted over each 1/128 of the fraction; 84 r + 21864 for 2^(r / 128) at the
  // fraction's truncated value gave 0.954% and 1.31 units)
  double worst_e = 0, worst_e8 = 0;
  for (std::int32_t frac_bits = 7; frac_bits <= 15; ++frac_bits)
    for (std::int32_t multiplier = 32; multiplier <= 127; ++multiplier) {
      const runtime::IntegerExp fixed{multiplier, frac_bits};
      for (std::int32_t x = -255; x <= 0; ++x) {
        const double exact = std::exp2(double(x) * multiplier / double(1 << frac_bits));
        const double e = runtime::integer_exp(x, fixed), e8 = runtime::integer_exp8(x, fixed);
        if (exact * (1 << 18) >= 256)
          worst_e = std::max(worst_e, std::abs(e / (exact * (1 << 18)) - 1));
        worst_e8 = std::max(worst_e8, std::abs(e8 - 127 * exact));
      }
    }
  MESSAGE("integer_exp within ", worst_e, ", integer_exp8 within ", worst_e8, " units");
  CHECK(worst_e < 0.0072);
  CHECK(worst_e8 < 1.15);
}

TEST_CASE("host integer_softmax: within one unit of the float softmax rounded to 1/127") {
  std::mt19937_64 rng(7);
  for (std::int64_t n : {1, 2, 3, 16, 100, 777, 2048, 8191}) {
    for (int trial = 0; trial < (n > 1000 ? 3 : 20); ++trial) {
      std::uniform_int_distribution<std::int64_t> lo_d(-128, 100);
      const auto lo = lo_d(rng);
      std::uniform_int_distribution<std::int64_t> hi_d(lo, 127);
      const auto hi = hi_d(rng);
      std::uniform_int_distribution<std::int64_t> v(lo, hi);
      std::vector<std::int64_t> s(static_cast<std::size_t>(n));
      for (auto& x : s) x = v(rng);
      const auto y = values(host::integer_softmax(int8_row(s)));
      const auto f = float_probs(s, 0.125);
      std::int64_t sum = 0;
      for (std::size_t j = 0; j < s.size(); ++j) {
        CHECK(y[j] >= 0);
        CHECK(std::abs(double(y[j]) - f[j]) <= 1.0);
        sum += y[j];
      }
      CHECK(sum <= 127 + n / 2 + 1);
    }
  }
  // adding a constant to every score changes nothing
  const std::vector<std::int64_t> a{-20, 3, 3, 50, -100}, b{-30, -7, -7, 40, -110};
  CHECK(values(host::integer_softmax(int8_row(a))) == values(host::integer_softmax(int8_row(b))));
}

TEST_CASE("host integer_softmax: causal rows are the softmax of their visible keys") {
  // 3 queries, the last of 5 positions; keys along dim -1
  auto s = te::NDArray::random(DType::int8(), {2, 3, 5}, 3);
  const auto y = host::integer_softmax(s, {.axis = -1, .causal = true});
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t q = 0; q < 3; ++q) {
      const std::int64_t visible = 5 - 3 + q + 1;
      std::vector<std::int64_t> row;
      for (std::int64_t j = 0; j < visible; ++j) row.push_back(s.at({b, q, j}));
      const auto expect = values(host::integer_softmax(int8_row(row)));
      for (std::int64_t j = 0; j < 5; ++j)
        CHECK(y.at({b, q, j}) == (j < visible ? expect[static_cast<std::size_t>(j)] : 0));
    }
  // keys along dim -2, queries along dim -1: the transposed problem
  const auto t = host::transpose(s, {.perm = {0, 2, 1}});
  const auto yt = host::integer_softmax(t, {.axis = -2, .causal = true});
  CHECK(values(yt) == values(host::transpose(y, {.perm = {0, 2, 1}})));
  // keys along dim -2, queries before them, a last dim of independent rows (heads):
  // [2, 3, 5] -> [2, 3, 5, 4] with head h of query q the row (b, q) shifted by h
  te::NDArray sh(DType::int8(), {2, 3, 5, 4});
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t q = 0; q < 3; ++q)
      for (std::int64_t j = 0; j < 5; ++j)
        for (std::int64_t h = 0; h < 4; ++h) sh.set({b, q, j, h}, s.at({b, q, j}) / (h + 1));
  const auto yh = host::integer_softmax(
      sh, {.axis = -2, .causal = true, .queries = host::CausalQueries::Before});
  for (std::int64_t h = 0; h < 4; ++h) {
    te::NDArray one(DType::int8(), {2, 3, 5});
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t q = 0; q < 3; ++q)
        for (std::int64_t j = 0; j < 5; ++j) one.set({b, q, j}, sh.at({b, q, j, h}));
    const auto want = host::integer_softmax(one, {.axis = -1, .causal = true});
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t q = 0; q < 3; ++q)
        for (std::int64_t j = 0; j < 5; ++j) CHECK(yh.at({b, q, j, h}) == want.at({b, q, j}));
  }
  // with the keys last, Before is the other of the last two dims
  CHECK(values(host::integer_softmax(
            s, {.axis = -1, .causal = true, .queries = host::CausalQueries::Before})) == values(y));
  CHECK_THROWS_WITH_AS(
      host::integer_softmax(s, {.axis = 0, .causal = true, .queries = host::CausalQueries::Before}),
      doctest::Contains("keys cannot be axis 0 of s [2, 3, 5]: the queries are the dim before"),
      dlavm::ValueError);
  // without the mask, every key counts
  CHECK(values(host::integer_softmax(s)) !=
        values(host::integer_softmax(s, {.axis = -1, .causal = true})));
}

TEST_CASE("host integer_softmax: errors name the argument and the numbers") {
  CHECK_THROWS_WITH_AS(host::integer_softmax(te::NDArray(DType::float32(), {2})),
                       doctest::Contains("host::integer_softmax: s is float32; the integer "
                                         "softmax takes int8 scores"),
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::integer_softmax(int8_row({1, 2}), {.scale = 1.0}),
                       doctest::Contains("host::integer_softmax: scale 1 is outside [0.000666"),
                       dlavm::ValueError);
  CHECK_THROWS_AS(host::integer_softmax(int8_row({1, 2}), {.scale = 0.0005}), dlavm::ValueError);
  CHECK_THROWS_AS(host::integer_softmax(int8_row({1, 2}), {.scale = -0.125}), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::integer_softmax(te::NDArray(DType::int8(), {2, 8192})),
                       doctest::Contains("8192 keys along axis 1 of s [2, 8192]; at most 8191"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      host::integer_softmax(te::NDArray(DType::int8(), {4, 3, 5}), {.axis = 0, .causal = true}),
      doctest::Contains("keys cannot be axis 0 of s [4, 3, 5]: the keys are one of the last two "
                        "dims, the queries the other"),
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::integer_softmax(te::NDArray(DType::int8(), {5, 3}), {.axis = -1, .causal = true}),
      doctest::Contains("s [5, 3] has 5 queries and 3 keys"), dlavm::ShapeError);
  CHECK_THROWS_AS(host::integer_softmax(int8_row({1}), {.axis = 1}), dlavm::ValueError);
}

TEST_CASE("host integer_softmax_exp and _normalize: the softmax in two halves, by hand") {
  const auto fixed = host::integer_exp_for(0.125);
  // x = -8: t = 736, z = 1, r = 56, v = (48 * 56 - 22296) * 56 + 127 * 2^15 = 3063488,
  // e8 = ((3063488 >> 2) + 2^13) >> 14 = 47 (127 / e = 46.72); the max's is 127
  CHECK(runtime::integer_exp8(-8, fixed) == 47);
  CHECK(runtime::integer_exp8(0, fixed) == 127);
  CHECK(runtime::integer_exp8(-255, fixed) == 0);
  const auto e = host::integer_softmax_exp(int8_row({0, -8}), {});
  CHECK(values(e) == std::vector<std::int64_t>{127, 47});
  // S = 174, R = floor(127 * 2^11 / 174) = 1494, y = (127 * 1494 + 2^10) >> 11 = 93 and
  // (47 * 1494 + 2^10) >> 11 = 34, as the single kernel's
  CHECK(runtime::integer_reciprocal8(174) == 1494);
  CHECK(values(host::integer_softmax_normalize(e, {})) == std::vector<std::int64_t>{93, 34});
  // a sum below 127 (exponentials not from integer_softmax_exp) divides by 127
  CHECK(values(host::integer_softmax_normalize(int8_row({10, 20}), {})) ==
        std::vector<std::int64_t>{10, 20});
  CHECK(host::integer_softmax_normalize(te::NDArray(DType::int8(), {3, 0}), {}).shape() ==
        std::vector<std::int64_t>{3, 0});
}

TEST_CASE("host integer_softmax halves: random rows within 1.3 units of the float softmax") {
  // each exponential rounded to 1/127 of its row's largest in between costs up to 0.7 of a unit
  // more than the single kernel's on rows of uniform random scores (measured worst over these
  // rows: 1.24 at scale 1/8, 1.05 at 0.3, 0.67 at 0.05; with the quadratic fitted to the
  // fraction's truncated value, 2.04 at 0.3 and 1.48 at 1/8); not on every row (the next case)
  std::mt19937_64 rng(7);
  for (const double scale : {0.125, 0.3, 0.05}) {
    double worst = 0;
    for (std::int64_t n : {1, 2, 3, 16, 100, 777, 2048, 8191}) {
      for (int trial = 0; trial < (n > 1000 ? 3 : 20); ++trial) {
        std::uniform_int_distribution<std::int64_t> lo_d(-128, 100);
        const auto lo = lo_d(rng);
        std::uniform_int_distribution<std::int64_t> hi_d(lo, 127);
        std::uniform_int_distribution<std::int64_t> v(lo, hi_d(rng));
        std::vector<std::int64_t> s(static_cast<std::size_t>(n));
        for (auto& x : s) x = v(rng);
        const host::IntegerSoftmaxParams p{.scale = scale};
        const auto e = values(host::integer_softmax_exp(int8_row(s), p));
        const auto y = values(host::integer_softmax_normalize(int8_row(e), p));
        const auto f = float_probs(s, scale);
        CHECK(*std::max_element(e.begin(), e.end()) == 127);
        std::int64_t sum = 0;
        for (std::size_t j = 0; j < s.size(); ++j) {
          CHECK(e[j] >= 0);
          CHECK(y[j] >= 0);
          worst = std::max(worst, std::abs(double(y[j]) - f[j]));
          sum += y[j];
        }
        CHECK(sum <= 127 + n / 2 + 1);
      }
    }
    CAPTURE(scale);
    CHECK(worst <= 1.3);
    CHECK(worst > 0.5);  // the rounding is really there
  }
}

TEST_CASE("host integer_softmax halves: a long row of small exponentials loses them") {
  // The random rows above keep the halves within 1.3 units; a row whose other keys each lie
  // near half a unit of 1/127 of its largest does not: every e8 rounds by up to half a unit,
  // so the sum moves by up to n / 2 units and the probabilities with it. Scale 1/8 (multiplier
  // 92, 9 fraction bits), one key at 0 and 2,047 below it:
  //   x = -45: t = 4140, z = 8, r = 11, v = (48 * 11 - 22296) * 11 + 127 * 2^15 = 3922088,
  //            e8 = ((3922088 >> 9) + 2^13) >> 14 = 0 (127 * e^-5.625 = 0.457): the sum
  //            is 127 alone and the largest probability 127, where the exact is 15.15;
  //   x = -44: t = 4048, z = 7, r = 116, v = 2221088, e8 = 1 (0.518): S = 127 + 2047 = 2174,
  //            R = floor(127 * 2^11 / 2174) = 119, y = (127 * 119 + 2^10) >> 11 = 7 and the
  //            others (119 + 2^10) >> 11 = 0, where the exact is 13.56 and 0.055.
  // The single kernel keeps its exponentials in 19 bits and stays within one unit of both.
  const auto fixed = host::integer_exp_for(0.125);
  CHECK(runtime::integer_exp8(-45, fixed) == 0);
  CHECK(runtime::integer_exp8(-44, fixed) == 1);
  CHECK(runtime::integer_reciprocal8(2174) == 119);
  struct Row {
    std::int64_t below, largest;
  };
  for (const Row r : {Row{-45, 127}, Row{-44, 7}}) {
    CAPTURE(r.below);
    std::vector<std::int64_t> s(2048, r.below);
    s[0] = 0;
    const auto f = float_probs(s, 0.125);
    const auto y =
        values(host::integer_softmax_normalize(host::integer_softmax_exp(int8_row(s), {}), {}));
    const auto whole = values(host::integer_softmax(int8_row(s), {}));
    CHECK(y[0] == r.largest);
    CHECK(std::ranges::all_of(y.begin() + 1, y.end(), [](std::int64_t v) { return v == 0; }));
    for (std::size_t j = 0; j < s.size(); ++j) CHECK(std::abs(double(whole[j]) - f[j]) <= 1);
  }
}

TEST_CASE("host integer_softmax halves: causal rows and the keys' axes as integer_softmax's") {
  // the masked keys get 0 from either half; every shape integer_softmax takes
  auto s = te::NDArray::random(DType::int8(), {2, 3, 5}, 3);
  for (const host::IntegerSoftmaxParams p :
       {host::IntegerSoftmaxParams{.axis = -1, .causal = true},
        host::IntegerSoftmaxParams{.axis = -2, .causal = false},
        host::IntegerSoftmaxParams{.axis = -2, .causal = true},
        host::IntegerSoftmaxParams{
            .axis = -2, .scale = 0.3, .causal = true, .queries = host::CausalQueries::Before}}) {
    const auto t = p.axis == -2 ? host::transpose(s, {.perm = {0, 2, 1}}) : s;
    const auto e = host::integer_softmax_exp(t, p);
    const auto y = host::integer_softmax_normalize(e, p);
    const auto whole = host::integer_softmax(t, p);
    // equal scores: every key the mask shows gets a positive probability, the others 0
    const auto shown = host::integer_softmax(te::NDArray(DType::int8(), t.shape()), p);
    for (std::size_t i = 0; i < y.size(); ++i) {
      CHECK(std::abs(y.data()[i] - whole.data()[i]) <= 2);
      if (shown.data()[i] == 0) {
        CHECK(e.data()[i] == 0);
        CHECK(y.data()[i] == 0);
      }
    }
    CHECK((std::count(shown.data().begin(), shown.data().end(), 0) > 0) == p.causal);
  }
}

TEST_CASE("host integer_softmax halves: errors name the half, the argument and the numbers") {
  CHECK_THROWS_WITH_AS(host::integer_softmax_exp(te::NDArray(DType::float32(), {2}), {}),
                       doctest::Contains("host::integer_softmax_exp: s is float32; the integer "
                                         "softmax takes int8 scores"),
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::integer_softmax_normalize(te::NDArray(DType::int32(), {2}), {}),
                       doctest::Contains("host::integer_softmax_normalize: e is int32; the "
                                         "integer softmax takes int8 exponentials"),
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(host::integer_softmax_exp(int8_row({1, 2}), {.scale = 1.0}),
                       doctest::Contains("host::integer_softmax_exp: scale 1 is outside"),
                       dlavm::ValueError);
  // the normalization takes no scale: any is accepted
  CHECK_NOTHROW(host::integer_softmax_normalize(int8_row({1, 2}), {.scale = 1.0}));
  CHECK_THROWS_WITH_AS(host::integer_softmax_normalize(te::NDArray(DType::int8(), {2, 8192}), {}),
                       doctest::Contains("8192 keys along axis 1 of e [2, 8192]; at most 8191"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      host::integer_softmax_normalize(te::NDArray(DType::int8(), {5, 3}),
                                      {.axis = -1, .causal = true}),
      doctest::Contains("host::integer_softmax_normalize: e [5, 3] has 5 queries and 3 keys"),
      dlavm::ShapeError);
}

TEST_CASE("host integer_context_normalize: rows worked out by hand") {
  // exponentials {127, 47} (the two halves' case above): S = 174, R = 1494; the context of
  // values {2, -3}: 127 * 2 + 47 * -3 = 113; y = (113 * 1494 + 2^17) >> 18 = 1 (0.64 + 0.5).
  // Values {100, 90}: 16930 * 1494 = 25293420, (25293420 + 131072) >> 18 = 96
  te::NDArray context(DType::int32(), {1, 2, 1});
  context.set_flat(0, 113);
  context.set_flat(1, 127 * 100 + 47 * 90);
  te::NDArray e(DType::int8(), {1, 2, 2});
  for (std::size_t k : {0, 2}) e.set_flat(k, 127);
  for (std::size_t k : {1, 3}) e.set_flat(k, 47);
  const auto y = host::integer_context_normalize(context, e, {.shift = 7});
  CHECK(y.dtype() == DType::int8());
  CHECK(y.shape() == std::vector<std::int64_t>{1, 2, 1});
  CHECK(values(y) == std::vector<std::int64_t>{1, 96});
  // (the probabilities' context: y = {93, 34}, (93 * 2 - 34 * 3 + 64) >> 7 = 1 and (93 * 100 +
  // 34 * 90 + 64) >> 7 = 97, from 97.06 where this one rounds 96.49.) Saturated to int8; a sum
  // below 127 divided by 127 (R = 2^11); shift 0: (100 * 2^11 + 2^10) >> 11 = 100
  context.set_flat(0, 1 << 20);
  context.set_flat(1, -(1 << 20));
  for (std::size_t k = 0; k < 4; ++k) e.set_flat(k, 1);
  CHECK(values(host::integer_context_normalize(context, e, {.shift = 7})) ==
        std::vector<std::int64_t>{127, -128});
  context.set_flat(0, 100);
  CHECK(host::integer_context_normalize(context, e, {.shift = 0}).at({0, 0, 0}) == 100);
  CHECK(host::integer_context_normalize(context, e, {.shift = 7}).at({0, 0, 0}) == 1);
  CHECK(host::integer_context_normalize(te::NDArray(DType::int32(), {2, 0}),
                                        te::NDArray(DType::int8(), {2, 5}), {})
            .shape() == std::vector<std::int64_t>{2, 0});
}

TEST_CASE("host integer_context_normalize: the attention's context nearest the exact one") {
  // an attention row of n keys (scores uniform random, or all within 20 of each other) over
  // values of 8 dims, requantized by 7: the context of the exact softmax (double), of the
  // exact softmax rounded to int8 (the LLM layer's float path: quantize_linear by 1/127), of
  // integer_softmax's and of the halves' probabilities, and the deferred one.
  // Rounding each probability to 1/127 costs the probabilities' contexts up to 8 units on
  // these rows, where the deferred context stays within the final rounding's half unit and
  // the reciprocal's truncation (measured worst, scale 1/8: 7.93 for each of the three
  // probabilities' contexts, 1.08 deferred)
  std::mt19937_64 rng(11);
  double worst_whole = 0, worst_split = 0, worst_deferred = 0, worst_float = 0;
  for (const std::int64_t n : {16, 512, 2048}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::uniform_int_distribution<std::int64_t> u(-128, 127), near(-20, 20);
      std::vector<std::int64_t> s(static_cast<std::size_t>(n)), v(static_cast<std::size_t>(n * 8));
      for (auto& x : s) x = trial % 2 == 0 ? u(rng) : near(rng);
      for (auto& x : v) x = u(rng);
      const auto f = float_probs(s, 0.125);  // in units of 1/127
      const auto whole = values(host::integer_softmax(int8_row(s), {.scale = 0.125}));
      const auto e = values(host::integer_softmax_exp(int8_row(s), {.scale = 0.125}));
      const auto split = values(host::integer_softmax_normalize(int8_row(e), {}));
      te::NDArray context(DType::int32(), {1, 8}), exps(DType::int8(), {1, n});
      for (std::int64_t k = 0; k < n; ++k)
        exps.set_flat(static_cast<std::size_t>(k), e[static_cast<std::size_t>(k)]);
      for (std::int64_t d = 0; d < 8; ++d) {
        std::int64_t acc = 0;
        for (std::int64_t k = 0; k < n; ++k)
          acc += e[static_cast<std::size_t>(k)] * v[static_cast<std::size_t>(k * 8 + d)];
        context.set_flat(static_cast<std::size_t>(d), acc);
      }
      const auto deferred = values(host::integer_context_normalize(context, exps, {.shift = 7}));
      for (std::int64_t d = 0; d < 8; ++d) {
        double exact = 0;
        std::int64_t from_whole = 0, from_split = 0, from_float = 0;
        for (std::int64_t k = 0; k < n; ++k) {
          const auto at = static_cast<std::size_t>(k);
          const auto value = v[static_cast<std::size_t>(k * 8 + d)];
          exact += f[at] * static_cast<double>(value);
          from_whole += whole[at] * value;
          from_split += split[at] * value;
          from_float += static_cast<std::int64_t>(std::nearbyint(f[at])) * value;
        }
        exact /= 128;  // the requantization's 2^7, before its rounding
        const auto requant = [](std::int64_t x) {
          return std::clamp<std::int64_t>((x + 64) >> 7, -128, 127);
        };
        worst_whole = std::max(worst_whole, std::abs(double(requant(from_whole)) - exact));
        worst_split = std::max(worst_split, std::abs(double(requant(from_split)) - exact));
        worst_float = std::max(worst_float, std::abs(double(requant(from_float)) - exact));
        worst_deferred = std::max(worst_deferred,
                                  std::abs(double(deferred[static_cast<std::size_t>(d)]) - exact));
      }
    }
  }
  CAPTURE(worst_whole);
  CAPTURE(worst_split);
  CAPTURE(worst_deferred);
  CAPTURE(worst_float);
  CHECK(worst_deferred <= 1.2);
  CHECK(worst_whole > 5.0);
  CHECK(worst_split > 5.0);
  CHECK(worst_float > 5.0);
}

TEST_CASE("host integer_context_normalize: errors name the argument and the numbers") {
  const te::NDArray context(DType::int32(), {2, 4}), e(DType::int8(), {2, 8});
  CHECK_THROWS_WITH_AS(host::integer_context_normalize(te::NDArray(DType::int8(), {2, 4}), e),
                       doctest::Contains("host::integer_context_normalize: context is int8; it "
                                         "takes the int32 product of exponentials and V"),
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(
      host::integer_context_normalize(context, te::NDArray(DType::int32(), {2, 8})),
      doctest::Contains("e is int32; it takes int8 exponentials"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(
      host::integer_context_normalize(context, te::NDArray(DType::int8(), {3, 8})),
      doctest::Contains("context [2, 4] and e [3, 8] differ before their last dim"),
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::integer_context_normalize(te::NDArray(DType::int32(), {4}),
                                                       te::NDArray(DType::int8(), {4})),
                       doctest::Contains("context [4] and e [4] differ before their last dim"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      host::integer_context_normalize(context, te::NDArray(DType::int8(), {2, 8192})),
      doctest::Contains("e [2, 8192] has 8192 keys; at most 8191"), dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::integer_context_normalize(context, e, {.shift = 32}),
                       doctest::Contains("shift 32 is outside [0, 31]"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(host::integer_context_normalize(context, e, {.shift = -1}),
                       doctest::Contains("shift -1 is outside [0, 31]"), dlavm::ValueError);
}
