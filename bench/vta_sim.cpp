// Functional simulation speed: GEMM micro-ops on the default 1x16x16 configuration, in
// int8 multiply-accumulates per second (target: >= 1e9 on one core).
#include <dlavm/vta.hpp>

#include <benchmark/benchmark.h>

#include <random>

namespace vta = dlavm::vta;

static void BM_VtaSimGemm(benchmark::State& state) {
  const vta::Config config;
  vta::Simulator sim(config);
  std::mt19937 rng(1);
  for (auto& v : sim.inp_sram()) v = static_cast<std::int8_t>(rng());
  for (auto& v : sim.wgt_sram()) v = static_cast<std::int8_t>(rng());
  // 16 uops (src k, wgt k) inside iter_out = 128 (dst += 1, src += 16): 2048 uops per GEMM.
  vta::Builder b(config);
  vta::UopKernel k;
  k.loop_begin(128, 1, 16, 0);
  for (int i = 0; i < 16; ++i) k.push(0, i, i);
  k.loop_end();
  const auto gemms = state.range(0);
  for (int i = 0; i < gemms; ++i) b.gemm(k);
  // The micro-op buffer goes to DRAM once; the instructions are run decoded.
  const auto& s = b.stream();
  const auto uop_phys = sim.dram().alloc(s.uop_bytes());
  std::vector<vta::InsnWord> words(s.insns.size());
  s.relocate(uop_phys / 4, words.data());
  auto span = sim.dram().allocation(uop_phys);
  for (std::size_t i = 0; i < s.uops.size(); ++i)
    for (int j = 0; j < 4; ++j) span[i * 4 + j] = static_cast<std::byte>(s.uops[i] >> (8 * j));
  const auto prog = vta::decode_all(sim.layout(), words);
  std::uint64_t macs = 0;
  for (auto _ : state) {
    const auto info = sim.run(prog);
    macs += info.counters.gemm_macs(config);
    benchmark::DoNotOptimize(sim.acc_sram().data());
  }
  state.counters["MAC/s"] =
      benchmark::Counter(static_cast<double>(macs), benchmark::Counter::kIsRate);
  state.counters["uops/s"] =
      benchmark::Counter(static_cast<double>(macs / 256), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VtaSimGemm)->Arg(16);

// ALU micro-ops (tensor ADD over 16 int32 lanes).
static void BM_VtaSimAlu(benchmark::State& state) {
  const vta::Config config;
  vta::Simulator sim(config);
  vta::Builder b(config);
  vta::UopKernel k;
  k.loop_begin(1024, 1, 1);
  k.push(0, 1024);
  k.loop_end();
  for (int i = 0; i < 16; ++i) b.alu(k, vta::AluOp::Add);
  const auto& s = b.stream();
  const auto uop_phys = sim.dram().alloc(s.uop_bytes());
  std::vector<vta::InsnWord> words(s.insns.size());
  s.relocate(uop_phys / 4, words.data());
  auto span = sim.dram().allocation(uop_phys);
  for (std::size_t i = 0; i < s.uops.size(); ++i)
    for (int j = 0; j < 4; ++j) span[i * 4 + j] = static_cast<std::byte>(s.uops[i] >> (8 * j));
  const auto prog = vta::decode_all(sim.layout(), words);
  std::uint64_t uops = 0;
  for (auto _ : state) uops += sim.run(prog).counters.alu_uops;
  state.counters["uops/s"] =
      benchmark::Counter(static_cast<double>(uops), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VtaSimAlu);
