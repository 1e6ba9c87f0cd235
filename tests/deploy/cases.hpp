// The programs tests/deploy checks the generated replays on, built the same way by the
// generator (gen/gen_replays.cpp, at build time) and by the test (at run time): symbolic
// programs from graph modules (the MLP's dense layers over a symbolic batch, convolutions and
// a pool over symbolic batch, height and width, attention's matmuls over a symbolic token count
// and cache length), an integer softmax over a symbolic number of keys and a sum of rows over
// a symbolic number of blocks (and that sum with runs of repeated statements); and static ones (the
// tutorials' vector add and GEMM, which the test also replays in constant expressions).
#pragma once

#include <dlavm/dlavm.hpp>

#include "../../examples/gallery_ops.hpp"
#include "../../examples/models.hpp"
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace deploy_cases {

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

struct Case {
  std::string name;
  std::shared_ptr<const vta::Program> program;
  std::vector<std::string> dims;                  // the replay's dims, in order
  std::vector<std::vector<std::int64_t>> values;  // dim values the test replays
};

// Every point of the grid lo[k]..hi[k] step[k].
inline std::vector<std::vector<std::int64_t>> grid(std::vector<std::int64_t> lo,
                                                   std::vector<std::int64_t> hi,
                                                   std::vector<std::int64_t> step) {
  std::vector<std::vector<std::int64_t>> out{{}};
  for (std::size_t k = 0; k < lo.size(); ++k) {
    std::vector<std::vector<std::int64_t>> next;
    for (const auto& p : out)
      for (std::int64_t v = lo[k]; v <= hi[k]; v += step[k]) {
        next.push_back(p);
        next.back().push_back(v);
      }
    out = std::move(next);
  }
  return out;
}

// The module's VTA steps (those whose program's name starts with `only`, where given).
inline void add_vta_steps(std::vector<Case>& cases, const graph::Module& mod,
                          const std::string& prefix, const std::vector<std::string>& dims,
                          const std::vector<std::vector<std::int64_t>>& values,
                          const std::string& only = "") {
  int k = 0;
  for (const auto& step : mod.steps())
    if (step.kind == graph::ModuleStep::Kind::Vta && step.program->name().starts_with(only))
      cases.push_back({prefix + std::to_string(k++), step.program, dims, values});
}

// row_sums' block loop with runs of statements that print the same code, which the generated
// replay prints once each, in a loop (vta::detail::repeated_runs): with L its load, R its
// reset, F its loop over the rows (from a row of the block's), A0 and A1 that loop's kernel
// at rows 0 and 1, S its store,
// the body L R A0 A0 A0 F (A0 A1)x3 R (L A0)x3 (A0 A0 A0 A1)x3 S S S: a run of a kernel, one
// after a loop, a run of two, one with a transfer, a run with a run inside it, a run of
// stores. (The sums are not row_sums': the words are what both replays must agree on.)
inline vta::Program row_repeats(const vta::Env& env, const Case& row_sums) {
  namespace tir = dlavm::tir;
  const tir::PrimFunc& f = row_sums.program->func();
  // (row_sums lowered as for (i0) { allocate A_buf { allocate sum_buf { L R F S } } })
  const auto lowered_otherwise = [] {
    return std::logic_error("row_repeats: row_sums is no longer lowered as it expects");
  };
  const auto* blocks = f.body.as<tir::ForNode>();
  const auto* a_buf = blocks ? blocks->body.as<tir::AllocateNode>() : nullptr;
  const auto* sum_buf = a_buf ? a_buf->body.as<tir::AllocateNode>() : nullptr;
  const auto* parts = sum_buf ? sum_buf->body.as<tir::SeqNode>() : nullptr;
  if (parts == nullptr || parts->seq.size() != 4) throw lowered_otherwise();
  const auto& seq = parts->seq;
  const tir::Stmt &load = seq[0], &reset = seq[1], &rows = seq[2], &store = seq[3];
  const auto* row = rows.as<tir::ForNode>();
  if (row == nullptr) throw lowered_otherwise();
  const auto at_row = [&](std::int64_t r) { return tir::rewrite(row->body, {{row->var, r}}); };
  const tir::Stmt a0 = at_row(0), a1 = at_row(1);
  // F adding the block's rows from row i0 on, floormod(row + i0, 12): a value of the block and a
  // row, so that the block loop is not memoized (inside a memoized loop, no run is a loop)
  const tir::Stmt rotated = tir::make_for(
      row->var, row->min, row->extent, row->for_kind,
      tir::rewrite(row->body,
                   {{row->var, ne::floormod(ne::Expr(row->var) + ne::Expr(blocks->var), 12)}}));
  std::vector<tir::Stmt> body{load, reset, a0, a0, a0, rotated};
  for (int k = 0; k < 3; ++k) body.insert(body.end(), {a0, a1});
  body.push_back(reset);
  for (int k = 0; k < 3; ++k) body.insert(body.end(), {load, a0});
  for (int k = 0; k < 3; ++k) body.insert(body.end(), {a0, a0, a0, a1});
  body.insert(body.end(), {store, store, store});
  tir::PrimFunc g = f;
  g.name = "row_repeats";
  g.body = tir::make_for(
      blocks->var, blocks->min, blocks->extent, blocks->for_kind,
      tir::make_allocate(a_buf->buffer, tir::make_allocate(sum_buf->buffer, tir::make_seq(body))));
  return vta::Program(env, std::move(g));
}

inline std::vector<Case> cases() {
  std::vector<Case> out;
  const graph::Target target;
  {
    const models::Mlp mlp;
    add_vta_steps(out, graph::build(mlp.function(), target, {.name = "mlp"}), "mlp", {"batch"},
                  grid({1}, {256}, {1}));
  }
  {  // a padded 3x3 convolution and a max pool over symbolic batch, height and width
    const auto n = ne::var("batch", 1, 3), h = ne::var("height", 3, 20),
               w = ne::var("width", 3, 20);
    auto x = graph::input("x", {n, 16, h, w}, DType::int8());
    auto wt = graph::constant("w", te::NDArray::random(DType::int8(), {32, 16, 3, 3}, 5, -8, 8));
    auto y = graph::requantize(graph::conv2d(x, wt, {.strides = {1, 1}, .padding = {1, 2, 0, 1}}),
                               {.shift = 6});
    y = graph::max_pool2d(y, {.pool_size = {2, 2}, .strides = {2, 2}});
    add_vta_steps(out, graph::build(graph::function({x}, {y}), target, {.name = "conv"}), "conv",
                  {"batch", "height", "width"}, grid({1, 3, 3}, {3, 20, 20}, {1, 1, 1}));
  }
  {  // a strided convolution, symbolic height only
    const auto h = ne::var("h", 7, 40);
    auto x = graph::input("x", {1, 32, h, 14}, DType::int8());
    auto wt = graph::constant("w", te::NDArray::random(DType::int8(), {16, 32, 3, 3}, 6, -8, 8));
    auto y = graph::relu(graph::requantize(
        graph::conv2d(x, wt, {.strides = {2, 2}, .padding = {1, 1, 1, 1}}), {.shift = 7}));
    add_vta_steps(out, graph::build(graph::function({x}, {y}), target, {.name = "strided"}),
                  "strided", {"h"}, grid({7}, {40}, {1}));
  }
  {  // attention's two matmuls (Q.K^T, probabilities.V) of examples/firmware's decoder layer
     // (eight 64-wide heads, a cache of 2,048 positions, runs of up to 16 tokens): loops over
     // the heads whose body enters kernels with the values of a loop over the keys inside it
    const models::LlmLayer llm(512, 8, 2048, 2048, 16);
    std::vector<std::vector<std::int64_t>> runs;
    for (const std::int64_t token : {1, 2, 5, 16})
      for (const std::int64_t last : {0, 1, 15, 16, 17, 100, 687, 688, 689, 1376, 2031, 2032, 2047})
        if (token + last <= 2048) runs.push_back({token, last});
    add_vta_steps(out, graph::build(llm.function(), target, {.name = "llm"}), "attention",
                  {"token", "last_token"}, runs, "matmul");
  }
  {  // the same layer's integer softmax (its VTA step: lane groups, causal, chunks of 64 keys,
     // the first 25 kept): its chunk loops are memoized, and an iteration is copied where its
     // values are those of the one before (the max's, and the others' past the kept chunks)
    const models::LlmLayer llm(512, 8, 2048, 2048, 16, 21, graph::llm::Softmax::Integer);
    add_vta_steps(out, graph::build(llm.function(), target, {.name = "llm_int"}), "isoftmax",
                  {"token", "last_token"}, {{1, 0}, {1, 17}, {1, 1151}, {1, 2047}, {16, 2032}},
                  "integer_softmax");
  }
  {  // an integer softmax (not causal) of 4 blocks over a symbolic number of keys, in chunks of
     // 16: up to 12 chunks in three passes, the last chunk's kernels sized by the keys (a
     // stream's kernels, and their count, change with every key count: the firmware's kernel
     // tables); the loop over the blocks holds more calls an iteration than a loop memo does,
     // and is tiled (runtime::TileMemo), its chunk loops memoized inside it. (At the scale of
     // 0.3, whose t0 the ALU forms, not the GEMM core: the function as lowered computes the
     // softmax, IntegerSoftmaxKernel::scores_by_gemm; lowered without the weight tiles of the
     // constants the GEMM core adds, which only the rewrite reads.)
    const vta::Env env;
    const auto keys = ne::var("keys", 1, 192);
    const graph::IntegerSoftmaxShape shape{
        .products = 4, .keys = keys, .lanes = 16, .fixed = dlavm::host::integer_exp_for(0.3)};
    const graph::IntegerSoftmaxKernel kernel(env, shape, 16, "blocks");
    if (kernel.scores_by_gemm()) throw std::logic_error("softmax_blocks: the GEMM core forms t0");
    auto s = kernel.schedule();
    auto args = kernel.args();
    if (kernel.by_gemm()) args.erase(args.end() - 2);
    out.push_back({"softmax_blocks",
                   std::make_shared<vta::Program>(vta::build(s, args, env, "blocks")),
                   {"keys"},
                   grid({1}, {192}, {1})});
  }
  {  // a sum over 12 rows of each of a symbolic number of blocks: the memoized loop over the
     // blocks holds a loop over the rows whose ALU kernels each read one row (a reduction
     // window, a host loop), so the kernel site is entered with 12 values an iteration, more
     // than its memo holds (runtime::kKernelMemoEntries): its entries are replaced within
     // every iteration, and no block may be copied (a copy would miss its kernels)
    const vta::Env env;
    const auto blocks = ne::var("blocks", 1, 6);
    const std::int64_t rows = 12;
    auto a = te::placeholder(te::shape(blocks, rows, env.batch, env.block_out), env.acc_dtype, "A");
    auto a_buf = te::compute(
        te::shape(blocks, rows, env.batch, env.block_out), [&](auto... i) { return a(i...); },
        "A_buf");
    auto row = te::reduce_axis({0, rows}, "row");
    auto sum_buf = te::compute(
        te::shape(blocks, 1, env.batch, env.block_out),
        [&](auto b, auto, auto bi, auto ci) { return te::sum(a_buf(b, row, bi, ci), {row}); },
        "sum_buf");
    auto sum = te::compute(
        te::shape(blocks, 1, env.batch, env.block_out),
        [&](auto... i) { return te::cast(env.inp_dtype, sum_buf(i...)); }, "sum");
    auto s = te::create_schedule(sum);
    for (const te::Tensor& t : {a_buf, sum_buf}) {
      s[t].set_scope(env.acc_scope);
      s[t].compute_at(s[sum], s[sum].axis(0));
    }
    s[a_buf].pragma(s[a_buf].axis(0), env.dma_copy);
    s[sum].pragma(s[sum].axis(1), env.dma_copy);
    s[sum_buf].pragma(s[sum_buf].axis(0), env.alu);
    out.push_back({"row_sums",
                   std::make_shared<vta::Program>(vta::build(s, {a, sum}, env, "row_sums")),
                   {"blocks"},
                   grid({1}, {6}, {1})});
    out.push_back({"row_repeats",
                   std::make_shared<vta::Program>(row_repeats(env, out.back())),
                   {"blocks"},
                   grid({1}, {6}, {1})});
  }
  return out;
}

// The static programs: the tutorials' vector add and GEMM.
inline std::vector<Case> static_cases() {
  const vta::Env env;
  std::vector<Case> out;
  {
    const gallery::Vadd v(env, 8);
    auto s = v.schedule(env);
    out.push_back(
        {"vadd", std::make_shared<vta::Program>(vta::build(s, v.args(), env, "vadd")), {}, {{}}});
  }
  {
    const gallery::Gemm g(env, 1, 4, 4);
    auto s = g.schedule(env);
    out.push_back(
        {"gemm", std::make_shared<vta::Program>(vta::build(s, g.args(), env, "gemm")), {}, {{}}});
  }
  return out;
}

// The DRAM byte address of a program's parameter k in the tests: distinct, aligned for every
// memory.
constexpr std::uint64_t param_phys(std::size_t k) { return 0x100000 * (k + 1); }

}  // namespace deploy_cases
