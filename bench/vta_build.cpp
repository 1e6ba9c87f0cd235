// Compile and instantiate times of the VTA flow. Targets (issue 6): lowering and building each
// gallery operator in under 10 ms; instantiating the symbolic GEMM for a new token count in
// under 20 microseconds.
#include <benchmark/benchmark.h>

#include "../examples/gallery_ops.hpp"

namespace {

using namespace gallery;

void BM_BuildVadd(benchmark::State& state) {
  const vta::Env env;
  const Vadd op(env);
  for (auto _ : state) {
    auto s = op.schedule(env);
    benchmark::DoNotOptimize(vta::build(s, op.args(), env, "vadd"));
  }
}
BENCHMARK(BM_BuildVadd)->Unit(benchmark::kMillisecond);

void BM_BuildGemm(benchmark::State& state) {
  const vta::Env env;
  const Gemm op(env, 1, 16, 16);
  for (auto _ : state) {
    auto s = op.schedule(env);
    benchmark::DoNotOptimize(vta::build(s, op.args(), env, "gemm"));
  }
}
BENCHMARK(BM_BuildGemm)->Unit(benchmark::kMillisecond);

void BM_BuildBlockedGemm(benchmark::State& state) {
  const vta::Env env;
  const BlockedGemm op(env, 1024);
  for (auto _ : state) {
    auto s = op.schedule(env, 256);
    benchmark::DoNotOptimize(vta::build(s, op.args(), env, "blocked_gemm"));
  }
}
BENCHMARK(BM_BuildBlockedGemm)->Unit(benchmark::kMillisecond);

// The token GEMM (rows = token in 1..2048, 4 x 2 tiles of weights, rows blocked by 64):
// built once, instantiated for the token count given as the argument.
void BM_InstantiateTokenGemm(benchmark::State& state) {
  const vta::Env env;
  auto token = ne::var("token", 1, 2048);
  const Gemm op(env, token, 4, 2);
  auto s = op.schedule(env, 64);
  const auto prog = vta::build(s, op.args(), env, "gemm_token");
  const std::vector<std::uint64_t> phys{0x100000, 0x200000, 0x300000};
  const std::vector<ne::Binding> bindings{{"token", state.range(0)}};
  std::size_t insns = 0;
  for (auto _ : state) {
    auto stream = prog.instantiate(bindings, phys);
    insns = stream.insns.size();
    benchmark::DoNotOptimize(stream);
  }
  state.counters["instructions"] = static_cast<double>(insns);
}
BENCHMARK(BM_InstantiateTokenGemm)->Arg(1)->Arg(37)->Arg(2048)->Unit(benchmark::kMicrosecond);

}  // namespace
