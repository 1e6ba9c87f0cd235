// dlavm::quantize: a float CNN of 5.5 MB of weights (six 3x3 convolutions with batch norms
// and ReLUs, 3 to 256 channels at 64 x 64, and a 256 x 1000 classifier) quantized from 100
// calibration samples with the entropy method, then built for the default Target: the time
// of both, and the share of the MACs on VTA.
#include <dlavm/graph.hpp>
#include <dlavm/quantize.hpp>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

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
    const auto channel = [&](double lo, double hi) {
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

}  // namespace
