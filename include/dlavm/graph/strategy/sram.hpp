// What a tiling of a VTA kernel occupies on chip: the entries of each SRAM (double buffers
// included) and the micro-ops of its largest kernel, with the check that they fit a
// configuration. Each strategy computes its footprint in one function (`footprint`), which
// its check_tiling compares with the SRAM depths and which the SRAM allocation of lowering
// must match (a test holds the two equal for every default tiling).
//
//   auto f = graph::footprint(env, shape, epilogue, tiling);     // graph/strategy/conv2d.hpp
//   if (auto why = graph::check_footprint(env.config, f)) ...    // "the input buffer needs ..."
#pragma once

#include <dlavm/vta/hw/config.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dlavm::graph {

struct SramFootprint {
  std::int64_t acc = 0, inp = 0, wgt = 0;  // entries of each SRAM
  std::int64_t uop_kernel = 0;             // micro-ops of the largest kernel, all threads
  friend bool operator==(const SramFootprint&, const SramFootprint&) = default;
};

// Why `entries` do not fit a buffer of `depth` entries.
inline std::optional<std::string> check_fits(std::string_view what, std::int64_t entries,
                                             std::int64_t depth) {
  if (entries <= depth) return std::nullopt;
  return fmt::format("the {} needs {} entries, it has {}", what, entries, depth);
}

// Why a footprint does not fit: each SRAM whole, the micro-op kernels within half of the
// micro-op buffer (so that every thread's kernels stay resident).
inline std::optional<std::string> check_footprint(const vta::Config& cfg, const SramFootprint& f) {
  if (auto why = check_fits("accumulator", f.acc, cfg.acc_depth())) return why;
  if (auto why = check_fits("input buffer", f.inp, cfg.inp_depth())) return why;
  if (auto why = check_fits("weight buffer", f.wgt, cfg.wgt_depth())) return why;
  if (auto why = check_fits("micro-op kernel", f.uop_kernel, cfg.uop_depth() / 2)) return why;
  return std::nullopt;
}

}  // namespace dlavm::graph
