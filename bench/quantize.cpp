// dlavm::quantize: a float CNN of 5.5 MB of weights (six 3x3 convolutions with batch norms
// and ReLUs, 3 to 256 channels at 64 x 64, and a 256 x 1000 classifier) quantized from 100
// calibration samples with the entropy method, then built for the default Target: the time
// of both, and the share of the MACs on VTA; then the quantized model's run, with a float
// multiplier per channel on the host or power-of-two shifts on VTA; and the host's
// quantize_linear kernel alone.
#include <dlavm/graph.hpp>
#include <dlavm/host/quantize.hpp>
#include <dlavm/quantize.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace {

namespace graph = dlavm::graph;
namespace q = dlavm::quantization;
using dlavm::DType;
using dlavm::te::NDArray;

graph::Function float_cnn(double& weight_bytes) {
  auto x = graph::input("image", {1, 3, 64, 64}, DType::float32());
  graph::Expr y = x;
  std::int64_t c = 3;
  std::uint64_t seed = 1;
  const std::pair<std::int64_t, std::int64_t> convs[] = {{32, 2},  {64, 1},  {128, 2},
                                                         {128, 1}, {256, 2}, {256, 1}};
  for (const auto& [out, stride] : convs) {
    ++seed;
    const double range = 1.5 / std::sqrt(static_cast<double>(c * 9));
    y = graph::conv2d(y,
                      graph::constant(fmt::format("w{}", seed),
                                      NDArray::random_float({out, c, 3, 3}, seed, -range, range)),
                      {.strides = {stride, stride}, .padding = {1, 1, 1, 1}});
    const auto channel = [&, out = out](double lo, double hi) {  // (Clang 14: no binding captured)
      const auto s = seed++;
      return graph::constant(fmt::format("bn{}", s), NDArray::random_float({out}, s, lo, hi));
    };
    auto gamma = channel(0.8, 1.2), beta = channel(-0.1, 0.1), mean = channel(-0.1, 0.1);
    y = graph::batch_norm(y, gamma, beta, mean, channel(0.8, 1.2));
    y = graph::relu(y);
    weight_bytes += 4.0 * static_cast<double>(out * c * 9);
    c = out;
  }
  y = graph::dense(graph::flatten(graph::global_avg_pool2d(y)),
                   graph::constant("fc", NDArray::random_float({1000, c}, seed, -0.1, 0.1)));
  weight_bytes += 4.0 * 1000.0 * static_cast<double>(c);
  return graph::function({x}, {y});
}

void BM_QuantizeAndBuild5MB(benchmark::State& state) {
  double bytes = 0;
  const auto fn = float_cnn(bytes);
  // the samples made on demand, as a data loader would
  const q::SampleSource samples{
      100, [](std::size_t k) {
        return q::Sample{{{"image", NDArray::random_float({1, 3, 64, 64}, 1000 + k, -1, 1)}}};
      }};
  const graph::Target target;
  double share = 0;
  for (auto _ : state) {
    const auto result = dlavm::quantize(fn, samples, {}, target);
    auto mod = graph::build(result.function, target, {.name = "quantized"});
    benchmark::DoNotOptimize(mod);
    share = result.vta_mac_share();
  }
  state.counters["weight_bytes"] = bytes;
  state.counters["vta_mac_share"] = share;
}
BENCHMARK(BM_QuantizeAndBuild5MB)->Unit(benchmark::kMillisecond)->Iterations(1);

// The trade between the two requantizations (argument 0: Multiplier, 1: Shift) and the two
// activation quantizations (argument 1: 0 symmetric, 1 asymmetric) on the same model: its
// output's SQNR against the float model on 20 held-out inputs, the VTA cycles of a run (the
// cycle model) and the host steps' time. The time is a run on the simulator.
void BM_QuantizedRun(benchmark::State& state) {
  double bytes = 0;
  const auto fn = float_cnn(bytes);
  const q::SampleSource samples{
      100, [](std::size_t k) {
        return q::Sample{{{"image", NDArray::random_float({1, 3, 64, 64}, 1000 + k, -1, 1)}}};
      }};
  const graph::Target target;
  const auto mode = state.range(0) == 0 ? q::Requantize::Multiplier : q::Requantize::Shift;
  const auto activations =
      state.range(1) == 0 ? q::Activations::Symmetric : q::Activations::Asymmetric;
  const auto result =
      dlavm::quantize(fn, samples, {.requantize = mode, .activations = activations}, target);
  auto mod = graph::build(result.function, target, {.name = "quantized"});
  dlavm::vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  const auto typed = graph::infer_type(fn, target.ops);
  double signal = 0, noise = 0;
  for (std::uint64_t k = 0; k < 20; ++k) {
    const auto image = NDArray::random_float({1, 3, 64, 64}, 5000 + k, -1, 1);
    const auto want = graph::evaluate(typed, {{"image", image}}, {})[0];
    const auto got = exec.run({{"image", image}})[0];
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double d = static_cast<double>(want.fdata()[i]) - got.fdata()[i];
      signal += static_cast<double>(want.fdata()[i]) * want.fdata()[i];
      noise += d * d;
    }
  }
  const auto image = NDArray::random_float({1, 3, 64, 64}, 9999, -1, 1);
  for (auto _ : state) benchmark::DoNotOptimize(exec.run({{"image", image}}));
  double host = 0;
  for (const auto& s : exec.last_run().steps) host += s.host_seconds;
  state.counters["sqnr_db"] = 10 * std::log10(signal / noise);
  state.counters["vta_cycles"] = static_cast<double>(exec.last_run().vta_cycles);
  state.counters["host_ms"] = host * 1e3;
  state.counters["vta_mac_share"] = result.vta_mac_share();
}
BENCHMARK(BM_QuantizedRun)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond);

// host::quantize_linear of float32 uniform in [-0.01, 1) to int8 with one scale and zero
// point (fractions spread evenly), over as many elements as the gallery's LLM layer has
// probabilities at a 2,048-token prefill (8 heads x 2,048 x 2,048, the executor's host step
// before P.V), or a smaller array (range 0: elements).
void BM_HostQuantizeLinear(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto x = NDArray::random_float({n}, 7, -0.01, 1.0);
  const auto scale = NDArray::from_floats({}, {1.0f / 127});
  const auto zero = NDArray::from_ints(DType::int8(), {}, {-128});
  for (auto _ : state) benchmark::DoNotOptimize(dlavm::host::quantize_linear(x, scale, zero));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_HostQuantizeLinear)
    ->Arg(std::int64_t{1} << 16)
    ->Arg(std::int64_t{8} << 22)
    ->Unit(benchmark::kMillisecond);

}  // namespace
