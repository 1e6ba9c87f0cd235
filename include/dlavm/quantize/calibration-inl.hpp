// Definitions for quantize/calibration.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/quantize/calibration.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dlavm::quantization {

DLAVM_INLINE std::string to_string(Calibration c) {
  switch (c) {
    case Calibration::MinMax:
      return "minmax";
    case Calibration::Percentile:
      return "percentile";
    case Calibration::Entropy:
      return "entropy";
  }
  return "?";
}

DLAVM_INLINE void Observer::observe_range(std::span<const float> values) {
  if (values.empty()) return;
  const auto [lo, hi] = std::ranges::minmax_element(values);
  if (count_ == 0) {
    min_ = *lo;
    max_ = *hi;
  } else {
    min_ = std::min(min_, *lo);
    max_ = std::max(max_, *hi);
  }
  count_ += static_cast<std::int64_t>(values.size());
}

DLAVM_INLINE float Observer::max_abs() const { return std::max(std::abs(min_), std::abs(max_)); }

DLAVM_INLINE void Observer::start_histogram(int bins) {
  if (bins < 128)
    raise<ValueError>("calibration: {} histogram bins; at least 128 (the int8 levels)", bins);
  histogram_.assign(static_cast<std::size_t>(bins), 0.0);
}

DLAVM_INLINE void Observer::observe_histogram(std::span<const float> values) {
  if (histogram_.empty())
    raise<ValueError>("calibration: observe_histogram before start_histogram");
  const float top = max_abs();
  const auto bins = static_cast<double>(histogram_.size());
  if (top == 0) return;  // all zeros: the threshold is 0 whatever the histogram
  const double per = bins / static_cast<double>(top);
  const auto last = histogram_.size() - 1;
  for (const float v : values) {
    // exact zeros (a ReLU's output: often half of it) are exact at any scale: counted, they
    // would make one bin a spike that a coarser histogram level can only smear, and the
    // entropy method would shrink the range to keep it
    if (v == 0) continue;
    const auto b = static_cast<std::size_t>(std::abs(static_cast<double>(v)) * per);
    histogram_[std::min(b, last)] += 1;
  }
}

DLAVM_INLINE std::size_t entropy_bins(std::span<const double> h, std::size_t levels) {
  const std::size_t n = h.size();
  if (n <= levels) return n;
  // the reference distribution p: the first i bins, the rest clipped into the last of them;
  // q: p merged into `levels` levels, each level's mass spread evenly over its nonzero bins
  std::size_t best = n;
  double best_kl = std::numeric_limits<double>::infinity();
  std::vector<double> p, q;
  double tail = 0;
  for (std::size_t k = levels; k < n; ++k) tail += h[k];
  for (std::size_t i = levels; i <= n; ++i) {
    if (i > levels) tail -= h[i - 1];
    p.assign(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(i));
    p[i - 1] += tail;
    q.assign(i, 0.0);
    for (std::size_t j = 0; j < levels; ++j) {
      const std::size_t first = j * i / levels, end = (j + 1) * i / levels;
      double mass = 0;
      std::size_t nonzero = 0;
      for (std::size_t b = first; b < end; ++b) {
        mass += h[b];  // the unclipped counts: p's clipped outliers are what q cannot hold
        nonzero += p[b] != 0;
      }
      for (std::size_t b = first; b < end; ++b)
        q[b] = p[b] != 0 ? mass / static_cast<double>(nonzero) : 0.0;
    }
    double sp = 0, sq = 0;
    for (std::size_t b = 0; b < i; ++b) sp += p[b], sq += q[b];
    if (sp == 0 || sq == 0) continue;
    double kl = 0;
    for (std::size_t b = 0; b < i; ++b) {
      if (p[b] == 0) continue;
      const double pb = p[b] / sp, qb = q[b] / sq;
      // (q is empty only where its level is: the level's mass all clipped away)
      kl += qb == 0 ? std::numeric_limits<double>::infinity() : pb * std::log(pb / qb);
    }
    if (kl < best_kl) best_kl = kl, best = i;
  }
  return best;
}

DLAVM_INLINE float Observer::threshold(const CalibrationOptions& options) const {
  const float top = max_abs();
  if (options.method == Calibration::MinMax || top == 0) return top;
  if (histogram_.empty())
    raise<ValueError>("calibration: the {} method needs the histogram pass",
                      to_string(options.method));
  const double width = static_cast<double>(top) / static_cast<double>(histogram_.size());
  if (options.method == Calibration::Percentile) {
    if (!(options.percentile > 0 && options.percentile <= 100))
      raise<ValueError>("calibration: percentile {} is outside (0, 100]", options.percentile);
    double total = 0;
    for (const double c : histogram_) total += c;
    const double want = total * options.percentile / 100;
    double seen = 0;
    for (std::size_t b = 0; b < histogram_.size(); ++b) {
      seen += histogram_[b];
      if (seen >= want) return static_cast<float>(static_cast<double>(b + 1) * width);
    }
    return top;
  }
  // a histogram of few values (an SE block's per-channel gates: tens a sample) says little
  // about its tail, and clipping what it misreads as outliers costs more than it gains
  double total = 0;
  for (const double c : histogram_) total += c;
  if (total < kEntropyValuesPerBin * static_cast<double>(histogram_.size())) return top;
  return static_cast<float>(static_cast<double>(entropy_bins(histogram_)) * width);
}

}  // namespace dlavm::quantization
