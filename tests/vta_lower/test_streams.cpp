// Whole streams: compact streams for large GEMMs (repeated work in micro-op loops), virtual
// threads as double buffering, and the host-side layout helpers the examples use.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include "../../examples/gallery_ops.hpp"
#include <cstdint>
#include <string>
#include <vector>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;

namespace {

// C[M, N] = int8(max(A[M, K] x W[N, K]^T, 0)) on packed operands, rows symbolic (up to
// `max_rows`) and blocked by `row_block`: one load of A and W, a reset, a GEMM, a ReLU on the
// ALU and a store per block, each GEMM and ALU instruction looping over the whole block.
struct GemmRelu {
  vta::Env env;
  te::Tensor A, W, A_buf, W_buf, C_buf, R, C;
  te::IterVar ko, ki;
  GemmRelu(ne::Expr rows, int k_tiles, int n_tiles) {
    A = te::placeholder(te::shape(rows, k_tiles, 1, 16), env.inp_dtype, "A");
    W = te::placeholder(te::shape(n_tiles, k_tiles, 16, 16), env.wgt_dtype, "W");
    A_buf = te::compute(
        te::shape(rows, k_tiles, 1, 16), [&](auto... i) { return A(i...); }, "A_buf");
    W_buf = te::compute(
        te::shape(n_tiles, k_tiles, 16, 16), [&](auto... i) { return W(i...); }, "W_buf");
    ko = te::reduce_axis({0, k_tiles}, "ko");
    ki = te::reduce_axis({0, 16}, "ki");
    const auto out = te::shape(rows, n_tiles, 1, 16);
    C_buf = te::compute(
        out,
        [&](auto bo, auto co, auto bi, auto ci) {
          return te::sum(te::cast(env.acc_dtype, A_buf(bo, ko, bi, ki)) *
                             te::cast(env.acc_dtype, W_buf(co, ko, ci, ki)),
                         {ko, ki});
        },
        "C_buf");
    R = te::compute(
        out, [&](auto... i) { return te::max(C_buf(i...), 0); }, "R");
    C = te::compute(
        out, [&](auto... i) { return te::cast(env.inp_dtype, R(i...)); }, "C");
  }
  te::Schedule schedule(int row_block) const {
    auto s = te::create_schedule(C);
    s[A_buf].set_scope(env.inp_scope);
    s[W_buf].set_scope(env.wgt_scope);
    s[C_buf].set_scope(env.acc_scope);
    s[R].set_scope(env.acc_scope);
    auto [outer, inner] = s[C].split(s[C].axis(0), row_block);
    for (const auto& t : {A_buf, W_buf, C_buf, R}) s[t].compute_at(s[C], outer);
    // The reduction outermost, as in the tutorials: the accumulator reset is then a nest of
    // its own, and the GEMM one kernel over the whole block.
    s[C_buf].reorder(
        {ko, s[C_buf].axis(0), s[C_buf].axis(1), s[C_buf].axis(2), s[C_buf].axis(3), ki});
    s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
    s[W_buf].pragma(s[W_buf].axis(0), env.dma_copy);
    s[R].pragma(s[R].axis(0), env.alu);
    s[C].pragma(inner, env.dma_copy);
    s[C_buf].tensorize(s[C_buf].axis(2), env.gemm);
    return s;
  }
};

// The same computation on plain matrices: int32 sums, ReLU, int8 wrap-around.
te::NDArray gemm_relu_reference(const te::NDArray& a, const te::NDArray& w) {
  const auto m = a.shape()[0], k = a.shape()[1], n = w.shape()[0];
  te::NDArray c(a.dtype(), {m, n});
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t sum = 0;
      for (std::int64_t x = 0; x < k; ++x) sum += a.at({i, x}) * w.at({j, x});
      c.set({i, j}, static_cast<std::int8_t>(std::max<std::int64_t>(sum, 0)));
    }
  return c;
}

}  // namespace

TEST_CASE("streams: a 262144x27 by 27x32 GEMM with ReLU needs thousands of instructions") {
  constexpr std::int64_t kMaxRows = 262144, kBlock = 512;
  auto rows = ne::var("rows", 1, kMaxRows);
  // K = 27 and N = 32 pack into 2 x 2 tiles (the layout helpers zero-pad K).
  GemmRelu g(rows, 2, 2);
  auto s = g.schedule(static_cast<int>(kBlock));
  const auto prog = vta::build(s, {g.A, g.W, g.C}, g.env, "gemm_relu");
  MESSAGE(tir::to_string(prog.func()));
  const std::vector<std::uint64_t> phys{0x1000000, 0x100000, 0x2000000};
  const auto full = prog.instantiate(std::vector<ne::Binding>{{"rows", kMaxRows}}, phys);
  const auto blocks = static_cast<std::size_t>(kMaxRows / kBlock);
  MESSAGE(fmt::format("{} rows: {} instructions, {} micro-ops ({} blocks)", kMaxRows,
                      full.insns.size(), full.uops.size(), blocks));
  // Per block: load A, load W, reset, GEMM, ReLU, store and the token no-ops between them;
  // the 262144 x 2 x 2 GEMM tiles run inside micro-op loops.
  CHECK(full.insns.size() >= 6 * blocks);
  CHECK(full.insns.size() <= 12 * blocks);
  CHECK(full.insns.size() < 10000);
  CHECK(full.uops.size() <= 8);
  // Every field, the last block's rows min(rows - i*512, 512) among them, is an affine sum
  // (clamped for the rows): none goes through ne::compile.
  CHECK(prog.general_fields() == 0);

  // The same program, instantiated for row counts the simulator runs quickly; the last block
  // is partial, values wrap around int8.
  for (const std::int64_t m : {1, 511, 1000}) {
    CAPTURE(m);
    const auto a = te::NDArray::random(g.env.inp_dtype, {m, 27}, static_cast<std::uint64_t>(m));
    const auto w = te::NDArray::random(g.env.inp_dtype, {32, 27}, 3);
    auto pa = vta::pack_matrix(a, g.env);
    auto pw = vta::pack_matrix_weight(w, g.env);
    REQUIRE(pa.shape() == std::vector<std::int64_t>{m, 2, 1, 16});
    te::NDArray pc(g.env.inp_dtype, {m, 2, 1, 16});
    vta::SimDevice dev(g.env.config);
    const auto run = prog.run(dev, {&pa, &pw, &pc}, {{"rows", m}});
    CHECK(run.result.finished);
    CHECK(vta::unpack_matrix(pc, m, 32) == gemm_relu_reference(a, w));
    CHECK(run.result.counters.gemm_uops == static_cast<std::uint64_t>(m * 2 * 2));
  }
}

TEST_CASE("streams: virtual threads double-buffer the blocked GEMM") {
  vta::Env env;
  const gallery::BlockedGemm op(env, 256);
  const auto data = te::NDArray::random(env.inp_dtype, {1, 16, 1, 16}, 31);
  const auto weight = te::NDArray::random(env.wgt_dtype, {16, 16, 16, 16}, 32);
  const auto expect = te::evaluate(op.res, {{op.data, data}, {op.weight, weight}});
  std::vector<std::uint64_t> cycles;
  for (const int vthreads : {1, 2}) {
    CAPTURE(vthreads);
    auto s = op.schedule(env, 64, vthreads);
    const auto lowered = tir::to_string(vta::lower(s, op.args(), env));
    // Two threads: each thread's weight block and accumulator have their own copy.
    CHECK((lowered.find("weight_buf.v1") != std::string::npos) == (vthreads == 2));
    CHECK((lowered.find("res_gem.v1") != std::string::npos) == (vthreads == 2));
    auto s2 = op.schedule(env, 64, vthreads);
    const auto prog = vta::build(s2, op.args(), env, "blocked_gemm");
    auto d = data, w = weight;
    te::NDArray r(env.inp_dtype, {1, 16, 1, 16});
    vta::SimDevice dev(env.config);
    const auto run = prog.run(dev, {&d, &w, &r});
    CHECK(run.result.finished);
    CHECK(r == expect);
    cycles.push_back(run.result.timing.total_cycles);
  }
  // The second thread's weight loads overlap the first thread's GEMMs.
  CHECK(cycles[1] < cycles[0]);
}

TEST_CASE("streams: a virtual thread writing a buffer it shares is an error") {
  vta::Env env;
  const gallery::BlockedGemm op(env, 256);
  auto s = te::create_schedule(op.res);
  s[op.data_buf].set_scope(env.inp_scope);
  s[op.weight_buf].set_scope(env.wgt_scope);
  for (const auto& t : {op.res_gemm, op.res_shr, op.res_max, op.res_min})
    s[t].set_scope(env.acc_scope);
  auto [oc_out, oc_inn] = s[op.res].split(s[op.res].axis(1), 4);
  for (const auto& t : {op.res_gemm, op.res_shr, op.res_max, op.res_min})
    s[t].compute_at(s[op.res], oc_out);
  // The GEMM's own output-channel loop bound to a virtual thread, with the loads inside it:
  // res_gem is allocated outside the thread loop, so both threads would write one copy.
  const auto g = s[op.res_gemm].node()->root;
  auto [co_o, co_i] = s[op.res_gemm].split(g[1], 2);
  s[op.res_gemm].reorder({co_o, op.ic, g[0], co_i, g[2], g[3], op.ic_tns});
  s[op.res_gemm].bind(co_o, te::thread_axis("cthread"));
  s[op.data_buf].compute_at(s[op.res_gemm], op.ic);
  s[op.weight_buf].compute_at(s[op.res_gemm], op.ic);
  s[op.data_buf].pragma(s[op.data_buf].axis(0), env.dma_copy);
  s[op.weight_buf].pragma(s[op.weight_buf].axis(0), env.dma_copy);
  for (const auto& t : {op.res_shr, op.res_max, op.res_min}) s[t].pragma(s[t].axis(0), env.alu);
  s[op.res].pragma(oc_inn, env.dma_copy);
  s[op.res_gemm].tensorize(g[2], env.gemm);
  CHECK_THROWS_WITH_AS(vta::build(s, op.args(), env),
                       doctest::Contains("virtual thread 'co.outer' writes buffer 'res_gem', which "
                                         "is allocated outside the thread loop"),
                       dlavm::ScheduleError);
}

TEST_CASE("layout: NCHW activations and OIHW weights pack into tiles and back") {
  vta::Env env;
  // 27 channels pack into two 16-channel tiles; channels 27..31 are zero.
  const auto nchw = te::NDArray::random(env.inp_dtype, {1, 27, 3, 5}, 41);
  const auto packed = vta::pack_activation(nchw, env);
  REQUIRE(packed.shape() == std::vector<std::int64_t>{1, 2, 3, 5, 1, 16});
  CHECK(packed.at({0, 1, 2, 4, 0, 4}) == nchw.at({0, 20, 2, 4}));
  CHECK(packed.at({0, 0, 1, 3, 0, 15}) == nchw.at({0, 15, 1, 3}));
  for (std::int64_t c = 11; c < 16; ++c) CHECK(packed.at({0, 1, 0, 0, 0, c}) == 0);
  CHECK(vta::unpack_activation(packed, 1, 27) == nchw);

  const auto oihw = te::NDArray::random(env.wgt_dtype, {20, 27, 3, 3}, 42);
  const auto pw = vta::pack_weight(oihw, env);
  REQUIRE(pw.shape() == std::vector<std::int64_t>{2, 2, 3, 3, 16, 16});
  CHECK(pw.at({1, 0, 1, 2, 1, 3}) == oihw.at({17, 3, 1, 2}));
  CHECK(pw.at({1, 1, 2, 2, 3, 10}) == oihw.at({19, 26, 2, 2}));
  CHECK(pw.at({1, 1, 0, 0, 4, 0}) == 0);  // output channel 20: padding

  const auto mk = te::NDArray::random(env.inp_dtype, {5, 27}, 43);
  const auto pm = vta::pack_matrix(mk, env);
  REQUIRE(pm.shape() == std::vector<std::int64_t>{5, 2, 1, 16});
  CHECK(pm.at({4, 1, 0, 10}) == mk.at({4, 26}));
  // An int8 output matrix [M/B, N/BO, B, BO] unpacks to [M, N].
  te::NDArray out(env.inp_dtype, {5, 2, 1, 16});
  for (std::size_t i = 0; i < out.size(); ++i) out.set_flat(i, static_cast<std::int64_t>(i % 97));
  const auto mn = vta::unpack_matrix(out, 5, 30);
  REQUIRE(mn.shape() == std::vector<std::int64_t>{5, 30});
  CHECK(mn.at({3, 17}) == out.at({3, 1, 0, 1}));
}

TEST_CASE("layout: arrays of the wrong rank or size are ShapeErrors") {
  vta::Env env;
  const te::NDArray flat(env.inp_dtype, {2, 3, 4});
  CHECK_THROWS_WITH_AS(
      vta::pack_activation(flat, env),
      doctest::Contains("expected a 4-dimensional NCHW array, got shape [2, 3, 4]"),
      dlavm::ShapeError);
  CHECK_THROWS_AS(vta::pack_matrix(flat, env), dlavm::ShapeError);
  const te::NDArray packed(env.inp_dtype, {1, 2, 3, 3, 1, 16});
  CHECK_THROWS_WITH_AS(vta::unpack_activation(packed, 1, 40),
                       doctest::Contains("1 images of 40 channels asked of a packed array holding "
                                         "1 x 32"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(vta::unpack_matrix(te::NDArray(env.inp_dtype, {4, 2, 1, 16}), 5, 8),
                       doctest::Contains("a 5 x 8 matrix asked of a packed array holding 4 x 32"),
                       dlavm::ShapeError);
}
