// graph::least_cost: the candidate of least cost among those that fit, over any range of
// candidates (a range-v3 pipeline of tilings, the points of a knob space). The one search
// the default tilings (graph/strategy/tiling.hpp) and the default Chooser
// (graph/strategy/workload.hpp) share.
//
//   auto best = graph::least_cost(points, [&](const auto& p) { return !space.check(p); },
//                                 [&](const auto& p) { return space.estimate(p); });
#pragma once

#include <range/v3/range/traits.hpp>
#include <range/v3/view/filter.hpp>

#include <optional>
#include <utility>

namespace dlavm::graph {

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
