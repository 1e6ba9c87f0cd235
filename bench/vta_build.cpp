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

// The ResNet-18 conv2d of the gallery: padded input loads, 3x3 kernel, two virtual threads.
void BM_BuildConv2d(benchmark::State& state) {
  const vta::Env env;
  const Conv2d op(env, 14, 14, 256, 256, 3, 1, 1);
  for (auto _ : state) {
    auto s = op.schedule(env, 8, 7, 14);
    benchmark::DoNotOptimize(vta::build(s, op.args(), env, "conv2d"));
  }
}
BENCHMARK(BM_BuildConv2d)->Unit(benchmark::kMillisecond);

// The token GEMM (rows = token in 1..2048, 4 x 2 tiles of weights): built once, instantiated
// for the token count given as the first argument, rows blocked by the second.
void BM_InstantiateTokenGemm(benchmark::State& state) {
  const vta::Env env;
  auto token = ne::var("token", 1, 2048);
  const Gemm op(env, token, 4, 2);
  auto s = op.schedule(env, static_cast<int>(state.range(1)));
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
BENCHMARK(BM_InstantiateTokenGemm)
    ->ArgsProduct({{1, 37, 2048}, {64, 512}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
