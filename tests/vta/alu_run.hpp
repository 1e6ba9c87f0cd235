// One ALU instruction on the simulator, for the suites that check its semantics: two int32
// vectors of n x 16 loaded into the accumulator, `op` applied (with an immediate or the second
// vector), the int8 result stored.
#pragma once

#include <dlavm/vta.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <span>
#include <vector>

namespace dlavm_test {

inline std::vector<std::int8_t> run_alu(const dlavm::vta::Config& config, dlavm::vta::AluOp op,
                                        const std::vector<std::int32_t>& a,
                                        const std::vector<std::int32_t>& b, bool imm = false,
                                        std::int32_t imm_value = 0,
                                        dlavm::vta::Counters* counters = nullptr) {
  namespace vta = dlavm::vta;
  using vta::MemId;
  using vta::Queue;
  vta::SimDevice dev(config);
  const std::int64_t n = static_cast<std::int64_t>(a.size() / 16);
  const auto A = dev.alloc_for(std::span<const std::int32_t>(a));
  const auto B = dev.alloc_for(std::span<const std::int32_t>(b));
  const auto C = dev.alloc(a.size());
  vta::Builder bld{dev.config()};
  bld.load(
      {.memory = MemId::Acc, .sram = 0, .dram = bld.dram_elem(A.phys, MemId::Acc), .x_size = n});
  bld.load(
      {.memory = MemId::Acc, .sram = n, .dram = bld.dram_elem(B.phys, MemId::Acc), .x_size = n});
  vta::UopKernel k;
  k.loop_begin(n, 1, 1);
  k.push(0, n);
  k.loop_end();
  if (imm) {
    bld.alu_imm(k, op, imm_value);
  } else {
    bld.alu(k, op);
  }
  bld.dep_push(Queue::Compute, Queue::Store);
  bld.dep_pop(Queue::Compute, Queue::Store);
  bld.store({.sram = 0, .dram = bld.dram_elem(C.phys, MemId::Out), .x_size = n});
  bld.finish();
  // (run outside CHECK, so that an exception reaches the caller)
  const auto r = dev.run(bld.take());
  CHECK(r.finished);
  if (counters) *counters = r.counters;
  std::vector<std::int8_t> out(a.size());
  dev.copy_out(C, std::span<std::int8_t>(out));
  return out;
}

}  // namespace dlavm_test
