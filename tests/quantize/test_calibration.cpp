// quantize/calibration.hpp: the thresholds of the three methods against values derived by hand
// (min/max, a percentile of a known distribution), the entropy method's choice on
// distributions whose answer is known (all mass below 128 bins; a uniform one; a bell with far
// outliers), and the errors for a method used without its histogram.
#include <dlavm/core/error.hpp>
#include <dlavm/quantize/calibration.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

namespace quantize_calibration_test {

using namespace dlavm::quantization;

TEST_CASE("calibration: min/max over several observations") {
  Observer o;
  const std::vector<float> a = {0.5f, -2.0f, 1.0f}, b = {3.0f, -1.0f};
  o.observe_range(a);
  o.observe_range(b);
  CHECK(o.min() == -2.0f);
  CHECK(o.max() == 3.0f);
  CHECK(o.count() == 5);
  CHECK(o.threshold({.method = Calibration::MinMax}) == 3.0f);
  // the histogram methods need the second pass
  CHECK_THROWS_AS(o.threshold({.method = Calibration::Entropy}), dlavm::ValueError);
  CHECK_THROWS_AS(o.start_histogram(64), dlavm::ValueError);
  Observer fresh;
  CHECK_THROWS_AS(fresh.observe_histogram(a), dlavm::ValueError);
}

TEST_CASE("calibration: a percentile of magnitudes 0 to 999") {
  std::vector<float> v;
  for (int i = 0; i < 1000; ++i) v.push_back(static_cast<float>(i % 2 == 0 ? i : -i));
  Observer o;
  o.observe_range(v);
  o.start_histogram(999);  // one bin per unit of magnitude
  o.observe_histogram(v);
  // 99% of the 1000 magnitudes are below 990: the bin holding 989 ends at 990
  const float t = o.threshold({.method = Calibration::Percentile, .percentile = 99});
  CHECK(t == doctest::Approx(990).epsilon(0.002));
  CHECK(o.threshold({.method = Calibration::Percentile, .percentile = 100}) == 999.0f);
  CHECK_THROWS_AS(o.threshold({.method = Calibration::Percentile, .percentile = 0}),
                  dlavm::ValueError);
}

TEST_CASE("calibration: entropy keeps a histogram of at most 128 bins whole") {
  std::vector<double> h(128, 0.0);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<double>(i % 7 + 1);
  CHECK(entropy_bins(h) == 128);
  // 2048 bins whose mass lies in the first 100: nothing beyond them needs covering
  std::vector<double> low(2048, 0.0);
  for (std::size_t i = 0; i < 100; ++i) low[i] = 1000.0 - static_cast<double>(i);
  CHECK(entropy_bins(low) == 128);
}

TEST_CASE("calibration: entropy covers a uniform distribution, clips a bell's far outliers") {
  std::mt19937_64 rng(7);
  SUBCASE("uniform: every bin matters, the threshold is near the maximum") {
    std::uniform_real_distribution<float> d(-4.0f, 4.0f);
    std::vector<float> v(200000);
    for (auto& x : v) x = d(rng);
    Observer o;
    o.observe_range(v);
    o.start_histogram(2048);
    o.observe_histogram(v);
    const float t = o.threshold({.method = Calibration::Entropy});
    CHECK(t > 0.9f * o.max_abs());
    CHECK(t <= o.max_abs());
  }
  SUBCASE("a bell of sigma 1 with a few values at 40: the threshold stays within the bell") {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(200000);
    for (auto& x : v) x = d(rng);
    for (int k = 0; k < 20; ++k) v[static_cast<std::size_t>(k)] = k % 2 == 0 ? 40.0f : -40.0f;
    Observer o;
    o.observe_range(v);
    o.start_histogram(2048);
    o.observe_histogram(v);
    const float t = o.threshold({.method = Calibration::Entropy});
    CHECK(o.max_abs() == 40.0f);
    CHECK(t > 2.5f);   // the bell's bulk is covered ...
    CHECK(t < 12.0f);  // ... and the outliers clip
    // min/max would cover 40: 127 levels over it leave the bell a dozen
    CHECK(o.threshold({.method = Calibration::MinMax}) == 40.0f);
  }
}

}  // namespace quantize_calibration_test
