// The tiling search's helpers (graph/strategy/tiling.hpp) against plain loops: the divisors of
// n by trial division, the combinations against nested loops, least_cost against a scan; and
// each strategy's SRAM footprint against what lowering its default tiling allocates.
#include <dlavm/graph.hpp>
#include <dlavm/graph/strategy/tiling.hpp>
#include <dlavm/vta/program.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
using dlavm::DType;

namespace {

struct Knobs {
  std::int64_t a, b, c;
  bool operator==(const Knobs&) const = default;
};

}  // namespace

TEST_CASE("tiling: divisors are every d dividing n, ascending") {
  for (std::int64_t n = 1; n <= 300; ++n) {
    std::vector<std::int64_t> want;
    for (std::int64_t d = 1; d <= n; ++d)
      if (n % d == 0) want.push_back(d);
    CAPTURE(n);
    CHECK(graph::divisors(n) == want);
  }
}

namespace tiling_test {

// The points of a space over the knobs a, b, c, as Knobs.
std::vector<Knobs> points(const graph::KnobSpace& s) {
  std::vector<Knobs> out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto p = s.point(i);
    out.push_back({p[0], p[1], p[2]});
  }
  return out;
}

graph::KnobSpace space(std::vector<std::int64_t> as, std::vector<std::int64_t> bs,
                       std::vector<std::int64_t> cs) {
  return {{{"a", std::move(as)}, {"b", std::move(bs)}, {"c", std::move(cs)}}, {}, {}};
}

}  // namespace tiling_test

TEST_CASE("tiling: a knob space enumerates the product, the last knob fastest") {
  const std::vector<std::int64_t> as{1, 2, 7}, bs{4}, cs{2, 1};
  std::vector<Knobs> want;
  for (auto a : as)
    for (auto b : bs)
      for (auto c : cs) want.push_back({a, b, c});
  CHECK(tiling_test::points(tiling_test::space(as, bs, cs)) == want);
  CHECK(tiling_test::space(as, {}, cs).size() == 0);
}

TEST_CASE("tiling: least_cost is the first cheapest candidate that fits, as a scan finds it") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int64_t> value(1, 6);
  for (int trial = 0; trial < 200; ++trial) {
    const auto as = graph::divisors(value(rng) * 2), bs = graph::divisors(value(rng)),
               cs = graph::divisors(value(rng) + 3);
    const std::int64_t limit = value(rng) * 4;
    const auto fits = [&](const Knobs& k) { return k.a * k.b <= limit; };
    // Few distinct costs, so that ties are common and the first of equals matters.
    const auto cost = [](const Knobs& k) { return static_cast<double>((k.a + 2 * k.b + k.c) % 5); };
    std::optional<Knobs> want;
    for (auto a : as)
      for (auto b : bs)
        for (auto c : cs) {
          const Knobs k{a, b, c};
          if (fits(k) && (!want || cost(k) < cost(*want))) want = k;
        }
    CAPTURE(trial);
    const auto candidates = tiling_test::points(tiling_test::space(as, bs, cs));
    CHECK(graph::least_cost(candidates, fits, cost) == want);
    // the same search over the knob space's values
    auto s = tiling_test::space(as, bs, cs);
    const auto knobs = [](std::span<const std::int64_t> v) { return Knobs{v[0], v[1], v[2]}; };
    s.check = [&](std::span<const std::int64_t> v) {
      return fits(knobs(v)) ? std::nullopt : std::optional<std::string>("no");
    };
    s.estimate = [&](std::span<const std::int64_t> v) { return cost(knobs(v)); };
    const auto best = graph::least_cost_point(s);
    CHECK(best.has_value() == want.has_value());
    if (best) CHECK(knobs(*best) == *want);
  }
  const std::vector<Knobs> one{{1, 1, 1}};
  CHECK(!graph::least_cost(
      one, [](const Knobs&) { return false; }, [](const Knobs&) { return 0.0; }));
}

namespace tiling_test {

// The SRAM entries a lowered program allocates, per memory.
graph::SramFootprint allocated(const dlavm::vta::Program& prog) {
  graph::SramFootprint f;
  for (const auto& [buffer, slot] : prog.sram()) {
    if (slot.memory == dlavm::runtime::MemId::Acc) f.acc += slot.entries;
    if (slot.memory == dlavm::runtime::MemId::Inp) f.inp += slot.entries;
    if (slot.memory == dlavm::runtime::MemId::Wgt) f.wgt += slot.entries;
  }
  return f;
}

graph::Epilogue random_epilogue(std::mt19937_64& rng) {
  graph::Epilogue e;
  if (rng() % 2) {
    e.add_channel();
    // a bias the GEMM core adds: its weights and input row in SRAM
    if (rng() % 2) e.inputs.back().kind = graph::EpilogueInput::Kind::ChannelWeights;
  }
  if (rng() % 3 == 0) e.add_tensor(rng() % 2 ? DType::int8() : DType::int32());
  e.imm(graph::EpilogueStep::Kind::Shr, 4, dlavm::vta::Config{});
  if (rng() % 2) e.imm(graph::EpilogueStep::Kind::Max, 0, dlavm::vta::Config{});
  return e;
}

}  // namespace tiling_test

TEST_CASE("tiling: every default tiling lowers, and allocates the SRAM its footprint says") {
  // check_tiling decides on the footprint: if it undercounted (a window a row short), the
  // default tiling would overflow an SRAM in lowering; if it overcounted, tilings that fit
  // would be refused. Both are caught here, over random shapes of each strategy.
  using tiling_test::allocated;
  std::mt19937_64 rng(13);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const dlavm::vta::Env env;
  // The footprint counts every operand's block; where vta::load_acc_init loads the residual
  // into the anchor's block in place of its reset, or vta::gemm_into_acc moves a bias's GEMMs
  // into it, the kernel allocates one block per thread less for each, and exactly that.
  const auto acc_as_counted = [](std::int64_t got, std::int64_t counted, const graph::Epilogue& e,
                                 std::int64_t blocks) {
    for (std::int64_t loaded = 0; loaded <= (e.init_tensor() ? 1 : 0); ++loaded)
      for (std::int64_t moved = 0; moved <= static_cast<std::int64_t>(e.gemm_passes()); ++moved)
        if (got == counted - (loaded + moved) * blocks) return true;
    return false;
  };
  // a dense layer or batched matmul: the footprint of its default tiling as lowering allocates
  const auto check_dense = [&](const graph::DenseShape& shape, const graph::Epilogue& e,
                               const std::string& name) {
    const auto t = graph::default_dense_tiling(env, shape, e);
    const graph::DenseKernel k(env, shape, e, name);
    auto s = k.schedule(t);
    const auto f = graph::footprint(env, shape, e, t);
    const auto got = allocated(dlavm::vta::build(s, k.args(), env, name));
    CHECK(acc_as_counted(got.acc, f.acc, e, t.row_block * t.n_block * t.vthreads));
    CHECK(got.inp == f.inp);
    CHECK(got.wgt == f.wgt);
  };
  for (int trial = 0; trial < 40; ++trial) {
    CAPTURE(trial);
    const auto e = tiling_test::random_epilogue(rng);
    {
      // a third of them over a symbolic height or width (SRAM sized for its maximum)
      const std::int64_t kh = pick(1, 7), kw = pick(1, 7), sym = pick(0, 5);
      const std::int64_t h = pick(kh, 60), w = pick(kw, 60);
      const graph::Conv2dShape shape = graph::vta_conv2d_shape(
          env, {.batch = pick(1, 2),
                .in_channels = pick(1, 64),
                .height = sym == 0 ? ne::Expr(ne::var("h", kh, h)) : ne::Expr(h),
                .width = sym == 1 ? ne::Expr(ne::var("w", kw, w)) : ne::Expr(w),
                .out_channels = pick(1, 64),
                .kernel = {kh, kw},
                .strides = {pick(1, 3), pick(1, 3)},
                .padding = {pick(0, kh - 1), pick(0, kw - 1), pick(0, kh - 1), pick(0, kw - 1)}});
      const auto t = graph::default_conv2d_tiling(env, shape, e);
      const graph::Conv2dKernel k(env, shape, e, "conv", t);
      auto s = k.schedule();
      const auto f = graph::footprint(env, shape, e, t);
      const auto got = allocated(dlavm::vta::build(s, k.args(), env, "conv"));
      CHECK(acc_as_counted(got.acc, f.acc, e, t.oc_block * t.h_block * t.w_block * t.vthreads));
      CHECK(got.inp == f.inp);
      CHECK(got.wgt == f.wgt);
    }
    {
      // a batched matmul over symbolic rows, K and N (attention's), tiled for their maxima
      const auto dim = [&](const char* name, std::int64_t max) -> ne::Expr {
        return pick(0, 1) ? ne::Expr(ne::var(name, 1, max)) : ne::Expr(max);
      };
      const graph::DenseShape shape{dim("m", pick(1, 40)), dim("k", pick(1, 300)),
                                    dim("n", pick(1, 300)), pick(1, 4)};
      check_dense(shape, e, "bmm");
    }
    check_dense({pick(1, 40), pick(1, 300), pick(1, 300)}, e, "fc");
    {
      const std::int64_t kh = pick(1, 3), kw = pick(1, 3);
      graph::Epilogue pe;
      if (rng() % 2) pe.imm(graph::EpilogueStep::Kind::Max, 0, dlavm::vta::Config{});
      const graph::Pool2dShape shape{
          .batch = pick(1, 2),
          .channels = pick(1, 64),
          .height = pick(kh, 40),
          .width = pick(kw, 40),
          .window = {kh, kw},
          .strides = {pick(1, 2), pick(1, 2)},
          .padding = {pick(0, kh - 1), pick(0, kw - 1), pick(0, kh - 1), pick(0, kw - 1)}};
      const auto t = graph::default_pool2d_tiling(env, shape, pe);
      const graph::Pool2dKernel k(env, shape, pe, "pool");
      auto s = k.schedule(t);
      const auto f = graph::footprint(env, shape, pe, t);
      const auto got = allocated(dlavm::vta::build(s, k.args(), env, "pool"));
      CHECK(got.acc == f.acc);
      CHECK(got.inp == 0);
      CHECK(got.wgt == 0);
    }
  }
}
