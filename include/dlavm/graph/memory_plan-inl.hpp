// Definitions for dlavm/graph/memory_plan.hpp (see core/api.hpp).
#pragma once

#include <dlavm/graph/memory_plan.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/ne/bounds.hpp>

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

// The bytes of a state held packed (ModuleState::packed) at its capacity: its growing dim's
// maximum + 1 positions, permuted and packed.
inline std::int64_t appended_bytes(const ModuleValue& state, const ModuleState& s,
                                   const ModuleValue& packed) {
  std::vector<ne::Expr> dims;
  for (const auto p : s.perm) {
    const auto& d = state.shape[static_cast<std::size_t>(p)];
    const auto* v = d.as<ne::VarNode>();
    dims.emplace_back(v != nullptr ? v->max + 1 : *d.as_int());
  }
  std::int64_t n = packed.dtype.bytes();
  for (const auto& d : packed_shape(packed.layout, dims)) n *= ne::bounds(d).max;
  return n;
}

// The bytes of a value at the maxima of its dims (saturating far past any address space).
inline std::int64_t max_bytes(const ModuleValue& v) {
  std::int64_t bytes = v.dtype.bytes();
  for (const auto& d : v.shape) {
    const auto n = std::max<std::int64_t>(ne::bounds(d).max, 0);
    bytes = n != 0 && bytes > (std::int64_t{1} << 50) / n ? std::int64_t{1} << 50 : bytes * n;
  }
  return bytes;
}

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
inline std::vector<RegionPlan> lay_out_regions(const PlanOptions& o, const std::int64_t* sizes) {
  const auto a = static_cast<std::uint64_t>(o.alignment);
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

DLAVM_INLINE std::string MemoryPlan::report(const Module& m) const {
  std::string s = fmt::format("memory plan of '{}' (alignment {} bytes)\n", m.name(), alignment);
  for (const auto& r : regions)
    s += fmt::format("  region {:<8} 0x{:08x} .. 0x{:08x}  {:>10} bytes\n", region_name(r.kind),
                     r.base, r.end(), r.bytes);
  s += fmt::format("  runtime: {} bytes planned, {} bytes live at most (the lower bound)\n",
                   region(RegionKind::Runtime).bytes, live_peak);
  s += "  buffer   region    offset      bytes  lifetime  value\n";
  const auto step = [&](std::int64_t t) {
    return t < 0                                              ? std::string("in")
           : t >= static_cast<std::int64_t>(m.steps().size()) ? std::string("out")
                                                              : std::to_string(t);
  };
  for (const auto& b : buffers)
    s += fmt::format("  {:>6}   {:<8} {:>8} {:>10}  {:>3}..{:<3}  {}\n", b.value,
                     region_name(b.region), b.offset, b.bytes, step(b.first), step(b.last),
                     m.values()[b.value].name);
  return s;
}

DLAVM_INLINE MemoryPlan plan_memory(const Module& m, const PlanOptions& options) {
  if (options.alignment < 1 || (options.alignment & (options.alignment - 1)) != 0)
    raise<ConfigError>("memory plan: alignment {} is not a power of two", options.alignment);
  // every DRAM address VTA reads is a whole number of its elements
  std::int64_t a = options.alignment;
  for (int mem = 0; mem < runtime::kMemIdCount; ++mem)
    a = std::max<std::int64_t>(
        a, static_cast<std::int64_t>(m.env().config.elem_bytes(static_cast<runtime::MemId>(mem))));
  const auto& values = m.values();
  const auto& steps = m.steps();
  MemoryPlan plan;
  plan.alignment = a;
  plan.buffers.resize(values.size());
  // lifetimes: written by a step (params and constants before the first), read by steps,
  // results and the states' next values read after the last
  const auto after_run = static_cast<std::int64_t>(steps.size());
  for (std::size_t v = 0; v < values.size(); ++v) {
    auto& b = plan.buffers[v];
    b.value = v;
    b.bytes = detail::max_bytes(values[v]);
    b.first = b.last = -1;
    switch (values[v].kind) {
      case ModuleValue::Kind::Constant:
        b.region = RegionKind::Weight;
        break;
      case ModuleValue::Kind::State:
        b.region = RegionKind::Cache;
        break;
      default:
        b.region = RegionKind::Runtime;
    }
  }
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto t = static_cast<std::int64_t>(i);
    for (auto in : steps[i].inputs) plan.buffers[in].last = std::max(plan.buffers[in].last, t);
    plan.buffers[steps[i].output].first = t;
    plan.buffers[steps[i].output].last = std::max(plan.buffers[steps[i].output].last, t);
  }
  for (auto r : m.signature().results) plan.buffers[r].last = after_run;
  for (const auto& s : m.signature().state) {
    if (!s.packed) {
      plan.buffers[s.next].last = after_run;
      continue;
    }
    // held packed: the packed value at the state's capacity, and in the state's own slot its
    // counters (positions held, laid out for, written: runtime::append_packed's `held`)
    plan.buffers[s.value].bytes = 3 * 8;
    plan.buffers[*s.packed].bytes = detail::appended_bytes(values[s.value], s, values[*s.packed]);
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
  for (std::int64_t t = -1; t <= after_run; ++t) {
    std::int64_t live = 0;
    for (const auto& b : plan.buffers)
      if (b.region == RegionKind::Runtime && b.first <= t && t <= b.last)
        live += detail::align_up(std::max<std::int64_t>(b.bytes, 1), a);
    plan.live_peak = std::max(plan.live_peak, live);
  }
  vta::StreamBound streams;
  for (const auto& s : steps)
    if (s.kind == ModuleStep::Kind::Vta) {
      const auto bound = s.program->stream_bound();
      streams.insns = std::max(streams.insns, bound.insns);
      streams.uops = std::max(streams.uops, bound.uops);
    }
  sizes[static_cast<int>(RegionKind::Insts)] =
      detail::align_up(options.insts_bytes.value_or(streams.insns * 16), a);
  sizes[static_cast<int>(RegionKind::Uop)] =
      detail::align_up(options.uop_bytes.value_or(streams.uops * 4), a);
  plan.regions = detail::lay_out_regions(options, sizes);
  return plan;
}

}  // namespace dlavm::graph
