// Shared by the graph tests: random epilogues, random inputs, and the check that a function
// built for VTA and run on the simulator equals the reference executor, layer by layer.
#pragma once

#include <dlavm/graph.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include "../../examples/model_check.hpp"
#include "random_networks.hpp"
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace random_graphs {

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

// A random epilogue on an int32 accumulator `acc`: bias, residual sum, then requantize (and
// maybe relu or clip) or a wrapping cast to int8. `extra` collects new inputs.
inline graph::Expr random_epilogue(Rng& rng, graph::Expr acc, std::int64_t channels,
                                   std::int64_t axis, const std::vector<ne::Expr>& shape,
                                   std::vector<graph::Expr>& extra, std::uint64_t seed) {
  if (rng.coin())
    acc = graph::bias_add(
        acc,
        graph::constant("bias", te::NDArray::random(DType::int32(), {channels}, seed, -3000, 3000)),
        {.axis = axis});
  if (rng(0, 2) == 0) {
    const bool int8 = rng.coin();
    extra.push_back(graph::input("residual", shape, int8 ? DType::int8() : DType::int32()));
    auto other = int8 ? graph::cast(extra.back(), DType::int32()) : extra.back();
    acc = rng.coin() ? graph::add(acc, other) : graph::add(other, acc);
  }
  if (rng(0, 4) == 0) return graph::cast(acc, DType::int8());
  const std::int64_t lo = rng(-128, 20), hi = rng(lo, 127);
  auto y = graph::requantize(acc, {.shift = rng(0, 12),
                                   .lo = lo,
                                   .hi = hi,
                                   .rounding = rng.coin() ? dlavm::host::Rounding::Nearest
                                                          : dlavm::host::Rounding::Floor});
  if (rng(0, 2) == 0) y = graph::relu(y);
  if (rng(0, 3) == 0) y = graph::clip(y, {.lo = static_cast<double>(rng(-50, 0)), .hi = 60.5});
  return y;
}

// Random arrays for the function's params under the bindings.
inline std::vector<te::NDArray> random_inputs(const graph::Function& fn,
                                              std::span<const ne::Binding> bindings,
                                              std::uint64_t seed) {
  std::vector<te::NDArray> out;
  for (const auto& p : fn.params()) {
    std::vector<std::int64_t> shape;
    for (const auto& d : p.type().shape) shape.push_back(ne::eval(d, bindings));
    out.push_back(te::NDArray::random(p.type().dtype, shape, seed++));
  }
  return out;
}

// The cycle model's figures of the VTA steps of the runs checked.
struct VtaCycles {
  std::uint64_t cycles = 0, roofline = 0;
};

// The memory plan's invariants: regions disjoint and aligned, every buffer aligned and inside
// its region, no two buffers of a region sharing a byte while both are live, the runtime
// region at least its live peak.
// (`inputs_kept`: planned with PlanOptions::reuse_inputs off, the default: no other runtime
// value shares a param's bytes, whatever the lifetimes)
inline void check_plan(const graph::Module& mod, bool inputs_kept = true) {
  const auto& plan = mod.plan();
  const auto a = plan.alignment;
  for (const auto& r : plan.regions) {
    CHECK(r.base % static_cast<std::uint64_t>(a) == 0);
    for (const auto& o : plan.regions)
      if (&o != &r && r.bytes > 0 && o.bytes > 0) CHECK((r.end() <= o.base || o.end() <= r.base));
  }
  CHECK(plan.region(graph::RegionKind::Runtime).bytes >= plan.live_peak);
  const auto& bufs = plan.buffers;
  REQUIRE(bufs.size() == mod.values().size());
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    const auto& b = bufs[i];
    CHECK(b.offset % a == 0);
    CHECK(b.offset + b.bytes <= plan.region(b.region).bytes);
    CHECK(b.first <= b.last);
    for (std::size_t j = i + 1; j < bufs.size(); ++j) {
      const auto& c = bufs[j];
      const auto param = [&](std::size_t v) {
        return mod.values()[v].kind == graph::ModuleValue::Kind::Param;
      };
      const bool kept =
          inputs_kept && b.region == graph::RegionKind::Runtime && (param(i) || param(j));
      if (c.region != b.region || (!kept && (c.last < b.first || b.last < c.first))) continue;
      INFO("values ", mod.values()[i].name, " and ", mod.values()[j].name);
      CHECK((b.offset + std::max<std::int64_t>(b.bytes, 1) <= c.offset ||
             c.offset + std::max<std::int64_t>(c.bytes, 1) <= b.offset));
    }
  }
}

// Runs a built module on the simulator with random inputs under `bindings` and checks every
// VTA layer and the results against the reference executor; returns the number of VTA steps.
inline int check_module(graph::Module& mod, const graph::Function& fn,
                        std::span<const ne::Binding> bindings, std::uint64_t seed,
                        VtaCycles* cycles = nullptr, const graph::Target& target = {}) {
  const auto arrays = random_inputs(fn, bindings, seed);
  std::vector<graph::NamedArray> inputs;
  for (std::size_t i = 0; i < arrays.size(); ++i)
    inputs.push_back({fn.params()[i].name(), arrays[i]});
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  const auto check = models::run_and_check(exec, graph::infer_type(fn, target), inputs, bindings);
  INFO(fmt::format("{}", mod));
  CHECK(check.mismatches == 0);
  CHECK(check.outputs_equal);
  if (cycles != nullptr)
    for (const auto& s : exec.last_run().steps) {
      cycles->cycles += s.cycles;
      cycles->roofline += s.roofline_cycles;
    }
  return check.layers;
}

// Builds fn, runs it on the simulator and checks it against evaluate; returns the number of
// VTA steps.
inline int check_on_vta(const graph::Function& fn, std::span<const ne::Binding> bindings,
                        std::uint64_t seed, const graph::Target& target = {}) {
  auto mod = graph::build(fn, target);
  return check_module(mod, fn, bindings, seed, nullptr, target);
}

}  // namespace random_graphs
