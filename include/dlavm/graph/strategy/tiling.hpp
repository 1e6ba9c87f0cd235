// Helpers the strategies' tiling choices share: divisors of a tile count and the block sizes
// of a symbolic extent, the check a block size must pass (it divides the extent), a knob space
// over a tiling struct (tiling_space), the closed-form counts (window_reads) for constant and
// symbolic dims, and the search every default choice runs: the least estimated cost among
// the candidates that fit, as a range-v3 pipeline (the candidates filtered by the check, each
// fitting one costed once).
//
// Only the strategies' definitions (-inl.hpp) include this file: range-v3 costs header-only
// units that include dlavm/graph.hpp about a second, and compiled-mode units nothing.
//
//   for (auto h : graph::divisors(56)) ...           // 1, 2, 4, 7, 8, 14, 28, 56
//   auto space = graph::tiling_space<Pool2dTiling>({{"c", cb}, {"h", hb}, {"threads", {2, 1}}},
//                                                  check, estimate);
//   auto best = graph::least_cost_point(space);     // the values of the cheapest that fits
#pragma once

#include <dlavm/graph/strategy/least_cost.hpp>
#include <dlavm/graph/strategy/sram.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/int_math.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>

#include <fmt/format.h>
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

// The integer operations the strategies' counts (DRAM bytes, blocks) are written with, for
// constant dims (int64: the tiling search's estimates) and symbolic ones (ne::Expr: a
// module's traffic figures, evaluated per binding), so that each count has one formula.
inline std::int64_t vmin(std::int64_t a, std::int64_t b) { return std::min(a, b); }
inline ne::Expr vmin(const ne::Expr& a, const ne::Expr& b) { return ne::min(a, b); }
inline std::int64_t vmax(std::int64_t a, std::int64_t b) { return std::max(a, b); }
inline ne::Expr vmax(const ne::Expr& a, const ne::Expr& b) { return ne::max(a, b); }
inline std::int64_t vceil_div(std::int64_t a, std::int64_t b) { return ceil_div(a, b); }
inline ne::Expr vceil_div(const ne::Expr& a, std::int64_t b) { return ne::ceildiv(a, b); }
// `value` where `a >= b`, else 0.
inline std::int64_t when_at_least(std::int64_t a, std::int64_t b, std::int64_t value) {
  return a >= b ? value : 0;
}
inline ne::Expr when_at_least(const ne::Expr& a, const ne::Expr& b, const ne::Expr& value) {
  return ne::select(a >= b, value, 0);
}

// Input rows (or columns; padding excluded) that the blocks of `block` outputs read along one
// dim, summed over the blocks: block j's window [j*block*stride - pad_before, ...] clipped to
// the `extent` rows, the last block holding the outputs left. Only the first blocks can clip
// at the top and the last ones at the bottom, so the sum is those blocks one by one and the
// full windows of the rest: a closed form, exact for symbolic extents too. `strided`: a 1x1
// kernel that reads only its outputs' rows.
template <class Int>
Int window_reads(const Int& extent, const Int& outputs, std::int64_t block, std::int64_t stride,
                 std::int64_t kernel, std::int64_t pad_before, std::int64_t pad_after,
                 bool strided) {
  if (strided) return outputs;
  const Int blocks = vceil_div(outputs, block);
  const auto reads = [&](const Int& j) {
    const Int lo = vmax(j * (block * stride) - pad_before, Int(0));
    const Int last_out = vmin((j + 1) * block, outputs) - 1;
    const Int hi = vmin(last_out * stride - pad_before + kernel - 1, extent - 1);
    return vmax(hi - lo + 1, Int(0));
  };
  const std::int64_t span = block * stride;
  const std::int64_t first = ceil_div(pad_before, span);  // top-clipped
  const std::int64_t last = ceil_div(std::max<std::int64_t>(pad_after - stride, 0), span) + 1;
  Int total = 0;
  for (std::int64_t j = 0; j < first; ++j)
    total = total + when_at_least(blocks, Int(j + 1), reads(Int(j)));
  for (std::int64_t i = 0; i < last; ++i) {
    const Int j = blocks - 1 - i;
    total = total + when_at_least(j, Int(first), reads(j));
  }
  const Int middle = vmax(blocks - first - last, Int(0));
  return total + middle * ((block - 1) * stride + kernel);
}

}  // namespace detail

// Why a block of `block` does not tile `extent` (it must be in [1, extent] and divide it).
inline std::optional<std::string> check_block(std::string_view what, std::int64_t extent,
                                              std::int64_t block) {
  if (block >= 1 && block <= extent && extent % block == 0) return std::nullopt;
  return fmt::format("a block of {} does not divide the {} {}", block, extent, what);
}

// A knob space whose points are `Tiling`s built from the knob values in order ({v0, v1, ...}),
// checked by check(t) and costed by estimate(t).
template <class Tiling, class Check, class Estimate>
KnobSpace tiling_space(std::vector<Knob> knobs, Check check, Estimate estimate) {
  const auto tiling = [](std::span<const std::int64_t> v) {
    Tiling t{};
    auto fields = t.fields();
    for (std::size_t i = 0; i < fields.size() && i < v.size(); ++i) *fields[i] = v[i];
    return t;
  };
  KnobSpace s;
  s.knobs = std::move(knobs);
  s.check = [tiling, check](std::span<const std::int64_t> v) { return check(tiling(v)); };
  s.estimate = [tiling, estimate](std::span<const std::int64_t> v) { return estimate(tiling(v)); };
  return s;
}

}  // namespace dlavm::graph
