// The memory plan of a built model: where every buffer and stream lives in device memory, as
// the earlier Python design laid a model out for firmware. The planner knows no model: it
// takes plain requests (a region, a size, the first and last step that use the buffer), as
// TensorFlow Lite Micro's planner takes (size, first use, last use); graph::Module makes the
// requests of its values (graph::memory_request, graph/module.hpp). Five regions:
//
//   weight   the constants (VTA's packed, the host steps' plain), written once
//   runtime  the params, intermediates and results of a run; a buffer's bytes are reused by
//            later buffers once its last user has run (liveness), every buffer sized at the
//            maxima of its symbolic dims
//   cache    the states (graph::State), which outlive a run
//   insts    the VTA steps' instruction streams
//   uop      their micro-op buffers
//
// laid out from a region map: each region at a base address or right after another region
// (`{"global": 0x0, "weight": "global", "runtime": "weight", ...}`; "global" is an empty
// anchor), every offset and region aligned to `alignment` bytes.
//
//   graph::PlanRequest req;
//   req.buffers = {{.name = "%x", .region = graph::RegionKind::Runtime, .bytes = 4096,
//                   .first = -1, .last = 0},
//                  {.name = "%0", .region = graph::RegionKind::Runtime, .bytes = 4096,
//                   .first = 0, .last = 1}};
//   req.steps = 1;
//   auto plan = graph::plan_memory(req, {.alignment = 256});
//   fmt::print("{}", plan.report());     // per buffer: region, offset, size, lifetime
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
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace dlavm::graph {

enum class RegionKind : std::uint8_t { Weight, Runtime, Cache, Insts, Uop };
inline constexpr std::size_t kRegionCount = 5;
// "weight", "runtime", "cache", "insts", "uop"
std::string_view region_name(RegionKind r);

// One entry of a region map: a region at a base address, or right after another region.
struct RegionPlace {
  std::string name;
  std::variant<std::uint64_t, std::string> at;
};

// How the plan lays out its regions and buffers.
struct PlanOptions {
  // Every region, each once; "global" may anchor the others (a region of no bytes).
  std::vector<RegionPlace> regions = {{"global", std::uint64_t{0}}, {"weight", "global"},
                                      {"runtime", "weight"},        {"cache", "runtime"},
                                      {"insts", "cache"},           {"uop", "insts"}};
  // bytes, a power of two; the plan aligns to the request's min_alignment where that is larger
  std::int64_t alignment = 256;
  bool reuse = true;  // runtime buffers share bytes when their lifetimes do not meet
  // Runtime buffers live before the first step (a module's inputs) keep their bytes to the end
  // of a run: no value a run writes shares them, so a run leaves its inputs as written (run it
  // again, or fill the next inputs while it runs). True: their bytes are free once their last
  // reader ran, and a later value, an output among them, may overwrite them.
  bool reuse_inputs = false;
  std::uint64_t address_limit = std::uint64_t{1} << 32;  // VTA's 32-bit physical addresses
};

// One buffer to place. Lifetime: from the step that writes it (-1: before the first step, a
// param or a constant) to its last user (PlanRequest::steps: read after the run). Insts and
// Uop buffers are not requested: those regions are sized by the request as a whole.
struct BufferRequest {
  std::string name{};  // for the report: "%x", "%3:activation[1x16]"
  RegionKind region = RegionKind::Runtime;
  std::int64_t bytes = 0;
  std::int64_t first = -1, last = -1;
};

struct PlanRequest {
  std::vector<BufferRequest> buffers;
  std::int64_t steps = 0;  // the steps of a run: a lifetime ending here lasts past the run
  // the stream regions' bytes
  std::int64_t insts_bytes = 0, uop_bytes = 0;
  // the least alignment every buffer needs (VTA's largest DRAM element), a power of two
  std::int64_t min_alignment = 1;
};

// Where one buffer lives, aligned with the request's buffers.
struct BufferPlan {
  std::string name;
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
  std::vector<BufferPlan> buffers;  // by request index (a module's: by value index)
  std::int64_t alignment = 256;
  std::int64_t steps = 0;  // the request's
  // The runtime region's lower bound: the most bytes (aligned) live at once.
  std::int64_t live_peak = 0;

  const RegionPlan& region(RegionKind r) const { return regions[static_cast<std::size_t>(r)]; }
  // A buffer's absolute address.
  std::uint64_t address(std::size_t buffer) const {
    const auto& b = buffers[buffer];
    return region(b.region).base + static_cast<std::uint64_t>(b.offset);
  }
  // The regions (base, bytes) and every buffer: region, offset, size, lifetime, name.
  std::string report(std::string_view title = "") const;
};

MemoryPlan plan_memory(const PlanRequest& request, const PlanOptions& options = {});

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/memory_plan-inl.hpp>
#endif
