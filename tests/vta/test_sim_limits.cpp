// What a stream and a configuration may make the simulator do: the work budget per run (a
// DeviceError naming the instruction before it runs) and the SRAM bytes a configuration may ask
// for (a ConfigError naming the LOG_*_BUFF_SIZE keys before anything is allocated).
#include <dlavm/vta.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <doctest/doctest.h>

#include "what_of.hpp"
#include <chrono>
#include <cstdint>
#include <string>

namespace vta = dlavm::vta;
using vta::MemId;
using vta::Queue;

namespace {
using dlavm_test::what_of;

// LOAD UOP, one GEMM of `uops` micro-ops over iter_out x iter_in, FINISH.
vta::Stream one_gemm(const vta::Config& config, std::int64_t iter_out, std::int64_t iter_in,
                     int uops) {
  vta::Builder b(config);
  vta::UopKernel k;
  k.loop_begin(iter_out, 0, 0, 0);
  k.loop_begin(iter_in, 0, 0, 0);
  for (int u = 0; u < uops; ++u) k.push(0, 0, 0);
  k.loop_end();
  k.loop_end();
  b.gemm(k);
  b.finish();
  return b.take();
}

}  // namespace

TEST_CASE("vta simulator limits: a GEMM of 16383 x 16383 micro-ops stops before it runs") {
  vta::SimDevice dev;
  CHECK(dev.work_budget() == vta::Simulator::kDefaultWorkBudget);
  const auto start = std::chrono::steady_clock::now();
  const auto msg = what_of([&] { dev.run(one_gemm(dev.config(), 16383, 16383, 1)); });
  CHECK(msg ==
        "GEMM #1: 268402689 micro-op executions would exceed the simulator's work budget of "
        "67108864 units per run (1 used by the instructions before it); raise it with "
        "set_work_budget");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("vta simulator limits: the budget counts micro-ops and moved elements, per run") {
  vta::SimDevice dev;
  // LOAD UOP (2 elements) + 3 x 4 x 2 GEMM micro-ops = 26 units.
  const auto s = one_gemm(dev.config(), 3, 4, 2);
  dev.set_work_budget(26);
  CHECK(dev.run(s).finished);
  CHECK(dev.run(s).finished);  // the budget is per run, not per device
  dev.set_work_budget(25);
  CHECK(dev.work_budget() == 25);
  CHECK(what_of([&] { dev.run(s); }) ==
        "GEMM #1: 24 micro-op executions would exceed the simulator's work budget of 25 units "
        "per run (2 used by the instructions before it); raise it with set_work_budget");
  // Loads and stores count their SRAM elements, padding included.
  vta::Simulator small(vta::Config{});
  small.set_work_budget(11);
  const auto buf = small.dram().alloc(16 * 16);
  vta::InsnFields load;
  load.opcode = vta::Opcode::Load;
  load.memory_type = MemId::Inp;
  load.dram_base = static_cast<std::uint32_t>(buf / 16);
  load.y_size = 2;
  load.x_size = 3;
  load.x_stride = 3;
  load.x_pad_0 = 1;
  load.y_pad_1 = 1;  // (1 + 2) x (1 + 3) = 12 elements
  CHECK(what_of([&] { small.run(std::span<const vta::InsnFields>(&load, 1)); }) ==
        "LOAD #0: 12 SRAM elements to move would exceed the simulator's work budget of 11 units "
        "per run (0 used by the instructions before it); raise it with set_work_budget");
  small.set_work_budget(12);
  CHECK(small.run(std::span<const vta::InsnFields>(&load, 1)).work == 12);
}

TEST_CASE("vta simulator limits: configurations with more than 64 MiB of SRAM are refused") {
  // 0.25 KiB of vta_config.json asking for 256 MiB of weights: refused before allocating.
  const auto config = vta::read_config(R"({
    "TARGET": "sim", "HW_VER": "0.0.2", "LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3,
    "LOG_ACC_WIDTH": 5, "LOG_BATCH": 0, "LOG_BLOCK": 8, "LOG_UOP_BUFF_SIZE": 15,
    "LOG_INP_BUFF_SIZE": 18, "LOG_WGT_BUFF_SIZE": 28, "LOG_ACC_BUFF_SIZE": 20})");
  const std::string msg = what_of([&] { vta::SimDevice dev(config); });
  CHECK(msg ==
        "simulator: the SRAMs of this configuration total 269778944 bytes (LOG_UOP_BUFF_SIZE = "
        "15: 32768 B, LOG_INP_BUFF_SIZE = 18: 262144 B, LOG_WGT_BUFF_SIZE = 28: 268435456 B, "
        "LOG_ACC_BUFF_SIZE = 20: 1048576 B), more than the simulator's limit of 67108864 bytes "
        "(64 MiB); reduce the LOG_*_BUFF_SIZE values");
  CHECK_THROWS_AS(vta::Simulator{config}, dlavm::ConfigError);
  // 32 MiB of weights is within the limit.
  auto ok = config;
  ok.log_wgt_buff_size = 25;
  vta::SimDevice dev(ok);
  CHECK(dev.simulator().wgt_sram().size() == std::size_t{1} << 25);
}
