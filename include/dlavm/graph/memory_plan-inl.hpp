// Definitions for dlavm/graph/memory_plan.hpp (see core/api.hpp).
#pragma once

#include <dlavm/graph/memory_plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

namespace dlavm::graph {

DLAVM_INLINE std::string_view region_name(RegionKind r) {
  switch (r) {
    case RegionKind::Weight:
      return "weight";
    case RegionKind::Runtime:
      return "runtime";
    case RegionKind::Cache:
      return "cache";
    case RegionKind::Insts:
      return "insts";
    case RegionKind::Uop:
      return "uop";
  }
  return "?";
}

namespace detail {

inline std::int64_t align_up(std::int64_t v, std::int64_t a) { return (v + a - 1) / a * a; }

// Offsets for buffers of the given sizes and lifetimes in one region: the largest first, each
// at the lowest aligned offset free for the whole of its lifetime (greedy by size, as
// TensorFlow Lite's arena planner). Without reuse, one after the other.
inline std::int64_t place_buffers(std::vector<BufferPlan*>& buffers, std::int64_t alignment,
                                  bool reuse) {
  std::stable_sort(buffers.begin(), buffers.end(), [](const BufferPlan* a, const BufferPlan* b) {
    return a->bytes > b->bytes || (a->bytes == b->bytes && a->first < b->first);
  });
  std::int64_t end = 0;
  std::vector<const BufferPlan*> placed;
  for (BufferPlan* b : buffers) {
    const auto size = align_up(std::max<std::int64_t>(b->bytes, 1), alignment);
    std::int64_t at = 0;
    if (reuse) {
      std::vector<const BufferPlan*> live;
      for (const auto* p : placed)
        if (p->first <= b->last && b->first <= p->last) live.push_back(p);
      std::sort(live.begin(), live.end(),
                [](const BufferPlan* x, const BufferPlan* y) { return x->offset < y->offset; });
      for (const auto* p : live) {
        if (p->offset >= at + size) break;  // the gap before p holds b
        at = std::max(at, align_up(p->offset + std::max<std::int64_t>(p->bytes, 1), alignment));
      }
    } else {
      at = end;
    }
    b->offset = at;
    end = std::max(end, at + size);
    placed.push_back(b);
  }
  return end;
}

// The regions' bases from the map: a number, or the aligned end of the region named.
// `alignment`: the plan's (the options' or the request's, the larger).
inline std::vector<RegionPlan> lay_out_regions(const PlanOptions& o, std::int64_t alignment,
                                               const std::int64_t* sizes) {
  const auto a = static_cast<std::uint64_t>(alignment);
  constexpr std::string_view anchor = "global";
  std::vector<std::string> names = {std::string(anchor)};
  for (std::size_t r = 0; r < kRegionCount; ++r)
    names.emplace_back(region_name(static_cast<RegionKind>(r)));
  const auto known = fmt::format("{}", fmt::join(names, ", "));
  std::map<std::string, const RegionPlace*, std::less<>> entry;
  for (const auto& p : o.regions) {
    if (std::find(names.begin(), names.end(), p.name) == names.end())
      raise<ConfigError>("memory plan: region map names '{}', which is no region (regions: {})",
                         p.name, known);
    if (!entry.emplace(p.name, &p).second)
      raise<ConfigError>("memory plan: region map places '{}' twice", p.name);
  }
  for (std::size_t k = 1; k < names.size(); ++k)
    if (entry.count(names[k]) == 0)
      raise<ConfigError>(
          "memory plan: region map does not place '{}' (give a base address or "
          "the region it follows)",
          names[k]);
  const auto size_of = [&](std::string_view name) -> std::uint64_t {
    for (std::size_t r = 0; r < kRegionCount; ++r)
      if (name == region_name(static_cast<RegionKind>(r)))
        return static_cast<std::uint64_t>(sizes[r]);
    return 0;  // the anchor
  };
  std::map<std::string, std::uint64_t, std::less<>> base;
  std::vector<std::string> resolving;
  const std::function<std::uint64_t(const std::string&)> base_of =
      [&](const std::string& name) -> std::uint64_t {
    if (const auto it = base.find(name); it != base.end()) return it->second;
    const auto e = entry.find(name);
    if (e == entry.end())
      raise<ConfigError>(
          "memory plan: a region follows '{}', which the map does not place "
          "(regions: {})",
          name, known);
    if (std::find(resolving.begin(), resolving.end(), name) != resolving.end())
      raise<ConfigError>("memory plan: region '{}' is placed after itself ({} -> {})", name,
                         fmt::join(resolving, " -> "), name);
    resolving.push_back(name);
    std::uint64_t b = 0;
    if (const auto* addr = std::get_if<std::uint64_t>(&e->second->at)) {
      b = *addr;
      if (b % a != 0)
        raise<ConfigError>("memory plan: region '{}' at 0x{:x} is not aligned to {} bytes", name, b,
                           a);
    } else {
      const auto& prev = std::get<std::string>(e->second->at);
      b = (base_of(prev) + size_of(prev) + a - 1) / a * a;
    }
    resolving.pop_back();
    base.emplace(name, b);
    return b;
  };
  std::vector<RegionPlan> out;
  for (std::size_t r = 0; r < kRegionCount; ++r) {
    const auto kind = static_cast<RegionKind>(r);
    out.push_back({kind, base_of(std::string(region_name(kind))), sizes[r]});
    if (out.back().end() > o.address_limit || out.back().end() < out.back().base)
      raise<CapacityError>(
          "memory plan: region '{}' of {} bytes at 0x{:x} ends at 0x{:x}, past the address "
          "space (0x{:x})",
          region_name(kind), sizes[r], out.back().base, out.back().end(), o.address_limit);
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    for (std::size_t j = i + 1; j < out.size(); ++j) {
      const auto &x = out[i], &y = out[j];
      if (x.bytes > 0 && y.bytes > 0 && x.base < y.end() && y.base < x.end())
        raise<ConfigError>(
            "memory plan: regions '{}' [0x{:x}, 0x{:x}) and '{}' [0x{:x}, 0x{:x}) overlap",
            region_name(x.kind), x.base, x.end(), region_name(y.kind), y.base, y.end());
    }
  return out;
}

}  // namespace detail

DLAVM_INLINE std::string MemoryPlan::report(std::string_view title) const {
  std::string s = fmt::format("memory plan{}{} (alignment {} bytes)\n", title.empty() ? "" : " of ",
                              title, alignment);
  for (const auto& r : regions)
    s += fmt::format("  region {:<8} 0x{:08x} .. 0x{:08x}  {:>10} bytes\n", region_name(r.kind),
                     r.base, r.end(), r.bytes);
  s += fmt::format("  runtime: {} bytes planned, {} bytes live at most (the lower bound)\n",
                   region(RegionKind::Runtime).bytes, live_peak);
  s += "  buffer   region    offset      bytes  lifetime  name\n";
  const auto step = [&](std::int64_t t) {
    return t < 0 ? std::string("in") : t >= steps ? std::string("out") : std::to_string(t);
  };
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const auto& b = buffers[i];
    s += fmt::format("  {:>6}   {:<8} {:>8} {:>10}  {:>3}..{:<3}  {}\n", i, region_name(b.region),
                     b.offset, b.bytes, step(b.first), step(b.last), b.name);
  }
  return s;
}

DLAVM_INLINE MemoryPlan plan_memory(const PlanRequest& request, const PlanOptions& options) {
  for (const std::int64_t a : {options.alignment, request.min_alignment})
    if (a < 1 || (a & (a - 1)) != 0)
      raise<ConfigError>("memory plan: alignment {} is not a power of two", a);
  const std::int64_t a = std::max(options.alignment, request.min_alignment);
  MemoryPlan plan;
  plan.alignment = a;
  plan.steps = request.steps;
  if (request.steps < 0 || request.insts_bytes < 0 || request.uop_bytes < 0)
    raise<ValueError>(
        "memory plan: the request has {} steps, {} bytes of instructions and {} of micro-ops; "
        "none may be negative",
        request.steps, request.insts_bytes, request.uop_bytes);
  for (const auto& r : request.buffers) {
    if (r.bytes < 0 || r.first < -1 || r.last < r.first || r.last > request.steps)
      raise<ValueError>(
          "memory plan: buffer '{}' asks for {} bytes from step {} to step {}; a buffer has no "
          "negative size and lives from -1 (before the first step) to at most {} (after the "
          "last), its first step before its last",
          r.name, r.bytes, r.first, r.last, request.steps);
    if (r.region == RegionKind::Insts || r.region == RegionKind::Uop)
      raise<ConfigError>(
          "memory plan: buffer '{}' asks for the {} region, which holds the streams; size it "
          "with PlanRequest::{}_bytes",
          r.name, region_name(r.region), region_name(r.region));
    // an input kept to the end of the run (PlanOptions::reuse_inputs)
    const bool kept = !options.reuse_inputs && r.region == RegionKind::Runtime && r.first == -1;
    plan.buffers.push_back({r.name, r.region, 0, r.bytes, r.first, kept ? request.steps : r.last});
  }
  std::int64_t sizes[kRegionCount] = {};
  for (const RegionKind r : {RegionKind::Weight, RegionKind::Runtime, RegionKind::Cache}) {
    std::vector<BufferPlan*> in_region;
    for (auto& b : plan.buffers)
      if (b.region == r) in_region.push_back(&b);
    sizes[static_cast<int>(r)] =
        detail::place_buffers(in_region, a, options.reuse && r == RegionKind::Runtime);
  }
  // the lower bound: the most runtime bytes live during one step
  for (std::int64_t t = -1; t <= request.steps; ++t) {
    std::int64_t live = 0;
    for (const auto& b : plan.buffers)
      if (b.region == RegionKind::Runtime && b.first <= t && t <= b.last)
        live += detail::align_up(std::max<std::int64_t>(b.bytes, 1), a);
    plan.live_peak = std::max(plan.live_peak, live);
  }
  sizes[static_cast<int>(RegionKind::Insts)] = detail::align_up(request.insts_bytes, a);
  sizes[static_cast<int>(RegionKind::Uop)] = detail::align_up(request.uop_bytes, a);
  plan.regions = detail::lay_out_regions(options, a, sizes);
  return plan;
}

}  // namespace dlavm::graph
