// The graph layer on whole models. Targets (issue 14): building all of ResNet-18 (infer_type,
// fusion, strategies, lowering, VTA build, weight packing) in under 1 s; running it end to
// end on SimDevice in under 10 s. The per-layer cycle figures come from `resnet18` (examples).
#include <benchmark/benchmark.h>

#include "../examples/models.hpp"

namespace {

namespace graph = dlavm::graph;
namespace te = dlavm::te;
namespace vta = dlavm::vta;

void BM_InferTypeResNet18(benchmark::State& state) {
  const models::ResNet18 net;
  const graph::Target target;
  const auto fn = net.function();
  for (auto _ : state) benchmark::DoNotOptimize(graph::infer_type(fn, target));
}
BENCHMARK(BM_InferTypeResNet18)->Unit(benchmark::kMillisecond);

void BM_BuildResNet18(benchmark::State& state) {
  const models::ResNet18 net;
  const graph::Target target;
  const auto fn = net.function();
  for (auto _ : state) benchmark::DoNotOptimize(graph::build(fn, target, {.name = "resnet18"}));
}
BENCHMARK(BM_BuildResNet18)->Unit(benchmark::kMillisecond);

// ResNet-18 built for a board's design (vta::preset) and run on the simulator acting as it,
// timed by that design's cycle model: "sim" (BM_RunResNet18) and "pynq" share the default model, so
// their difference is the price of avoiding LOAD ACC_8BIT (the pooling's input and the residual
// operands widened to int32 by host steps, loaded with 4x the bytes); "de10nano" is timed by
// the Chisel calibration (vta::CycleParams::chisel_rtl). Counters: the VTA cycles, and the
// host steps' wall time (ms) with the widening casts and their layout conversions.
void BM_RunResNet18OnPreset(benchmark::State& state, const char* preset) {
  const models::ResNet18 net;
  graph::Target target;
  target.env = vta::Env(vta::preset(preset));
  auto mod = graph::build(net.function(), target, {.name = "resnet18"});
  const auto data = te::NDArray::random(dlavm::DType::int8(), {1, 3, 224, 224}, 1);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  for (auto _ : state) benchmark::DoNotOptimize(exec.run({{"data", data}}));
  state.counters["vta_cycles"] = static_cast<double>(exec.last_run().vta_cycles);
  double host = 0;
  for (const auto& s : exec.last_run().steps) host += s.host_seconds;
  state.counters["host_ms"] = 1e3 * host;
}
// TVM's simulator (the default Target)
void BM_RunResNet18(benchmark::State& state) { BM_RunResNet18OnPreset(state, "sim"); }
BENCHMARK(BM_RunResNet18)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RunResNet18OnPreset, pynq, "pynq")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RunResNet18OnPreset, zcu104, "zcu104")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RunResNet18OnPreset, de10nano, "de10nano")->Unit(benchmark::kMillisecond);

void BM_RunMlp(benchmark::State& state) {
  const models::Mlp net;
  const graph::Target target;
  auto mod = graph::build(net.function(), target, {.name = "mlp"});
  const auto batch = state.range(0);
  const auto x = te::NDArray::random(dlavm::DType::int8(), {batch, 64}, 1);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  for (auto _ : state) benchmark::DoNotOptimize(exec.run({{"x", x}}, {{"batch", batch}}));
}
BENCHMARK(BM_RunMlp)->Arg(1)->Arg(256)->Unit(benchmark::kMicrosecond);

}  // namespace
