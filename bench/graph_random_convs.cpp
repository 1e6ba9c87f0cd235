// Random single convolutions on VTA (issue 25's figures): which share of them runs on VTA, and
// how close the VTA steps come to their roofline bound on the cycle model, for convolutions
// with asymmetric padding against their symmetric-padding neighbours (each axis padded by the
// larger of its two pads on both sides), and for symbolic dims at their maximum binding.
// Each benchmark builds and runs its 300 convolutions once; the figures are its counters.
// Last, MobileNet v1's depthwise convolutions (issue 41's figure).
#include <dlavm/graph.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <random>

namespace {

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

struct Conv {
  std::int64_t n, c, o, h, w, kh, kw, sh, sw;
  std::array<std::int64_t, 4> pad;
};

Conv random_conv(std::mt19937_64& rng) {
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  Conv k{};
  k.n = pick(1, 4);
  k.c = pick(1, 48);
  k.o = pick(1, 48);
  k.kh = pick(1, 7);
  k.kw = pick(1, 7);
  k.sh = pick(1, 3);
  k.sw = pick(1, 3);
  k.pad = {pick(0, k.kh - 1), pick(0, k.kw - 1), pick(0, k.kh - 1), pick(0, k.kw - 1)};
  k.h = pick(std::max<std::int64_t>(1, k.kh - k.pad[0] - k.pad[2]), 64);
  k.w = pick(std::max<std::int64_t>(1, k.kw - k.pad[1] - k.pad[3]), 64);
  return k;
}

struct Figures {
  int convs = 0, on_vta = 0;
  std::uint64_t cycles = 0, roofline = 0;
  double share() const {
    return cycles == 0 ? 0 : static_cast<double>(roofline) / static_cast<double>(cycles);
  }
};

// Builds conv + bias + requantize over `shape` (dims may be symbolic), runs it at `bindings`
// and adds its VTA figures.
void run(const Conv& k, std::vector<ne::Expr> shape, std::span<const ne::Binding> bindings,
         Figures& f) {
  auto x = graph::input("x", shape, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {k.o, k.c, k.kh, k.kw}, 1));
  auto b = graph::constant("b", te::NDArray::random(DType::int32(), {k.o}, 2, -999, 999));
  auto y = graph::requantize(
      graph::bias_add(graph::conv2d(x, w, {.strides = {k.sh, k.sw}, .padding = k.pad}), b),
      {.shift = 8, .rounding = dlavm::host::Rounding::Nearest});
  const graph::Target target;
  auto mod = graph::build(graph::function({x}, {y}), target);
  std::vector<std::int64_t> dims;
  for (const auto& d : shape) dims.push_back(ne::eval(d, bindings));
  const auto a = te::NDArray::random(DType::int8(), dims, 3);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  const std::vector<graph::NamedArray> inputs{{"x", a}};
  exec.run(inputs, bindings);
  ++f.convs;
  bool vta_step = false;
  for (std::size_t i = 0; i < mod.steps().size(); ++i) {
    if (mod.steps()[i].kind != graph::ModuleStep::Kind::Vta) continue;
    vta_step = true;
    f.cycles += exec.last_run().steps[i].cycles;
    f.roofline += exec.last_run().steps[i].roofline_cycles;
  }
  f.on_vta += vta_step ? 1 : 0;
}

void BM_RandomConvsPaddedVsSymmetric(benchmark::State& state) {
  Figures padded, symmetric;
  int asymmetric = 0;
  for (auto _ : state) {
    std::mt19937_64 rng(25);
    for (int i = 0; i < 300; ++i) {
      Conv k = random_conv(rng);
      if (k.pad[0] == k.pad[2] && k.pad[1] == k.pad[3]) continue;
      ++asymmetric;
      run(k, {k.n, k.c, k.h, k.w}, {}, padded);
      k.pad = {std::max(k.pad[0], k.pad[2]), std::max(k.pad[1], k.pad[3]),
               std::max(k.pad[0], k.pad[2]), std::max(k.pad[1], k.pad[3])};
      run(k, {k.n, k.c, k.h, k.w}, {}, symmetric);
    }
  }
  state.counters["convs"] = asymmetric;
  state.counters["vta_share"] = static_cast<double>(padded.on_vta) / padded.convs;
  state.counters["roofline_share"] = padded.share();
  state.counters["neighbours_roofline_share"] = symmetric.share();
}
BENCHMARK(BM_RandomConvsPaddedVsSymmetric)->Iterations(1)->Unit(benchmark::kSecond);

// A symbolic batch, height or width, run at its maximum: against the same convolution with the
// dims constant.
void BM_RandomConvsSymbolicVsStatic(benchmark::State& state) {
  Figures symbolic, constant;
  std::array<Figures, 3> by_dim;  // batch, height, width symbolic
  for (auto _ : state) {
    std::mt19937_64 rng(26);
    for (int i = 0; i < 300; ++i) {
      const Conv k = random_conv(rng);
      const int which = i % 3;
      const char* name = which == 0 ? "n" : which == 1 ? "h" : "w";
      const std::int64_t max = which == 0 ? k.n : which == 1 ? k.h : k.w;
      std::vector<ne::Expr> shape{k.n, k.c, k.h, k.w};
      shape[which == 0 ? 0 : which + 1] = ne::var(name, 1, max);
      if (which > 0) {  // the smallest extent that holds a window
        const std::int64_t lo = std::max<std::int64_t>(
            1, which == 1 ? k.kh - k.pad[0] - k.pad[2] : k.kw - k.pad[1] - k.pad[3]);
        shape[which + 1] = ne::var(name, lo, max);
      }
      const ne::Binding at_max[] = {{name, max}};
      run(k, shape, at_max, symbolic);
      run(k, shape, at_max, by_dim[static_cast<std::size_t>(which)]);
      run(k, {k.n, k.c, k.h, k.w}, {}, constant);
    }
  }
  state.counters["convs"] = symbolic.convs;
  state.counters["vta_share"] = static_cast<double>(symbolic.on_vta) / symbolic.convs;
  state.counters["roofline_share"] = symbolic.share();
  state.counters["static_roofline_share"] = constant.share();
  state.counters["batch_roofline_share"] = by_dim[0].share();
  state.counters["height_roofline_share"] = by_dim[1].share();
  state.counters["width_roofline_share"] = by_dim[2].share();
}
BENCHMARK(BM_RandomConvsSymbolicVsStatic)->Iterations(1)->Unit(benchmark::kSecond);

// MobileNet v1's thirteen 3x3 depthwise convolutions at 224 x 224 (32 channels at 112 x 112
// to 1,024 at 7 x 7, strides 1 and 2), each with its bias, requantization and ReLU6 clamp,
// then its pointwise 1x1 convolution: the depthwise steps' cycles against their roofline
// bound, and against the MACs they do (1/16 of the GEMM core's work is useful at BLOCK 16).
void BM_MobileNetDepthwise(benchmark::State& state) {
  struct Layer {
    std::int64_t c, h, stride;
  };
  static constexpr Layer layers[] = {{32, 112, 1}, {64, 112, 2}, {128, 56, 1}, {128, 56, 2},
                                     {256, 28, 1}, {256, 28, 2}, {512, 14, 1}, {512, 14, 1},
                                     {512, 14, 1}, {512, 14, 1}, {512, 14, 1}, {512, 14, 2},
                                     {1024, 7, 1}};
  Figures depthwise, pointwise;
  std::int64_t useful_macs = 0, on_vta = 0;
  for (auto _ : state) {
    std::uint64_t seed = 1;
    for (const auto& l : layers) {
      const std::int64_t out = 2 * l.c;
      auto x = graph::input("x", {1, l.c, l.h, l.h}, DType::int8());
      const auto weight = [&](std::vector<std::int64_t> shape) {
        ++seed;
        return graph::constant(fmt::format("w{}", seed),
                               te::NDArray::random(DType::int8(), shape, seed, -20, 20));
      };
      const auto bias = [&](std::int64_t n) {
        ++seed;
        return graph::constant(fmt::format("b{}", seed),
                               te::NDArray::random(DType::int32(), {n}, seed, -999, 999));
      };
      const auto epilogue = [&](graph::Expr acc, std::int64_t n) {
        return graph::clip(
            graph::requantize(graph::bias_add(acc, bias(n)),
                              {.shift = 8, .rounding = dlavm::host::Rounding::Nearest}),
            {.lo = 0, .hi = 96});
      };
      auto dw = epilogue(
          graph::conv2d(x, weight({l.c, 1, 3, 3}),
                        {.strides = {l.stride, l.stride}, .padding = {1, 1, 1, 1}, .groups = l.c}),
          l.c);
      auto pw = epilogue(graph::conv2d(dw, weight({out, l.c, 1, 1})), out);
      const graph::Target target;
      auto mod = graph::build(graph::function({x}, {pw}), target);
      vta::SimDevice dev(target.env.config);
      graph::Executor exec(mod, dev);
      const std::vector<std::int64_t> dims{1, l.c, l.h, l.h};
      const auto data = te::NDArray::random(DType::int8(), dims, ++seed);
      const std::vector<graph::NamedArray> inputs{{"x", data}};
      exec.run(inputs);
      for (std::size_t i = 0; i < mod.steps().size(); ++i) {
        const auto& step = mod.steps()[i];
        if (step.kind != graph::ModuleStep::Kind::Vta) continue;
        const auto& run = exec.last_run().steps[i];
        const bool grouped = graph::conv2d_params(step.workload.attrs).groups > 1;
        auto& f = grouped ? depthwise : pointwise;
        f.cycles += run.cycles;
        f.roofline += run.roofline_cycles;
        ++f.on_vta;
        if (grouped) useful_macs += run.macs;
        ++on_vta;
      }
    }
  }
  state.counters["vta_steps"] = static_cast<double>(on_vta);
  state.counters["depthwise_cycles"] = static_cast<double>(depthwise.cycles);
  state.counters["depthwise_roofline_share"] = depthwise.share();
  state.counters["depthwise_macs_per_cycle"] =
      static_cast<double>(useful_macs) / static_cast<double>(depthwise.cycles);
  state.counters["pointwise_cycles"] = static_cast<double>(pointwise.cycles);
  state.counters["pointwise_roofline_share"] = pointwise.share();
}
BENCHMARK(BM_MobileNetDepthwise)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
