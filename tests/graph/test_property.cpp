// Property tests of graph::build over random programs, each built for VTA, run on the
// simulator and compared with the reference executor layer by layer:
//   - single convolutions: every kernel shape up to 7x7, strides 1-3 per axis, each side's
//     padding 0..kernel-1, 1-48 channels in and out, batch 1-4, images up to 64x64, with
//     random epilogues (bias, residual sum, requantize with either rounding, relu, clip); a
//     fifth with a symbolic batch, height or width, run at several bindings from one build.
//     At least 95% of them must run on VTA;
//   - grouped and depthwise convolutions: on VTA exactly where their groups tile;
//   - poolings (max, and averages over power-of-two windows) and dense layers with random
//     epilogues, a third over a symbolic batch, height or row count;
//   - multi-layer graphs: convolutions with random padding and strides, poolings, residual
//     sums of earlier values, and dense heads, some over a symbolic batch.
// The cases of the "long" suite are the same with ten times the trials: `make test` skips
// them, CI runs them (ctest -L long).
#include <dlavm/graph.hpp>

#include <doctest/doctest.h>

#include "random_graphs.hpp"
#include <algorithm>
#include <optional>
#include <string>

namespace property_test {

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;
using random_graphs::Rng;
using random_graphs::VtaCycles;

enum class Symbolic { None, Batch, Height, Width };

struct ConvCase {
  std::int64_t n, c, o, h, w, kh, kw, sh, sw;
  std::array<std::int64_t, 4> pad;
  Symbolic symbolic = Symbolic::None;
  std::int64_t groups = 1;
};

ConvCase random_conv(Rng& rng) {
  ConvCase k{};
  k.n = rng(1, 4);
  k.c = rng(1, 48);
  k.o = rng(1, 48);
  k.kh = rng(1, 7);
  k.kw = rng(1, 7);
  k.sh = rng(1, 3);
  k.sw = rng(1, 3);
  k.pad = {rng(0, k.kh - 1), rng(0, k.kw - 1), rng(0, k.kh - 1), rng(0, k.kw - 1)};
  // at least one window fits the padded image
  k.h = rng(std::max<std::int64_t>(1, k.kh - k.pad[0] - k.pad[2]), 64);
  k.w = rng(std::max<std::int64_t>(1, k.kw - k.pad[1] - k.pad[3]), 64);
  if (rng(0, 4) == 0) k.symbolic = static_cast<Symbolic>(rng(1, 3));
  return k;
}

// A grouped convolution: depthwise (any channel count, multiplier 1), groups of 2-16 channels
// in and out, groups wider than a tile; one in six of a form VTA's kernel cannot tile (a
// depthwise multiplier of 2, 32 outputs per group), which must run on the host.
ConvCase random_grouped_conv(Rng& rng) {
  ConvCase k = random_conv(rng);
  k.kh = rng(1, 5);
  k.kw = rng(1, 5);
  k.pad = {rng(0, k.kh - 1), rng(0, k.kw - 1), rng(0, k.kh - 1), rng(0, k.kw - 1)};
  k.h = rng(std::max<std::int64_t>(1, k.kh - k.pad[0] - k.pad[2]), 40);
  k.w = rng(std::max<std::int64_t>(1, k.kw - k.pad[1] - k.pad[3]), 40);
  struct Form {
    std::int64_t group_in, group_out, max_groups;
  };
  static constexpr Form forms[] = {{1, 1, 80}, {1, 1, 80},  {2, 2, 24},  {4, 4, 12},
                                   {8, 8, 6},  {16, 16, 3}, {32, 16, 3}, {16, 8, 4},
                                   {4, 8, 6},  {1, 2, 24},  {16, 32, 2}, {3, 3, 16}};
  const auto& f = forms[rng(0, std::size(forms) - 1)];
  k.groups = rng(2, f.max_groups);
  k.c = k.groups * f.group_in;
  k.o = k.groups * f.group_out;
  return k;
}

std::string describe(const ConvCase& k) {
  static constexpr const char* kinds[] = {"", ", batch symbolic", ", height symbolic",
                                          ", width symbolic"};
  return fmt::format("{}x{}x{}x{} -> {}, kernel {}x{}, stride {}x{}, padding {} {} {} {}{}{}", k.n,
                     k.c, k.h, k.w, k.o, k.kh, k.kw, k.sh, k.sw, k.pad[0], k.pad[1], k.pad[2],
                     k.pad[3], kinds[static_cast<int>(k.symbolic)],
                     k.groups == 1 ? "" : fmt::format(", {} groups", k.groups));
}

struct ConvStats {
  int cases = 0, on_vta = 0, runs = 0;
  VtaCycles cycles;
};

// One random convolution with a random epilogue: built once, checked at each binding.
void check_conv(Rng& rng, const ConvCase& k, std::uint64_t seed, ConvStats& stats) {
  // the symbolic dim ranges from the smallest legal value to the drawn one
  const std::int64_t h_min = std::max<std::int64_t>(1, k.kh - k.pad[0] - k.pad[2]);
  const std::int64_t w_min = std::max<std::int64_t>(1, k.kw - k.pad[1] - k.pad[3]);
  ne::Expr n = k.n, h = k.h, w = k.w;
  std::vector<std::vector<ne::Binding>> bindings{{}};
  const auto sweep = [&](const char* name, std::int64_t lo, std::int64_t hi, ne::Expr& dim) {
    dim = ne::var(name, lo, hi);
    bindings = {{{name, lo}}, {{name, hi}}, {{name, rng(lo, hi)}}};
  };
  if (k.symbolic == Symbolic::Batch) sweep("batch", 1, k.n, n);
  if (k.symbolic == Symbolic::Height) sweep("height", h_min, k.h, h);
  if (k.symbolic == Symbolic::Width) sweep("width", w_min, k.w, w);
  auto x = graph::input("x", {n, k.c, h, w}, DType::int8());
  auto wt = graph::constant(
      "w", te::NDArray::random(DType::int8(), {k.o, k.c / k.groups, k.kh, k.kw}, seed, -20, 20));
  auto acc = graph::conv2d(x, wt, {.strides = {k.sh, k.sw}, .padding = k.pad, .groups = k.groups});
  const auto shape = graph::infer_type(graph::function({x}, {acc}), graph::default_ops())
                         .results()[0]
                         .type()
                         .shape;
  std::vector<graph::Expr> params{x};
  auto y = random_graphs::random_epilogue(rng, acc, k.o, 1, shape, params, seed);
  const auto fn = graph::function(params, {y});
  std::optional<graph::Module> built;
  try {
    built.emplace(graph::build(fn, graph::Target{}));
  } catch (const dlavm::Error& e) {
    FAIL(describe(k), ": ", std::string(e.what()), "\n",
         fmt::format("{}", graph::infer_type(fn, graph::default_ops())));
  }
  auto& mod = *built;
  int steps = 0;
  for (const auto& b : bindings) {
    INFO(describe(k), fmt::format(" at {}", b.empty() ? 0 : b[0].value));
    steps = random_graphs::check_module(mod, fn, b, seed, &stats.cycles);
    ++stats.runs;
  }
  ++stats.cases;
  if (steps == 1)
    ++stats.on_vta;
  else
    MESSAGE("on the host: ", describe(k), "\n",
            fmt::format("{}", graph::infer_type(fn, graph::Target{})));
}

void conv_property(int trials, std::uint64_t seed) {
  Rng rng{std::mt19937_64(seed)};
  ConvStats stats;
  for (int trial = 0; trial < trials; ++trial)
    check_conv(rng, random_conv(rng), static_cast<std::uint64_t>(trial), stats);
  const double share = static_cast<double>(stats.on_vta) / static_cast<double>(stats.cases);
  MESSAGE(fmt::format(
      "{} random convolutions ({} runs): {:.1f}% on VTA, the VTA steps at {:.1f}% of their "
      "roofline bound",
      stats.cases, stats.runs, 100 * share,
      100.0 * static_cast<double>(stats.cycles.roofline) /
          static_cast<double>(stats.cycles.cycles)));
  CHECK(share >= 0.95);
}

// Whether VTA's kernel runs a grouped convolution (graph::Layout::Kind::GroupedConvWeight):
// the groups tile whole, an output tile's groups reading whole input tiles, and the output
// tiles read exactly the data's tiles.
bool tiles_groups(const ConvCase& k) {
  const std::int64_t gi = k.c / k.groups, go = k.o / k.groups;
  if (16 % go != 0 || (16 / go * gi) % 16 != 0) return false;
  const std::int64_t per_tile = 16 / go * gi / 16;
  return (k.o + 15) / 16 * per_tile == (k.c + 15) / 16;
}

void grouped_conv_property(int trials, std::uint64_t seed) {
  Rng rng{std::mt19937_64(seed)};
  ConvStats stats;
  int tiled = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const auto k = random_grouped_conv(rng);
    const int before = stats.on_vta;
    check_conv(rng, k, static_cast<std::uint64_t>(trial), stats);
    tiled += tiles_groups(k) ? 1 : 0;
    CHECK_MESSAGE((stats.on_vta > before) == tiles_groups(k), describe(k));
  }
  MESSAGE(fmt::format(
      "{} random grouped convolutions ({} runs): {} on VTA, the VTA steps at {:.1f}% of their "
      "roofline bound",
      stats.cases, stats.runs, stats.on_vta,
      100.0 * static_cast<double>(stats.cycles.roofline) /
          static_cast<double>(stats.cycles.cycles)));
  CHECK(tiled >= trials / 2);
}

void check_network(Rng& rng, std::uint64_t seed) {
  const auto net = random_graphs::random_network(rng, seed);
  INFO("network", net.symbolic ? " over a symbolic batch:" : ":", net.layers);
  const auto& fn = net.fn;
  auto mod = graph::build(fn, graph::Target{});
  random_graphs::check_plan(mod);  // and the runs below on it equal the reference
  int steps = 0;
  for (const std::int64_t b : {std::int64_t{1}, net.max_batch}) {
    const ne::Binding binding[] = {{"batch", b}};
    steps = random_graphs::check_module(
        mod, fn, net.symbolic ? binding : std::span<const ne::Binding>{}, seed);
  }
  CHECK(steps >= 1);
}

void network_property(int trials, std::uint64_t seed) {
  Rng rng{std::mt19937_64(seed)};
  for (int trial = 0; trial < trials; ++trial)
    check_network(rng, static_cast<std::uint64_t>(trial));
}

// Random poolings (max, and averages over power-of-two windows that VTA divides by shifting)
// and dense layers with random epilogues, a third over a symbolic batch, height or row count.
void pool_and_dense_property(int trials, std::uint64_t seed) {
  Rng rng{std::mt19937_64(seed)};
  int on_vta = 0, cases = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const auto s = static_cast<std::uint64_t>(trial);
    const bool symbolic = rng(0, 2) == 0;
    std::vector<std::vector<ne::Binding>> bindings{{}};
    graph::Expr y;
    std::vector<graph::Expr> params;
    std::string what;
    if (trial % 2 == 0) {  // a pooling
      const bool max = rng.coin();
      const std::int64_t kh = max ? rng(1, 5) : std::int64_t{1} << rng(0, 2);
      const std::int64_t kw = max ? rng(1, 5) : std::int64_t{1} << rng(0, 2);
      const std::array<std::int64_t, 4> pad{rng(0, kh - 1), rng(0, kw - 1), rng(0, kh - 1),
                                            rng(0, kw - 1)};
      const std::int64_t n = rng(1, 3), c = rng(1, 48), w = rng(kw, 40), h = rng(kh, 40);
      ne::Expr nd = n, hd = h;
      if (symbolic && rng.coin()) {
        nd = ne::var("batch", 1, n);
        bindings = {{{"batch", 1}}, {{"batch", n}}};
      } else if (symbolic) {
        hd = ne::var("height", kh, h);
        bindings = {{{"height", kh}}, {{"height", h}}, {{"height", rng(kh, h)}}};
      }
      auto x = graph::input("x", {nd, c, hd, w}, DType::int8());
      params.push_back(x);
      const dlavm::host::Pool2dParams p{
          .pool_size = {kh, kw}, .strides = {rng(1, 3), rng(1, 3)}, .padding = pad};
      y = max ? graph::max_pool2d(x, p) : graph::avg_pool2d(x, p);
      if (rng.coin()) y = graph::relu(y);
      if (rng.coin()) y = graph::clip(y, {.lo = -40, .hi = static_cast<double>(rng(0, 90))});
      what = fmt::format("{} pool {}x{}x{}x{}, window {}x{}, padding {}", max ? "max" : "avg", n, c,
                         h, w, kh, kw, fmt::join(pad, " "));
    } else {  // a dense layer
      const std::int64_t m = rng(1, 40), k = rng(1, 300), out = rng(1, 300);
      ne::Expr rows = m;
      if (symbolic) {
        rows = ne::var("rows", 1, m);
        bindings = {{{"rows", 1}}, {{"rows", m}}, {{"rows", rng(1, m)}}};
      }
      auto x = graph::input("x", {rows, k}, DType::int8());
      params.push_back(x);
      auto acc = graph::dense(
          x, graph::constant("w", te::NDArray::random(DType::int8(), {out, k}, s, -20, 20)));
      y = random_graphs::random_epilogue(rng, acc, out, -1, {rows, out}, params, s);
      what = fmt::format("dense {} x {} -> {}", m, k, out);
    }
    INFO(what, symbolic ? " (symbolic)" : "");
    const auto fn = graph::function(params, {y});
    auto mod = graph::build(fn, graph::Target{});
    int steps = 0;
    for (const auto& b : bindings) steps = random_graphs::check_module(mod, fn, b, s);
    ++cases;
    on_vta += steps > 0 ? 1 : 0;
  }
  MESSAGE(fmt::format("{} random poolings and dense layers: {:.1f}% on VTA", cases,
                      100.0 * on_vta / cases));
  CHECK(on_vta == cases);
}

}  // namespace property_test

TEST_CASE("property: random single convolutions run on VTA and equal the reference") {
  property_test::conv_property(120, 25);
}

TEST_CASE("property: random grouped and depthwise convolutions run on VTA where they tile") {
  property_test::grouped_conv_property(40, 28);
}

TEST_CASE("property: random multi-layer networks equal the reference") {
  property_test::network_property(6, 26);
}

TEST_CASE("property: random poolings and dense layers run on VTA and equal the reference") {
  property_test::pool_and_dense_property(40, 27);
}

TEST_SUITE("long") {
  TEST_CASE("property (long): 400 random poolings and dense layers") {
    property_test::pool_and_dense_property(400, 2027);
  }
  TEST_CASE("property (long): 1200 random single convolutions") {
    property_test::conv_property(1200, 2025);
  }
  TEST_CASE("property (long): 400 random grouped and depthwise convolutions") {
    property_test::grouped_conv_property(400, 2028);
  }
  TEST_CASE("property (long): 60 random multi-layer networks") {
    property_test::network_property(60, 2026);
  }
}
