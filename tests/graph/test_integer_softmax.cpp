// The integer softmax's stages (graph/strategy/integer_softmax.hpp) lowered onto VTA's ALU and
// run on the simulator: every probability equals runtime::integer_softmax's (the host
// reference, tested against hand-derived rows and the float softmax in tests/host), for blocks
// of random scores and of edge rows; te::evaluate of the stages agrees too.
#include <dlavm/dlavm.hpp>
#include <dlavm/vta/lower/intrinsic_calls.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <ranges>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace runtime = dlavm::runtime;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace tune = dlavm::tune;
namespace vta = dlavm::vta;
using dlavm::DType;

namespace integer_softmax_test {

// int8 scores [keys, lanes] -> the accumulator (VTA's ACC_8BIT load) -> the stages -> int8.
struct Block {
  vta::Env env;
  te::Tensor data, scores, res;
  graph::IntegerSoftmaxStages stages;

  Block(std::int64_t keys, std::int64_t lanes, double scale) {
    data = te::placeholder(te::shape(keys, lanes), DType::int8(), "data");
    scores = te::compute(
        te::shape(keys, lanes), [&](auto k, auto l) { return te::cast(env.acc_dtype, data(k, l)); },
        "scores");
    stages = graph::integer_softmax_stages(scores, host::integer_exp_for(scale), "sm");
    res = te::compute(
        te::shape(keys, lanes),
        [&](auto k, auto l) { return te::cast(env.out_dtype, stages.result(k, l)); }, "res");
  }

  vta::Program build() const {
    auto s = te::create_schedule(res);
    s[scores].set_scope(env.acc_scope);
    s[scores].pragma(s[scores].axis(0), env.dma_copy);
    for (const auto& t : stages.alu) {
      s[t].set_scope(env.acc_scope);
      s[t].pragma(s[t].axis(0), env.alu);
    }
    s[res].pragma(s[res].axis(0), env.dma_copy);
    return vta::build(s, {data, res}, env, "integer_softmax");
  }
};

// runtime::integer_softmax over the keys (dim 0) of a [keys, lanes] block.
te::NDArray reference(const te::NDArray& a, double scale) {
  te::NDArray y(DType::int8(), a.shape());
  runtime::integer_softmax(a.data().data(), y.data().data(), 1, a.shape()[0], a.shape()[1],
                           host::integer_exp_for(scale));
  return y;
}

// Causal scores of queries `m` after `before` keys, two queries of 8 heads a tile (the
// gallery's layer).
// A causal softmax of m queries after `before` keys, `groups` queries of 16 / groups lanes a
// tile.
graph::IntegerSoftmaxShape queries_a_tile(const ne::Var& m, const ne::Var& before,
                                          graph::IntegerSoftmaxPart part, std::int64_t groups,
                                          double scale) {
  return {.products = ne::simplify(ne::ceildiv(m, groups)),
          .keys = ne::Expr(before) + m,
          .lanes = 16 / groups,
          .queries = m,
          .fixed = host::integer_exp_for(scale),
          .groups = groups,
          .part = part};
}
graph::IntegerSoftmaxShape two_queries_a_tile(const ne::Var& m, const ne::Var& before,
                                              graph::IntegerSoftmaxPart part) {
  return queries_a_tile(m, before, part, 2, 0.125);
}

// The arrays of `kernel`'s program: the scores `a`, the kernel's constants (kept in
// `constants`: the masks, the GEMM core's weight tile), the result `r`.
std::vector<te::NDArray*> kernel_arrays(const graph::IntegerSoftmaxKernel& kernel, te::NDArray& a,
                                        te::NDArray& r, std::vector<te::NDArray>& constants) {
  constants = kernel.constants();
  std::vector<te::NDArray*> arrays{&a};
  for (auto& c : constants) arrays.push_back(&c);
  arrays.push_back(&r);
  return arrays;
}

// Calls gemm(f, sram) for each GEMM instruction f of `stream` (resets too), `sram` the micro-op
// buffer as the LOAD UOPs before it left it.
template <class Gemm>
void for_each_gemm(const vta::Config& config, const vta::Stream& stream, Gemm&& gemm) {
  const auto layout = config.layout();
  std::vector<dlavm::runtime::Uop> sram;
  for (const auto& f : vta::decode_all(layout, stream.insns)) {
    if (f.opcode == vta::Opcode::Load && f.memory_type == vta::MemId::Uop) {
      sram.resize(std::max<std::size_t>(sram.size(), std::size_t{f.sram_base} + f.x_size));
      for (std::uint32_t k = 0; k < f.x_size; ++k)
        sram[f.sram_base + k] = dlavm::runtime::unpack_uop(layout, stream.uops[f.dram_base + k]);
    }
    if (f.opcode == vta::Opcode::Gemm) gemm(f, std::as_const(sram));
  }
}

// The GEMM micro-ops (not resets) of `stream` by the weight entry each reads: each GEMM's
// micro-ops run over its loops.
std::map<std::uint32_t, std::uint64_t> gemm_uops_by_weight(const vta::Config& config,
                                                           const vta::Stream& stream) {
  std::map<std::uint32_t, std::uint64_t> by;
  for_each_gemm(config, stream,
                [&](const vta::InsnFields& f, const std::vector<dlavm::runtime::Uop>& sram) {
                  if (f.reset_reg) return;
                  for (std::uint32_t u = f.uop_bgn; u < f.uop_end; ++u)
                    for (std::uint32_t o = 0; o < f.iter_out; ++o)
                      for (std::uint32_t i = 0; i < f.iter_in; ++i)
                        ++by[sram[u].wgt + o * f.wgt_factor_out + i * f.wgt_factor_in];
                });
  return by;
}

// The strategy's kernel over scores [batches, m, last + m, lanes] of symbolic m (1 to 11
// queries) and last (0 to 40 cached positions), `groups` queries a tile, lowered with the keys
// no query sees skipped; run() packs a logical array, runs it on the simulator with the
// kernel's constants and unpacks the result.
struct LaneGroupKernel {
  graph::IntegerSoftmaxKernel kernel;
  std::size_t masks;  // the kernel's mask constants (0 or 1; its weight tile aside)
  vta::Program program;
  mutable vta::SimDevice dev;
  graph::Layout layout{graph::Layout::Kind::BatchedMatrix, 1, 16};

  static graph::IntegerSoftmaxShape shape_of(std::int64_t batches, std::int64_t lanes,
                                             std::int64_t groups, bool causal,
                                             graph::IntegerSoftmaxPart part, double scale = 0.25) {
    const auto m = ne::var("m", 1, 11);
    const auto last = ne::var("last", 0, 40);
    return {.products = ne::simplify(batches * ne::ceildiv(m, groups)),
            .keys = ne::Expr(last) + m,
            .lanes = lanes,
            .queries = causal ? ne::Expr(m) : 0,
            .fixed = host::integer_exp_for(scale),
            .groups = groups,
            .part = part};
  }
  static vta::Program lower(const vta::Env& env, const graph::IntegerSoftmaxKernel& kernel) {
    auto s = kernel.schedule();
    auto rewrite = kernel.skip_masked_work(s);
    graph::VtaKernel declared{std::move(s), kernel.args(), "", 0, 0, rewrite, kernel.constants()};
    return vta::Program(env, graph::lower_kernel(declared, env, "sm"));
  }
  LaneGroupKernel(const vta::Env& env, std::int64_t batches, std::int64_t lanes,
                  std::int64_t groups, std::int64_t chunk, bool causal,
                  graph::IntegerSoftmaxPart part, const graph::Epilogue& epilogue = {},
                  double scale = 0.25)
      : kernel(env, shape_of(batches, lanes, groups, causal, part, scale), chunk, "sm", epilogue),
        masks(kernel.constants().size() - (kernel.by_gemm() ? 1 : 0)),
        program(lower(env, kernel)),
        dev(env.config) {
    layout.groups = groups;
  }

  // `shape` over symbolic m and last (named so)
  LaneGroupKernel(const vta::Env& env, const graph::IntegerSoftmaxShape& shape, std::int64_t chunk)
      : kernel(env, shape, chunk, "sm"),
        masks(kernel.constants().size() - (kernel.by_gemm() ? 1 : 0)),
        program(lower(env, kernel)),
        dev(env.config) {
    layout.groups = shape.groups;
  }

  te::NDArray run(const te::NDArray& logical, std::int64_t q, std::int64_t l) const {
    auto a = graph::pack(logical, layout);
    te::NDArray r(DType::int8(), a.shape());
    std::vector<te::NDArray> constants;
    const auto arrays = kernel_arrays(kernel, a, r, constants);
    const ne::Binding bindings[] = {{"m", q}, {"last", l}};
    CHECK(program.run(dev, arrays, bindings).result.finished);
    return graph::unpack(r, layout, logical.shape());
  }
};

}  // namespace integer_softmax_test

using namespace integer_softmax_test;

TEST_CASE("integer softmax on VTA's ALU: every probability equals the host reference") {
  struct Case {
    std::int64_t keys, lanes;
    double scale;
    std::int64_t lo, hi;
  };
  for (const auto& c :
       {Case{1, 16, 0.125, -128, 127}, Case{5, 16, 0.125, -128, 127}, Case{40, 32, 0.125, -20, 20},
        Case{64, 16, 0.05, -128, 127}, Case{17, 16, 0.3, 90, 127}}) {
    CAPTURE(c.keys);
    CAPTURE(c.lanes);
    CAPTURE(c.scale);
    const Block b(c.keys, c.lanes, c.scale);
    const auto prog = b.build();
    vta::SimDevice dev(b.env.config);
    auto a = te::NDArray::random(DType::int8(), {c.keys, c.lanes},
                                 static_cast<std::uint64_t>(c.keys * 31 + c.lanes), c.lo, c.hi);
    // edge rows in lane 0 and 1: all keys equal; one maximum over the int8 minimum
    for (std::int64_t k = 0; k < c.keys; ++k) {
      a.set({k, 0}, 77);
      a.set({k, 1}, k == c.keys / 2 ? 127 : -128);
    }
    const auto want = reference(a, c.scale);
    te::NDArray r(DType::int8(), {c.keys, c.lanes});
    const auto run = prog.run(dev, {&a, &r});
    CHECK(run.result.finished);
    std::int64_t differ = 0, nonzero = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      differ += r.data()[i] != want.data()[i];
      nonzero += want.data()[i] != 0;
    }
    CHECK(differ == 0);
    CHECK(nonzero >= c.lanes);  // every row has its maximum's probability
    CHECK(te::evaluate(b.res, {{b.data, a}}) == want);
  }
}

TEST_CASE(
    "integer softmax on VTA's ALU: blocks of a leading dim, one block in the accumulator at "
    "a time") {
  // 8 blocks of 64 keys: every stage computed at the block loop, so that one block's buffers
  // are live at a time (all eight at once would not fit the accumulator)
  const std::int64_t blocks = 8, keys = 64, lanes = 16;
  const double scale = 0.125;
  const vta::Env env;
  const auto data = te::placeholder(te::shape(blocks, keys, lanes), DType::int8(), "data");
  const auto scores = te::compute(
      te::shape(blocks, keys, lanes),
      [&](auto b, auto k, auto l) { return te::cast(env.acc_dtype, data(b, k, l)); }, "scores");
  const auto st = graph::integer_softmax_stages(scores, host::integer_exp_for(scale), "sm");
  REQUIRE(st.result.shape().size() == 3);
  const auto res = te::compute(
      te::shape(blocks, keys, lanes),
      [&](auto b, auto k, auto l) { return te::cast(env.out_dtype, st.result(b, k, l)); }, "res");
  auto s = te::create_schedule(res);
  const auto block = s[res].axis(0);
  s[scores].set_scope(env.acc_scope);
  s[scores].compute_at(s[res], block);
  s[scores].pragma(s[scores].axis(0), env.dma_copy);
  for (const auto& t : st.alu) {
    s[t].set_scope(env.acc_scope);
    s[t].compute_at(s[res], block);
    s[t].pragma(s[t].axis(0), env.alu);
  }
  s[res].pragma(s[res].axis(1), env.dma_copy);
  const auto prog = vta::build(s, {data, res}, env, "integer_softmax_blocks");
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(DType::int8(), {blocks, keys, lanes}, 91);
  te::NDArray want(DType::int8(), {blocks, keys, lanes});
  runtime::integer_softmax(a.data().data(), want.data().data(), blocks, keys, lanes,
                           host::integer_exp_for(scale));
  te::NDArray r(DType::int8(), {blocks, keys, lanes});
  const auto run = prog.run(dev, {&a, &r});
  CHECK(run.result.finished);
  CHECK(r == want);
  CHECK(te::evaluate(res, {{data, a}}) == want);
  // the stages need a block of keys and lanes
  CHECK_THROWS_WITH_AS(
      graph::integer_softmax_stages(te::placeholder(te::shape(16), DType::int32(), "flat"),
                                    host::integer_exp_for(scale), "sm"),
      doctest::Contains("scores 'flat' have 1 dims"), dlavm::ShapeError);
}

TEST_CASE("integer softmax kernel: chunked passes equal the host reference, dims symbolic") {
  // one build per (lanes, causal, chunk) over a symbolic product and key count; the values
  // drawn at random, the last chunk partial or whole, the causal keys masked per product (at
  // most 6 queries, one a product: uniform tiles, masked from the kernel's constant)
  const vta::Env env;
  const auto fixed = host::integer_exp_for(0.125);
  std::uint64_t seed = 7;
  for (const bool causal : {false, true})
    for (const std::int64_t lanes : {16, 20})
      for (const std::int64_t chunk : {2, 16, 64}) {
        CAPTURE(causal);
        CAPTURE(lanes);
        CAPTURE(chunk);
        const auto products = ne::var("products", 1, 6);
        const auto keys = ne::var("keys", 0, 200);
        const graph::IntegerSoftmaxShape shape{.products = products,
                                               .keys = ne::Expr(keys) + products,
                                               .lanes = lanes,
                                               .queries = causal ? ne::Expr(products) : 0,
                                               .fixed = fixed};
        const graph::IntegerSoftmaxKernel kernel(env, shape, chunk, "sm");
        const auto prog = LaneGroupKernel::lower(env, kernel);
        vta::SimDevice dev(env.config);
        const std::int64_t tiles = (lanes + 15) / 16;
        for (const auto& pk : {std::pair{1, 0}, {3, 61}, {6, 128 - 6}, {2, 195}}) {
          const int p = pk.first, k = pk.second;  // (not bindings: Clang 14's CAPTURE)
          CAPTURE(p);
          CAPTURE(k);
          const std::int64_t n = k + p;
          auto a = te::NDArray::random(DType::int8(), {p, n, tiles, 1, 16}, seed++);
          te::NDArray r(DType::int8(), {p, n, tiles, 1, 16});
          const ne::Binding bindings[] = {{"products", p}, {"keys", k}};
          std::vector<te::NDArray*> arrays{&a};
          auto constants = kernel.constants();
          // the masks of a causal softmax (in uniform tiles: at most 6 queries, one a
          // product), the weight tile where the GEMM core forms t0 (the others: scale 1/8)
          CHECK(kernel.scores_by_gemm() == !causal);
          CHECK(constants.size() == 1u);
          for (auto& c : constants) arrays.push_back(&c);
          arrays.push_back(&r);
          const auto run = prog.run(dev, arrays, bindings);
          CHECK(run.result.finished);
          te::NDArray want(DType::int8(), {p, n, tiles, 1, 16});
          runtime::integer_softmax(a.data().data(), want.data().data(), p, n, tiles * 16, fixed,
                                   causal ? p : 0, false);
          CHECK(r == want);
        }
      }
}

// Random shapes of the whole softmax on `env`, each packed, run on the simulator with the
// kernel's constants, unpacked and compared with host::integer_softmax: random lanes, lane
// groups (from `least_groups`), batches, query and key counts (symbolic: 1 to 11 queries after
// 0 to 40 keys) and chunks of 2 to 2^`most_chunk_bits` keys; causal or not; every other shape with
// immediate steps after the probabilities (`+ 3, min 120`: a key no query sees stores 3); scales
// whose fixed point loses all, some or none of its fraction bits on the device (0.25: 92 with 8
// bits is 23 with 7; 0.05: 74 with 10 is 37 with 9; 0.3: 111 with 8). `check` sees each kernel.
// Returns the shapes run.
int random_whole_shapes(
    const vta::Env& env, std::uint64_t seed, std::int64_t least_groups,
    std::int64_t most_chunk_bits,
    const std::function<void(const LaneGroupKernel&, std::int64_t chunk, bool causal)>& check) {
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  std::uint64_t data = seed * 100;  // each shape's scores
  int runs = 0;
  // fewer shapes under the sanitizers (ten times slower), where the code is the same
  const int trials = DLAVM_TEST_SANITIZED ? 8 : 24;
  for (int trial = 0; trial < trials; ++trial) {
    const std::int64_t lanes = pick(1, 8), groups = pick(least_groups, 16 / lanes);
    const std::int64_t batches = pick(1, 2);
    const std::int64_t chunk = std::int64_t{1} << pick(1, most_chunk_bits);
    const bool causal = trial % 4 != 3;
    CAPTURE(trial);
    CAPTURE(lanes);
    CAPTURE(groups);
    CAPTURE(batches);
    CAPTURE(chunk);
    CAPTURE(causal);
    graph::Epilogue plus3;
    if (trial % 2 == 1)
      plus3.steps = {{graph::EpilogueStep::Kind::Add, 3}, {graph::EpilogueStep::Kind::Min, 120}};
    CAPTURE(plus3.steps.size());
    const double scale = std::array{0.25, 0.05, 0.3}[static_cast<std::size_t>(trial % 3)];
    CAPTURE(scale);
    const LaneGroupKernel k(env, batches, lanes, groups, chunk, causal,
                            graph::IntegerSoftmaxPart::Whole, plus3, scale);
    check(k, chunk, causal);
    for (int i = 0; i < 3; ++i) {
      const std::int64_t q = pick(1, 11), l = pick(0, 40);
      CAPTURE(q);
      CAPTURE(l);
      const auto logical = te::NDArray::random(DType::int8(), {batches, q, q + l, lanes}, data++);
      auto want = host::integer_softmax(
          logical,
          {.axis = -2, .scale = scale, .causal = causal, .queries = host::CausalQueries::Before});
      if (!plus3.steps.empty())
        for (auto& v : want.data()) v = std::min<std::int64_t>(v + 3, 120);
      CHECK(k.run(logical, q, l) == want);
      ++runs;
    }
  }
  return runs;
}

TEST_CASE("integer softmax kernel: lane groups, bit-exact with the host reference, random shapes") {
  // G queries of C lanes side by side (graph::Layout's lane groups), chunks small enough that
  // the keys only some of a block's queries see fall in two chunks (random_whole_shapes)
  const int runs = random_whole_shapes(vta::Env{}, 31, 2, 4,
                                       [](const LaneGroupKernel& k, std::int64_t, bool causal) {
                                         CHECK(k.masks == (causal ? 1u : 0u));
                                       });
  CHECK(runs == 3 * (DLAVM_TEST_SANITIZED ? 8 : 24));
}

TEST_CASE("integer softmax kernel: lane groups' mask rows, shrunk where passes loop over chunks") {
  // Four queries of 4 lanes a tile, up to 40 queries after up to 20 keys (not uniform tiles):
  // the passes' mask rows' buffers hold the 2 (G - 1) rows a pass loads and applies (6), not a
  // chunk's, in chunks of 16 and in chunks of 128, where no pass has a chunk loop and pass 3's
  // buffers hold 60 rows, not a chunk (sized by those, they would be 3). The footprint is the
  // lowering's where the passes loop (an upper bound where they do not); bit-exact.
  const vta::Env env;
  const auto m = ne::var("m", 1, 40);
  const auto last = ne::var("last", 0, 20);
  for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp})
    for (const std::int64_t chunk : {16, 128}) {
      CAPTURE(static_cast<int>(part));
      CAPTURE(chunk);
      const auto shape = queries_a_tile(m, last, part, 4, 0.25);
      const LaneGroupKernel k(env, shape, chunk);
      int masks = 0;
      std::int64_t peak = 0;
      for (const auto& [buffer, slot] : k.program.sram()) {
        peak = std::max(peak, slot.base + slot.entries);
        if (buffer->name.ends_with(".mask")) {
          CHECK(slot.entries == 6);
          ++masks;
        }
      }
      CHECK(masks == (part == graph::IntegerSoftmaxPart::Whole ? 3 : 2));
      if (chunk == 16)
        CHECK(graph::footprint(env, shape, chunk).acc == peak);
      else
        CHECK(graph::footprint(env, shape, chunk).acc >= peak);
      const host::IntegerSoftmaxParams p{
          .axis = -2, .scale = 0.25, .causal = true, .queries = host::CausalQueries::Before};
      std::uint64_t seed = 70;
      for (const auto& ql : {std::pair{40, 20}, {17, 3}, {1, 0}}) {
        const int q = ql.first, l = ql.second;  // (not bindings: Clang 14's CAPTURE)
        CAPTURE(q);
        CAPTURE(l);
        const auto logical = te::NDArray::random(DType::int8(), {1, q, q + l, 4}, seed++);
        CHECK(k.run(logical, q, l) == (part == graph::IntegerSoftmaxPart::Whole
                                           ? host::integer_softmax(logical, p)
                                           : host::integer_softmax_exp(logical, p)));
      }
    }
}

TEST_CASE(
    "integer softmax halves on VTA: each part bit-exact with its host kernel, random shapes") {
  // IntegerSoftmaxPart::Exp (the max, then each key's int8 exponential) and ::Normalize (the
  // sum, the reciprocal, then the probabilities) over random lanes, lane groups (or none),
  // batches, query and key counts (symbolic), chunks and masks, every other shape with
  // immediate steps after the result, run on the simulator and compared with
  // host::integer_softmax_exp and _normalize; the normalization also on arbitrary int8 rows,
  // not only on exponentials; the scales of the test above, in turn. Each part keeps the input
  // its first pass loads for its last (kept_chunks): in an accumulator of 64 entries, in
  // chunks of 4 keys, some of a block's chunks and not the others; there the simulator reads a
  // shift amount from a tile as Xilinx's HLS design does, its low 5 bits as a signed number, so
  // that a shift by an amount past [-16, 15] (a masked key's z, unclipped) gives other bits.
  vta::Config tiny;
  tiny.log_acc_buff_size = 12;
  tiny.variant.shr_amount = vta::ShrAmount::SignedLow;
  std::mt19937_64 rng(37);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  std::uint64_t seed = 500;
  int runs = 0;
  const int trials = DLAVM_TEST_SANITIZED ? 6 : 16;  // fewer under the sanitizers
  for (const bool small : {false, true})
    for (int trial = 0; trial < trials; ++trial)
      for (const auto part :
           {graph::IntegerSoftmaxPart::Exp, graph::IntegerSoftmaxPart::Normalize}) {
        const vta::Env env = small ? vta::Env(tiny) : vta::Env();
        // (small: two batches, not in uniform tiles, which keep nothing)
        const std::int64_t lanes = pick(1, 8), batches = small ? 2 : pick(1, 2);
        const std::int64_t groups = trial % 3 == 0 ? 1 : pick(2, 16 / lanes);
        const std::int64_t chunk = small ? 4 : std::int64_t{1} << pick(1, 4);
        const bool causal = trial % 4 != 3;
        CAPTURE(small);
        CAPTURE(trial);
        CAPTURE(static_cast<int>(part));
        CAPTURE(lanes);
        CAPTURE(groups);
        CAPTURE(batches);
        CAPTURE(chunk);
        CAPTURE(causal);
        graph::Epilogue plus3;  // every other shape: `+ 3, min 120` after the part's result
        if (trial % 2 == 1)
          plus3.steps = {{graph::EpilogueStep::Kind::Add, 3},
                         {graph::EpilogueStep::Kind::Min, 120}};
        CAPTURE(plus3.steps.size());
        const double scale = std::array{0.25, 0.05, 0.3}[static_cast<std::size_t>(trial / 3 % 3)];
        CAPTURE(scale);
        const LaneGroupKernel k(env, batches, lanes, groups, chunk, causal, part, plus3, scale);
        if (small) {  // (11 queries after 40 keys: 13 chunks)
          CHECK(k.kernel.kept_chunks() > 0);
          CHECK(k.kernel.kept_chunks() < 13);
          // (the rewrite keeps them: its kept rows allocated, not left as lowered)
          CHECK(std::ranges::any_of(k.program.sram(), [](const auto& buffer_slot) {
            return buffer_slot.first->name.ends_with(".kept");
          }));
        }
        const host::IntegerSoftmaxParams p{
            .axis = -2, .scale = scale, .causal = causal, .queries = host::CausalQueries::Before};
        for (int i = 0; i < 3; ++i) {
          // (small: most runs past the kept chunks' keys, 40 to 48)
          const std::int64_t q = pick(1, 11), l = pick(small ? 30 : 0, 40);
          CAPTURE(q);
          CAPTURE(l);
          auto logical = te::NDArray::random(DType::int8(), {batches, q, q + l, lanes}, seed++);
          if (part == graph::IntegerSoftmaxPart::Normalize && i < 2)
            logical = host::integer_softmax_exp(logical, p);
          auto want = part == graph::IntegerSoftmaxPart::Exp
                          ? host::integer_softmax_exp(logical, p)
                          : host::integer_softmax_normalize(logical, p);
          if (!plus3.steps.empty())
            for (auto& v : want.data()) v = std::min<std::int64_t>(v + 3, 120);
          CHECK(k.run(logical, q, l) == want);
          ++runs;
        }
      }
  CHECK(runs == 12 * trials);
}

TEST_CASE("integer softmax normalization: the reciprocal copied by a MAX, its reset hoisted") {
  // Pass 3 of a normalization copies the block's reciprocal R beside the chunk by a MAX, the
  // copy's buffer reset once before the chunk loop: each probability it leaves is at most R.
  // A block after one whose last chunk leaves a probability of 127 where R is 64: block 0's
  // exponentials all 0 but its last key's, 127 (R 2,048, probability 127); block 1's all 127
  // over 32 keys (sum 4,064, R 64, probabilities 4). With no reset before the loop, block 1's
  // chunk 0 would copy max(127, 64) into that row (probability 8).
  const vta::Env env;
  const LaneGroupKernel k(env, 1, 16, 1, 16, false, graph::IntegerSoftmaxPart::Normalize);
  te::NDArray e(DType::int8(), {1, 2, 32, 16});
  for (std::int64_t key = 0; key < 32; ++key)
    for (std::int64_t l = 0; l < 16; ++l) {
      e.data()[static_cast<std::size_t>(key * 16 + l)] = key == 31 ? 127 : 0;
      e.data()[static_cast<std::size_t>((32 + key) * 16 + l)] = 127;
    }
  const auto want = host::integer_softmax_normalize(e, {.axis = -2});
  REQUIRE(want.data()[31 * 16] == 127);
  REQUIRE(want.data()[(32 + 15) * 16] == 4);
  CHECK(k.run(e, 2, 30) == want);
}

TEST_CASE("integer softmax kernel: causal blocks of several query rows each") {
  // [2, M, N, 16] scores: 2 M products, query q = product % M (the floormod in the mask)
  const vta::Env env;
  const auto fixed = host::integer_exp_for(0.125);
  const auto m = ne::var("m", 1, 5);
  const auto last = ne::var("last", 0, 30);
  const graph::IntegerSoftmaxShape shape{.products = 2 * ne::Expr(m),
                                         .keys = ne::Expr(last) + m,
                                         .lanes = 16,
                                         .queries = m,
                                         .fixed = fixed};
  const graph::IntegerSoftmaxKernel kernel(env, shape, 8, "sm");
  const auto prog = LaneGroupKernel::lower(env, kernel);
  vta::SimDevice dev(env.config);
  std::uint64_t seed = 70;
  for (const auto& ql : {std::pair{1, 0}, {3, 5}, {5, 30}, {4, 12}}) {
    const int q = ql.first, l = ql.second;  // (not bindings: Clang 14's CAPTURE)
    CAPTURE(q);
    CAPTURE(l);
    const std::int64_t n = l + q;
    auto a = te::NDArray::random(DType::int8(), {2 * q, n, 1, 1, 16}, seed++);
    te::NDArray r(DType::int8(), {2 * q, n, 1, 1, 16});
    std::vector<te::NDArray> constants;
    const auto arrays = kernel_arrays(kernel, a, r, constants);
    const ne::Binding bindings[] = {{"m", q}, {"last", l}};
    CHECK(prog.run(dev, arrays, bindings).result.finished);
    te::NDArray want(DType::int8(), {2 * q, n, 1, 1, 16});
    runtime::integer_softmax(a.data().data(), want.data().data(), 2 * q, n, 16, fixed, q, false);
    CHECK(r == want);
  }
}

TEST_CASE("integer softmax kernel: the work on keys no query sees is skipped") {
  // 64 queries after no keys, chunks of 16: query p sees ceil((p + 1) / 16) of the 4 chunks,
  // 160 of the 256 chunk iterations of each pass: passes 1 and 2 skip the others, and pass 3,
  // rewritten (skip_masked_work), stores them as the epilogue of 0 (a fill of 0, or of 3
  // after `+ 3, min 120`), filled at a query's first such chunk only: the 48 after it are
  // stored again with no fill, each STORE right after the one before. Rewritten, each pass fills
  // with -32768 only the last chunk a query sees, causal or not: a softmax of 64 keys that is not
  // causal fills 1 of its 4 chunks. (An accumulator of 128 entries, which the passes all but
  // fill: rewritten, pass 3 keeps three chunks' exponentials from pass 2, the next test's rewrite,
  // a block's first.) At the scale of 0.3 (111 with 8 fraction bits), where the ALU forms
  // t0 = -s * 111 (the GEMM core does not: detail::softmax_scores_by_gemm), so that the
  // function as lowered runs as it is.
  vta::Config full;
  full.log_acc_buff_size = 13;
  const vta::Env env(full);
  const auto products = ne::var("products", 1, 64);
  const auto last = ne::var("last", 0, 64);
  const auto fixed = host::integer_exp_for(0.3);
  graph::Epilogue plus3;
  plus3.steps = {{graph::EpilogueStep::Kind::Add, 3}, {graph::EpilogueStep::Kind::Min, 120}};
  for (const auto& epilogue : {graph::Epilogue{}, plus3}) {
    CAPTURE(epilogue.steps.size());
    // non-causal, causal as lowered, causal rewritten, non-causal rewritten
    std::size_t insns[4] = {};
    std::size_t fills[4] = {};  // ADDs of -32768 (a fill is a reset and one)
    for (int k = 0; k < 4; ++k) {
      CAPTURE(k);
      const bool causal = k == 1 || k == 2;
      const graph::IntegerSoftmaxShape shape{.products = products,
                                             .keys = ne::Expr(last) + products,
                                             .lanes = 16,
                                             .queries = causal ? ne::Expr(products) : 0,
                                             .fixed = fixed};
      const graph::IntegerSoftmaxKernel kernel(env, shape, 16, "sm", epilogue);
      REQUIRE(kernel.kept_chunks() == 3);
      REQUIRE(!kernel.scores_by_gemm());
      // (as lowered, without the weight tiles of the constants the GEMM core adds: only the
      // rewrite reads them)
      REQUIRE(kernel.by_gemm());
      auto s = kernel.schedule();
      auto args = kernel.args();
      args.erase(args.end() - 2);
      const vta::Program prog = k >= 2 ? LaneGroupKernel::lower(env, kernel)
                                       : vta::Program(env, vta::lower(s, args, env, "sm"));
      vta::SimDevice dev(env.config);
      auto a = te::NDArray::random(DType::int8(), {64, 64, 1, 1, 16}, 81);
      te::NDArray r(DType::int8(), {64, 64, 1, 1, 16});
      std::vector<te::NDArray> constants;
      auto arrays = kernel_arrays(kernel, a, r, constants);
      if (k < 2) arrays.erase(arrays.end() - 2);
      const ne::Binding bindings[] = {{"products", 64}, {"last", 0}};
      const auto run = prog.run(dev, arrays, bindings);
      CHECK(run.result.finished);
      te::NDArray want(DType::int8(), {64, 64, 1, 1, 16});
      runtime::integer_softmax(a.data().data(), want.data().data(), 64, 64, 16, fixed,
                               causal ? 64 : 0, false);
      if (!epilogue.steps.empty())
        for (auto& v : want.data()) v = std::min<std::int64_t>(v + 3, 120);
      CHECK(r == want);
      insns[k] = run.instructions;
      std::vector<std::uint64_t> phys;
      for (std::size_t i = 0; i < arrays.size(); ++i) phys.push_back((i + 1) << 20);
      const auto stream =
          vta::decode_all(env.config.layout(), prog.instantiate(bindings, phys).insns);
      std::size_t restored = 0;  // STOREs right after a STORE
      for (std::size_t i = 1; i < stream.size(); ++i)
        restored +=
            stream[i].opcode == vta::Opcode::Store && stream[i - 1].opcode == vta::Opcode::Store;
      CHECK(restored == (k == 2 ? 48u : 0u));
      // t = s * -multiplier, the exponent's first ALU pass, once a key in passes 2 and 3, and
      // the reciprocal's
      // quotient bits (a MAX with -1 each, 12 a block). As lowered, a causal pass
      // 2 computes each chunk a query sees whole (16 queries see 1, 2, 3 and 4 chunks), pass 3
      // every chunk; rewritten, both the keys a query sees alone (query p: p + 1 of them), the
      // rows after them filled, and pass 3 none in the three kept first chunks (query p: p + 1 -
      // 48 of them where that is more than 0; a softmax that is not causal 16 keys).
      std::size_t exponent_rows = 0, quotient_bits = 0;
      for (const auto& i : stream) {
        const auto micro_ops = std::size_t{i.iter_out} * i.iter_in * (i.uop_end - i.uop_bgn);
        if (i.opcode != vta::Opcode::Alu || !i.use_imm) continue;
        if (i.alu_opcode == runtime::AluOp::Add && i.imm == -32768) ++fills[k];
        if (i.alu_opcode == runtime::AluOp::Mul && i.imm == -111) exponent_rows += micro_ops;
        if (i.alu_opcode == runtime::AluOp::Max && i.imm == -1) quotient_bits += micro_ops;
      }
      const std::size_t want_rows[] = {2 * 64 * 64, 16 * (1 + 2 + 3 + 4) * 16 + 64 * 64,
                                       64 * 65 / 2 + 16 * 17 / 2, 64 * 64 + 64 * 16};
      CHECK(exponent_rows == want_rows[k]);
      CHECK(quotient_bits == 12 * 64);
    }
    // the chunks skipped: 96 of 256 in each pass, each tens of instructions
    CHECK(insns[1] + 96 * 20 < insns[0]);
    CHECK(insns[2] + 96 * 20 < insns[1]);
    // the fills skipped: in 3 of 4 chunks of passes 1 and 2, for each of 64 products (pass 3 of
    // a softmax that is not causal computes only the keys it loads), and pass 1's in its last:
    // it maxes the keys it loads into running rows alone (rewritten, which start at the MIN of
    // what they held and -32768). (Both start a block's running max with a fill of -2^31, an ADD
    // of -32768 shifted left by 16.)
    CHECK(fills[0] == 64 * (4 * 2 + 1));
    CHECK(fills[3] == 64 * (1 + 1));
  }
}

// A kernel of constant dims, not causal, at the scale of 1/8, run on the simulator over packed
// scores [products, keys, lane tiles, 1, 16]: it finishes, and its probabilities are the host
// kernel's.
void check_static_kernel(const vta::Env& env, const graph::IntegerSoftmaxKernel& kernel,
                         const te::NDArray& scores) {
  const auto& shape = scores.shape();
  const std::int64_t products = shape[0], keys = shape[1], lanes = shape[2] * 16;
  vta::SimDevice dev(env.config);
  te::NDArray a = scores;
  te::NDArray r(DType::int8(), shape);
  std::vector<te::NDArray> constants;
  const auto arrays = kernel_arrays(kernel, a, r, constants);
  CHECK(LaneGroupKernel::lower(env, kernel)
            .run(dev, arrays, std::span<const ne::Binding>{})
            .result.finished);
  te::NDArray want(DType::int8(), shape);
  runtime::integer_softmax(a.data().data(), want.data().data(), products, keys, lanes,
                           host::integer_exp_for(0.125), 0, false);
  CHECK(r == want);
}

TEST_CASE("integer softmax kernel: exponentials kept for pass 3 in some chunks, bit-exact") {
  // The whole softmax computes each exponential once in the chunks whose exponentials the
  // accumulator holds beside the passes' buffers (kept_chunks): pass 3 starts from those pass 2
  // kept, and computes the others again. An accumulator of 64 entries keeps some of the chunks
  // of up to 51 keys: random shapes (random_whole_shapes) with lane groups or none, in chunks of
  // 2 and 4.
  vta::Config tiny;
  tiny.log_acc_buff_size = 12;
  random_whole_shapes(vta::Env(tiny), 47, 1, 2,
                      [](const LaneGroupKernel& k, std::int64_t chunk, bool) {
                        CHECK(k.kernel.kept_chunks() > 0);
                        // 11 queries after 40 keys
                        CHECK(k.kernel.kept_chunks() < (51 + chunk - 1) / chunk);
                      });
  vta::Config small;
  small.log_acc_buff_size = 13;
  const vta::Env env(small);
  std::uint64_t seed = 900;
  // 88 queries after no keys in chunks of 8 in 128 entries, 10 of the 11 kept (keys 0 to 79):
  // the exponent's first stage (t0 = s * -23, a GEMM of the scores by the GEMM core, no ALU
  // pass) runs once for each key a query sees in pass 1, and in passes 2 and 3 only for keys 80
  // on: 3,916 + 2 x 36 micro-ops (3 x 3,916 with no chunk kept)
  const auto products = ne::var("products", 1, 88);
  const graph::IntegerSoftmaxShape shape{.products = products,
                                         .keys = products,
                                         .lanes = 16,
                                         .queries = products,
                                         .fixed = host::integer_exp_for(0.125)};
  const graph::IntegerSoftmaxKernel kernel(env, shape, 8, "sm");
  REQUIRE(kernel.kept_chunks() == 10);
  const auto prog = LaneGroupKernel::lower(env, kernel);
  const ne::Binding bindings[] = {{"products", 88}};
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(DType::int8(), {88, 88, 1, 1, 16}, 83);
  te::NDArray r(DType::int8(), {88, 88, 1, 1, 16});
  std::vector<te::NDArray> constants;
  const auto arrays = kernel_arrays(kernel, a, r, constants);
  CHECK(prog.run(dev, arrays, bindings).result.finished);
  te::NDArray want(DType::int8(), {88, 88, 1, 1, 16});
  runtime::integer_softmax(a.data().data(), want.data().data(), 88, 88, 16,
                           host::integer_exp_for(0.125), 88, false);
  CHECK(r == want);
  const std::vector<std::uint64_t> phys{0x100000, 0x200000, 0x300000};
  // (t0 by weight tile 0; the quadratic's -c1, the exponential's first shift's -8 and the
  // probability's rounding added by the GEMM core against tiles 1 to 3, none by the ALU)
  std::size_t alu_t0 = 0, alu_adds = 0;
  const auto stream88 = prog.instantiate(bindings, phys);
  for (const auto& i : vta::decode_all(env.config.layout(), stream88.insns)) {
    const auto micro_ops = std::size_t{i.iter_out} * i.iter_in * (i.uop_end - i.uop_bgn);
    if (i.opcode == vta::Opcode::Alu && i.use_imm && i.alu_opcode == runtime::AluOp::Mul &&
        i.imm == -23)
      alu_t0 += micro_ops;
    if (i.opcode == vta::Opcode::Alu && i.use_imm && i.alu_opcode == runtime::AluOp::Add &&
        std::ranges::find(kernel.gemm_adds(), i.imm) != kernel.gemm_adds().end())
      alu_adds += micro_ops;
  }
  const auto by_weight = gemm_uops_by_weight(env.config, stream88);
  CHECK(by_weight.at(0) == 3916 + 2 * 36);
  CHECK(kernel.gemm_adds() == std::vector<std::int64_t>{-22120, -8, 1 << 14});
  CHECK(by_weight.size() == 4);
  CHECK(alu_t0 == 0);
  CHECK(alu_adds == 0);
  // pass 3 computes the kept chunks a query sees in spans of four (its four chunk buffers,
  // 32 keys): query p sees s = ceil((p + 1) / 8) chunks, min(s, 10) of them kept, each span
  // stored after it (where pass 1 keeps the scores: a STORE of all of them after the spans
  // would end as the next query's pass 1 loads into their rows, which waits for it); the chunk
  // loop stores each of the 11 - min(s, 10) others once (computed, or the epilogue of 0 of a
  // chunk it does not see). One STORE a chunk: 968; one a span: 616.
  constexpr std::size_t kSpan = 4;
  std::size_t stores = 0, want_stores = 0;
  for (const auto& i : vta::decode_all(env.config.layout(), prog.instantiate(bindings, phys).insns))
    stores += i.opcode == vta::Opcode::Store;
  for (std::size_t p = 0; p < 88; ++p) {
    const std::size_t kept_seen = std::min<std::size_t>((p + 8) / 8, 10);
    want_stores += (kept_seen + kSpan - 1) / kSpan + (11 - kept_seen);
  }
  CHECK(stores == want_stores);
  // pass 1 loads the kept chunks' scores into their kept rows, and pass 2 computes them there:
  // each query's scores loaded once for each chunk it sees, and again in pass 2 past the 9 kept
  // (query p: s chunks, s - 9 of them where that is more than 0) and in pass 3 past its kept
  // ones (10 - min(s, 9): a chunk it does not see loads nothing, but stores the epilogue of 0);
  // into the input buffer, for the GEMM core's t0 (none as ACC_8BIT)
  std::size_t score_loads = 0, want_loads = 0, acc8_loads = 0;
  for (const auto& i :
       vta::decode_all(env.config.layout(), prog.instantiate(bindings, phys).insns)) {
    // (not the load module's empty LOAD that ends the stream)
    score_loads +=
        i.opcode == vta::Opcode::Load && i.memory_type == vta::MemId::Inp && i.x_size > 0;
    acc8_loads += i.opcode == vta::Opcode::Load && i.memory_type == vta::MemId::Acc8;
  }
  CHECK(acc8_loads == 0);
  for (std::size_t p = 0; p < 88; ++p) {
    const std::size_t s = (p + 8) / 8;
    want_loads += s + 2 * (s > 10 ? s - 10 : 0);
  }
  // (and the input row the GEMM core adds the constants against, once)
  CHECK(score_loads == want_loads + 1);
  // no kernel runs over more rows than a span (32): the kept rows' reset once a block, before
  // pass 2's loop, is gone (the rows hold the scores then; pass 1 fills the last chunk a query
  // sees with 0 where it does not load them)
  std::size_t long_resets = 0;
  for (const auto& i : vta::decode_all(env.config.layout(), prog.instantiate(bindings, phys).insns))
    long_resets += i.opcode == vta::Opcode::Gemm && i.reset_reg && i.iter_out * i.iter_in > 32;
  CHECK(long_resets == 0);
  // the gallery's kernel (two queries of 8 heads a tile, chunks of 128 keys, 11 of 16 kept):
  // decode steps after 2,047 keys and at the last kept key (1,407 before) and the first past
  // them, prefills of 300 tokens after 1,000 and of 2,048 from the start (not under the
  // sanitizers, where it would take a minute)
  const LaneGroupKernel gallery(vta::Env{},
                                two_queries_a_tile(ne::var("m", 1, 2048), ne::var("last", 0, 2047),
                                                   graph::IntegerSoftmaxPart::Whole),
                                128);
  CHECK(gallery.kernel.kept_chunks() == 11);
  for (const auto& ql : {std::pair{1, 2047}, {1, 1407}, {1, 1408}, {300, 1000}, {2048, 0}}) {
    const int q = ql.first, l = ql.second;  // (not bindings: Clang 14's CAPTURE)
    if (DLAVM_TEST_SANITIZED && q == 2048) continue;
    CAPTURE(q);
    CAPTURE(l);
    const auto logical = te::NDArray::random(DType::int8(), {1, q, q + l, 8}, seed++);
    CHECK(
        gallery.run(logical, q, l) ==
        host::integer_softmax(
            logical,
            {.axis = -2, .scale = 0.125, .causal = true, .queries = host::CausalQueries::Before}));
  }
  // a constant key count of whole chunks, not causal: loaded with no fill, 10 of 11 chunks kept
  const graph::IntegerSoftmaxShape whole{
      .products = 3, .keys = 88, .lanes = 32, .fixed = host::integer_exp_for(0.125)};
  const graph::IntegerSoftmaxKernel plain(env, whole, 8, "sm");
  REQUIRE(plain.kept_chunks() == 10);
  check_static_kernel(env, plain, te::NDArray::random(DType::int8(), {3, 88, 2, 1, 16}, 84));
}

// The kernel calls of a lowered function: each call's name, its buffers' names, and the loops
// around it.
struct KernelCall {
  std::string name;
  std::vector<std::string> buffers;
  int loops = 0;
  std::int64_t alu_op = -1;  // an ALU call's operation, whether it takes an immediate, which
  bool immediate = false;
  std::int64_t imm = 0;
};
std::vector<KernelCall> kernel_calls(const dlavm::tir::Stmt& body) {
  namespace tir = dlavm::tir;
  struct Calls : tir::StmtVisitor<Calls> {
    std::vector<KernelCall> calls;
    int loops = 0;
    // (graph::detail::pair_blocks's loop over pairs of blocks counts as the one over the
    // blocks, its first block's statements alone; where it keeps that loop in an else branch,
    // for a single block, the branch is not counted)
    void visit_for(const tir::ForNode& n, const tir::Stmt&) {
      ++loops;
      const auto* blocks = n.body.as<tir::SeqNode>();
      visit(n.var.name().ends_with(".pair") && blocks != nullptr ? blocks->seq.front() : n.body);
      --loops;
    }
    void visit_if(const tir::IfThenElseNode& n, const tir::Stmt&) {
      const auto* pairs = n.then_case.as<tir::ForNode>();
      visit(n.then_case);
      if (n.else_case.defined() && (pairs == nullptr || !pairs->var.name().ends_with(".pair")))
        visit(n.else_case);
    }
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      const auto* call = n.value.as<te::CallNode>();
      if (call == nullptr) return;
      KernelCall k{call->name, {}, loops};
      for (const auto& b : call->buffers) k.buffers.push_back(b.name());
      if (call->name == vta::intrin::alu) {
        k.alu_op = vta::detail::constant_index(call->args[0]).value_or(-1);
        k.immediate = vta::detail::constant_index(call->args[1]).value_or(0) != 0;
        k.imm = vta::detail::constant_index(call->args[2]).value_or(0);
      }
      calls.push_back(std::move(k));
    }
  } calls;
  calls.visit(body);
  return calls.calls;
}

// A GEMM call of a kernel's loaded rows (t0 of the scores, the sum of the exponentials), not of
// the input row the GEMM core adds the kernel's constants against (IntegerSoftmaxKernel's
// gemm_adds).
bool rows_gemm(const KernelCall& k) {
  return k.name == vta::intrin::gemm && !k.buffers[1].ends_with(".row");
}

TEST_CASE("integer softmax kernel: the exponent's copies and the kept chunks' sums, rewritten") {
  // skip_masked_work's rewrites of the lowering's copies, read from the lowered function (the
  // tests above hold them bit-exact): the exponent's z reset once a block, outside the chunk
  // loops, in passes 2 and 3 (its copies MAXes); and a prefill's kept chunks computing
  // their exponentials in the kept rows, with no copy there, the chunk's sum added to rows that
  // are halved after the loop, from the scores pass 1 loaded there (its max from running rows,
  // halved after its loop). A decode step in uniform tiles copies its kept chunks as before.
  vta::Config small;
  small.log_acc_buff_size = 13;
  const vta::Env env(small);
  // (`keeps`: a kernel that keeps chunks, as every one here but a decode step's halves)
  const auto lowered = [&](const graph::IntegerSoftmaxShape& shape, std::int64_t chunk,
                           bool keeps = true) {
    const graph::IntegerSoftmaxKernel kernel(env, shape, chunk, "sm");
    REQUIRE((kernel.kept_chunks() > 0) == keeps);
    auto s = kernel.schedule();
    auto rewrite = kernel.skip_masked_work(s);
    graph::VtaKernel declared{std::move(s), kernel.args(), "", 0, 0, rewrite, kernel.constants()};
    return kernel_calls(graph::lower_kernel(declared, env, "sm").body);
  };
  const auto count = [](const std::vector<KernelCall>& calls, const auto& pred) {
    return std::ranges::count_if(calls, pred);
  };
  const auto ends = [](const std::string& name, std::string_view end) {
    return name.ends_with(end);
  };
  for (const bool prefill : {true, false}) {
    CAPTURE(prefill);
    // 88 queries after no keys (10 of 11 chunks of 8 kept), or at most 16 after up to 64
    const auto m = ne::var("m", 1, prefill ? 88 : 16);
    const auto last = ne::var("last", 0, prefill ? 0 : 64);
    const auto calls = lowered({.products = m,
                                .keys = ne::Expr(last) + m,
                                .lanes = 16,
                                .queries = m,
                                .fixed = host::integer_exp_for(0.125)},
                               8);
    const auto z_reset = [&](const KernelCall& k) {
      return k.name == vta::intrin::gemm_reset && ends(k.buffers[0], ".z");
    };
    // (the loop over the blocks around every call; the chunk loops inside it)
    CHECK(count(calls, [&](const KernelCall& k) { return z_reset(k) && k.loops == 1; }) == 2);
    CHECK(count(calls, [&](const KernelCall& k) { return z_reset(k) && k.loops > 1; }) == 0);
    // (in a prefill, r = t + z_down is such an ADD, in the kept rows)
    const auto copy_to_kept = [&](const KernelCall& k) {
      return k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Add) && !k.immediate &&
             ends(k.buffers[0], ".kept") && ends(k.buffers[1], ".z_down");
    };
    // the sums' rows (pass 2) and the maxima's (pass 1), each halved after its loop
    const auto halved = [&](std::string_view rows) {
      return [&, rows](const KernelCall& k) {
        return k.name == vta::intrin::alu && !k.immediate && ends(k.buffers[0], rows) &&
               ends(k.buffers[1], rows) && k.loops == 1;
      };
    };
    if (!prefill) CHECK(count(calls, copy_to_kept) == 1);
    CHECK((count(calls, halved(".sum.z_down.rows")) == 3) == prefill);  // 8 rows: three levels
    CHECK((count(calls, halved(".max.s.rows")) == 3) == prefill);
    // a prefill's pass 1 loads its kept chunks into the kept rows, and pass 2 loads past them
    // alone: the kept rows' scores are its chain's first buffer, r copied out of them (a MAX
    // into z_down), the quadratic computed in them
    // (or form their t0 there, by the GEMM core)
    const auto loads_to = [&](std::string_view buffer) {
      return count(calls, [&](const KernelCall& k) {
        return (k.name == vta::intrin::load || rows_gemm(k)) && ends(k.buffers[0], buffer);
      });
    };
    CHECK((loads_to(".max.s.kept") == 1) == prefill);
    CHECK(loads_to(".sum.s") == 1);
    const auto r_out_of_kept = [&](const KernelCall& k) {
      return k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Max) && !k.immediate &&
             ends(k.buffers[0], ".sum.z_down") && ends(k.buffers[1], ".kept");
    };
    const auto by_r = [&](const KernelCall& k) {
      return k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Mul) && !k.immediate &&
             ends(k.buffers[0], ".kept") && ends(k.buffers[1], ".sum.z_down");
    };
    // (each in the chain of the last chunk a block sees, trimmed to its keys, and the others')
    CHECK(count(calls, r_out_of_kept) == (prefill ? 2 : 0));
    CHECK(count(calls, by_r) == (prefill ? 2 : 0));
    // passes 2 and 3 take z_down = -128 z as a MIN by -128 and a multiply by z
    // (z_down_by_multiply), not as a copy of z (a reset and an ADD), z_down reset once a block,
    // outside the chunk loops (within them only the fill of a trimmed chain's end, and of a
    // chunk no query sees): u clipped to 3,071 first (z at most 23, whose shifts leave 0 of
    // the quadratic's v < 2^23), so that the first shift amount, z - 8 (added in place), needs
    // no MIN by 15
    const auto alu = [&](runtime::AluOp op, bool immediate, std::int64_t imm,
                         std::string_view dst) {
      return count(calls, [&, op, immediate, imm, dst](const KernelCall& k) {
        return k.alu_op == static_cast<std::int64_t>(op) && k.immediate == immediate &&
               (!immediate || k.imm == imm) && ends(k.buffers[0], dst);
      });
    };
    const auto down_reset = [&](const KernelCall& k) {
      return k.name == vta::intrin::gemm_reset && ends(k.buffers[0], ".z_down");
    };
    CHECK(count(calls, [&](const KernelCall& k) { return down_reset(k) && k.loops == 1; }) == 2);
    CHECK(count(calls, [&](const KernelCall& k) {
            return k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Add) && !k.immediate &&
                   ends(k.buffers[0], ".z_down") && ends(k.buffers[1], ".z");
          }) == 0);
    CHECK(alu(runtime::AluOp::Min, true, -128, ".z_down") > 0);
    CHECK(alu(runtime::AluOp::Mul, true, -128, ".z_down") == 0);
    CHECK(count(calls, [&](const KernelCall& k) {
            return k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Mul) && !k.immediate &&
                   ends(k.buffers[0], ".z_down") && ends(k.buffers[1], ".z");
          }) == alu(runtime::AluOp::Min, true, -128, ".z_down"));
    CHECK(alu(runtime::AluOp::Min, true, 3071, "") == alu(runtime::AluOp::Min, true, -128, ""));
    CHECK(alu(runtime::AluOp::Min, true, 15, ".z") == 0);
    // (the -8 added by the GEMM core where it adds the kernel's constants: not in a decode
    // step's uniform tiles)
    CHECK(count(calls,
                [&](const KernelCall& k) {
                  return k.name == vta::intrin::gemm && ends(k.buffers[0], ".z") &&
                         ends(k.buffers[1], ".row");
                }) +
              alu(runtime::AluOp::Add, true, -8, ".z") ==
          alu(runtime::AluOp::Min, true, 3071, ""));
  }
  // a normalization's pass 3 copies the reciprocal by a MAX, its buffer reset once a block,
  // outside the chunk loop (tests above hold it bit-exact)
  {
    const graph::IntegerSoftmaxKernel norm(
        env, {.products = 3, .keys = 80, .lanes = 16, .part = graph::IntegerSoftmaxPart::Normalize},
        8, "sm");
    auto s = norm.schedule();
    auto rewrite = norm.skip_masked_work(s);
    graph::VtaKernel declared{std::move(s), norm.args(), "", 0, 0, rewrite, norm.constants()};
    const auto calls = kernel_calls(graph::lower_kernel(declared, env, "sm").body);
    const auto copy_of_r = [&](const KernelCall& k) {
      return k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Max) && !k.immediate &&
             ends(k.buffers[0], ".y.e_r") && k.loops == 2;
    };
    const auto reset_of_copy = [&](const KernelCall& k, int loops) {
      return k.name == vta::intrin::gemm_reset && ends(k.buffers[0], ".y.e_r") && k.loops == loops;
    };
    CHECK(count(calls, copy_of_r) == 1);
    CHECK(count(calls, [&](const KernelCall& k) { return reset_of_copy(k, 1); }) == 1);
    CHECK(count(calls, [&](const KernelCall& k) { return reset_of_copy(k, 2); }) == 0);
    // pass 2 loads each chunk's exponentials into its kept rows (all 10 chunks kept) and adds
    // them to running rows, reset once a block and halved after its loop (8 rows: three
    // levels, then the block's sum); pass 3 loads nothing, and multiplies from the kept rows
    const auto loads_to = [&](std::string_view buffer) {
      return count(calls, [&](const KernelCall& k) {
        return k.name == vta::intrin::load && ends(k.buffers[0], buffer);
      });
    };
    CHECK(norm.kept_chunks() == 10);
    CHECK(loads_to(".sum.s.kept") == 1);
    CHECK(loads_to(".sum.s") == 0);
    CHECK(loads_to(".y.s") == 0);
    const auto on_rows = [&](const KernelCall& k) {
      return k.loops == 1 && !k.buffers.empty() && ends(k.buffers[0], ".sum.s.rows");
    };
    CHECK(count(calls, [&](const KernelCall& k) {
            return on_rows(k) && k.name == vta::intrin::gemm_reset;
          }) == 1);
    CHECK(count(calls, [&](const KernelCall& k) {
            return on_rows(k) && k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Add) &&
                   ends(k.buffers[1], ".sum.s.rows");
          }) == 3);
    // ... into the stored buffer and its second by turns (stored_by_turns): each chunk's chain
    // writes one while the STORE of the chunk before reads the other
    for (const std::string_view stored : {".y.e_r", ".y.e_r.odd"}) {
      CAPTURE(stored);
      CHECK(count(calls, [&](const KernelCall& k) {
              return k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Mul) && !k.immediate &&
                     ends(k.buffers[0], stored) && ends(k.buffers[1], ".sum.s.kept");
            }) == 1);
      CHECK(count(calls, [&](const KernelCall& k) {
              return k.name == vta::intrin::store && ends(k.buffers[0], stored);
            }) == 1);
      CHECK(count(calls, [&](const KernelCall& k) {
              return k.name == vta::intrin::gemm_reset && ends(k.buffers[0], stored) &&
                     k.loops == 1;
            }) == 1);
    }
  }
  // a causal prefill's halves leave the kept rows past a block's keys unfilled (their pass 3
  // trims its chain to those keys), where the whole softmax fills them with 0 for its sum
  for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp,
                          graph::IntegerSoftmaxPart::Normalize}) {
    CAPTURE(static_cast<int>(part));
    const auto m = ne::var("m", 1, 80);
    const auto calls = lowered({.products = m,
                                .keys = m,
                                .lanes = 16,
                                .queries = m,
                                .fixed = host::integer_exp_for(0.125),
                                .part = part},
                               8);
    // (the scores' t0 a reset and a GEMM of the kept rows, where the GEMM core forms it: the
    // whole softmax resets them for more)
    const auto into_kept = [&](std::string_view name) {
      return count(calls, [&](const KernelCall& k) {
        return k.name == name && (k.name != vta::intrin::gemm || rows_gemm(k)) &&
               ends(k.buffers[0], ".kept");
      });
    };
    CHECK((into_kept(vta::intrin::gemm_reset) > into_kept(vta::intrin::gemm)) ==
          (part == graph::IntegerSoftmaxPart::Whole));
    // (each keeps its chunks: the first pass loads them into the kept rows, or its GEMM forms
    // their t0 there)
    CHECK(into_kept(vta::intrin::load) + into_kept(vta::intrin::gemm) == 1);
    // the rows every block computes from constants alone, computed once before the blocks
    // (graph::detail::constant_rows_once): their kernels outside every loop, once for both arms
    // of the dims condition, none inside. The exponent's z_offset, q.shift x 2^7, a reset and
    // an ADD; its top, 127 x 2^15 = 64 x 2^16 - 2^15 (the exponentials') in four (a reset, an
    // ADD of 64, a shift left by 16, an ADD of -32768), 2^22 = 64 x 2^16 (the whole softmax's)
    // in three. The packed division's rows of no block (SoftmaxStageWriter::constant_rows, at
    // the schedule's root): B + 1 = -32768 x 2^16 + 1 in four, 2 x 127 x 2^12 = 8 x 2^16 - 4,096
    // in four, the pair [-2^31, 2^31 - 1] in eight (a reset of both; -32768 shifted left by 16;
    // 32,767 shifted left by 16 and 65,535 added in three).
    const auto rows = [&](std::string_view b, bool inside) {
      return count(calls, [&](const KernelCall& k) {
        return (k.name == vta::intrin::alu || k.name == vta::intrin::gemm_reset) &&
               ends(k.buffers[0], b) && (k.loops > 0) == inside;
      });
    };
    const bool exponent = part != graph::IntegerSoftmaxPart::Normalize;
    const int top = part == graph::IntegerSoftmaxPart::Exp ? 4 : exponent ? 3 : 0;
    for (const auto& expected :
         std::vector<std::pair<std::string_view, int>>{{".z_offset", exponent ? 2 : 0},
                                                       {".top", top},
                                                       {".bias_one", exponent ? 0 : 4},
                                                       {".first", exponent ? 0 : 4},
                                                       {".ends", exponent ? 0 : 8}}) {
      // (named, not bound: CAPTURE reads its argument in a lambda)
      const std::string_view b = expected.first;
      CAPTURE(b);
      CHECK(rows(b, false) == expected.second);
      CHECK(rows(b, true) == 0);
    }
    // (in uniform tiles, a decode step's few blocks, they stay in the loop over the blocks)
    const auto uniform = lowered({.products = 4,
                                  .keys = 40,
                                  .lanes = 16,
                                  .queries = 4,
                                  .fixed = host::integer_exp_for(0.125),
                                  .part = part},
                                 8, part == graph::IntegerSoftmaxPart::Whole);
    // (the packed division's rows of no block are before the blocks there too)
    const auto resets = [&](std::string_view b, bool inside) {
      return count(uniform, [&](const KernelCall& k) {
        return k.name == vta::intrin::gemm_reset && ends(k.buffers[0], b) &&
               (k.loops > 0) == inside;
      });
    };
    CHECK(resets(exponent ? ".z_offset" : ".ends", exponent) == 1);
    CHECK(resets(exponent ? ".z_offset" : ".ends", !exponent) == 0);
    // the exponentials' z_down = -128 z as a MIN by -128 and a multiply by z (z_down_by_multiply),
    // its reset once a block, outside the chunk loop; u clipped to 2,047 first, so that z needs
    // no MIN by 15 for the shift (in the kept chunks and the others, each trimmed in the last
    // chunk a block sees and whole in the others)
    if (part != graph::IntegerSoftmaxPart::Exp) continue;
    const auto alu = [&](runtime::AluOp op, bool immediate, std::string_view dst,
                         std::string_view src) {
      return count(calls, [&, op, immediate, dst, src](const KernelCall& k) {
        return k.alu_op == static_cast<std::int64_t>(op) && k.immediate == immediate &&
               ends(k.buffers[0], dst) && ends(k.buffers[1], src);
      });
    };
    CHECK(alu(runtime::AluOp::Mul, false, ".y.z_down", ".y.z") == 4);
    CHECK(alu(runtime::AluOp::Min, true, ".y.z_down", ".y.z_down") == 4);
    CHECK(alu(runtime::AluOp::Min, true, ".y.z", ".y.z") == 0);
    CHECK(alu(runtime::AluOp::Min, true, ".kept", ".kept") +
              alu(runtime::AluOp::Min, true, ".y.s", ".y.s") ==
          4);
    // (z and z_down reset once before the blocks, not once a block: outside every loop; z_down
    // reset again only for the first chunk a block does not see, its fill of 0)
    for (const std::string_view b : {".y.z", ".y.z_down"}) {
      CAPTURE(b);
      const auto resets = [&](int loops) {
        return count(calls, [&](const KernelCall& k) {
          return k.name == vta::intrin::gemm_reset && ends(k.buffers[0], b) && k.loops == loops;
        });
      };
      CHECK(resets(0) == 1);
      CHECK(resets(1) == 0);
    }
  }
  // not causal, in whole chunks (no fill, no trimmed chain): pass 1 keeps the scores' t0 as
  // well (the GEMM core's), its running rows of their min started by a MAX with 32767 (which a
  // fill gives causal kernels no more: every lane sees a score)
  const auto plain =
      lowered({.products = 3, .keys = 80, .lanes = 16, .fixed = host::integer_exp_for(0.125)}, 8);
  CHECK(count(plain, [&](const KernelCall& k) {
          return rows_gemm(k) && ends(k.buffers[0], ".max.s.kept");
        }) == 1);
  CHECK(count(plain, [&](const KernelCall& k) {
          return k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Max) && k.immediate &&
                 k.imm == 32767 && ends(k.buffers[0], ".max.s.rows") && k.loops == 1;
        }) == 1);
  CHECK(count(plain, [&](const KernelCall& k) {
          return k.alu_op == static_cast<std::int64_t>(runtime::AluOp::Max) && !k.immediate &&
                 ends(k.buffers[0], ".sum.z_down") && ends(k.buffers[1], ".kept");
        }) == 1);
}

TEST_CASE("integer softmax kernel: a sum past 2^30 divides as the host does") {
  // 4,100 equal scores: every exponential is the maximum's, 2^18, and the sum 4,100 x 2^18 is
  // past 2^30: the division's sum added back, -max(m << 31, -sum), is the sum itself, and R is
  // 0, as the host's. (A cap at 2^30, m << 30, would give the same bits: past 2^30 every
  // quotient bit is 0 and a smaller remainder keeps it so; m << 15, planted, fails the other
  // cases.)
  const vta::Env env;
  const graph::IntegerSoftmaxShape shape{
      .products = 1, .keys = 4100, .lanes = 16, .fixed = host::integer_exp_for(0.125)};
  const graph::IntegerSoftmaxKernel kernel(env, shape, 64, "sm");
  te::NDArray a(DType::int8(), {1, 4100, 1, 1, 16});
  for (auto& v : a.data()) v = 5;
  check_static_kernel(env, kernel, a);
}

TEST_CASE("integer softmax normalization: the packed division up to its largest sum") {
  // A normalization of 4,128 keys, the most whose sum of int8 exponentials stays at most 2^19
  // (past it the floor test below sees the division change): the division in one row of
  // U = P 2^11 + Q. Lanes of every exponential 127 (the largest sum, 524,256: R = 0), 0 (the sum's
  // floor, 127: R = 2,048), one 127 among zeros, random in [0, 127], and random int8 (negative ones
  // lower the sum), each probability the host kernel's (runtime::integer_softmax_normalize). Past
  // 4,128 keys the bit-serial division (the floor test below).
  const vta::Env env;
  constexpr std::int64_t keys = 4128;
  const graph::IntegerSoftmaxShape shape{.products = 2,
                                         .keys = keys,
                                         .lanes = 16,
                                         .fixed = host::integer_exp_for(0.125),
                                         .part = graph::IntegerSoftmaxPart::Normalize};
  const graph::IntegerSoftmaxKernel kernel(env, shape, 128, "sm");
  te::NDArray a(DType::int8(), {2, keys, 1, 1, 16});
  std::mt19937 rng(4128);
  std::uniform_int_distribution<int> positive(0, 127), any(-128, 127);
  auto* v = a.data().data();
  for (std::int64_t p = 0; p < 2; ++p)
    for (std::int64_t k = 0; k < keys; ++k)
      for (std::int64_t l = 0; l < 16; ++l) {
        const int kind = static_cast<int>((p * 16 + l) % 5);
        v[(p * keys + k) * 16 + l] = kind == 0   ? 127
                                     : kind == 1 ? 0
                                     : kind == 2 ? (k == l * 100 ? 127 : 0)
                                     : kind == 3 ? positive(rng)
                                                 : any(rng);
      }
  vta::SimDevice dev(env.config);
  te::NDArray r(DType::int8(), a.shape());
  // (the scores, the identity the GEMM core sums them by, the probabilities)
  REQUIRE(kernel.sums_by_gemm());
  auto identity = kernel.constants().at(0);
  te::NDArray* arrays[] = {&a, &identity, &r};
  REQUIRE(LaneGroupKernel::lower(env, kernel)
              .run(dev, arrays, std::span<const ne::Binding>{})
              .result.finished);
  te::NDArray want(DType::int8(), a.shape());
  runtime::integer_softmax_normalize(v, want.data().data(), 2, keys, 16);
  CHECK(r == want);
}

TEST_CASE("integer softmax: the multiplier's factors of two leave the exponent's bits") {
  // Every fixed point host::integer_exp_for gives, over every x = s - max of int8 scores: the
  // device's fixed point (graph::fewest_fraction_bits) gives the same z and r, so the
  // same exponentials; and it has no factor of two left above 7 fraction bits.
  int reduced = 0;
  for (std::int32_t frac_bits = 7; frac_bits <= 15; ++frac_bits)
    for (std::int32_t multiplier = 32; multiplier <= 127; ++multiplier) {
      const runtime::IntegerExp fixed{multiplier, frac_bits};
      const auto device = graph::fewest_fraction_bits(fixed);
      CAPTURE(multiplier);
      CAPTURE(frac_bits);
      CHECK((device.frac_bits == 7 || device.multiplier % 2 == 1));
      CHECK((device.multiplier << (frac_bits - device.frac_bits)) == multiplier);
      reduced += device.frac_bits < frac_bits;
      for (std::int32_t x = -255; x <= 0; ++x) {
        const auto a = runtime::detail::integer_exponent(x, fixed);
        const auto b = runtime::detail::integer_exponent(x, device);
        if (a.z != b.z || a.r != b.r) FAIL_CHECK("x = " << x << " differs");
      }
    }
  CHECK(reduced == 8 * 48);  // the even multipliers above 7 fraction bits
}

TEST_CASE("integer softmax kernel: the lane masks touch only the keys some queries do not see") {
  // 32 queries after 8 keys, two queries of 8 lanes a tile, chunks of 16: block p's second
  // query sees one key its first does not, in one chunk. Rewritten (skip_masked_work), each
  // pass that masks loads the kernel's constant whole there (a row that changes nothing, then
  // the mask), and applies it to that key's row alone; as lowered, it loads the mask's row into
  // a chunk of rows that change nothing and applies all 16. Every probability equals the host
  // reference (the lane-group tests above).
  const vta::Env env;
  const auto m = ne::var("m", 1, 32);
  const auto last = ne::var("last", 0, 8);
  for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp,
                          graph::IntegerSoftmaxPart::Normalize}) {
    CAPTURE(static_cast<int>(part));
    const graph::IntegerSoftmaxKernel kernel(env, two_queries_a_tile(m, last, part), 16, "sm");
    // the scores, the masks, the GEMM core's weight tile (t0's, or the identity the
    // normalization's sum takes), the result
    REQUIRE(kernel.args().size() == 4u);
    CHECK((part == graph::IntegerSoftmaxPart::Normalize ? kernel.sums_by_gemm()
                                                        : kernel.scores_by_gemm()));
    std::vector<std::uint64_t> phys;
    for (std::size_t a = 0; a < kernel.args().size(); ++a) phys.push_back((a + 1) << 20);
    const ne::Binding bindings[] = {{"m", 32}, {"last", 8}};
    const auto stream = vta::decode_all(
        env.config.layout(), LaneGroupKernel::lower(env, kernel).instantiate(bindings, phys).insns);
    const std::size_t masks_at = 0x200000 / env.config.acc_elem_bytes();
    std::size_t loads = 0, whole = 0, alu_uops = 0;
    for (const auto& i : stream) {
      if (i.opcode == vta::Opcode::Load && i.memory_type == vta::MemId::Acc &&
          i.dram_base >= masks_at && i.dram_base < masks_at + 2) {
        ++loads;
        whole += i.dram_base == masks_at && i.y_size == 1 && i.x_size == 2;
      }
      if (i.opcode == vta::Opcode::Alu)
        alu_uops += std::size_t{i.iter_out} * i.iter_in * (i.uop_end - i.uop_bgn);
    }
    // (the whole softmax's pass 3 starts from the exponentials pass 2 kept, and pass 2 from the
    // scores pass 1 kept, masked; the exponentials' pass 3 from those scores, the
    // normalization's from the exponentials its pass 2 kept: their first pass alone loads
    // masks)
    CHECK(kernel.kept_chunks() == 3);
    CHECK(loads == 16);  // each of the 16 blocks' first passes, once
    CHECK(whole == loads);
    MESSAGE("part ", static_cast<int>(part), ": ", alu_uops, " ALU micro-ops");
  }
}

// Causal scores of at most `most` queries m after `last` keys in one batch, `groups` queries of
// `lanes` lanes a tile (`groups` 1: one query a product): a kernel in uniform tiles.
graph::IntegerSoftmaxShape one_batch(const ne::Var& m, const ne::Var& last, std::int64_t lanes,
                                     std::int64_t groups, graph::IntegerSoftmaxPart part) {
  return {.products = ne::simplify(ne::ceildiv(m, groups)),
          .keys = ne::Expr(last) + m,
          .lanes = lanes,
          .queries = m,
          .fixed = host::integer_exp_for(0.25),
          .groups = groups,
          .part = part};
}

// `part`'s host kernel over logical scores [1, q, q + l, lanes] (a normalization's input: the
// exponentials of the scores where `exponentials`, else the scores themselves).
te::NDArray host_part(graph::IntegerSoftmaxPart part, te::NDArray& logical, double scale,
                      bool exponentials) {
  const host::IntegerSoftmaxParams p{
      .axis = -2, .scale = scale, .causal = true, .queries = host::CausalQueries::Before};
  switch (part) {
    case graph::IntegerSoftmaxPart::Exp:
      return host::integer_softmax_exp(logical, p);
    case graph::IntegerSoftmaxPart::Normalize:
      if (exponentials) logical = host::integer_softmax_exp(logical, p);
      return host::integer_softmax_normalize(logical, p);
    case graph::IntegerSoftmaxPart::Whole:
      break;
  }
  return host::integer_softmax(logical, p);
}

// The LOADs of a kernel's stream at `bindings` from its constant of `rows` rows (argument 1,
// at `phys`[1]): those of one row (the lowering's padded copy), and of two (uniform tiles: a
// window's masks and the rows that change nothing before them).
std::pair<std::size_t, std::size_t> mask_loads(const vta::Env& env, const vta::Program& prog,
                                               std::span<const ne::Binding> bindings,
                                               std::int64_t rows) {
  std::vector<std::uint64_t> phys;
  for (std::size_t a = 0; a < prog.func().params.size(); ++a) phys.push_back((a + 1) << 20);
  const std::size_t masks_at = 0x200000 / env.config.acc_elem_bytes();
  std::size_t one = 0, two = 0;
  for (const auto& i : vta::decode_all(env.config.layout(), prog.instantiate(bindings, phys).insns))
    if (i.opcode == vta::Opcode::Load && i.memory_type == vta::MemId::Acc && i.x_size > 0 &&
        i.dram_base >= masks_at && i.dram_base < masks_at + static_cast<std::size_t>(rows))
      (i.y_size == 2 ? two : one) += 1;
  return {one, two};
}

TEST_CASE(
    "integer softmax kernel: t0 by the GEMM core only where a masked key's exponential is 0") {
  // Where the GEMM core forms t0 = -s * multiplier (IntegerSoftmaxKernel::scores_by_gemm), a
  // masked key's t0 is 32,767 (a fill) or its own plus 32,768 (a lane mask), where the ALU's was
  // -32,768 times the multiplier: its exponential must still be 0. The hardest scores for that:
  // every key a query sees -128 (the least max, whose bias is least) and every other 127 (the
  // least t0 a lane mask leaves). Two batches of two queries of 8 lanes a tile (not in uniform
  // tiles), causal, in chunks of 4: the whole softmax and the exponentials equal the host
  // kernels at scales the GEMM core takes (the least z of such a key 38 at 0.6, 111 with 7
  // fraction bits) and at those it does not (0.3, 111 with 8 bits: 21; 0.69, 127 with 7: 6;
  // 0.01, 59 with 12: its shift leaves 1).
  const vta::Env env;
  const auto m = ne::var("m", 1, 11);
  const auto last = ne::var("last", 0, 40);
  for (const auto& [scale, by_gemm] : {std::pair{0.125, true},
                                       {0.05, true},
                                       {0.6, true},
                                       {0.3, false},
                                       {0.69, false},
                                       {0.01, false}})
    for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp}) {
      const double s = scale;  // (not a binding: Clang 14's CAPTURE)
      CAPTURE(s);
      CAPTURE(static_cast<int>(part));
      auto shape = one_batch(m, last, 8, 2, part);
      shape.products = ne::simplify(2 * ne::ceildiv(m, 2));
      shape.fixed = host::integer_exp_for(scale);
      const LaneGroupKernel k(env, shape, 4);
      CHECK(k.kernel.scores_by_gemm() == by_gemm);
      // (the input buffer a chunk's rows and a weight tile beside the accumulator's; and a
      // row and a tile a constant the GEMM core adds: the quadratic's -c1, the whole
      // exponential's first shift's -8 and the probability's rounding, or the int8
      // exponential's rounding)
      const std::int64_t adds = part == graph::IntegerSoftmaxPart::Whole ? 3 : 2;
      const auto sram = graph::footprint(env, shape, 4);
      CHECK(static_cast<std::int64_t>(k.kernel.gemm_adds().size()) == adds);
      CHECK(sram.inp == (by_gemm ? 4 : 0) + 1);
      CHECK(sram.wgt == (by_gemm ? 1 : 0) + adds);
      for (const auto& [q, l] : {std::pair<std::int64_t, std::int64_t>{5, 3}, {11, 40}}) {
        te::NDArray logical(DType::int8(), {2, q, q + l, 8});
        for (std::int64_t b = 0; b < 2; ++b)
          for (std::int64_t i = 0; i < q; ++i)
            for (std::int64_t j = 0; j < q + l; ++j)
              for (std::int64_t c = 0; c < 8; ++c)
                logical.set({b, i, j, c}, j <= l + i ? -128 : 127);
        const host::IntegerSoftmaxParams p{
            .axis = -2, .scale = scale, .causal = true, .queries = host::CausalQueries::Before};
        CHECK(k.run(logical, q, l) == (part == graph::IntegerSoftmaxPart::Exp
                                           ? host::integer_softmax_exp(logical, p)
                                           : host::integer_softmax(logical, p)));
      }
    }
  // the weight tile is read by the rewrite alone: a kernel lowered without it names it
  const graph::IntegerSoftmaxKernel kernel(
      env, {.products = 4, .keys = 16, .lanes = 16, .fixed = host::integer_exp_for(0.125)}, 4,
      "sm");
  REQUIRE(kernel.scores_by_gemm());
  graph::VtaKernel unrewritten{kernel.schedule(), kernel.args(), "", 0, 0, {}, kernel.constants()};
  CHECK_THROWS_WITH_AS(graph::lower_kernel(unrewritten, env, "sm"),
                       "kernel 'sm': argument 'sm_w' is read by no stage and not by the rewrite",
                       dlavm::ScheduleError);
}

TEST_CASE("integer softmax normalization: the sum by the GEMM core, the masks' chunk by the ALU") {
  // Where the GEMM core sums the int8 exponentials (IntegerSoftmaxKernel::sums_by_gemm), each
  // chunk of pass 2 loads them into the input buffer too, and a GEMM by the identity adds them
  // to the sum's running rows; the chunk whose keys the lane masks apply to keeps the ALU's ADD
  // of the masked rows, and a chunk past the kept ones loads into the accumulator only there.
  // Two batches of two queries of 8 lanes a tile (not in uniform tiles), causal, in chunks of
  // 128 (12 kept): the probabilities equal the host kernel's where every chunk is kept (11
  // queries after 40 keys) and where the masks' chunk is past them (5 after 1,700, 3 after
  // 1,530: its chunk the twelfth); nearly every key summed by the GEMM core (all but those of
  // the masks' chunks, a chunk a block at most), each loaded into the accumulator once but those
  // chunks' (by pass 2 and again by pass 3).
  const vta::Env env;
  const auto m = ne::var("m", 1, 11);
  const auto last = ne::var("last", 0, 2000);
  auto shape = one_batch(m, last, 8, 2, graph::IntegerSoftmaxPart::Normalize);
  shape.products = ne::simplify(2 * ne::ceildiv(m, 2));
  const LaneGroupKernel k(env, shape, 128);
  REQUIRE(k.kernel.sums_by_gemm());
  CHECK(!k.kernel.scores_by_gemm());
  CHECK(k.kernel.kept_chunks() == 12);
  const auto sram = graph::footprint(env, shape, 128);
  // (and the probability's rounding, 1,024, added by the GEMM core: a tile and the input row)
  CHECK(k.kernel.gemm_adds() == std::vector<std::int64_t>{1024});
  CHECK(sram.inp == 128 + 1);
  CHECK(sram.wgt == 2);
  // (the identity; the tile whose rows add 1,024 against the input row after it)
  const auto tiles = k.kernel.constants().back();
  REQUIRE(tiles.shape() == std::vector<std::int64_t>{2 * 16 + 1, 16});
  for (std::int64_t o = 0; o < 16; ++o) {
    std::int64_t added = 0;
    for (std::int64_t i = 0; i < 16; ++i) {
      CHECK(tiles.at({o, i}) == (o == i ? 1 : 0));
      added += tiles.at({16 + o, i}) * tiles.at({32, i});
    }
    CHECK(added == 1024);
  }
  const host::IntegerSoftmaxParams p{
      .axis = -2, .scale = 0.25, .causal = true, .queries = host::CausalQueries::Before};
  std::uint64_t seed = 1700;
  for (const auto& [q, l] : {std::pair<std::int64_t, std::int64_t>{11, 40}, {5, 1700}, {3, 1530}}) {
    CAPTURE(q);
    CAPTURE(l);
    // (the exponentials of random scores, then random int8, whose keys a query does not see
    // are not 0: only the masks leave them out of the sum)
    auto logical = te::NDArray::random(DType::int8(), {2, q, q + l, 8}, seed++);
    if (l == 40) logical = host::integer_softmax_exp(logical, p);
    CHECK(k.run(logical, q, l) == host::integer_softmax_normalize(logical, p));
    std::vector<std::uint64_t> phys;
    for (std::size_t a = 0; a < k.kernel.args().size(); ++a) phys.push_back((a + 1) << 24);
    const ne::Binding bindings[] = {{"m", q}, {"last", l}};
    std::uint64_t acc_rows = 0;
    const auto stream = k.program.instantiate(bindings, phys);
    for (const auto& i : vta::decode_all(env.config.layout(), stream.insns))
      if (i.opcode == vta::Opcode::Load && i.memory_type == vta::MemId::Acc8)
        acc_rows += std::uint64_t{i.y_size} * i.x_size;
    // (the sum by the identity, tile 0; the rounding by tile 1)
    const auto by_weight = gemm_uops_by_weight(env.config, stream);
    const std::uint64_t gemm = by_weight.at(0);
    // the keys each block's queries see, a block's two queries (the last block's one where q
    // is odd) in each of 2 batches
    std::uint64_t seen = 0, blocks = 0;
    for (std::int64_t q0 = 0; q0 < q; q0 += 2, blocks += 2)
      seen += 2 * static_cast<std::uint64_t>(l + std::min<std::int64_t>(q0 + 2, q));
    CHECK(by_weight.at(1) == seen);
    // (and up to 16 a block into the narrowed running rows' scratch:
    // graph::detail::narrow_running_rows)
    CHECK(gemm <= seen + blocks * 16);
    CHECK(gemm + blocks * 128 >= seen);
    CHECK(acc_rows >= seen);
    CHECK(acc_rows <= seen + blocks * 128);
  }
  // not where the ALU sums: uniform tiles (one batch), a chunk of 2 (halved in place), keys
  // that fit one chunk, the exponentials' kernel (no sum)
  CHECK(!LaneGroupKernel(env, one_batch(m, last, 8, 2, graph::IntegerSoftmaxPart::Normalize), 128)
             .kernel.sums_by_gemm());
  CHECK(!graph::IntegerSoftmaxKernel(env, shape, 2, "sm").sums_by_gemm());
  auto few = shape;
  few.keys = 64;
  few.queries = 0;
  CHECK(!graph::IntegerSoftmaxKernel(env, few, 64, "sm").sums_by_gemm());
  CHECK(graph::IntegerSoftmaxKernel(env, few, 32, "sm").sums_by_gemm());
  auto exp = shape;
  exp.part = graph::IntegerSoftmaxPart::Exp;
  CHECK(!graph::IntegerSoftmaxKernel(env, exp, 128, "sm").sums_by_gemm());
  // the identity is read by the rewrite alone: the kernel lowered without it names it
  graph::VtaKernel unrewritten{k.kernel.schedule(), k.kernel.args(), "", 0, 0, {},
                               k.kernel.constants()};
  CHECK_THROWS_WITH_AS(graph::lower_kernel(unrewritten, env, "sm"),
                       "kernel 'sm': argument 'sm_w' is read by no stage and not by the rewrite",
                       dlavm::ScheduleError);
}

TEST_CASE("integer softmax kernel: the running rows narrowed to 16, a chunk's keys 16 a row") {
  // Where a chunk loop maxes (adds) each chunk's keys into running rows and halves them once
  // after the loop (not in uniform tiles: the exponentials' max, the normalization's sum and
  // the whole softmax's both), the rows are 16 (graph::detail::narrow_running_rows): key k of a
  // chunk goes into row k mod 16 by a kernel of two loop levels, whose outer level moves the
  // source alone by 16 rows, the last chunk's 1 to 16 keys past its sixteens by a kernel whose
  // first iteration puts the chunk's first keys into 16 scratch rows, and the halving starts
  // from 16 rows. Two batches of two queries of 8 lanes a tile, causal, in chunks of 64: every
  // part equals its host kernel where the last chunk a block sees holds 16 keys or fewer, one
  // past sixteens, 15 past them and a whole chunk, after whole chunks or none (1 or 11 queries
  // after 15, 16, 31, 47, 63 and 64 keys: each block's last chunk ends where its queries do);
  // the rows take 32 accumulator rows, 16 of them the scratch (64 before).
  const vta::Env env;
  const auto m = ne::var("m", 1, 11);
  const auto last = ne::var("last", 0, 200);
  std::uint64_t seed = 4242;
  for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp,
                          graph::IntegerSoftmaxPart::Normalize}) {
    CAPTURE(static_cast<int>(part));
    auto shape = one_batch(m, last, 8, 2, part);
    shape.products = ne::simplify(2 * ne::ceildiv(m, 2));
    const LaneGroupKernel k(env, shape, 64);
    std::vector<std::int64_t> rows;
    for (const auto& [buffer, slot] : k.program.sram())
      if (buffer->name.ends_with(graph::detail::kRunningRows)) rows.push_back(slot.entries);
    // (the whole softmax's two: the max's and the sum's)
    CHECK(rows == std::vector<std::int64_t>(part == graph::IntegerSoftmaxPart::Whole ? 2 : 1,
                                            2 * graph::detail::kNarrowRows));
    for (const std::int64_t q : {1, 11})
      for (const std::int64_t l : {15, 16, 31, 47, 63, 64}) {
        CAPTURE(q);
        CAPTURE(l);
        auto logical = te::NDArray::random(DType::int8(), {2, q, q + l, 8}, seed++);
        const auto expected = host_part(part, logical, 0.25, true);
        CHECK(k.run(logical, q, l) == expected);
        // the chunks' kernels into the rows (of every key where a block sees 17 at least: the
        // keys past the whole sixteens are 1 to 16): two levels, the outer one 16 rows of the
        // source a step and none of the destination
        std::vector<std::uint64_t> phys;
        for (std::size_t a = 0; a < k.kernel.args().size(); ++a) phys.push_back((a + 1) << 24);
        const ne::Binding bindings[] = {{"m", q}, {"last", l}};
        std::size_t grouped = 0;
        for (const auto& i :
             vta::decode_all(env.config.layout(), k.program.instantiate(bindings, phys).insns))
          if ((i.opcode == vta::Opcode::Alu || (i.opcode == vta::Opcode::Gemm && !i.reset_reg)) &&
              i.dst_factor_out == 0 && i.src_factor_out == 16 && i.iter_in == 16 &&
              i.dst_factor_in == 1)
            ++grouped;
        if (q + l >= 17) CHECK(grouped > 0);
      }
  }
}

TEST_CASE("integer softmax: a constant the GEMM core adds, as a row of int8 weights") {
  // against the input row of 127 in 15 lanes and 1 in the last: every constant from the least
  // to the most 15 weights of [-128, 127] and a remainder in [0, 126] reach, none past them
  namespace detail = graph::detail;
  const auto added = [](const std::vector<std::int64_t>& w) {
    std::int64_t sum = w.back();
    for (std::size_t i = 0; i + 1 < w.size(); ++i) sum += detail::kAddUnit * w[i];
    return sum;
  };
  const std::int64_t most = 127 * 15 * 127 + 126, least = -128 * 15 * 127;
  std::mt19937_64 rng(242061);
  std::vector<std::int64_t> cs{0,    1,    126,   127,    128,    -1,   -127, -128,
                               1024, 8192, 16384, -22120, -22296, most, least};
  for (int i = 0; i < 200; ++i)
    cs.push_back(std::uniform_int_distribution<std::int64_t>(least, most)(rng));
  for (const auto c : cs) {
    CAPTURE(c);
    const auto w = detail::gemm_add_weights(c, 16);
    REQUIRE(w.has_value());
    CHECK(w->size() == 16);
    CHECK(added(*w) == c);
    for (std::size_t i = 0; i < w->size(); ++i) {
      CHECK((*w)[i] >= (i + 1 < w->size() ? -128 : 0));
      CHECK((*w)[i] <= (i + 1 < w->size() ? 127 : 126));
    }
  }
  CHECK(!detail::gemm_add_weights(most + 1, 16));
  CHECK(!detail::gemm_add_weights(least - 1, 16));
  CHECK(!detail::gemm_add_weights(1 << 22, 16));  // the quadratic's top: the ALU adds its row
}

TEST_CASE("integer softmax kernel: uniform tiles, bit-exact with the host reference") {
  // At most 8 queries after `last` keys, one batch: every block computes all N keys, and the
  // keys N - M + 1 to N - 1, which some query of some block does not see, get the masks of the
  // kernel's constant (3 x 7 rows) at a row of block p's. One query a product (16 lanes, whose
  // constant is new, and 20 in two lane tiles), the gallery's two of 8 lanes, three of 5; each
  // part; and the three ways skip_masked applies them:
  //   - 0 to 40 keys before, in chunks of 16 and 4 (chunk loops): one LOAD of two rows a block,
  //     each piece of the window then one ALU instruction; the window across the edge of chunks 0
  //     and 1 (8 queries after 12: keys 13 to 19), of several chunks of 4, at a block's start and
  //     end (8 after 0), after one query (no window), an odd count (the last block's second query
  //     absent) ending a chunk;
  //   - 0 to 8 keys before, in a chunk of 16 (no chunk loop): a LOAD of two rows in each pass;
  //   - none before, in a chunk of 8, which does not hold 2 x 7 rows: the lowering's padded copy
  //     of the masks, a LOAD of one row in each pass.
  struct Mode {
    std::int64_t most_last, chunk;
    std::vector<std::pair<int, int>> runs;  // queries, keys before
  };
  const vta::Env env;
  const auto m = ne::var("m", 1, 8);
  std::uint64_t seed = 1200;
  int trial = 0;
  for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp,
                          graph::IntegerSoftmaxPart::Normalize})
    for (const auto& [lanes, groups] : {std::pair{16, 1}, {20, 1}, {8, 2}, {5, 3}})
      for (const auto& mode :
           {Mode{40, 16, {{1, 40}, {8, 12}, {8, 0}, {5, 27}}}, Mode{40, 4, {{8, 12}, {7, 40}}},
            Mode{8, 16, {{8, 8}, {5, 3}}}, Mode{0, 8, {{8, 0}, {2, 0}}}}) {
        const std::int64_t c = lanes, g = groups;  // (not bindings: Clang 14's CAPTURE)
        CAPTURE(static_cast<int>(part));
        CAPTURE(c);
        CAPTURE(g);
        CAPTURE(mode.most_last);
        CAPTURE(mode.chunk);
        const LaneGroupKernel k(
            env, one_batch(m, ne::var("last", 0, mode.most_last), lanes, groups, part), mode.chunk);
        const auto constants = k.kernel.constants();
        REQUIRE(constants.size() == k.masks + (k.kernel.by_gemm() ? 1 : 0));
        REQUIRE(k.masks == 1);
        CHECK(constants[0].shape() == std::vector<std::int64_t>{21, 1, 16});
        for (const auto& [q, l] : mode.runs) {
          const int queries = q, before = l;  // (not bindings: Clang 14's CAPTURE)
          CAPTURE(queries);
          CAPTURE(before);
          auto logical = te::NDArray::random(DType::int8(), {1, q, q + l, lanes}, seed++);
          const auto want = host_part(part, logical, 0.25, ++trial % 2 == 0);
          CHECK(k.run(logical, q, l) == want);
          const ne::Binding bindings[] = {{"m", q}, {"last", l}};
          const auto [one, two] = mask_loads(env, k.program, bindings, 21);
          // a block's LOADs of the masks (a block: a lane tile of a product): none where the
          // window is empty
          const std::size_t blocks =
              q > 1 ? static_cast<std::size_t>((q + groups - 1) / groups * ((c + 15) / 16)) : 0;
          const std::size_t passes = part == graph::IntegerSoftmaxPart::Whole ? 3 : 2;
          CHECK(two == (mode.most_last == 40 ? blocks : mode.chunk == 16 ? passes * blocks : 0));
          CHECK(one == (mode.chunk == 8 ? passes * blocks : 0));
        }
      }
  // the gallery's decode step: two queries of 8 heads a tile, up to 16 tokens after up to 2,047
  // keys, in chunks of 64 (25 kept): the most tokens with the window across the first chunk's
  // edge (keys 51 to 65) and at the end of the context, 7 and 1 tokens
  const LaneGroupKernel gallery(env,
                                two_queries_a_tile(ne::var("m", 1, 16), ne::var("last", 0, 2047),
                                                   graph::IntegerSoftmaxPart::Whole),
                                64);
  CHECK(gallery.kernel.constants().at(0).shape() == std::vector<std::int64_t>{45, 1, 16});
  for (const auto& ql : {std::pair{16, 50}, {7, 61}, {1, 2047}, {16, 2032}}) {
    const int q = ql.first, l = ql.second;
    if (DLAVM_TEST_SANITIZED && l > 100) continue;
    CAPTURE(q);
    CAPTURE(l);
    auto logical = te::NDArray::random(DType::int8(), {1, q, q + l, 8}, seed++);
    CHECK(gallery.run(logical, q, l) ==
          host_part(graph::IntegerSoftmaxPart::Whole, logical, 0.125, false));
  }
}

// The places the body of a lowered kernel's loop over `p` reads p: in a LOAD's or a STORE's DRAM
// offset, as an affine function of p or not, and elsewhere (a loop's bounds, a condition, an
// instruction's other fields, a buffer's size); and the call arguments that are no index.
struct ProductReads {
  bool found = false;
  int dram = 0, not_affine = 0, elsewhere = 0, unknown = 0;
};
// The variable of the loop of `body` named `name`, if there is one.
std::optional<ne::Var> loop_var(const dlavm::tir::Stmt& body, const std::string& name) {
  namespace tir = dlavm::tir;
  struct Find : tir::StmtVisitor<Find> {
    std::string name;
    std::optional<ne::Var> found;
    void visit_for(const tir::ForNode& n, const tir::Stmt&) {
      if (n.var.name() == name) found = n.var;
      visit(n.body);
    }
  } find;
  find.name = name;
  find.visit(body);
  return find.found;
}

ProductReads product_reads(const dlavm::tir::Stmt& body, const ne::Var& p) {
  namespace tir = dlavm::tir;
  struct Reads : tir::StmtVisitor<Reads> {
    explicit Reads(ne::Var v) : p(std::move(v)) {}
    ne::Var p;
    ProductReads r;
    bool inside = false;
    bool reads(const ne::Expr& e) const {
      return std::ranges::any_of(ne::free_vars(e),
                                 [&](const ne::Var& v) { return v.id() == p.id(); });
    }
    void index(const ne::Expr& e) { r.elsewhere += inside && reads(e); }
    void visit_for(const tir::ForNode& n, const tir::Stmt&) {
      const bool loop = !inside && n.var.id() == p.id();
      r.found = r.found || loop;
      index(n.min);
      index(n.extent);
      const bool was = inside;
      inside = inside || loop;
      visit(n.body);
      inside = was;
    }
    void visit_allocate(const tir::AllocateNode& n, const tir::Stmt&) {
      index(n.buffer.size());
      visit(n.body);
    }
    void visit_store(const tir::StoreNode& n, const tir::Stmt&) {
      for (const auto& i : n.indices) index(i);
      r.unknown += inside;  // (the lowering leaves no store to SRAM elementwise)
    }
    void visit_attr(const tir::AttrNode& n, const tir::Stmt&) {
      index(n.value);
      visit(n.body);
    }
    void visit_if(const tir::IfThenElseNode& n, const tir::Stmt&) {
      index(n.cond);
      visit(n.then_case);
      if (n.else_case.defined()) visit(n.else_case);
    }
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      if (!inside) return;
      const auto* call = n.value.as<te::CallNode>();
      if (call == nullptr) {
        ++r.unknown;
        return;
      }
      const bool transfer = call->name == vta::intrin::load || call->name == vta::intrin::store;
      for (std::size_t k = 0; k < call->args.size(); ++k) {
        const auto i = vta::detail::index_arg(call->args[k]);
        if (!i) {
          ++r.unknown;
        } else if (reads(*i) && transfer && k == 2) {
          ++r.dram;
          r.not_affine += reads(ne::simplify(ne::substitute(*i, {{p, ne::Expr(p) + 1}}) - *i));
        } else {
          index(*i);
        }
      }
    }
  } v(p);
  v.visit(body);
  return v.r;
}

TEST_CASE(
    "integer softmax kernel: in uniform tiles, a block's instructions read it in DRAM offsets "
    "alone") {
  // The decode step's kernel (at most 16 tokens, the gallery's two queries of 8 heads a tile, and
  // one query of 16 lanes a tile), lowered and rewritten (skip_masked_work): in the body of its
  // loop over the packed products, the product is read by DRAM offsets alone, each affine in
  // it (the scores', the probabilities' and the masks' rows), so that every tile's instructions
  // are the same but for their DRAM addresses. Not so where the softmax runs more queries (32:
  // not in uniform tiles), whose blocks see keys that differ block by block.
  const vta::Env env;
  const auto last = ne::var("last", 0, 2047);
  for (const std::int64_t most : {16, 32})
    for (const auto& [lanes, groups] : {std::pair{8, 2}, {16, 1}})
      for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp,
                              graph::IntegerSoftmaxPart::Normalize}) {
        const std::int64_t c = lanes;  // (not a binding: Clang 14's CAPTURE)
        CAPTURE(most);
        CAPTURE(c);
        CAPTURE(static_cast<int>(part));
        const auto m = ne::var("m", 1, most);
        const graph::IntegerSoftmaxKernel kernel(
            env, one_batch(m, last, lanes, groups, part),
            part == graph::IntegerSoftmaxPart::Whole ? 64 : 256, "sm");
        auto s = kernel.schedule();
        const auto rewrite = kernel.skip_masked_work(s);
        const ne::Var product = s[kernel.args().back()].leaf_iter_vars()[0].var();
        graph::VtaKernel declared{std::move(s), kernel.args(),     "", 0, 0,
                                  rewrite,      kernel.constants()};
        const auto f = graph::lower_kernel(declared, env, "sm");
        // (not in uniform tiles, the blocks are taken in pairs, graph::detail::pair_blocks: the
        // product is read as its pair's loop variable)
        const auto pair = loop_var(f.body, product.name() + ".pair");
        CHECK(pair.has_value() == (most == 32));
        const auto reads = product_reads(f.body, pair ? *pair : product);
        CHECK(reads.found);
        CHECK(reads.unknown == 0);
        CHECK(reads.not_affine == 0);
        CHECK(reads.dram > 0);
        CHECK((reads.elsewhere == 0) == (most == 16));
      }
}

TEST_CASE("integer softmax kernel: a causal prefill's blocks in pairs, p and P - 1 - p") {
  // graph::detail::pair_blocks, read from the instantiated stream: the blocks in the order of
  // their first STORE (the result's DRAM rows [P, N, tiles, 1, BLOCK_OUT], a block N rows of
  // its one tile of two queries of 8 lanes), each block once. Not in uniform tiles (16 queries at
  // most: the natural order), and one block alone in the loop as the lowering wrote it.
  const vta::Env env;
  for (const std::int64_t most : {16, 40})
    for (const std::int64_t tokens : {1, 2, 9, 10, 16}) {
      CAPTURE(most);
      CAPTURE(tokens);
      const auto m = ne::var("m", 1, most);
      const auto last = ne::var("last", 0, 8);
      const auto shape = one_batch(m, last, 8, 2, graph::IntegerSoftmaxPart::Exp);
      const graph::IntegerSoftmaxKernel kernel(env, shape, 8, "sm");
      // the scores, the masks, the weight tile (not in uniform tiles: at most 40 queries), the
      // result
      REQUIRE(kernel.scores_by_gemm() == (most == 40));
      REQUIRE(kernel.args().size() == (most == 40 ? 4u : 3u));
      std::vector<std::uint64_t> phys;
      for (std::size_t a = 0; a < kernel.args().size(); ++a) phys.push_back((a + 1) << 20);
      const vta::Program prog = LaneGroupKernel::lower(env, kernel);
      const std::int64_t before = 3, products = (tokens + 1) / 2, keys = before + tokens;
      const ne::Binding at[] = {{"m", tokens}, {"last", before}};
      const auto insns = vta::decode_all(env.config.layout(), prog.instantiate(at, phys).insns);
      const std::uint64_t result = phys.back() / env.config.out_elem_bytes();
      std::vector<std::int64_t> order;
      std::map<std::int64_t, int> stores;  // (each block's: the middle one of an odd P once)
      for (const auto& i : insns) {
        if (i.opcode != vta::Opcode::Store) continue;
        const auto block = static_cast<std::int64_t>((i.dram_base - result) / keys);
        if (std::ranges::find(order, block) == order.end()) order.push_back(block);
        ++stores[block];
      }
      const int per_block = stores.begin()->second;
      CHECK(std::ranges::all_of(stores, [&](const auto& b) { return b.second == per_block; }));
      std::vector<std::int64_t> expected;
      const std::int64_t half = (products + 1) / 2;
      for (std::int64_t p = 0; p < half; ++p) {
        expected.push_back(p);
        if (most > 16 && products - 1 - p > p) expected.push_back(products - 1 - p);
      }
      if (most <= 16)
        for (std::int64_t p = half; p < products; ++p) expected.push_back(p);
      CHECK(order == expected);
    }
}

namespace {

// A causal prefill of 40 queries after 3 keys, two queries a tile of 8 lanes, in chunks of 8
// keys: `part`'s kernel lowered, its accumulator slots by buffer name, and its instantiated
// stream, decoded.
struct CausalPrefill {
  static constexpr std::int64_t chunk = 8, queries = 40, before = 3, keys = before + queries;
  static constexpr std::int64_t chunks = (keys + chunk - 1) / chunk;
  vta::Env env;
  graph::IntegerSoftmaxKernel kernel;
  vta::Program prog;
  std::map<std::string, vta::SramSlot> slots;
  vta::Stream stream;
  explicit CausalPrefill(graph::IntegerSoftmaxPart part)
      : kernel(env, one_batch(ne::var("m", 1, 40), ne::var("last", 0, 8), 8, 2, part), chunk, "sm"),
        prog(LaneGroupKernel::lower(env, kernel)) {
    for (const auto& [buffer, slot] : prog.sram()) slots.emplace(buffer->name, slot);
    std::vector<std::uint64_t> phys;
    for (std::size_t a = 0; a < kernel.args().size(); ++a) phys.push_back((a + 1) << 20);
    const ne::Binding at[] = {{"m", queries}, {"last", before}};
    stream = prog.instantiate(at, phys);
  }
  // The chunks block p (queries 2p and 2p + 1) sees: before + 2p + 2 keys.
  static std::int64_t seen(std::int64_t p) {
    return std::min(chunks, (before + (2 * p) + 2 + chunk - 1) / chunk);
  }
};

}  // namespace

TEST_CASE("integer softmax kernel: a causal normalization's stored buffers, reset where needed") {
  // Pass 3 stores its chunks from two buffers by turns, x (chunks 0, 2, ...) and odd. Read from
  // the instantiated stream (each GEMM reset's entries, from the micro-ops it runs):
  //   - a buffer is reset once a block (for the reciprocal's copy by a MAX) only where its
  //     first chunk is not the block's last seen one, which resets it whole anyway: x where the
  //     block sees 2 chunks or more, odd 3 (skip_masked's stored_by_turns);
  //   - the first chunk the block does not see fills (resets) the buffer its last seen chunk
  //     did not store from, so that it does not wait for that STORE;
  //   - both live through the block's passes (graph::detail::stored_at_block_level): no buffer
  //     of pass 2 shares their entries, whose first writes would wait for the block before's
  //     STOREs of unseen chunks.
  const CausalPrefill k(graph::IntegerSoftmaxPart::Normalize);
  REQUIRE(k.slots.contains("sm.y.e_r"));
  REQUIRE(k.slots.contains("sm.y.e_r.odd"));
  const auto x = k.slots.at("sm.y.e_r"), odd = k.slots.at("sm.y.e_r.odd");
  for (const auto& [name, slot] : k.slots)
    if (name.starts_with("sm.sum.")) {
      CAPTURE(name);
      CHECK((slot.base + slot.entries <= x.base || x.base + x.entries <= slot.base));
      CHECK((slot.base + slot.entries <= odd.base || odd.base + odd.entries <= slot.base));
    }
  int x_resets = 0, odd_resets = 0;
  for_each_gemm(k.env.config, k.stream,
                [&](const vta::InsnFields& f, const std::vector<dlavm::runtime::Uop>& sram) {
                  if (!f.reset_reg) return;
                  std::set<std::int64_t> entries;
                  for (std::uint32_t u = f.uop_bgn; u < f.uop_end; ++u)
                    for (std::uint32_t o = 0; o < f.iter_out; ++o)
                      for (std::uint32_t i = 0; i < f.iter_in; ++i)
                        entries.insert(sram[u].dst + o * f.dst_factor_out + i * f.dst_factor_in);
                  x_resets += entries.contains(x.base) ? 1 : 0;
                  odd_resets += entries.contains(odd.base) ? 1 : 0;
                });
  int want_x = 0, want_odd = 0;
  for (std::int64_t p = 0; p < CausalPrefill::queries / 2; ++p) {
    const std::int64_t seen = CausalPrefill::seen(p);
    const bool last_in_x = seen % 2 == 1, unseen = seen < CausalPrefill::chunks;
    want_x += (seen > 1 ? 1 : 0) + (last_in_x ? 1 : 0) + (unseen && !last_in_x ? 1 : 0);
    want_odd += (seen > 2 ? 1 : 0) + (last_in_x ? 0 : 1) + (unseen && last_in_x ? 1 : 0);
  }
  CHECK(x_resets == want_x);
  CHECK(odd_resets == want_odd);
}

TEST_CASE("integer softmax kernel: the exponentials store the chunks a block does not see apart") {
  // The first chunk a block does not see is filled with 0 and stored, and the chunks after it
  // stored again from there: from z's buffer (reset once before the blocks, so that it may hold
  // 0 whenever a chain starts), not the one the block's last seen chunk stored its
  // exponentials from, whose STORE the fill would wait for. Read from the instantiated stream:
  // the STOREs from each buffer, against the chunks each block sees.
  const CausalPrefill k(graph::IntegerSoftmaxPart::Exp);
  REQUIRE(k.slots.contains("sm.y.z_down"));
  REQUIRE(k.slots.contains("sm.y.z"));
  const auto e8 = k.slots.at("sm.y.z_down"), z = k.slots.at("sm.y.z");
  int from_e8 = 0, from_z = 0;
  for (const auto& f : vta::decode_all(k.env.config.layout(), k.stream.insns)) {
    if (f.opcode != vta::Opcode::Store) continue;
    from_e8 += f.sram_base == e8.base ? 1 : 0;
    from_z += f.sram_base == z.base ? 1 : 0;
  }
  std::int64_t seen_chunks = 0;
  for (std::int64_t p = 0; p < CausalPrefill::queries / 2; ++p)
    seen_chunks += CausalPrefill::seen(p);
  CHECK(from_e8 == seen_chunks);
  CHECK(from_z == (CausalPrefill::queries / 2) * CausalPrefill::chunks - seen_chunks);
}

// A measure of the estimate, not of memory safety: the normal build runs it (17 s of the
// sanitized suite).
TEST_CASE("integer softmax knob: the estimate's chunk is within 3% of the fastest on the model" *
          doctest::skip(DLAVM_TEST_SANITIZED)) {
  // Causal scores of up to 256 queries after up to 256 keys, in two lane groups: each part's
  // chunks that fit, their VTA cycles (vta::CycleModel) summed over prefills of every query
  // after 0, 128 and 256 keys. The estimate is fitted at 2,048 keys (docs/performance.md), so
  // this is a shape it was not fitted to; the largest chunk that fits, the choice before it
  // counted the keys a causal block skips, is 24% to 55% slower here.
  const vta::Env env;
  const auto m = ne::var("m", 1, 256);
  const auto last = ne::var("last", 0, 256);
  for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp,
                          graph::IntegerSoftmaxPart::Normalize}) {
    CAPTURE(static_cast<int>(part));
    const auto shape = two_queries_a_tile(m, last, part);
    const auto space = graph::knob_space(env, shape);
    const auto chosen = graph::Chooser().choose({}, space).values.at(0);
    std::map<std::int64_t, std::uint64_t> cycles;
    for (const auto chunk : space.knobs[0].values) {
      if (chunk < 16 || space.check(std::vector<std::int64_t>{chunk})) continue;
      const graph::IntegerSoftmaxKernel kernel(env, shape, chunk, "sm");
      const auto prog = LaneGroupKernel::lower(env, kernel);
      const std::vector<std::uint64_t> phys(kernel.args().size(), 0x100000);
      for (const std::int64_t before : {0, 128, 256}) {
        const ne::Binding bindings[] = {{"m", 256}, {"last", before}};
        const auto stream = prog.instantiate(bindings, phys);
        cycles[chunk] += vta::CycleModel(env.config)
                             .run(vta::decode_all(env.config.layout(), stream.insns))
                             .total_cycles;
      }
    }
    REQUIRE(cycles.contains(chosen));
    // (not `cycles | std::views::values`, which Clang 14 cannot take from libstdc++ 12)
    const auto fastest =
        std::ranges::min_element(cycles, {}, [](const auto& c) { return c.second; })->second;
    const auto largest = cycles.rbegin()->second;
    MESSAGE("part ", static_cast<int>(part), ": chunk ", chosen, " ", cycles[chosen],
            " cycles, the fastest ", fastest, ", the largest chunk ", largest);
    CHECK(static_cast<double>(cycles[chosen]) <= 1.03 * static_cast<double>(fastest));
  }
  // The gallery's layer, up to 2,048 queries after up to 2,047 keys: for the whole softmax 64
  // keys (26 of 32 chunks' exponentials kept, estimated 3.8% below 128, which keeps 10 of 16);
  // for the exponentials 128 keys (12 of 16 chunks' scores kept; 35.96 M cycles in the
  // 2,048-token prefill, 256: 36.24 M, 4 of 8 kept, estimated 0.24% below, within the 0.5% of
  // the least whose smallest chunk the exponentials take); for the normalization,
  // whose exponentials are loaded, not computed, 128 keys (12 of 16 chunks' exponentials kept;
  // 16.46 M cycles, 64: 16.54 M, 28 of 32 kept, estimated 0.4% above, a tie, so the larger; 256:
  // 17.58 M, 4 of 8 kept, estimated 7% above: within 2% of the least the largest chunk would be
  // taken, a decode step's stream then having fewer instructions to rewrite).
  const auto token = ne::var("token", 1, 2048);
  const auto before = ne::var("last_token", 0, 2047);
  for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp,
                          graph::IntegerSoftmaxPart::Normalize}) {
    CAPTURE(static_cast<int>(part));
    const auto space = graph::knob_space(env, two_queries_a_tile(token, before, part));
    CHECK(graph::Chooser().choose({}, space).values.at(0) ==
          std::array{64, 128, 128}[static_cast<std::size_t>(part)]);
  }
}

TEST_CASE("integer softmax kernel: what it cannot run is an error naming the kernel") {
  const vta::Env env;
  const auto fixed = host::integer_exp_for(0.125);
  vta::Config two_rows;
  two_rows.log_batch = 1;
  CHECK_THROWS_WITH_AS(
      graph::IntegerSoftmaxKernel(vta::Env(two_rows),
                                  {.products = 1, .keys = 4, .lanes = 16, .fixed = fixed}, 4, "sm"),
      "integer_softmax 'sm': VTA's BATCH is 2; the kernel puts one key in each accumulator row "
      "(BATCH 1)",
      dlavm::ValueError);
  const auto many = ne::var("many", 1, 9000);
  CHECK_THROWS_WITH_AS(
      graph::IntegerSoftmaxKernel(env, {.products = 1, .keys = many, .lanes = 16, .fixed = fixed},
                                  256, "sm"),
      "integer_softmax 'sm': many keys (at most 9000); at most 8191 keep the sum of the "
      "exponentials in 32 bits",
      dlavm::ShapeError);
  // the knob space stops at the most keys the sum holds, and no chunk passes
  const auto space = graph::knob_space(env, {.products = 1, .keys = many, .lanes = 16});
  CHECK(space.knobs[0].values.back() == 8192);
  CHECK(!graph::least_cost_point(space));
  CHECK_THROWS_WITH_AS(
      graph::IntegerSoftmaxKernel(env, {.products = 1, .keys = 4, .lanes = 16, .fixed = {200, 9}},
                                  4, "sm"),
      "integer_softmax 'sm': the exponent's fixed point has multiplier 200 and 9 fraction bits; "
      "host::integer_exp_for gives a multiplier in [32, 127] and 7 to 15 bits",
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      graph::IntegerSoftmaxKernel(env, {.products = 1, .keys = 4, .lanes = 16, .fixed = fixed}, 6,
                                  "sm"),
      "integer_softmax 'sm': a chunk of 6 keys is not a power of two of at least 2",
      dlavm::ScheduleError);
}

TEST_CASE("integer softmax kernel: the footprint is the accumulator the lowering allocates") {
  const vta::Env env;
  // with lane groups (two queries of 8 lanes a tile), a causal one's mask rows beside each
  // pass's chunk
  // each part's too (the exponentials: a chunk of scores and its max's rows; the normalization:
  // a chunk, its sums and the reciprocal's steps)
  // (2 products: one batch, a causal one in uniform tiles; 4: two batches, not, where the
  // halves keep chunks and the normalization stores by turns)
  for (const auto part : {graph::IntegerSoftmaxPart::Whole, graph::IntegerSoftmaxPart::Exp,
                          graph::IntegerSoftmaxPart::Normalize})
    for (const std::int64_t products : {2, 4})
      for (const std::int64_t groups : {1, 2})
        for (const auto& keys_chunk :
             {std::pair{40, 16}, {300, 128}, {2048, 256}, {64, 64}, {2048, 128}}) {
          // (not bindings: CAPTURE reads its argument in a lambda, which cannot capture a binding
          // in Clang before 16)
          const int keys = keys_chunk.first, chunk = keys_chunk.second;
          CAPTURE(static_cast<int>(part));
          CAPTURE(products);
          CAPTURE(groups);
          CAPTURE(keys);
          CAPTURE(chunk);
          // the last: not causal, whole chunks (loaded with no fill)
          const graph::IntegerSoftmaxShape shape{
              .products = products,
              .keys = keys,
              .lanes = 16 / groups,
              .queries = keys == 2048 && chunk == 128 ? 0 : 2 * groups,
              .fixed = {},
              .groups = groups,
              .part = part};
          const graph::IntegerSoftmaxKernel kernel(env, shape, chunk, "sm");
          const auto prog = LaneGroupKernel::lower(env, kernel);  // the chunks' exponentials kept
          std::int64_t peak = 0, inp = 0, wgt = 0;
          for (const auto& [buffer, slot] : prog.sram()) {
            auto& top = slot.memory == runtime::MemId::Inp   ? inp
                        : slot.memory == runtime::MemId::Wgt ? wgt
                                                             : peak;
            top = std::max(top, slot.base + slot.entries);
          }
          const auto f = graph::footprint(env, shape, chunk);
          // (above it where the keys fit one chunk with lane groups, not in uniform tiles: the
          // mask rows counted a chunk's, which the pass with no chunk loop shrinks to 2 (G - 1))
          if (products == 4 && groups > 1 && keys <= chunk)
            CHECK(f.acc >= peak);
          else
            CHECK(f.acc == peak);
          // (the GEMM core's input: a chunk of scores for t0, the normalization's chunks apart)
          CHECK(f.inp == inp);
          CHECK(f.wgt == wgt);
          const bool rows = kernel.scores_by_gemm() || kernel.sums_by_gemm();
          const auto adds = static_cast<std::int64_t>(kernel.gemm_adds().size());
          CHECK(wgt == (rows ? 1 : 0) + adds);
          CHECK(inp == (rows ? chunk : 0) + (adds > 0 ? 1 : 0));
          // (none in uniform tiles: one batch, causal; two where the exponent's -c1 and a
          // rounding are added, three where the whole exponential's first shift's -8 is too,
          // one where the normalization's rounding is)
          const bool uniform = products == 2 && !(keys == 2048 && chunk == 128);
          CHECK(adds == (uniform                                        ? 0
                         : part == graph::IntegerSoftmaxPart::Normalize ? 1
                         : part == graph::IntegerSoftmaxPart::Whole     ? 3
                                                                        : 2));
        }
  // the default chunk for 2048 keys, not causal: 64, whose chunk buffers leave room for 27 of
  // the 32 chunks' scores and exponentials kept (32 keeps 59 of 64, 128 11 of 16, 256 3 of 8;
  // 512 keys would need 2,057 entries), also the fastest on the cycle model (121,732 cycles; 32:
  // 122,069; 128: 129,700; 256: 149,716).
  const graph::IntegerSoftmaxShape wide{.products = 1, .keys = 2048, .lanes = 16};
  const auto space = graph::knob_space(env, wide);
  CHECK(graph::Chooser().choose({}, space).values == std::vector<std::int64_t>{64});
  CHECK(graph::IntegerSoftmaxKernel(env, wide, 32, "sm").kept_chunks() == 59);
  CHECK(graph::IntegerSoftmaxKernel(env, wide, 64, "sm").kept_chunks() == 27);
  CHECK(graph::IntegerSoftmaxKernel(env, wide, 128, "sm").kept_chunks() == 11);
  CHECK(graph::IntegerSoftmaxKernel(env, wide, 256, "sm").kept_chunks() == 3);
  // the halves keep fewer chunk buffers (three each), and fit a chunk twice as wide; the
  // exponentials keep the scores of 12 chunks of 128 keys beside them, 4 of 256 (69,858 cycles,
  // the fastest, estimated within 0.5% of 256, 70,210, the least estimate: their ties take the
  // smaller; 512: 72,826, none kept); the normalization its input likewise (25,427 cycles; 128:
  // 24,503, estimated within the 2% its ties take the larger in; 512: 30,409, none kept)
  for (const auto& [part, chosen] : {std::pair{graph::IntegerSoftmaxPart::Exp, 128},
                                     {graph::IntegerSoftmaxPart::Normalize, 256}}) {
    auto half = wide;
    half.part = part;
    CHECK(graph::Chooser().choose({}, graph::knob_space(env, half)).values ==
          std::vector<std::int64_t>{chosen});
  }
  CHECK(*space.check(std::vector<std::int64_t>{512}) ==
        "a chunk of 512 keys needs 2057 accumulator entries for its passes' buffers, it has 2048");
  CHECK(*space.check(std::vector<std::int64_t>{24}) ==
        "a chunk of 24 keys is not a power of two of at least 2");
  // the whole exponential's first shift may be left (by -4 to -1): a design with the MUL that
  // reads shift amounts unsigned cannot take it; the halves shift right only
  vta::Config unsigned_shifts;
  unsigned_shifts.variant.shr_amount = vta::ShrAmount::UnsignedLow;
  CHECK_THROWS_WITH_AS(graph::IntegerSoftmaxKernel(vta::Env(unsigned_shifts), wide, 64, "sm"),
                       "integer_softmax 'sm': the whole softmax's exponential shifts by amounts "
                       "from -4 to 15, which the tvm-sim design reads unsigned (a negative one "
                       "as a shift right)",
                       dlavm::FeatureError);
  for (const auto part : {graph::IntegerSoftmaxPart::Exp, graph::IntegerSoftmaxPart::Normalize}) {
    auto half = wide;
    half.part = part;
    CHECK_NOTHROW(graph::IntegerSoftmaxKernel(vta::Env(unsigned_shifts), half, 64, "sm"));
  }
  CHECK_THROWS_WITH_AS(graph::IntegerSoftmaxKernel(
                           env, {.products = 4, .keys = 3, .lanes = 16, .queries = 4}, 2, "sm"),
                       "integer_softmax 'sm': 3 keys and 4 queries; a causal softmax needs at "
                       "least as many keys as queries",
                       dlavm::ShapeError);
}

TEST_CASE("integer softmax floor: the stages' work once a key, below every kernel's") {
  const vta::Env env;
  // Hand-derived from the stages (graph/strategy/integer_softmax.hpp's arithmetic), at the
  // gallery's scale (a multiplier of 23 with 7 fraction bits: no shift of t). A key: the
  // exponent t0, t, z, z_down, r, r_copy, v0, v1, v2, v (10); the exponential z_less, z_clip,
  // e1, e (4) or the int8 one z1, e1, e2, e8 (4); the probability e_hi, e_hi_up, e_lo, e_r, y0,
  // y1, y (7) or, of an int8 exponential, e_r, y0, y (3). A block: the exponent's max_t, z_offset,
  // bias, top (4); the reciprocal's neg_sum, partial remainder and q (3), 12 quotient bits of
  // 4 stages (the difference, its sign as 0 or -1 in two, q) and 11 of 7 more (q shifted, the
  // sum to add back in four: the sign shifted up twice, its max with -sum, negated; added back,
  // the remainder shifted) and 11 of one more (after the first, the minimum of the difference
  // and the bit before's sum added back, where the sign starts), the ones added to q (140), and
  // its halves (4); a normalization's floor of the sum (1), and of at most 4,128 keys (a sum
  // of at most 2^19) the packed division: -sum, shifted, plus the row of B + 1 (3), the pair of
  // rows [B, A + B] and the top bit's pair of candidates (4), 11 bits of three stages of two
  // rows (the MIN of each row with the other, doubled, [B, A + B] added: 66), the last bit's
  // MIN (1), its bits from 12 up shifted down and up, negated and added (4): 78; the kernel's
  // constant rows (B + 1, 2 U's first value, the pair's bounds) none a block. A reduction over
  // k keys: k - 1. Of those a key's value
  // plus a constant the GEMM core adds (v1's -c1, z_less's -8, e2's, y1's and y0's roundings)
  // are GEMM micro-ops, as t0 is.
  const auto fixed = host::integer_exp_for(0.125);
  REQUIRE(graph::fewest_fraction_bits(fixed).frac_bits == 7);
  for (const std::int64_t k : {1, 2, 64, 1000}) {
    CAPTURE(k);
    // (t0 a GEMM micro-op, the scores loaded into the input buffer: the GEMM core forms it;
    // v1, z_less and y1, or v1 and e2, too)
    const auto whole = graph::softmax_floor(env, graph::IntegerSoftmaxPart::Whole, fixed, k);
    CHECK(whole.alu_uops == 17 * k + 2 * (k - 1) + 148);
    CHECK(whole.gemm_uops == 4 * k);
    CHECK(whole.acc_load_bytes == 0);
    const auto exp = graph::softmax_floor(env, graph::IntegerSoftmaxPart::Exp, fixed, k);
    CHECK(exp.alu_uops == 11 * k + (k - 1) + 4);
    CHECK(exp.gemm_uops == 3 * k);
    // (the sum a GEMM micro-op a key where the GEMM core forms it: more keys than a chunk of
    // 4, the least with running rows; y0 one too)
    const bool summed = k > 4;
    const auto normalize =
        graph::softmax_floor(env, graph::IntegerSoftmaxPart::Normalize, fixed, k);
    CHECK(normalize.gemm_uops == (summed ? 2 * k : k));
    CHECK(normalize.acc_load_bytes == 16 * k);
    CHECK(normalize.alu_uops == 2 * k + (summed ? 0 : k - 1) + 79);
  }
  CHECK(graph::softmax_floor(env, graph::IntegerSoftmaxPart::Normalize, fixed, 5).gemm_uops == 10);
  // past 4,128 keys the sum may pass 2^19: the bit-serial division
  CHECK(graph::softmax_floor(env, graph::IntegerSoftmaxPart::Normalize, fixed, 4128).alu_uops ==
        2 * 4128 + 79);
  CHECK(graph::softmax_floor(env, graph::IntegerSoftmaxPart::Normalize, fixed, 4129).alu_uops ==
        2 * 4129 + 141);
  // a multiplier with fraction bits left past 7 shifts t first: one stage more a key (and 111
  // with 8 bits leaves a masked key's exponential above 0 with t0 at 32,767: the ALU forms t0,
  // from the scores loaded into the accumulator)
  const auto odd = host::integer_exp_for(0.3);
  REQUIRE(graph::fewest_fraction_bits(odd).frac_bits > 7);
  const auto whole_odd = graph::softmax_floor(env, graph::IntegerSoftmaxPart::Whole, odd, 10);
  // (its -c1, -8 and rounding added by the GEMM core still)
  CHECK(whole_odd.alu_uops == 19 * 10 + 2 * 9 + 148);
  CHECK(whole_odd.gemm_uops == 3 * 10);
  CHECK(whole_odd.acc_load_bytes == 160);
  CHECK_THROWS_WITH_AS(graph::softmax_floor(env, graph::IntegerSoftmaxPart::Whole, fixed, 0),
                       "softmax_floor: a block of 0 keys; it needs 1 at least", dlavm::ValueError);

  // Every kernel does at least the floor of each block (the keys its queries see), in ALU
  // micro-ops and in accumulator loads: random parts, lane groups, chunks, causal or not, dims.
  std::mt19937_64 rng(47);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const int trials = DLAVM_TEST_SANITIZED ? 6 : 18;
  for (int trial = 0; trial < trials; ++trial) {
    const auto part = static_cast<graph::IntegerSoftmaxPart>(trial % 3);
    const std::int64_t lanes = pick(1, 8), groups = pick(1, 16 / lanes);
    const std::int64_t batches = pick(1, 2), chunk = std::int64_t{1} << pick(1, 4);
    const bool causal = trial % 4 != 3;
    const double scale = std::array{0.25, 0.05, 0.3}[static_cast<std::size_t>(trial % 3)];
    CAPTURE(trial);
    CAPTURE(lanes);
    CAPTURE(groups);
    CAPTURE(batches);
    CAPTURE(chunk);
    CAPTURE(causal);
    const LaneGroupKernel k(env, batches, lanes, groups, chunk, causal, part, {}, scale);
    for (int i = 0; i < 3; ++i) {
      const std::int64_t m = pick(1, 11), last = pick(0, 40);
      CAPTURE(m);
      CAPTURE(last);
      std::vector<std::uint64_t> phys;
      for (std::size_t a = 0; a < k.kernel.args().size(); ++a) phys.push_back((a + 1) << 24);
      const ne::Binding bindings[] = {{"m", m}, {"last", last}};
      const auto stream = k.program.instantiate(bindings, phys);
      vta::Counters did;
      for (const auto& f : vta::decode_all(env.config.layout(), stream.insns))
        did.count(env.config, f);
      std::int64_t uops = 0, bytes = 0, gemm = 0;
      for (std::int64_t q0 = 0; q0 < m; q0 += groups) {
        const std::int64_t seen = causal ? last + std::min(q0 + groups, m) : last + m;
        const auto floor = graph::softmax_floor(env, part, host::integer_exp_for(scale), seen);
        uops += batches * floor.alu_uops;
        bytes += batches * floor.acc_load_bytes;
        gemm += batches * floor.gemm_uops;
      }
      // (t0 a GEMM micro-op where the floor's kernel forms it by the GEMM core, an ALU one
      // where this kernel does not: in uniform tiles)
      CHECK(static_cast<std::int64_t>(did.alu_uops) >= uops);
      CHECK(static_cast<std::int64_t>(did.acc_load_bytes) >= bytes);
      CHECK(static_cast<std::int64_t>(did.alu_uops + did.gemm_uops) >= uops + gemm);
      if (k.kernel.scores_by_gemm()) CHECK(static_cast<std::int64_t>(did.gemm_uops) >= gemm);
    }
  }
}

TEST_CASE("integer softmax on VTA through the graph: placed, bit-exact with the host kernel") {
  // attention's scores with the heads last: [1, token, last + token, 8], the queries before the
  // keys; and a plain [2, 3, 50, 20] block (two lane tiles, not causal)
  const auto token = ne::var("token", 1, 40);
  const auto last = ne::var("last", 0, 60);
  const auto s = graph::input("s", {1, token, ne::Expr(last) + token, 8}, DType::int8());
  const host::IntegerSoftmaxParams causal{
      .axis = -2, .scale = 0.1, .causal = true, .queries = host::CausalQueries::Before};
  const auto u = graph::input("u", {2, 3, 50, 20}, DType::int8());
  const host::IntegerSoftmaxParams plain{.axis = 2, .scale = 0.125};
  // two sequences of scores: the query the product index modulo token
  const auto w = graph::input("w", {2, token, ne::Expr(last) + token, 8}, DType::int8());
  const graph::Target target;
  // a clip after the plain one joins its kernel: two immediate steps before the store
  auto mod = graph::build(graph::function({s, u, w}, {graph::integer_softmax(s, causal),
                                                      graph::clip(graph::integer_softmax(u, plain),
                                                                  {.lo = 5, .hi = 90}),
                                                      graph::integer_softmax(w, causal)}),
                          target, {.name = "sm"});
  std::vector<std::string> tilings, epilogues;
  for (const auto& st : mod.steps())
    if (st.kind == graph::ModuleStep::Kind::Vta) {
      tilings.push_back(st.tiling);
      epilogues.push_back(st.epilogue);
    }
  CHECK(epilogues == std::vector<std::string>{"", "max 5, min 90", ""});
  // the causal ones in chunks of 32: a prefill of up to 40 queries pads each block's last chunk,
  // whose max and sums are computed whole (its exponentials over the keys seen alone), and each
  // block resets and halves its running sums' rows once, so a smaller chunk than the 128 that
  // fit is estimated faster (graph::knob_space; on the cycle model 32 keys take 3.8% fewer
  // cycles than 64 over 40 queries after 0, 30 and 60 keys); the plain one (50 keys) in chunks
  // of 32: pass 3 starts from both chunks' exponentials, which pass 2 kept (one chunk of 64 has
  // no chunk loop to keep them in)
  CHECK(tilings == std::vector<std::string>{"keys 32", "keys 32", "keys 32"});
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  std::uint64_t seed = 40;
  for (const auto& dims : {std::pair{1, 0}, {1, 60}, {17, 3}, {40, 60}}) {
    const int t = dims.first, l = dims.second;  // (not bindings: Clang 14's CAPTURE)
    CAPTURE(t);
    CAPTURE(l);
    const auto x = te::NDArray::random(DType::int8(), {1, t, l + t, 8}, seed++);
    const auto y = te::NDArray::random(DType::int8(), {2, 3, 50, 20}, seed++);
    const auto z = te::NDArray::random(DType::int8(), {2, t, l + t, 8}, seed++);
    const graph::NamedArray inputs[] = {{"s", x}, {"u", y}, {"w", z}};
    const ne::Binding bindings[] = {{"token", t}, {"last", l}};
    const auto out = exec.run(inputs, bindings);
    CHECK(out.at(0) == host::integer_softmax(x, causal));
    auto clipped = host::integer_softmax(y, plain);
    for (std::size_t i = 0; i < clipped.size(); ++i)
      clipped.set_flat(i, std::clamp<std::int64_t>(clipped.data()[i], 5, 90));
    CHECK(out.at(1) == clipped);
    CHECK(out.at(2) == host::integer_softmax(z, causal));
  }
  // the steps' layouts: two queries of 8 heads a tile, the 20 lanes in two tiles alone
  std::vector<std::string> layouts;
  for (const auto& st : mod.steps())
    if (st.kind == graph::ModuleStep::Kind::Vta)
      layouts.push_back(graph::to_string(mod.values()[st.output].layout));
  CHECK(layouts == std::vector<std::string>{"batched_matrix[1x16, 2 groups]",
                                            "batched_matrix[1x16]",
                                            "batched_matrix[1x16, 2 groups]"});
  // one query (a decode step's graph with a constant 1): nothing to put beside it
  const auto one = graph::input("one", {1, 1, ne::Expr(last) + 1, 8}, DType::int8());
  const auto single = graph::build(graph::function({one}, {graph::integer_softmax(one, causal)}),
                                   target, {.name = "one"});
  for (const auto& st : single.steps())
    if (st.kind == graph::ModuleStep::Kind::Vta)
      CHECK(graph::to_string(single.values()[st.output].layout) == "batched_matrix[1x16]");
  // the tuner's check of a candidate (te::evaluate of the kernel's stages, the lane masks
  // among them, against the simulator) holds for every chunk of the causal ones; under the
  // sanitizers (ten times slower, nine tenths of this case there) for the smallest and the
  // largest chunk
  const auto tasks = tune::tasks(graph::function({s, w}, {graph::integer_softmax(s, causal),
                                                          graph::integer_softmax(w, causal)}),
                                 target);
  REQUIRE(tasks.size() == 2);
  for (const auto& task : tasks) {
    const auto points = tune::candidates(task.space);
    REQUIRE(points.size() >= 2);
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (DLAVM_TEST_SANITIZED && i != 0 && i + 1 != points.size()) continue;
      const auto knobs = task.space.knobs_of(points[i]);
      CAPTURE(graph::to_string(knobs));
      CHECK(tune::verify(task, knobs, target.env, dev, 5) == std::nullopt);
    }
  }
}

TEST_CASE("integer softmax placement: what stays on the host says why") {
  const auto note_of = [](const graph::Expr& x, const graph::Expr& y) {
    const auto placed = graph::infer_type(graph::function({x}, {y}), graph::Target{});
    const auto& groups = placed.placement()->groups;
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].device == graph::Device::Host);
    return groups[0].note;
  };
  // the keys along the lanes
  const auto s = graph::input("s", {2, 40, 16}, DType::int8());
  CHECK(note_of(s, graph::integer_softmax(s)) ==
        "VTA's ALU combines the lanes of a tile only one by one, so the keys must be dim -2 (the "
        "rows) and the last dim the lanes; axis 2 of input 0 (%s) (rank 3) is not (transpose the "
        "keys to dim -2)");
  // causal with the queries in the lanes
  CHECK(note_of(s, graph::integer_softmax(s, {.axis = -2, .causal = true})) ==
        "the queries of this causal softmax are the last dim (the lanes), whose visible keys "
        "differ lane by lane; VTA masks the keys of a whole row (put the queries before the "
        "keys: queries = before)");
  // symbolic lanes
  const auto heads = ne::var("heads", 1, 32);
  const auto h = graph::input("h", {2, 40, heads}, DType::int8());
  CHECK(note_of(h, graph::integer_softmax(h, {.axis = -2})) ==
        "the VTA integer_softmax strategy needs a constant lane count (the last dim); input 0 "
        "(%h) dim 2 is `heads`");
  // an accumulator of 16 entries: no chunk fits; the reason is the nearest chunk's
  vta::Config small;
  small.log_acc_buff_size = 10;
  const graph::Target tiny{.env = vta::Env(small)};
  const auto few =
      graph::infer_type(graph::function({s}, {graph::integer_softmax(s, {.axis = -2})}), tiny)
          .placement()
          ->groups;
  REQUIRE(few.size() == 1);
  CHECK(few[0].note ==
        "no chunk of keys fits: a chunk of 2 keys needs 17 accumulator entries for its passes' "
        "buffers, it has 16");
  // a design that reads shift amounts unsigned: the whole softmax stays on the host, its
  // exponentials go to VTA
  vta::Config unsigned_shifts;
  unsigned_shifts.variant.shr_amount = vta::ShrAmount::UnsignedLow;
  const graph::Target shifts_unsigned{.env = vta::Env(unsigned_shifts)};
  const auto placed = [&](const graph::Expr& y) {
    return graph::infer_type(graph::function({s}, {y}), shifts_unsigned).placement()->groups;
  };
  const auto whole = placed(graph::integer_softmax(s, {.axis = -2}));
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].device == graph::Device::Host);
  CHECK(whole[0].note ==
        "the whole softmax's exponential shifts by amounts from -4 to 15, which the tvm-sim "
        "design reads unsigned (a negative one as a shift right)");
  const auto exp = placed(graph::integer_softmax_exp(s, {.axis = -2}));
  REQUIRE(exp.size() == 1);
  CHECK(exp[0].device == graph::Device::Vta);
}

TEST_CASE("integer softmax placement: immediate steps after it join its kernel, operands do not") {
  const auto u = graph::input("u", {2, 40, 16}, DType::int8());
  const auto place = [&](const graph::Expr& y) {
    return graph::infer_type(graph::function({u}, {y}), graph::Target{}).placement()->groups;
  };
  const auto relu = place(graph::relu(graph::integer_softmax(u, {.axis = -2})));
  REQUIRE(relu.size() == 1);
  CHECK(relu[0].device == graph::Device::Vta);
  CHECK(relu[0].calls.size() == 2);
  // an int8 sum does not join (VTA adds operands to an int32 accumulator): its own host step
  const auto sum = place(graph::add(graph::integer_softmax(u, {.axis = -2}), u));
  REQUIRE(sum.size() == 2);
  CHECK(sum[0].device == graph::Device::Vta);
  CHECK(sum[1].device == graph::Device::Host);
  // the kernel itself takes no operand step and no int32 result
  graph::Epilogue residual;
  residual.add_tensor(DType::int8());
  CHECK_THROWS_WITH_AS(
      graph::IntegerSoftmaxKernel(vta::Env{}, {.products = 1, .keys = 4, .lanes = 16}, 4, "sm",
                                  residual),
      "integer_softmax 'sm': epilogue +tensor#0(int8): VTA applies immediate steps (add, shift, "
      "max, "
      "min) to the probabilities; an operand read from DRAM (a bias, a residual) is not",
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      graph::IntegerSoftmaxKernel(vta::Env{}, {.products = 1, .keys = 4, .lanes = 16}, 4, "sm",
                                  {.steps = {}, .inputs = {}, .int32_result = true}),
      "integer_softmax 'sm': epilogue int32 planes: the probabilities are stored as int8; an "
      "int32 result is not",
      dlavm::ValueError);
}
