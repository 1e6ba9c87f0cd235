// Helpers the strategies' tiling choices share: divisors of a tile count, the checks a block
// size must pass (it divides the extent; the buffers it needs fit the SRAM), and the search
// every default tiling runs: the least estimated cost among the candidates that fit (the
// combinations of the knobs' values). A plain loop: a range-v3 filter + min_element pipeline
// reads the same and cost every header-only translation unit 1.3 s (docs/performance.md).
//
//   for (auto h : graph::divisors(56)) ...           // 1, 2, 4, 7, 8, 14, 28, 56
//   if (auto why = graph::check_fits("input buffer", entries, cfg.inp_depth())) ...
//   auto best = graph::least_cost(candidates, fits, cost);   // std::optional of the tiling
#pragma once

#include <dlavm/ne/int_math.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::graph {

using ne::ceil_div;

// The divisors of n >= 1, ascending.
inline std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> lo, hi;
  for (std::int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      lo.push_back(d);
      if (d != n / d) hi.push_back(n / d);
    }
  lo.insert(lo.end(), hi.rbegin(), hi.rend());
  return lo;
}

// Why a block of `block` does not tile `extent` (it must be in [1, extent] and divide it).
inline std::optional<std::string> check_block(std::string_view what, std::int64_t extent,
                                              std::int64_t block) {
  if (block >= 1 && block <= extent && extent % block == 0) return std::nullopt;
  return fmt::format("a block of {} does not divide the {} {}", block, extent, what);
}

// Why `entries` do not fit a buffer of `depth` entries.
inline std::optional<std::string> check_fits(std::string_view what, std::int64_t entries,
                                             std::int64_t depth) {
  if (entries <= depth) return std::nullopt;
  return fmt::format("the {} needs {} entries, it has {}", what, entries, depth);
}

// The candidate of least cost(c) among those with fits(c), the first of equals; nullopt when
// none fits.
template <class Tiling, class Fits, class Cost>
std::optional<Tiling> least_cost(const std::vector<Tiling>& candidates, Fits fits, Cost cost) {
  std::optional<Tiling> best;
  double best_cost = 0;
  for (const auto& t : candidates) {
    if (!fits(t)) continue;
    const double c = cost(t);
    if (!best || c < best_cost) best = t, best_cost = c;
  }
  return best;
}

}  // namespace dlavm::graph
