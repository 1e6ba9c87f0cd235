// Random single convolutions on VTA (issue 25's figures): which share of them runs on VTA, and
// how close the VTA steps come to their roofline bound on the cycle model, for convolutions
// with asymmetric padding against their symmetric-padding neighbours (each axis padded by the
// larger of its two pads on both sides), and for symbolic dims at their maximum binding.
// Each benchmark builds and runs its 300 convolutions once; the figures are its counters.
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

}  // namespace
