// The memory plan of a built model: where every value and stream lives in device memory, as
// the earlier Python design laid a model out for firmware. Five regions:
//
//   weight   the constants (VTA's packed, the host steps' plain), written once
//   runtime  the params, intermediates and results of a run; a buffer's bytes are reused by
//            later values once its last reader has run (liveness), every buffer sized at the
//            maxima of its symbolic dims
//   cache    the states (graph::State), which outlive a run
//   insts    the VTA steps' instruction streams
//   uop      their micro-op buffers
//
// laid out from a region map: each region at a base address or right after another region
// (`{"global": 0x0, "weight": "global", "runtime": "weight", ...}`; "global" is an empty
// anchor), every offset and region aligned to `alignment` bytes. graph::Module plans itself
// with the defaults and runs on the plan (one device allocation per region); deploy::emit
// plans with the firmware's sizes of the stream regions.
//
//   graph::PlanOptions opt;
//   opt.regions = {{"global", 0x10000000}, {"weight", "global"}, {"runtime", "weight"},
//                  {"cache", "runtime"}, {"insts", "cache"}, {"uop", "insts"}};
//   auto plan = graph::plan_memory(mod, opt);
//   fmt::print("{}", plan.report(mod));     // per buffer: region, offset, size, lifetime
//
// Errors: a region missing from the map, unknown, placed twice, after itself (a cycle) or an
// unknown region, two regions that overlap, an alignment that is not a power of two
// (ConfigError); a plan past the address space (CapacityError); each names the region and
// the addresses.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dlavm::graph {

class Module;

enum class RegionKind : std::uint8_t { Weight, Runtime, Cache, Insts, Uop };
inline constexpr std::size_t kRegionCount = 5;
// "weight", "runtime", "cache", "insts", "uop"
std::string_view region_name(RegionKind r);

// One entry of a region map: a region at a base address, or right after another region.
struct RegionPlace {
  std::string name;
  std::variant<std::uint64_t, std::string> at;
};

struct PlanOptions {
  // Every region, each once; "global" may anchor the others (a region of no bytes).
  std::vector<RegionPlace> regions = {{"global", std::uint64_t{0}}, {"weight", "global"},
                                      {"runtime", "weight"},        {"cache", "runtime"},
                                      {"insts", "cache"},           {"uop", "insts"}};
  // bytes, a power of two; the plan aligns to VTA's largest element where that is larger
  std::int64_t alignment = 256;
  bool reuse = true;  // runtime buffers share bytes when their lifetimes do not meet
  std::uint64_t address_limit = std::uint64_t{1} << 32;  // VTA's 32-bit physical addresses
  // The stream regions' bytes; unset: one stream at a time, the largest any step can write
  // (Program::stream_bound), which is how graph::Module runs.
  std::optional<std::int64_t> insts_bytes, uop_bytes;
};

// Where one value lives. Lifetime: from the step that writes it (-1: before the first step,
// a param or constant) to its last reader (steps().size(): a result, read after the run).
struct BufferPlan {
  std::size_t value = 0;
  RegionKind region = RegionKind::Runtime;
  std::int64_t offset = 0, bytes = 0;
  std::int64_t first = 0, last = 0;
};

struct RegionPlan {
  RegionKind kind = RegionKind::Weight;
  std::uint64_t base = 0;
  std::int64_t bytes = 0;
  std::uint64_t end() const { return base + static_cast<std::uint64_t>(bytes); }
};

class MemoryPlan {
 public:
  std::vector<RegionPlan> regions;  // by RegionKind
  std::vector<BufferPlan> buffers;  // one per module value, by value index
  std::int64_t alignment = 256;
  // The runtime region's lower bound: the most bytes (aligned) live at once.
  std::int64_t live_peak = 0;

  const RegionPlan& region(RegionKind r) const { return regions[static_cast<std::size_t>(r)]; }
  // A value's absolute address.
  std::uint64_t address(std::size_t value) const {
    const auto& b = buffers[value];
    return region(b.region).base + static_cast<std::uint64_t>(b.offset);
  }
  // The regions (base, bytes) and every buffer: region, offset, size, lifetime, value name.
  std::string report(const Module& m) const;
};

MemoryPlan plan_memory(const Module& m, const PlanOptions& options = {});

}  // namespace dlavm::graph

// The definitions need graph::Module, whose header includes them (memory_plan-inl.hpp).
#include <dlavm/graph/module.hpp>
