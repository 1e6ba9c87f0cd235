// A constant bias through the GEMM core: the ChannelWeights layout (exact for every value
// within its bound, refused past it), the `channel_weights` pass (which biases it takes), the
// lowering pass vta::gemm_into_acc (the bias's GEMMs moved into the accumulator: one reset, one
// ADD and one block fewer) and vta::reset_at_first_step (a thread's reset after its first
// loads), each against the function lowered without them or the reference executor.
#include <dlavm/graph.hpp>
#include <dlavm/vta/lower.hpp>

#include <doctest/doctest.h>

#include "lowered_census.hpp"
#include "random_graphs.hpp"
#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace channel_weights_test {

namespace graph = dlavm::graph;
namespace te = dlavm::te;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;
using dlavm::DType;
using K = graph::EpilogueStep::Kind;

using lowered_census::after;
using lowered_census::census;

// The function lowered by every pass but gemm_into_acc and reset_at_first_step.
tir::PrimFunc without_passes(const std::vector<vta::LoweringStep>& steps) {
  return lowered_census::lowered_until(steps, "load_acc_init");
}

// The result a lowered function computes on the simulator from random operands: small
// weights, a bias of any value the layout holds (packed as graph::build packs it) and
// full-range int8 and int32 data, at `bindings`.
te::NDArray run(const vta::Env& env, const std::vector<te::Tensor>& args, const tir::PrimFunc& f,
                std::span<const dlavm::ne::Binding> bindings, std::uint64_t seed) {
  return lowered_census::run(
      env, args, f, bindings, seed,
      [&](const te::Tensor& t, std::span<const std::int64_t> shape,
          std::uint64_t s) -> std::optional<te::NDArray> {
        if (!t.name().ends_with("_in0")) return std::nullopt;
        // a ChannelWeights operand: [C/BO + 1, BO, BI], packed from random int32 values
        const std::int64_t bound = graph::channel_weights_bound(env.block_in);
        const auto bias =
            te::NDArray::random(DType::int32(), {(shape[0] - 1) * env.block_out}, s, -bound, bound);
        return graph::pack(bias,
                           {graph::Layout::Kind::ChannelWeights, env.block_out, env.block_in});
      });
}

using lowered_census::conv3x3;

graph::Epilogue gemm_bias_epilogue(const vta::Config& config) {
  graph::Epilogue e;
  e.add_channel();
  e.inputs[0].kind = graph::EpilogueInput::Kind::ChannelWeights;
  e.imm(K::Shr, 6, config);
  e.imm(K::Max, -100, config);
  return e;
}

TEST_CASE("channel_weights layout: every value within the bound, exactly") {
  const std::int64_t bound = graph::channel_weights_bound(16);
  CHECK(bound == 241998);
  for (const std::int64_t cols : {1, 2, 16}) {
    CAPTURE(cols);
    const graph::Layout l{graph::Layout::Kind::ChannelWeights, 4, cols};
    const std::int64_t b = graph::channel_weights_bound(cols);
    auto values = te::NDArray::random(DType::int32(), {23}, 5 + cols, -b, b);
    // the edges: both bounds, the last value u's 1 takes alone, the first S moves past
    const std::int64_t edges[] = {b, -b, 63, -63, 64, -64, 0, b - 1, -b + 1};
    for (std::size_t k = 0; k < std::size(edges); ++k)
      values.set_flat(k, cols == 1 ? std::clamp<std::int64_t>(edges[k], -b, b) : edges[k]);
    const auto packed = graph::pack(values, l);
    CHECK(packed.dtype() == DType::int8());
    CHECK(packed.shape() == std::vector<std::int64_t>{7, 4, cols});
    CHECK(graph::packed_dtype(l, DType::int32()) == DType::int8());
    for (const auto v : packed.data()) CHECK((v >= -128 && v <= 127));
    // the GEMM core's sum u . w[c], by hand: u from the last tile
    for (std::int64_t c = 0; c < 23; ++c) {
      std::int64_t sum = 0;
      for (std::int64_t k = 0; k < cols; ++k)
        sum += packed.at({6, 0, k}) * packed.at({c / 4, c % 4, k});
      CHECK(sum == values.data()[static_cast<std::size_t>(c)]);
    }
    for (std::int64_t r = 0; r < 4; ++r) {
      CHECK(packed.at({6, r, 0}) == 1);
      if (cols > 1) CHECK(packed.at({6, r, cols - 1}) == 127);
    }
    const std::int64_t logical[] = {23};
    CHECK(graph::unpack(packed, l, logical) == values);
  }
  const graph::Layout l{graph::Layout::Kind::ChannelWeights, 16, 16};
  CHECK(graph::to_string(l) == "channel_weights[16x16]");
  te::NDArray over(DType::int32(), {20});
  over.set_flat(17, bound + 1);
  CHECK_THROWS_WITH_AS(graph::pack(over, l),
                       "pack into layout channel_weights[16x16]: channel 17 holds 241999, outside "
                       "the +-241998 its 16 int8 weights can add",
                       dlavm::ValueError);
}

TEST_CASE("gemm_into_acc: the bias's GEMMs accumulate into the accumulator") {
  const vta::Env env;
  const auto shape = conv3x3();
  for (const int threads : {1, 2}) {
    CAPTURE(threads);
    const auto e = gemm_bias_epilogue(env.config);
    CHECK(e.alu_passes() == 2);
    CHECK(e.gemm_passes() == 1);
    CHECK(graph::to_string(e) == "+channel#0 (gemm), >>6, max -100");
    graph::Conv2dTiling t;
    t.oc_block = 2;
    t.h_block = 14;
    t.w_block = 7;
    t.vthreads = threads;
    const graph::Conv2dKernel k(env, shape, e, "conv", t);
    auto s = k.schedule();
    const auto steps = vta::lower_passes(s, k.args(), env, "conv");
    const auto before = census(after(steps, "load_acc_init").body);
    const auto folded = census(after(steps, "gemm_into_acc").body);
    // before: the bias's own block, reset, GEMMs into it and an ADD
    CHECK(before.count(before.kernels, "gemm_reset") == 2);
    CHECK(before.count(before.kernels, "alu.add") == 1);
    CHECK(before.count(before.gemm_into, "conv_in0_gemm") == 1);
    CHECK(before.allocates("conv_in0_gemm"));
    // after: its GEMMs into the accumulator, the rest gone
    CHECK(folded.count(folded.kernels, "gemm_reset") == 1);
    CHECK(folded.count(folded.kernels, "alu.add") == 0);
    CHECK(folded.count(folded.gemm_into, "conv_acc") == 2);
    CHECK_FALSE(folded.allocates("conv_in0_gemm"));
    CHECK(folded.kernels.size() == before.kernels.size() - 2);
    CHECK(run(env, k.args(), steps.back().func, {}, 7) ==
          run(env, k.args(), without_passes(steps), {}, 7));
  }
}

TEST_CASE("gemm_into_acc: random convolutions of constant size, each bias in the accumulator") {
  // random shapes and default tilings, biases anywhere within the layout's bound, with and
  // without a residual (whose load then starts the accumulator): the same bytes as the
  // function lowered without the passes
  const vta::Env env;
  std::mt19937_64 rng(45);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 40; ++trial) {
    CAPTURE(trial);
    const graph::Conv2dShape shape = lowered_census::random_conv(env, pick, 30);
    auto e = gemm_bias_epilogue(env.config);
    if (pick(0, 1) == 1) {
      e = graph::Epilogue{};
      e.add_channel();
      e.inputs[0].kind = graph::EpilogueInput::Kind::ChannelWeights;
      e.add_tensor(DType::int32());
      e.imm(K::Shr, 4, env.config);
    }
    const graph::Conv2dKernel k(env, shape, e, "conv", graph::default_conv2d_tiling(env, shape, e));
    auto s = k.schedule();
    const auto steps = vta::lower_passes(s, k.args(), env, "conv");
    const auto got = census(steps.back().func.body);
    CHECK_FALSE(got.allocates("conv_in0_gemm"));
    CHECK(got.count(got.kernels, "alu.add") == 0);
    CHECK(run(env, k.args(), steps.back().func, {}, 300 + static_cast<std::uint64_t>(trial)) ==
          run(env, k.args(), without_passes(steps), {}, 300 + static_cast<std::uint64_t>(trial)));
  }
}

TEST_CASE("gemm_into_acc: a block whose size reads a symbolic dim") {
  // a dense layer over a symbolic row count: the partial last block's reset, ADD and GEMMs
  // each cover one dense range of the same size
  const vta::Env env;
  for (const std::int64_t n : {48, 128}) {
    CAPTURE(n);
    const graph::DenseShape shape{dlavm::ne::var("m", 1, 70), 96, n};
    const auto e = gemm_bias_epilogue(env.config);
    const graph::DenseKernel k(env, shape, e, "fc");
    auto s = k.schedule(graph::default_dense_tiling(env, shape, e));
    const auto steps = vta::lower_passes(s, k.args(), env, "fc");
    const auto got = census(steps.back().func.body);
    CHECK_FALSE(got.allocates("fc_in0_gemm"));
    CHECK(got.count(got.kernels, "alu.add") == 0);
    for (const std::int64_t m : {1, 16, 37, 70}) {
      CAPTURE(m);
      const dlavm::ne::Binding b[] = {{"m", m}};
      CHECK(run(env, k.args(), steps.back().func, b, static_cast<std::uint64_t>(m)) ==
            run(env, k.args(), without_passes(steps), b, static_cast<std::uint64_t>(m)));
    }
  }
}

// A hand-written lowered block: reset acc, a GEMM into it, reset g, a GEMM into g, ADD g into
// acc; `variant` 1 reads g once more (a second ADD), 2 resets acc after g's GEMM, 3 adds an
// immediate.
tir::Stmt gemm_block(int variant) {
  const auto i32 = DType::int32();
  const auto acc = te::make_buffer("acc", i32, {64}, "local.acc_buffer");
  const auto g = te::make_buffer("g", i32, {64}, "local.acc_buffer");
  const auto other = te::make_buffer("other", i32, {64}, "local.acc_buffer");
  const auto inp = te::make_buffer("inp", DType::int8(), {16}, "local.inp_buffer");
  const auto wgt = te::make_buffer("wgt", DType::int8(), {256}, "local.wgt_buffer");
  using lowered_census::iv;
  const auto call = [](std::string_view name, std::vector<te::Expr> args,
                       std::vector<te::Buffer> buffers = {}) {
    return lowered_census::intrinsic(name, std::move(args), std::move(buffers));
  };
  const auto kernel = lowered_census::kernel4;
  const auto reset = [&](const te::Buffer& b) {
    return kernel("gemm_reset", call(vta::intrin::gemm_reset, {iv(0)}, {b}), 0);
  };
  const auto gemm = [&](const te::Buffer& b) {
    return kernel("gemm", call(vta::intrin::gemm, {iv(0), iv(0), iv(0)}, {b, inp, wgt}), 0);
  };
  const auto add = [&](const te::Buffer& dst, bool imm) {
    return kernel(
        "alu.add",
        call(vta::intrin::alu, {iv(2), iv(imm ? 1 : 0), iv(imm ? 5 : 0), iv(0), iv(0)}, {dst, g}),
        1);
  };
  std::vector<tir::Stmt> parts;
  if (variant != 2) parts.push_back(reset(acc));
  parts.push_back(gemm(acc));
  parts.push_back(reset(g));
  parts.push_back(gemm(g));
  if (variant == 2) parts.push_back(reset(acc));
  parts.push_back(add(acc, variant == 3));
  if (variant == 1) parts.push_back(add(other, false));
  return tir::make_allocate(acc,
                            tir::make_allocate(g, tir::make_allocate(other, tir::make_seq(parts))));
}

TEST_CASE("gemm_into_acc: only a block read once, into an accumulation begun before it") {
  const auto folded = census(vta::gemm_into_acc(gemm_block(0)));
  CHECK(folded.gemm_into == std::vector<std::string>{"acc", "acc"});
  CHECK(folded.count(folded.kernels, "gemm_reset") == 1);
  CHECK(folded.count(folded.kernels, "alu.add") == 0);
  CHECK(folded.allocated == std::vector<std::string>{"acc", "other"});
  for (const int variant : {1, 2, 3}) {
    CAPTURE(variant);
    const auto block = gemm_block(variant);
    CHECK(vta::gemm_into_acc(block).same_as(block));
  }
}

TEST_CASE("gemm_into_acc: a fold counts the uses as the function stands after the folds before") {
  // g2 folds into g1 first; g1, added into acc and read again by another ADD, must then stay
  // (counted before that fold, g1's uses would match and g1 would go while still read)
  const auto i32 = DType::int32();
  const auto acc = te::make_buffer("acc", i32, {64}, "local.acc_buffer");
  const auto g1 = te::make_buffer("g1", i32, {64}, "local.acc_buffer");
  const auto g2 = te::make_buffer("g2", i32, {64}, "local.acc_buffer");
  const auto other = te::make_buffer("other", i32, {64}, "local.acc_buffer");
  const auto inp = te::make_buffer("inp", DType::int8(), {16}, "local.inp_buffer");
  const auto wgt = te::make_buffer("wgt", DType::int8(), {256}, "local.wgt_buffer");
  using lowered_census::intrinsic;
  using lowered_census::iv;
  using lowered_census::kernel4;
  const auto reset = [&](const te::Buffer& b) {
    return kernel4("gemm_reset", intrinsic(vta::intrin::gemm_reset, {iv(0)}, {b}), 0);
  };
  const auto gemm = [&](const te::Buffer& b) {
    return kernel4("gemm", intrinsic(vta::intrin::gemm, {iv(0), iv(0), iv(0)}, {b, inp, wgt}), 0);
  };
  const auto add = [&](const te::Buffer& dst, const te::Buffer& src) {
    return kernel4("alu.add",
                   intrinsic(vta::intrin::alu, {iv(2), iv(0), iv(0), iv(0), iv(0)}, {dst, src}), 1);
  };
  const std::vector<tir::Stmt> parts{reset(acc),   gemm(acc),     reset(g1),   reset(g2),
                                     gemm(g2),     gemm(g2),      add(g1, g2), add(acc, g1),
                                     reset(other), add(other, g1)};
  const auto body = tir::make_allocate(
      acc, tir::make_allocate(
               g1, tir::make_allocate(g2, tir::make_allocate(other, tir::make_seq(parts)))));
  const auto c = census(vta::gemm_into_acc(body));
  CHECK(c.allocates("g1"));
  CHECK_FALSE(c.allocates("g2"));
  CHECK(c.gemm_into == std::vector<std::string>{"acc", "g1", "g1"});
}

TEST_CASE("channel_weights: a BATCH wider than BLOCK_OUT is refused before lowering") {
  // the input row is read from one weight tile's rows: a tiling check says so, and the graph
  // pass leaves such a bias on the ALU
  vta::Config c;
  c.log_batch = 3;
  c.log_block_out = 2;
  const vta::Env env(c);
  const auto e = gemm_bias_epilogue(env.config);
  CHECK(graph::check_epilogue(env, e) ==
        std::optional<std::string>("a bias through the GEMM core (a channel_weights operand) "
                                   "needs BATCH <= BLOCK_OUT; the configuration has BATCH 8 and "
                                   "BLOCK_OUT 4"));
  graph::Conv2dTiling t;
  t.oc_block = 1;
  t.h_block = 14;
  t.w_block = 14;
  CHECK(graph::check_tiling(env, conv3x3(), e, t) == graph::check_epilogue(env, e));
  graph::Epilogue alu;
  alu.add_channel();
  CHECK_FALSE(graph::check_epilogue(env, alu));
  graph::Target target;
  target.env = env;
  auto x = graph::input("x", {8, 16, 6, 6}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 3, 3}, 3, -9, 9));
  auto b = graph::constant("b", te::NDArray::random(DType::int32(), {16}, 4, -500, 500));
  const auto fn = graph::function(
      {x}, {graph::requantize(
               graph::bias_add(graph::conv2d(x, w, {.padding = {1, 1, 1, 1}}), b, {.axis = 1}),
               {.shift = 8})});
  auto mod = graph::build(fn, target);
  for (const auto& step : mod.steps())
    if (step.kind == graph::ModuleStep::Kind::Vta) CHECK(step.epilogue.starts_with("+channel#0, "));
  CHECK(random_graphs::check_module(mod, fn, {}, 5, nullptr, target) == 1);
}

TEST_CASE("reset_at_first_step: with two threads, each reset follows its first loads") {
  const vta::Env env;
  const auto shape = conv3x3();
  for (const std::int64_t ic_block : {1, 4}) {
    for (const int threads : {1, 2}) {
      CAPTURE(ic_block);
      CAPTURE(threads);
      graph::Epilogue e;
      e.imm(K::Shr, 6, env.config);
      graph::Conv2dTiling t;
      t.oc_block = 2;
      t.h_block = 14;
      t.w_block = 7;
      t.ic_block = ic_block;
      t.vthreads = threads;
      const graph::Conv2dKernel k(env, shape, e, "conv", t);
      auto s = k.schedule();
      const auto steps = vta::lower_passes(s, k.args(), env, "conv");
      const auto& before = after(steps, "gemm_into_acc");
      const auto& moved = after(steps, "reset_at_first_step");
      // the first statement of the block body that is a kernel: the reset before, a load's
      // neighbour after (threads only)
      const auto first_kernel_after_load = [](const tir::Stmt& body) {
        bool loaded = false, reset_after_load = false;
        struct Walk : tir::StmtVisitor<Walk> {
          bool* loaded;
          bool* found;
          void visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
            if (n.key == vta::intrin::uop_kernel && n.node == "gemm_reset" && *loaded)
              *found = true;
            tir::StmtVisitor<Walk>::visit_attr(n, s);
          }
          void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
            const auto* c = n.value.as<te::CallNode>();
            if (c != nullptr && c->name == vta::intrin::load) *loaded = true;
          }
        } w;
        w.loaded = &loaded;
        w.found = &reset_after_load;
        w.visit(body);
        return reset_after_load;
      };
      CHECK_FALSE(first_kernel_after_load(before.body));
      CHECK(first_kernel_after_load(moved.body) == (threads == 2));
      CHECK(census(moved.body).count(census(moved.body).kernels, "gemm_reset") == 1);
      CHECK(run(env, k.args(), steps.back().func, {}, 11) ==
            run(env, k.args(), without_passes(steps), {}, 11));
    }
  }
}

TEST_CASE("inject_vthread: each thread's store follows its own epilogue") {
  // thread 0's block is stored before thread 1's last ALU pass: the store drains while the
  // compute module runs that epilogue (stored after every thread's epilogue, it would not)
  const vta::Env env;
  graph::Epilogue e;
  e.imm(K::Shr, 6, env.config);
  e.imm(K::Max, 0, env.config);
  graph::Conv2dTiling t;
  t.oc_block = 2;
  t.h_block = 14;
  t.w_block = 7;
  t.vthreads = 2;
  const graph::Conv2dKernel k(env, conv3x3(), e, "conv", t);
  auto s = k.schedule();
  const auto f = vta::lower(s, k.args(), env, "conv");
  // in stream order: each store's source and each ALU kernel's destination
  struct Walk : tir::StmtVisitor<Walk> {
    std::vector<std::pair<std::string, std::string>> events;
    bool in_alu = false;
    void visit_attr(const tir::AttrNode& n, const tir::Stmt& st) {
      const bool alu = n.key == vta::intrin::uop_kernel && n.node.starts_with("alu");
      in_alu = alu;
      tir::StmtVisitor<Walk>::visit_attr(n, st);
      in_alu = false;
    }
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      const auto* c = n.value.as<te::CallNode>();
      if (c == nullptr) return;
      if (c->name == vta::intrin::store) events.emplace_back("store", c->buffers[0].name());
      if (c->name == vta::intrin::alu && in_alu) {
        events.emplace_back("alu", c->buffers[0].name());
        in_alu = false;  // one event per kernel
      }
    }
  } w;
  w.visit(f.body);
  const auto at = [&](const std::pair<std::string, std::string>& ev, bool last) {
    const auto it = last ? std::find(w.events.rbegin(), w.events.rend(), ev).base() - 1
                         : std::find(w.events.begin(), w.events.end(), ev);
    REQUIRE(it != w.events.end());
    return it - w.events.begin();
  };
  CHECK(at({"store", "conv_acc.v0"}, false) < at({"alu", "conv_acc.v1"}, true));
  CHECK(at({"alu", "conv_acc.v0"}, true) < at({"store", "conv_acc.v0"}, false));
}

TEST_CASE("channel_weights pass: which biases the GEMM core adds, and the results") {
  // conv2d, dense and matmul groups with constant biases in range; one past the bound, one a
  // parameter: those keep the ALU ADD. Every module computes what the reference does.
  const graph::Target target;
  const auto build_conv = [&](graph::Expr bias, bool param) {
    auto x = graph::input("x", {1, 24, 9, 11}, DType::int8());
    auto w = graph::constant("w", te::NDArray::random(DType::int8(), {40, 24, 3, 3}, 3, -9, 9));
    auto y = graph::requantize(
        graph::bias_add(graph::conv2d(x, w, {.padding = {1, 1, 1, 1}}), bias, {.axis = 1}),
        {.shift = 8});
    std::vector<graph::Expr> params{x};
    if (param) params.push_back(bias);
    return graph::function(params, {y});
  };
  const std::int64_t bound = graph::channel_weights_bound(16);
  auto in_range = te::NDArray::random(DType::int32(), {40}, 4, -bound, bound);
  in_range.set_flat(0, bound);
  in_range.set_flat(1, -bound);
  auto past = in_range;
  past.set_flat(39, bound + 1);
  const struct {
    graph::Function fn;
    const char* epilogue;
  } cases[] = {
      {build_conv(graph::constant("b", in_range), false), "+channel#0 (gemm), >>8, max -128"},
      {build_conv(graph::constant("b", past), false), "+channel#0, >>8, max -128"},
      {build_conv(graph::input("b", {40}, DType::int32()), true), "+channel#0, >>8, max -128"},
  };
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    CAPTURE(i);
    auto mod = graph::build(cases[i].fn, target);
    const auto vta_step = std::find_if(
        mod.steps().begin(), mod.steps().end(),
        [](const graph::ModuleStep& s) { return s.kind == graph::ModuleStep::Kind::Vta; });
    REQUIRE(vta_step != mod.steps().end());
    CHECK(vta_step->epilogue.starts_with(cases[i].epilogue));
    CHECK(random_graphs::check_module(mod, cases[i].fn, {}, 20 + i) == 1);
  }
  // dense over a symbolic row count and a batched matmul, with biases in range
  random_graphs::Rng rng{std::mt19937_64(46)};
  for (int trial = 0; trial < 6; ++trial) {
    CAPTURE(trial);
    const auto m = dlavm::ne::var("m", 1, 40);
    const std::int64_t k = rng(1, 70), n = rng(1, 70);
    const auto seed = 60 + static_cast<std::uint64_t>(trial);
    const auto bias =
        graph::constant("b", te::NDArray::random(DType::int32(), {n}, seed, -bound, bound));
    graph::Expr x, acc;
    if (trial % 2 == 0) {
      x = graph::input("x", {m, k}, DType::int8());
      acc = graph::dense(
          x, graph::constant("w", te::NDArray::random(DType::int8(), {n, k}, seed, -9, 9)));
    } else {
      x = graph::input("x", {2, m, k}, DType::int8());
      acc = graph::matmul(
          x, graph::constant("w", te::NDArray::random(DType::int8(), {2, k, n}, seed, -9, 9)));
    }
    const auto fn = graph::function(
        {x}, {graph::requantize(graph::bias_add(acc, bias, {.axis = -1}), {.shift = 9})});
    auto mod = graph::build(fn, target);
    CHECK(fmt::format("{}", mod).find("channel_weights[16x16]") != std::string::npos);
    for (const std::int64_t rows : {1, 17, 40}) {
      const dlavm::ne::Binding b[] = {{"m", rows}};
      CHECK(random_graphs::check_module(mod, fn, b, seed + static_cast<std::uint64_t>(rows)) >= 1);
    }
  }
}

}  // namespace channel_weights_test
