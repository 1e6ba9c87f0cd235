// Encoding speed (target: >= 1e7 instructions a second): checked vta::encode, unchecked
// runtime::pack, decoding, and the builder end to end.
#include <dlavm/vta.hpp>

#include <benchmark/benchmark.h>

#include <random>
#include <vector>

namespace vta = dlavm::vta;
namespace rt = dlavm::runtime;

namespace {
std::vector<vta::InsnFields> mix() {
  std::vector<vta::InsnFields> v;
  std::mt19937 rng(3);
  for (int i = 0; i < 1024; ++i) {
    vta::InsnFields f;
    switch (i % 4) {
      case 0:
        f.opcode = vta::Opcode::Load;
        f.memory_type = vta::MemId::Inp;
        f.sram_base = rng() % 2048;
        f.dram_base = rng();
        f.y_size = 1 + rng() % 16;
        f.x_size = 1 + rng() % 16;
        f.x_stride = 16;
        break;
      case 1:
        f.opcode = vta::Opcode::Gemm;
        f.uop_end = 1 + rng() % 100;
        f.iter_out = 16;
        f.iter_in = 16;
        f.dst_factor_out = 16;
        f.src_factor_out = 16;
        f.wgt_factor_in = 1;
        break;
      case 2:
        f.opcode = vta::Opcode::Alu;
        f.alu_opcode = vta::AluOp::Shr;
        f.use_imm = true;
        f.imm = -5;
        f.uop_end = 1;
        f.iter_out = 64;
        f.iter_in = 1;
        break;
      default:
        f.opcode = vta::Opcode::Store;
        f.memory_type = vta::MemId::Out;
        f.x_size = 16;
        f.y_size = 1;
        f.pop_prev_dep = true;
        break;
    }
    v.push_back(f);
  }
  return v;
}
}  // namespace

static void BM_VtaEncodeChecked(benchmark::State& state) {
  const auto layout = vta::Config{}.layout();
  const auto insns = mix();
  std::vector<vta::InsnWord> out(insns.size());
  for (auto _ : state) {
    for (std::size_t i = 0; i < insns.size(); ++i) out[i] = vta::encode(layout, insns[i], i);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * insns.size()));
}
BENCHMARK(BM_VtaEncodeChecked);

static void BM_VtaPackUnchecked(benchmark::State& state) {
  const auto layout = vta::Config{}.layout();
  const auto insns = mix();
  std::vector<vta::InsnWord> out(insns.size());
  for (auto _ : state) {
    for (std::size_t i = 0; i < insns.size(); ++i) out[i] = rt::pack(layout, insns[i]);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * insns.size()));
}
BENCHMARK(BM_VtaPackUnchecked);

static void BM_VtaDecode(benchmark::State& state) {
  const auto layout = vta::Config{}.layout();
  std::vector<vta::InsnWord> words;
  for (const auto& f : mix()) words.push_back(rt::pack(layout, f));
  for (auto _ : state) {
    for (std::size_t i = 0; i < words.size(); ++i) {
      auto f = vta::decode(layout, words[i], i);
      benchmark::DoNotOptimize(f);
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * words.size()));
}
BENCHMARK(BM_VtaDecode);

// Builder: loads, a cached GEMM kernel and stores with tokens, 4 instructions per step.
static void BM_VtaBuilder(benchmark::State& state) {
  const vta::Config config;
  vta::UopKernel k;
  k.loop_begin(16, 1, 1, 0);
  k.push(0, 0, 0);
  k.loop_end();
  std::int64_t insns = 0;
  for (auto _ : state) {
    vta::Builder b(config);
    for (int i = 0; i < 256; ++i) {
      b.load({.memory = vta::MemId::Inp, .sram = 0, .dram = i * 16, .x_size = 16});
      b.dep_push(vta::Queue::Load, vta::Queue::Compute);
      b.dep_pop(vta::Queue::Load, vta::Queue::Compute);
      b.gemm(k);
      b.dep_push(vta::Queue::Compute, vta::Queue::Store);
      b.dep_pop(vta::Queue::Compute, vta::Queue::Store);
      b.store({.sram = 0, .dram = i * 16, .x_size = 16});
    }
    insns += static_cast<std::int64_t>(b.size());
    benchmark::DoNotOptimize(b.stream().insns.data());
  }
  state.SetItemsProcessed(insns);
}
BENCHMARK(BM_VtaBuilder);
