// Helpers the strategies' tiling choices share: divisors of a tile count, the checks a block
// size must pass (it divides the extent; the buffers it needs fit the SRAM), and the search
// every default tiling runs: the least estimated cost among the candidates that fit, the
// candidates being every combination of the knobs' values (a range-v3 pipeline: a cartesian
// product of the value lists, each tuple made a tiling, filtered by the checks).
//
// Only the strategies' definitions (-inl.hpp) include this file: range-v3 costs header-only
// units that include dlavm/graph.hpp about a second, and compiled-mode units nothing.
//
//   for (auto h : graph::divisors(56)) ...           // 1, 2, 4, 7, 8, 14, 28, 56
//   if (auto why = graph::check_fits("input buffer", entries, cfg.inp_depth())) ...
//   auto best = graph::least_cost(graph::combinations<Pool2dTiling>(blocks, rows, threads),
//                                 fits, cost);       // std::optional of the tiling
#pragma once

#include <dlavm/graph/strategy/sram.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/int_math.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>

#include <fmt/format.h>
#include <range/v3/view/cartesian_product.hpp>
#include <range/v3/view/filter.hpp>
#include <range/v3/view/transform.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
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

// The block sizes to try along an extent of at most `max`: its divisors when it is constant;
// when symbolic (the last block may be partial), also the powers of two below it.
inline std::vector<std::int64_t> block_candidates(std::int64_t max, bool symbolic) {
  auto out = divisors(max);
  if (!symbolic) return out;
  for (std::int64_t b = 1; b < max; b *= 2) out.push_back(b);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace detail {

// The largest value of a dim (its maximum when symbolic).
inline std::int64_t max_of(const ne::Expr& e) { return ne::bounds(e).max; }

// A dim at the bindings' values (a constant stays as it is).
inline ne::Expr bound_dim(const ne::Expr& e, std::span<const ne::Binding> bindings) {
  return e.is_const() ? e : ne::Expr(ne::eval(e, bindings));
}

}  // namespace detail

// Why a block of `block` does not tile `extent` (it must be in [1, extent] and divide it).
inline std::optional<std::string> check_block(std::string_view what, std::int64_t extent,
                                              std::int64_t block) {
  if (block >= 1 && block <= extent && extent % block == 0) return std::nullopt;
  return fmt::format("a block of {} does not divide the {} {}", block, extent, what);
}

// Every combination of one value from each list, as a Tiling built from the values in order
// ({a, b, c} for values a, b, c), the last list varying fastest. The view refers to the lists:
// they must outlive it, and a temporary container does not compile.
template <class Tiling, class... Lists>
auto combinations(Lists&&... lists) {
  return ranges::views::cartesian_product(std::forward<Lists>(lists)...) |
         ranges::views::transform([](const auto& values) {
           return std::apply([](auto... v) { return Tiling{v...}; }, values);
         });
}

// The candidate of least cost(c) among those with fits(c), the first of equals; nullopt when
// none fits. fits runs once per candidate and cost once per fitting one.
template <class Candidates, class Fits, class Cost>
auto least_cost(Candidates&& candidates, Fits fits, Cost cost) {
  using Tiling = ranges::range_value_t<Candidates>;
  std::optional<Tiling> best;
  double best_cost = 0;
  for (const Tiling t : std::forward<Candidates>(candidates) | ranges::views::filter(fits)) {
    const double c = cost(t);
    if (!best || c < best_cost) best = t, best_cost = c;
  }
  return best;
}

}  // namespace dlavm::graph
