// Calibration: the range of values a float tensor takes over a model's calibration samples,
// and the threshold its int8 quantization should cover. Streaming: an Observer keeps a few
// numbers and a fixed histogram per tensor, never the samples, so that memory does not grow
// with their number. Three methods, as TensorRT and TVM offer them:
//   - MinMax: the largest magnitude seen (no value clips);
//   - Percentile: the magnitude below which `percentile` % of the values lie;
//   - Entropy: the threshold whose 128-level quantization of the magnitudes' histogram loses
//     the least information (Kullback-Leibler divergence from the histogram, TensorRT's
//     method: outliers clip so that the bulk of the values get finer levels).
// Percentile and Entropy need the largest magnitude before the histogram is laid out, so a
// tensor is observed in two passes over the samples: observe_range, then observe_histogram.
//
//   quantization::Observer obs;
//   for (auto& s : samples) obs.observe_range(values_of(s));
//   obs.start_histogram(2048);
//   for (auto& s : samples) obs.observe_histogram(values_of(s));
//   const float t = obs.threshold({.method = quantization::Calibration::Entropy});
#pragma once

#include <dlavm/core/api.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dlavm::quantization {

enum class Calibration : std::uint8_t { MinMax, Percentile, Entropy };
std::string to_string(Calibration c);

struct CalibrationOptions {
  Calibration method = Calibration::Entropy;
  double percentile = 99.99;  // Percentile: the share of magnitudes the range covers, in %
  int bins = 2048;            // the histogram's bins over [0, the largest magnitude]
};

// The nonzero values per histogram bin the Entropy method needs (below: MinMax).
inline constexpr double kEntropyValuesPerBin = 8;

// What one tensor took over the samples.
class Observer {
 public:
  // Pass 1: the values' extremes (the values must be finite: quantize checks the samples).
  void observe_range(std::span<const float> values);
  // Pass 2 (Percentile, Entropy): a histogram of the nonzero magnitudes over [0, max_abs()]
  // (exact zeros, a ReLU's, need no range).
  void start_histogram(int bins);
  void observe_histogram(std::span<const float> values);

  float min() const { return min_; }
  float max() const { return max_; }
  float max_abs() const;
  std::int64_t count() const { return count_; }
  const std::vector<double>& histogram() const { return histogram_; }
  // The magnitude the int8 quantization covers (scale = threshold / 127); MinMax needs pass 1
  // only. ValueError for Percentile or Entropy without the histogram. Entropy takes the
  // largest magnitude (MinMax's threshold) for a histogram of fewer than
  // kEntropyValuesPerBin values per bin: too few to tell a tail from outliers.
  float threshold(const CalibrationOptions& options) const;

 private:
  float min_ = 0, max_ = 0;
  std::int64_t count_ = 0;
  std::vector<double> histogram_;
};

// The bin count of `histogram` whose clipped, 128-level quantization diverges least from it
// (Kullback-Leibler): the Entropy method's choice, from 128 bins up. The threshold is that many
// bins' width.
std::size_t entropy_bins(std::span<const double> histogram, std::size_t levels = 128);

}  // namespace dlavm::quantization

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/quantize/calibration-inl.hpp>
#endif
