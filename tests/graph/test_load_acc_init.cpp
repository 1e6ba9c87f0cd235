// vta::load_acc_init on the GEMM strategies' kernels: a residual that only additions precede
// is loaded into the accumulator in place of its reset (one reset and one ADD kernel fewer,
// the residual's buffer gone), nothing moves past a shift or a bound, and the results stay
// the reference executor's (integer sums wrap the same in any order: int32 residuals of any
// value included).
#include <dlavm/graph.hpp>
#include <dlavm/vta/lower.hpp>

#include <doctest/doctest.h>

#include "lowered_census.hpp"
#include "random_graphs.hpp"
#include <random>
#include <span>
#include <string>
#include <vector>

namespace load_acc_init_test {

namespace graph = dlavm::graph;
namespace te = dlavm::te;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;
using dlavm::DType;

using lowered_census::Census;
using lowered_census::census;

// A kernel's function before and after the pass.
std::pair<Census, Census> lowered(const graph::Conv2dKernel& k,
                                  const std::vector<te::Tensor>& args) {
  const vta::Env env;
  auto s = k.schedule();
  const auto steps = vta::lower_passes(s, args, env, "conv");
  return {census(lowered_census::after(steps, "fold_uops").body),
          census(lowered_census::after(steps, "load_acc_init").body)};
}

std::pair<Census, Census> lowered(const graph::Epilogue& e, std::int64_t threads) {
  const vta::Env env;
  const auto shape = lowered_census::conv3x3();
  graph::Conv2dTiling t;
  t.oc_block = 2;
  t.h_block = 14;
  t.w_block = 7;
  t.vthreads = threads;
  const graph::Conv2dKernel k(env, shape, e, "conv", t);
  return lowered(k, k.args());
}

// Loads of `buffer` under a host loop (a block moved in several transfers).
int looped_loads(const tir::Stmt& body, const std::string& buffer) {
  struct Walk : tir::StmtVisitor<Walk> {
    std::string buffer;
    int depth = 0, found = 0;
    void visit_for(const tir::ForNode& n, const tir::Stmt&) {
      ++depth;
      visit(n.body);
      --depth;
    }
    void visit_attr(const tir::AttrNode&, const tir::Stmt&) {}  // kernels: not transfers
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      const auto* call = n.value.as<te::CallNode>();
      if (call != nullptr && call->name == vta::intrin::load && depth > 0 &&
          call->buffers[0].name() == buffer)
        ++found;
    }
  } w;
  w.buffer = buffer;
  w.visit(body);
  return w.found;
}

// The result a lowered function computes on the simulator from random operands (full-range
// int32 and int8 values, small weights), at `bindings`.
te::NDArray run(const vta::Env& env, const std::vector<te::Tensor>& args, const tir::PrimFunc& f,
                std::span<const dlavm::ne::Binding> bindings, int trial) {
  return lowered_census::run(env, args, f, bindings, 100 * static_cast<std::uint64_t>(trial));
}

// The function after every pass but load_acc_init and the ones after it.
tir::PrimFunc without_pass(const std::vector<vta::LoweringStep>& steps) {
  return lowered_census::lowered_until(steps, "fold_uops");
}

TEST_CASE("load_acc_init: a residual after additions is the accumulator's first value") {
  const vta::Config config;
  for (const std::int64_t threads : {1, 2}) {
    for (const bool bias : {false, true}) {
      CAPTURE(threads);
      CAPTURE(bias);
      graph::Epilogue e;
      if (bias) e.add_channel();
      e.add_tensor(DType::int8());
      e.imm(graph::EpilogueStep::Kind::Shr, 8, config);
      e.imm(graph::EpilogueStep::Kind::Max, 0, config);
      REQUIRE(e.init_tensor() == std::optional<std::size_t>(bias ? 1 : 0));
      const auto [before, after] = lowered(e, threads);
      const std::string residual = fmt::format("conv_in{}_buf", bias ? 1 : 0);
      CHECK(before.count(before.kernels, "gemm_reset") == 1);
      CHECK(after.count(after.kernels, "gemm_reset") == 0);
      CHECK(after.count(after.kernels, "alu.add") == before.count(before.kernels, "alu.add") - 1);
      CHECK(before.count(before.loaded, residual) == 1);
      CHECK(after.count(after.loaded, residual) == 0);
      CHECK(after.count(after.loaded, "conv_acc") == 1);
      CHECK(after.loaded.size() == before.loaded.size());
      CHECK(before.count(before.allocated, residual) == 1);
      CHECK(after.count(after.allocated, residual) == 0);
    }
  }
}

TEST_CASE("load_acc_init: every residual convolution of constant size starts from its residual") {
  // random shapes and default tilings: the reset and the ADD go wherever the block is constant,
  // its residual moved in one transfer or in several (a block of several channel tiles narrower
  // than the image), and the results are those of the program lowered without the pass
  const vta::Env env;
  std::mt19937_64 rng(44);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  int looped = 0;
  for (int trial = 0; trial < 60; ++trial) {
    CAPTURE(trial);
    const graph::Conv2dShape shape = lowered_census::random_conv(env, pick, 40);
    graph::Epilogue e;
    const bool bias = pick(0, 1) == 1;
    if (bias) e.add_channel();
    e.add_tensor(pick(0, 1) == 1 ? DType::int8() : DType::int32());
    e.imm(graph::EpilogueStep::Kind::Shr, 4, env.config);
    const graph::Conv2dKernel k(env, shape, e, "conv", graph::default_conv2d_tiling(env, shape, e));
    auto s = k.schedule();
    const auto steps = vta::lower_passes(s, k.args(), env, "conv");
    const std::string residual = fmt::format("conv_in{}_buf", bias ? 1 : 0);
    const tir::PrimFunc without = without_pass(steps);
    for (const auto& step : steps)
      if (step.pass == std::string("fold_uops")) looped += looped_loads(step.func.body, residual);
    // on the simulator, the program as lowered and the one without the pass: the same bytes
    // (full-range operands: the int32 residual's sums wrap)
    CHECK(run(env, k.args(), steps.back().func, {}, trial) ==
          run(env, k.args(), without, {}, trial));
    const auto after = census(steps.back().func.body);
    CHECK(after.count(after.kernels, "gemm_reset") == 0);
    CHECK(after.loaded.end() ==
          std::find_if(after.loaded.begin(), after.loaded.end(),
                       [&](const std::string& b) { return b.starts_with(residual); }));
  }
  CHECK(looped > 0);
}

TEST_CASE("load_acc_init: a block whose size reads a symbolic dim") {
  // a dense layer over a symbolic row count, as an LLM's token count: the last row block is
  // partial, and the reset, the ADD and the residual's load cover the same dense range of it
  const vta::Env env;
  for (const std::int64_t threads_hint : {0, 1}) {
    CAPTURE(threads_hint);
    const graph::DenseShape shape{dlavm::ne::var("m", 1, 70), 96, threads_hint ? 128 : 48};
    graph::Epilogue e;
    e.add_channel();
    e.add_tensor(threads_hint ? DType::int32() : DType::int8());
    e.imm(graph::EpilogueStep::Kind::Shr, 3, env.config);
    const graph::DenseKernel k(env, shape, e, "fc");
    auto s = k.schedule(graph::default_dense_tiling(env, shape, e));
    const auto steps = vta::lower_passes(s, k.args(), env, "fc");
    const auto after = census(steps.back().func.body);
    CHECK(after.count(after.kernels, "gemm_reset") == 0);
    CHECK(std::none_of(after.allocated.begin(), after.allocated.end(),
                       [](const std::string& b) { return b.starts_with("fc_in1_buf"); }));
    for (const std::int64_t m : {1, 16, 37, 70}) {
      CAPTURE(m);
      const dlavm::ne::Binding b[] = {{"m", m}};
      CHECK(run(env, k.args(), steps.back().func, b, static_cast<int>(m)) ==
            run(env, k.args(), without_pass(steps), b, static_cast<int>(m)));
    }
  }
}

// A hand-written lowered block: reset 4 accumulator entries, maybe a GEMM into them, load 4
// entries of another buffer, ADD them: what the pass reads, without a strategy around it.
tir::Stmt reset_load_add(bool with_gemm) {
  const auto i32 = DType::int32();
  const auto acc = te::make_buffer("acc", i32, {64}, "local.acc_buffer");
  const auto res = te::make_buffer("res", i32, {64}, "local.acc_buffer");
  const auto inp = te::make_buffer("inp", DType::int8(), {16}, "local.inp_buffer");
  const auto wgt = te::make_buffer("wgt", DType::int8(), {256}, "local.wgt_buffer");
  const auto dram = te::make_buffer("residual", i32, {64});
  using lowered_census::iv;
  const auto call = [](std::string_view name, std::vector<te::Expr> args,
                       std::vector<te::Buffer> buffers = {}) {
    return lowered_census::intrinsic(name, std::move(args), std::move(buffers));
  };
  const auto kernel = lowered_census::kernel4;
  std::vector<tir::Stmt> parts{
      kernel("gemm_reset", call(vta::intrin::gemm_reset, {iv(0)}, {acc}), 0)};
  if (with_gemm)
    parts.push_back(
        kernel("gemm", call(vta::intrin::gemm, {iv(0), iv(0), iv(0)}, {acc, inp, wgt}), 0));
  parts.push_back(call(vta::intrin::load,
                       {iv(3), iv(0), iv(0), iv(1), iv(4), iv(4), iv(0), iv(0), iv(0), iv(0)},
                       {res, dram}));
  parts.push_back(kernel(
      "alu.add", call(vta::intrin::alu, {iv(2), iv(0), iv(0), iv(0), iv(0)}, {acc, res}), 1));
  return tir::make_allocate(acc, tir::make_allocate(res, tir::make_seq(parts)));
}

TEST_CASE("load_acc_init: only onto an accumulation") {
  // with a GEMM into the block the load takes the reset's place; without one the block would
  // be a bare load, which the Xilinx boards' STORE does not see, and nothing changes
  const auto folded = census(vta::load_acc_init(reset_load_add(true)));
  CHECK(folded.count(folded.kernels, "gemm_reset") == 0);
  CHECK(folded.loaded == std::vector<std::string>{"acc"});
  CHECK(folded.allocated == std::vector<std::string>{"acc"});
  const auto bare = reset_load_add(false);
  CHECK(vta::load_acc_init(bare).same_as(bare));
}

TEST_CASE("load_acc_init: nothing moves past a shift or a bound") {
  const vta::Config config;
  for (const auto kind : {graph::EpilogueStep::Kind::Shr, graph::EpilogueStep::Kind::Max}) {
    graph::Epilogue e;
    e.add_channel();
    e.imm(kind, 3, config);
    e.add_tensor(DType::int8());
    CHECK_FALSE(e.init_tensor());
    const auto [before, after] = lowered(e, 2);
    CHECK(after.kernels == before.kernels);
    CHECK(after.loaded == before.loaded);
    CHECK(after.allocated == before.allocated);
  }
}

TEST_CASE("load_acc_init: residual convolutions and dense layers compute what the reference does") {
  // int8 and full-range int32 residuals, before and after a bias, with a requantize or a
  // wrapping cast: the sums wrap at 32 bits whatever their order
  random_graphs::Rng rng{std::mt19937_64(2026)};
  for (int trial = 0; trial < 16; ++trial) {
    CAPTURE(trial);
    const std::uint64_t seed = 900 + static_cast<std::uint64_t>(trial);
    const bool dense = trial % 3 == 2;
    const bool int8 = trial % 2 == 0;
    // several output channel tiles and wide images: blocks whose residual moves in several
    // transfers too
    const std::int64_t o = rng(1, 64);
    auto x =
        dense ? graph::input("x", {rng(1, 20), rng(1, 80)}, DType::int8())
              : graph::input("x", {rng(1, 2), rng(1, 40), rng(3, 24), rng(8, 40)}, DType::int8());
    graph::Expr acc;
    if (dense) {
      const auto k = x.type().shape[1];
      acc = graph::dense(
          x, graph::constant("w",
                             te::NDArray::random(DType::int8(), {o, *k.as_int()}, seed, -20, 20)));
    } else {
      const auto c = x.type().shape[1];
      const std::int64_t kh = rng(1, 3), kw = rng(1, 5);
      acc = graph::conv2d(
          x,
          graph::constant(
              "w", te::NDArray::random(DType::int8(), {o, *c.as_int(), kh, kw}, seed, -20, 20)),
          {.strides = {rng(1, 2), rng(1, 2)},
           .padding = {rng(0, kh - 1), rng(0, kw - 1), rng(0, kh - 1), rng(0, kw - 1)}});
    }
    const auto fn0 = graph::infer_type(graph::function({x}, {acc}), graph::default_ops());
    const auto shape = fn0.results()[0].type().shape;
    auto residual = graph::input("residual", shape, int8 ? DType::int8() : DType::int32());
    const auto bias =
        graph::constant("bias", te::NDArray::random(DType::int32(), {o}, seed + 1, -3000, 3000));
    const auto r = int8 ? graph::cast(residual, DType::int32()) : residual;
    graph::Expr sum = trial % 4 < 2 ? graph::add(graph::bias_add(acc, bias, {.axis = 1}), r)
                                    : graph::bias_add(graph::add(r, acc), bias, {.axis = 1});
    const auto y = trial % 5 == 4 ? graph::cast(sum, DType::int8())
                                  : graph::requantize(sum, {.shift = 6, .lo = -100, .hi = 110});
    const auto fn = graph::function({x, residual}, {y});
    auto mod = graph::build(fn, graph::Target{});
    CHECK(random_graphs::check_module(mod, fn, {}, seed) >= 1);
  }
}

}  // namespace load_acc_init_test
