// The roofline bound against the cycle model on lowered programs: the gallery's operators,
// and a double-buffered 784x25 . 25x6 GEMM whose loads and stores overlap (under a bound that
// put all DRAM bytes on one bus it ran faster than its "bound").
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include "../../examples/gallery_ops.hpp"
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace te = dlavm::te;
namespace vta = dlavm::vta;
using vta::Queue;

namespace {

// gallery::Gemm with its rows in blocks of `row_block`, the blocks split over two virtual
// threads: one thread's loads and stores overlap the other's GEMMs.
te::Schedule threaded_gemm(const gallery::Gemm& op, const vta::Env& env, int row_block) {
  auto s = te::create_schedule(op.C);
  s[op.A_buf].set_scope(env.inp_scope);
  s[op.B_buf].set_scope(env.wgt_scope);
  s[op.C_buf].set_scope(env.acc_scope);
  auto [outer, inner] = s[op.C].split(s[op.C].axis(0), row_block);
  auto [blocks, thread] = s[op.C].split(outer, 2);
  s[op.C].reorder({thread, blocks, inner});
  s[op.C].bind(thread, te::thread_axis("cthread"));
  s[op.C_buf].compute_at(s[op.C], blocks);
  const auto c = s[op.C_buf].node()->root;
  s[op.C_buf].reorder({op.ko, c[0], c[1], c[2], c[3], op.ki});
  s[op.A_buf].compute_at(s[op.C_buf], op.ko);
  s[op.B_buf].compute_at(s[op.C_buf], op.ko);
  s[op.A_buf].pragma(s[op.A_buf].axis(0), env.dma_copy);
  s[op.B_buf].pragma(s[op.B_buf].axis(0), env.dma_copy);
  s[op.C].pragma(inner, env.dma_copy);
  s[op.C_buf].tensorize(c[2], env.gemm);
  return s;
}

vta::CycleParams random_params(std::mt19937_64& rng) {
  auto pick = [&](std::uint64_t lo, std::uint64_t hi) { return lo + rng() % (hi - lo + 1); };
  vta::CycleParams p;
  p.bus_bytes_per_cycle = pick(1, 64);
  p.dram_latency = pick(0, 64);
  p.insn_overhead = pick(0, 8);
  p.gemm_uops_per_cycle = pick(1, 4);
  p.gemm_latency = pick(0, 8);
  p.alu_cycles_per_uop = pick(0, 4);
  p.alu_latency = pick(0, 8);
  p.pad_elems_per_cycle = pick(1, 4);
  return p;
}

}  // namespace

TEST_CASE("roofline: a double-buffered 784x25 . 25x6 GEMM stays above its bound") {
  vta::Env env;
  const gallery::Gemm op(env, 784, 2, 1);  // K = 25 and N = 6 pad to 2 and 1 tiles
  for (const int row_block : {98, 196, 392}) {
    CAPTURE(row_block);
    auto s = threaded_gemm(op, env, row_block);
    const auto prog = vta::build(s, op.args(), env, "gemm784");
    auto a = te::NDArray::random(env.inp_dtype, {784, 2, 1, 16}, 1);
    auto b = te::NDArray::random(env.wgt_dtype, {1, 2, 16, 16}, 2);
    te::NDArray c(env.inp_dtype, {784, 1, 1, 16});
    vta::SimDevice dev(env.config);
    const auto run = prog.run(dev, {&a, &b, &c});
    CHECK(c == te::evaluate(op.C, {{op.A, a}, {op.B, b}}));
    const auto& t = run.result.timing;
    CAPTURE(t);
    CHECK(t.total_cycles >= t.roofline_cycles);
    // The load and store modules moved their bytes at the same time: all DRAM bytes on one
    // 8-byte bus would take longer than the whole run did.
    CHECK(t.total_cycles < (t.counters.memory_bytes() + 7) / 8);
    CHECK(t.memory_cycles == t.port(Queue::Load));
    CHECK(t.port(Queue::Load) == (t.counters.inp_load_bytes + t.counters.wgt_load_bytes) / 8);
    CHECK(t.port(Queue::Store) == t.counters.out_store_bytes / 8);
  }
}

// Every gallery operator, instantiated once and timed under many parameter sets: the model
// never finishes before its bound.
TEST_CASE("roofline: the gallery's operators never beat their bound, whatever the parameters") {
  vta::Env env;
  std::vector<std::pair<std::string, vta::Program>> progs;
  {
    const gallery::Vadd op(env, 64);
    auto s = op.schedule(env);
    progs.emplace_back("vadd", vta::build(s, op.args(), env, "vadd"));
  }
  {
    const gallery::Gemm op(env, 1, 16, 16);
    auto s = op.schedule(env);
    progs.emplace_back("gemm", vta::build(s, op.args(), env, "gemm"));
  }
  for (const int vthreads : {1, 2}) {
    const gallery::BlockedGemm op(env, 256);
    auto s = op.schedule(env, 64, vthreads);
    progs.emplace_back("blocked_gemm", vta::build(s, op.args(), env, "blocked_gemm"));
    const gallery::Conv2d conv(env, 8, 8, 32, 32, 3, 1, 1);
    auto sc = conv.schedule(env, 1, 4, 8, 1, vthreads);
    progs.emplace_back("conv2d", vta::build(sc, conv.args(), env, "conv2d"));
  }
  for (const int row_block : {49, 98, 196, 392}) {
    const gallery::Gemm op(env, 784, 2, 1);
    auto s = threaded_gemm(op, env, row_block);
    progs.emplace_back("gemm784", vta::build(s, op.args(), env, "gemm784"));
  }
  const std::vector<std::uint64_t> phys{0x100000, 0x800000, 0x1000000};
  std::mt19937_64 rng(13);
  for (const auto& named : progs) {
    const auto& name = named.first;  // (not a binding: Clang 14's CAPTURE cannot read one)
    const auto& prog = named.second;
    CAPTURE(name);
    const auto stream = prog.instantiate({}, phys);
    const auto insns = vta::decode_all(env.config.layout(), stream.insns);
    for (int k = 0; k < 40; ++k) {
      const auto params = k == 0 ? vta::CycleParams::for_config(env.config) : random_params(rng);
      const auto r = vta::CycleModel(env.config, params).run(insns);
      CAPTURE(r);
      CHECK(r.total_cycles >= r.roofline_cycles);
    }
  }
}
