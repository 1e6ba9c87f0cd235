// The tuner's evaluation rate: candidates of ResNet-18's conv2d workloads (224 x 224, every
// candidate that passes each space's check, in ranked order) built, instantiated and timed on
// the cycle model, on one thread. Target (issue 24): 10,000 candidates per minute per core.
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>

#include <benchmark/benchmark.h>

#include "../examples/models.hpp"
#include <vector>

namespace {

namespace graph = dlavm::graph;
namespace tune = dlavm::tune;

void BM_TuneEvaluateResNet18Convs(benchmark::State& state) {
  const graph::Target target;
  std::vector<tune::Task> convs;
  for (auto& t : tune::tasks(models::ResNet18().function(), target))
    if (t.workload.op == "conv2d") convs.push_back(std::move(t));
  std::vector<std::pair<const tune::Task*, graph::Knobs>> work;
  for (const auto& t : convs)
    for (const auto& p : tune::candidates(t.space)) work.emplace_back(&t, t.space.knobs_of(p));
  std::size_t next = 0, failed = 0;
  for (auto _ : state) {
    // strided through the list: every workload's candidates, not the first one's
    const auto& [task, knobs] = work[(next++ * 7919) % work.size()];
    const auto r = tune::evaluate(*task, knobs, target.env);
    failed += !r.cycles;
    benchmark::DoNotOptimize(r);
  }
  state.counters["candidates_per_minute"] = benchmark::Counter(
      60.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["workloads"] = static_cast<double>(convs.size());
  state.counters["candidates"] = static_cast<double>(work.size());
  state.counters["failed"] = static_cast<double>(failed);
}
BENCHMARK(BM_TuneEvaluateResNet18Convs)->Unit(benchmark::kMillisecond);

}  // namespace
