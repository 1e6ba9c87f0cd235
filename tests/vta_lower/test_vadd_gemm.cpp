// End to end: schedules written like the TVM-VTA tutorials compile to VTA programs whose
// results on the simulator equal te::evaluate.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;
using dlavm::DType;

TEST_CASE("vta: vector add from the get-started tutorial") {
  vta::Env env;
  const auto shape = te::shape(1, 64, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.acc_dtype, "A");
  auto B = te::placeholder(shape, env.acc_dtype, "B");
  auto A_buf = te::compute(
      shape, [&](auto... i) { return A(i...); }, "A_buf");
  auto B_buf = te::compute(
      shape, [&](auto... i) { return B(i...); }, "B_buf");
  auto C_buf = te::compute(
      shape, [&](auto... i) { return A_buf(i...) + B_buf(i...); }, "C_buf");
  auto C = te::compute(
      shape, [&](auto... i) { return te::cast(env.inp_dtype, C_buf(i...)); }, "C");
  auto s = te::create_schedule(C);
  for (const auto& t : {A_buf, B_buf, C_buf}) s[t].set_scope(env.acc_scope);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[B_buf].pragma(s[B_buf].axis(0), env.dma_copy);
  s[C].pragma(s[C].axis(0), env.dma_copy);
  s[C_buf].pragma(s[C_buf].axis(0), env.alu);
  const auto f = vta::lower(s, {A, B, C}, env, "vadd");
  MESSAGE(tir::to_string(f));
  auto prog = vta::build(s, {A, B, C}, env, "vadd");
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(env.acc_dtype, {1, 64, 1, 16}, 1, -128, 127);
  auto b = te::NDArray::random(env.acc_dtype, {1, 64, 1, 16}, 2, -128, 127);
  te::NDArray c(env.inp_dtype, {1, 64, 1, 16});
  auto r = prog.run(dev, {&a, &b, &c});
  CHECK(r.result.finished);
  CHECK(c == te::evaluate(C, {{A, a}, {B, b}}));
}

namespace {
// The matrix_multiply tutorial: C[o, m, BATCH, BLOCK_OUT] = A[o, n, BATCH, BLOCK_IN] x B[m, n,
// BLOCK_OUT, BLOCK_IN]^T.
struct TutorialGemm {
  te::Tensor A, B, A_buf, B_buf, C_buf, C;
  te::IterVar ko, ki;
  TutorialGemm(const vta::Env& env, ne::Expr o, int n, int m) {
    A = te::placeholder(te::shape(o, n, env.batch, env.block_in), env.inp_dtype, "A");
    B = te::placeholder(te::shape(m, n, env.block_out, env.block_in), env.wgt_dtype, "B");
    A_buf = te::compute(
        te::shape(o, n, env.batch, env.block_in), [&](auto... i) { return A(i...); }, "A_buf");
    B_buf = te::compute(
        te::shape(m, n, env.block_out, env.block_in), [&](auto... i) { return B(i...); }, "B_buf");
    ko = te::reduce_axis({0, n}, "ko");
    ki = te::reduce_axis({0, env.block_in}, "ki");
    C_buf = te::compute(te::shape(o, m, env.batch, env.block_out),
                        [&](auto bo, auto co, auto bi, auto ci) {
                          return te::sum(te::cast(env.acc_dtype, A_buf(bo, ko, bi, ki)) *
                                             te::cast(env.acc_dtype, B_buf(co, ko, ci, ki)),
                                         {ko, ki});
                        },
                        "C_buf", {"bo", "co", "bi", "ci"});
    C = te::compute(
        te::shape(o, m, env.batch, env.block_out),
        [&](auto... i) { return te::cast(env.inp_dtype, C_buf(i...)); }, "C");
  }
  te::Schedule schedule(const vta::Env& env) const {
    auto s = te::create_schedule(C);
    s[A_buf].set_scope(env.inp_scope);
    s[B_buf].set_scope(env.wgt_scope);
    s[C_buf].set_scope(env.acc_scope);
    s[C_buf].reorder(
        {ko, s[C_buf].axis(0), s[C_buf].axis(1), s[C_buf].axis(2), s[C_buf].axis(3), ki});
    s[A_buf].compute_at(s[C_buf], ko);
    s[B_buf].compute_at(s[C_buf], ko);
    s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
    s[B_buf].pragma(s[B_buf].axis(0), env.dma_copy);
    s[C].pragma(s[C].axis(0), env.dma_copy);
    s[C_buf].tensorize(s[C_buf].axis(2), env.gemm);
    return s;
  }
};
}  // namespace

TEST_CASE("vta: matrix_multiply tutorial, tensorized GEMM") {
  vta::Env env;
  TutorialGemm g(env, 1, 16, 16);
  auto s = g.schedule(env);
  const auto f = vta::lower(s, {g.A, g.B, g.C}, env, "gemm");
  MESSAGE(tir::to_string(f));
  auto prog = vta::build(s, {g.A, g.B, g.C}, env, "gemm");
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(env.inp_dtype, {1, 16, 1, 16}, 3);
  auto b = te::NDArray::random(env.wgt_dtype, {16, 16, 16, 16}, 4);
  te::NDArray c(env.inp_dtype, {1, 16, 1, 16});
  auto r = prog.run(dev, {&a, &b, &c});
  CHECK(r.result.finished);
  CHECK(c == te::evaluate(g.C, {{g.A, a}, {g.B, b}}));
  MESSAGE(fmt::format("{}", r.result.counters));
}

TEST_CASE("vta: a GEMM whose row count is a token count, built once, run for several values") {
  vta::Env env;
  auto token = ne::var("token", 1, 2048);
  TutorialGemm g(env, token, 4, 2);
  {
    auto s = g.schedule(env);
    // All 2048 rows do not fit the accumulator: blocks of 64 rows, the last one shorter.
    CHECK_THROWS_WITH_AS(vta::build(s, {g.A, g.B, g.C}, env),
                         doctest::Contains("needs 262144 bytes of local.acc_buffer"),
                         dlavm::CapacityError);
  }
  // The inputs and te::evaluate's results once per token count: both schedules must give them.
  const std::vector<std::int64_t> tokens{1, 3, 37, 511, 512, 513, 2047, 2048};
  auto b = te::NDArray::random(env.wgt_dtype, {2, 4, 16, 16}, 5);
  std::vector<te::NDArray> inputs, expected;
  for (const std::int64_t t : tokens) {
    inputs.push_back(
        te::NDArray::random(env.inp_dtype, {t, 4, 1, 16}, static_cast<std::uint64_t>(t)));
    expected.push_back(te::evaluate(g.C, {{g.A, inputs.back()}, {g.B, b}}, {{"token", t}}));
  }
  // Row blocks of 64 and of 512 (the benchmark's schedule: fewer, longer instructions).
  for (const std::int64_t row_block : {64, 512}) {
    CAPTURE(row_block);
    auto s = g.schedule(env);
    auto [to, ti] = s[g.C].split(s[g.C].axis(0), ne::Expr(row_block));
    s[g.C_buf].compute_at(s[g.C], to);
    s[g.C].pragma(ti, env.dma_copy);
    auto prog = vta::build(s, {g.A, g.B, g.C}, env, "gemm_token");
    if (row_block == 64) MESSAGE(tir::to_string(prog.func()));
    vta::SimDevice dev(env.config);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::int64_t t = tokens[i];
      CAPTURE(t);
      te::NDArray c(env.inp_dtype, {t, 2, 1, 16});
      auto r = prog.run(dev, {&inputs[i], &b, &c}, {{"token", t}});
      CHECK(r.result.finished);
      CHECK(c == expected[i]);
      // One row block = one reset, 4 x (two loads, one GEMM), one store, plus micro-op loads
      // and token NOPs: the stream grows with the number of blocks, not with the rows.
      const auto blocks = (t + row_block - 1) / row_block;
      CHECK(r.instructions <= static_cast<std::size_t>(18 * blocks + 8));
    }
    CHECK_THROWS_WITH_AS(prog.instantiate(std::vector<ne::Binding>{{"token", 2049}},
                                          std::vector<std::uint64_t>{0x1000, 0x2000, 0x3000}),
                         doctest::Contains("'token' = 2049 is outside its range [1, 2048]"),
                         dlavm::ValueError);
  }
}
