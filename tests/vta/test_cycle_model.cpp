#include <dlavm/vta.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

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
  CHECK(r.memory_cycles == (32 + 4 + 32) / 8 + 1);  // 68 B -> 9 cycles
  CHECK(r.roofline_cycles == 9);
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
