#include <dlavm/vta.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <random>
#include <string>

namespace vta = dlavm::vta;
using vta::MemId;
using vta::Queue;

namespace {
vta::CycleParams simple() {
  vta::CycleParams p;
  p.bus_bytes_per_cycle = 8;
  p.dram_latency = 10;
  p.insn_overhead = 2;
  p.gemm_uops_per_cycle = 1;
  p.gemm_latency = 3;
  p.alu_cycles_per_uop = 2;
  p.alu_latency = 1;
  return p;
}
}  // namespace

TEST_CASE("vta cycle model: hand-derived cycles for a tiny stream") {
  const vta::Config c;
  const vta::CycleModel model(c, simple());
  vta::Builder b{c};
  // load: 2 + 10 + 32 rows*16 B / 8 = 2 + 10 + 4 = 16 cycles (2 inp elements)
  b.load({.memory = MemId::Inp, .x_size = 2});
  b.dep_push(Queue::Load, Queue::Compute);
  b.dep_pop(Queue::Load, Queue::Compute);
  vta::UopKernel k;
  k.loop_begin(2, 1, 1, 0);
  k.push(0, 0, 0);
  k.loop_end();
  // compute: LOAD UOP 4 B: 2 + 10 + 1 = 13, waits for the token at 16 -> [16, 29)
  // GEMM 2 uops: 2 + 3 + 2 = 7 -> [29, 36)
  b.gemm(k);
  b.dep_push(Queue::Compute, Queue::Store);
  b.dep_pop(Queue::Compute, Queue::Store);
  // store 2 out elements, 32 B: 2 + 10 + 4 = 16 -> [36, 52)
  b.store({.x_size = 2});
  const auto prog = vta::decode_all(c.layout(), b.stream().insns);
  const auto r = model.run(prog, true);
  CHECK(model.duration(prog[0]) == 16);
  CHECK(r.module(Queue::Load).busy == 16);
  CHECK(r.module(Queue::Compute).stall == 16);
  CHECK(r.module(Queue::Compute).busy == 20);
  CHECK(r.module(Queue::Store).stall == 36);
  CHECK(r.module(Queue::Store).busy == 16);
  CHECK(r.total_cycles == 52);
  CHECK(r.compute_cycles == 2);
  // Each module moves its bytes on its own port: load 32 B, compute 4 B, store 32 B.
  CHECK(r.port(Queue::Load) == 4);
  CHECK(r.port(Queue::Compute) == 1);
  CHECK(r.port(Queue::Store) == 4);
  CHECK(r.memory_cycles == 4);
  CHECK(r.roofline_cycles == 4);
  REQUIRE(r.trace.size() == 4);
  CHECK(r.trace[2].start == 29);
  const auto j = nlohmann::json::parse(r.chrome_trace());
  CHECK(j["traceEvents"].size() == 3 + 4);
  CHECK(j["traceEvents"][3]["ph"] == "X");
  CHECK(j["traceEvents"][5]["tid"] == 2);
  CHECK(j["traceEvents"][5]["dur"] == 7);
}

TEST_CASE("vta cycle model: double buffering overlaps loads with compute") {
  const vta::Config c;
  auto build = [&](bool double_buffer) {
    vta::Builder b{c};
    vta::UopKernel k;
    k.loop_begin(64, 0, 0, 1);
    k.push(0, 0, 0);
    k.loop_end();
    const int tiles = 8;
    if (double_buffer) {
      // Two weight buffers: compute frees one with a token, the load of tile t + 2 waits.
      b.dep_push(Queue::Compute, Queue::Load);
      b.dep_push(Queue::Compute, Queue::Load);
    }
    for (int t = 0; t < tiles; ++t) {
      const std::int64_t slot = double_buffer ? (t % 2) * 64 : 0;
      if (double_buffer || t > 0) b.dep_pop(Queue::Compute, Queue::Load);
      b.load({.memory = MemId::Wgt, .sram = slot, .dram = t * 64, .x_size = 64});
      b.dep_push(Queue::Load, Queue::Compute);
      b.dep_pop(Queue::Load, Queue::Compute);
      vta::UopKernel kt = k;
      kt = vta::UopKernel{};
      kt.loop_begin(64, 0, 0, 1);
      kt.push(0, 0, slot);
      kt.loop_end();
      b.gemm(kt);
      b.dep_push(Queue::Compute, Queue::Load);
    }
    return vta::decode_all(c.layout(), b.stream().insns);
  };
  const vta::CycleModel model(c);
  const auto serial = model.run(build(false));
  const auto overlapped = model.run(build(true));
  const auto sum = [](const vta::CycleReport& r) {
    return r.module(Queue::Load).busy + r.module(Queue::Compute).busy;
  };
  CHECK(serial.total_cycles >= sum(serial));  // strictly alternating
  CHECK(overlapped.total_cycles < sum(overlapped));
  CHECK(overlapped.total_cycles < serial.total_cycles);
  CHECK(overlapped.total_cycles >= overlapped.roofline_cycles);
}

namespace {

// A random stream that the builder accepts and that cannot deadlock: loads of every memory
// type (padded inputs among them), GEMMs (some resetting) and ALU operations over random
// micro-op loops, stores, and tokens pushed and popped in pairs between random neighbours
// (each pop follows its push in stream order, so the stream order is a valid schedule).
vta::Stream random_stream(const vta::Config& c, std::mt19937_64& rng) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  vta::Builder b{c};
  const int ops = static_cast<int>(pick(1, 60));
  const std::pair<Queue, Queue> links[] = {{Queue::Load, Queue::Compute},
                                           {Queue::Compute, Queue::Load},
                                           {Queue::Compute, Queue::Store},
                                           {Queue::Store, Queue::Compute}};
  for (int k = 0; k < ops; ++k) {
    switch (pick(0, 6)) {
      case 0:
      case 1: {
        const MemId mems[] = {MemId::Inp, MemId::Wgt, MemId::Acc, MemId::Acc8};
        const MemId m = mems[pick(0, 3)];
        const bool pad = m == MemId::Inp && pick(0, 1) == 1;
        b.load({.memory = m,
                .sram = pick(0, 16),
                .dram = pick(0, 1 << 20),
                .y_size = pick(0, 6),
                .x_size = pick(1, 40),
                .x_stride = pick(40, 100),
                .y_pad_0 = pad ? pick(0, 3) : 0,
                .y_pad_1 = pad ? pick(0, 3) : 0,
                .x_pad_0 = pad ? pick(0, 3) : 0,
                .x_pad_1 = pad ? pick(0, 3) : 0});
        break;
      }
      case 2:
      case 3: {
        vta::UopKernel kern;
        const auto levels = pick(0, 2);
        for (std::int64_t l = 0; l < levels; ++l)
          kern.loop_begin(pick(1, 12), pick(0, 2), pick(0, 2), pick(0, 2));
        for (std::int64_t u = pick(1, 5); u > 0; --u) kern.push(pick(0, 8), pick(0, 8), pick(0, 8));
        for (std::int64_t l = 0; l < levels; ++l) kern.loop_end();
        const auto what = pick(0, 3);
        if (what == 0) {
          b.gemm(kern, true);
        } else if (what == 1) {
          b.alu(kern, vta::AluOp::Add);
        } else if (what == 2) {
          b.alu_imm(kern, vta::AluOp::Shr, pick(-8, 8));
        } else {
          b.gemm(kern);
        }
        break;
      }
      case 4:
        b.store({.sram = pick(0, 16),
                 .dram = pick(0, 1 << 20),
                 .y_size = pick(0, 4),
                 .x_size = pick(1, 30),
                 .x_stride = pick(30, 60)});
        break;
      default: {
        const auto [from, to] = links[pick(0, 3)];
        b.dep_push(from, to);
        b.dep_pop(from, to);
        break;
      }
    }
  }
  b.finish();
  return b.take();
}

vta::CycleParams random_params(std::mt19937_64& rng) {
  auto pick = [&](std::uint64_t lo, std::uint64_t hi) { return lo + rng() % (hi - lo + 1); };
  vta::CycleParams p;
  p.bus_bytes_per_cycle = pick(1, 64);
  p.dram_latency = pick(0, 40);
  p.insn_overhead = pick(0, 6);
  p.gemm_uops_per_cycle = pick(1, 4);
  p.gemm_latency = pick(0, 6);
  p.alu_cycles_per_uop = pick(0, 3);
  p.alu_latency = pick(0, 6);
  p.pad_elems_per_cycle = pick(1, 4);
  p.alu_imm_cycles_per_uop = pick(0, 3);
  p.load_row_latency = pick(0, 40);
  p.store_row_latency = pick(0, 40);
  p.launch_cycles = pick(0, 60);
  return p;
}

}  // namespace

// The roofline bound is a lower bound of the model: each of its terms is at most one module's
// busy time (the compute term the compute module's, each port's the module that owns it), and
// no module finishes before its busy time has passed.
TEST_CASE("vta cycle model: no stream beats its roofline bound") {
  vta::Config wide;
  wide.log_batch = 1;
  wide.log_block_in = 3;
  wide.log_block_out = 5;
  wide.log_bus_width = 7;
  for (const auto& config : {vta::Config{}, wide}) {
    for (std::uint64_t seed = 1; seed <= 300; ++seed) {
      CAPTURE(seed);
      std::mt19937_64 rng(seed);
      const auto stream = random_stream(config, rng);
      // the defaults, the Chisel RTL's calibration, or random parameters
      const auto params = seed % 3 == 0   ? vta::CycleParams::for_config(config)
                          : seed % 3 == 1 ? vta::CycleParams::chisel_rtl()
                                          : random_params(rng);
      const vta::CycleModel model(config, params);
      const auto r = model.run(vta::decode_all(config.layout(), stream.insns));
      CAPTURE(r);
      CHECK(r.total_cycles >= r.roofline_cycles);
      CHECK(r.compute_cycles <= r.module(Queue::Compute).busy);
      for (const Queue q : {Queue::Load, Queue::Compute, Queue::Store})
        CHECK(r.port(q) <= r.module(q).busy);
      CHECK(r.roofline_cycles == std::max(r.compute_cycles, r.memory_cycles));
    }
  }
}

// Loads and stores on separate ports overlap: a stream that loads and stores as many bytes
// as it can in parallel runs in about half the time one shared bus would need, and the bound
// says so instead of claiming more.
TEST_CASE("vta cycle model: load and store ports overlap, and the bound counts them apart") {
  const vta::Config c;
  vta::CycleParams p;
  p.dram_latency = 0;
  p.insn_overhead = 0;
  const vta::CycleModel model(c, p);
  vta::Builder b{c};
  // Accumulator tiles 0..63 hold data; the store module writes them out while the load module
  // reads 64 input elements (1 KiB each way: 128 cycles on a port of 8 bytes per cycle).
  b.store({.sram = 0, .dram = 0, .x_size = 64});
  b.load({.memory = MemId::Inp, .sram = 0, .dram = 0, .x_size = 64});
  b.finish();
  const auto r = model.run(vta::decode_all(c.layout(), b.stream().insns));
  CHECK(r.port(Queue::Load) == 128);
  CHECK(r.port(Queue::Store) == 128);
  CHECK(r.memory_cycles == 128);
  CHECK(r.roofline_cycles == 128);
  CHECK(r.total_cycles == 128);  // the two transfers overlap completely
}
