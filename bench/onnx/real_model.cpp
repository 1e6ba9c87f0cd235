// A model file as a user brings it (bench/onnx/vs_onnxruntime.sh passes PP-OCRv4's text
// detector): import + type inference + build, and one run on the host.
//   bench_onnx_real MODEL.onnx [options of tests/onnx/real_models/model_run.hpp] [--benchmark_...]
#include <benchmark/benchmark.h>

#include "../../tests/onnx/real_models/model_run.hpp"
#include <filesystem>

int main(int argc, char** argv) try {
  benchmark::Initialize(&argc, argv);  // takes the --benchmark_ flags out of argv
  if (argc < 2) {
    fmt::print(stderr, "usage: {} MODEL.onnx [--dim|--shape|--const|--input NAME=...]...\n",
               argv[0]);
    return 2;
  }
  const auto spec = model_run::parse(std::vector<std::string>(argv + 1, argv + argc));
  const std::string file = std::filesystem::path(spec.path).filename().string();
  benchmark::RegisterBenchmark(("ImportBuild/" + file).c_str(), [&](benchmark::State& state) {
    for (auto _ : state) {
      model_run::Runner runner(spec);
      benchmark::DoNotOptimize(&runner);
    }
    state.counters["model_bytes"] = static_cast<double>(std::filesystem::file_size(spec.path));
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("HostRun/" + file).c_str(), [&](benchmark::State& state) {
    model_run::Runner runner(spec);
    runner.run();  // the first run allocates the executor's buffers
    for (auto _ : state) benchmark::DoNotOptimize(runner.run());
  })->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "FAIL: {}\n", e.what());
  return 1;
}
