// The tuner's evaluation rate: tune::tune on one thread over ResNet-18's conv2d workloads
// (224 x 224), the 64 best estimates of each space (/64) or every candidate that passes the
// checks (/0, 8,522: small blocks make long streams, slower to instantiate and time): each
// candidate built, instantiated at its maximal dims and timed on the cycle model, its record
// written. Wall time (the evaluation runs on the pool's thread). Target (issue 24): 10,000
// candidates per minute per core.
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>

#include <benchmark/benchmark.h>

#include "../examples/models.hpp"
#include <sstream>
#include <vector>

namespace {

namespace graph = dlavm::graph;
namespace tune = dlavm::tune;

void BM_TuneResNet18Convs(benchmark::State& state) {
  const graph::Target target;
  std::vector<tune::Task> convs;
  for (auto& t : tune::tasks(models::ResNet18().function(), target))
    if (t.workload.op == "conv2d") convs.push_back(std::move(t));
  std::size_t candidates = 0, failed = 0;
  for (auto _ : state) {
    std::ostringstream log;
    const auto records =
        tune::tune(convs, target.env, log, {},
                   {.top = static_cast<std::size_t>(state.range(0)), .threads = 1});
    candidates += records.size();
    for (const auto& r : records) failed += !r.cycles;
  }
  state.counters["candidates_per_minute"] =
      benchmark::Counter(60.0 * static_cast<double>(candidates), benchmark::Counter::kIsRate);
  state.counters["workloads"] = static_cast<double>(convs.size());
  state.counters["failed"] = static_cast<double>(failed);
}
BENCHMARK(BM_TuneResNet18Convs)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TuneResNet18Convs)
    ->Arg(0)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
