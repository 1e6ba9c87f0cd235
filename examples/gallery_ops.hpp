// The gallery's operators, declared and scheduled once: the example programs run them, the
// benchmarks time their compilation. Each follows a TVM-VTA tutorial's schedule.
#pragma once

#include <dlavm/dlavm.hpp>

#include <vector>

namespace gallery {

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace vta = dlavm::vta;

// Vector add (get-started tutorial): int32 vectors in the accumulator, added by the ALU.
struct Vadd {
  te::Tensor A, B, A_buf, B_buf, C_buf, C;
  explicit Vadd(const vta::Env& env, int tiles = 64) {
    const auto shape = te::shape(1, tiles, env.batch, env.block_out);
    A = te::placeholder(shape, env.acc_dtype, "A");
    B = te::placeholder(shape, env.acc_dtype, "B");
    A_buf = te::compute(
        shape, [&](auto... i) { return A(i...); }, "A_buf");
    B_buf = te::compute(
        shape, [&](auto... i) { return B(i...); }, "B_buf");
    C_buf = te::compute(
        shape, [&](auto... i) { return A_buf(i...) + B_buf(i...); }, "C_buf");
    C = te::compute(
        shape, [&](auto... i) { return te::cast(env.inp_dtype, C_buf(i...)); }, "C");
  }
  std::vector<te::Tensor> args() const { return {A, B, C}; }
  te::Schedule schedule(const vta::Env& env) const {
    auto s = te::create_schedule(C);
    for (const auto& t : {A_buf, B_buf, C_buf}) s[t].set_scope(env.acc_scope);
    s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
    s[B_buf].pragma(s[B_buf].axis(0), env.dma_copy);
    s[C].pragma(s[C].axis(0), env.dma_copy);
    s[C_buf].pragma(s[C_buf].axis(0), env.alu);
    return s;
  }
};

// GEMM (matrix_multiply tutorial): C[o, m, BATCH, BLOCK_OUT] = A[o, n, BATCH, BLOCK_IN] x
// B[m, n, BLOCK_OUT, BLOCK_IN]^T; the row count o may be symbolic (a token count).
struct Gemm {
  te::Tensor A, B, A_buf, B_buf, C_buf, C;
  te::IterVar ko, ki;
  Gemm(const vta::Env& env, ne::Expr o, int n, int m) {
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
  std::vector<te::Tensor> args() const { return {A, B, C}; }
  // The tutorial's schedule; `row_block` > 0 also tiles the rows so that a large (or
  // symbolic) row count fits the accumulator.
  te::Schedule schedule(const vta::Env& env, int row_block = 0) const {
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
    if (row_block > 0) {
      auto [outer, inner] = s[C].split(s[C].axis(0), row_block);
      s[C_buf].compute_at(s[C], outer);
      s[C].pragma(inner, env.dma_copy);
    } else {
      s[C].pragma(s[C].axis(0), env.dma_copy);
    }
    s[C_buf].tensorize(s[C_buf].axis(2), env.gemm);
    return s;
  }
};

// Blocked GEMM (matrix_multiply_opt tutorial): blocked by `block` so that each block's
// operands fit on chip, then shifted and clipped to int8 on the ALU.
struct BlockedGemm {
  te::Tensor data, weight, data_buf, weight_buf, res_gemm, res_shr, res_max, res_min, res;
  te::IterVar ic, ic_tns;
  BlockedGemm(const vta::Env& env, int channels) {
    const int n = channels / env.block_in, m = channels / env.block_out;
    data = te::placeholder(te::shape(1, n, env.batch, env.block_in), env.inp_dtype, "data");
    weight = te::placeholder(te::shape(m, n, env.block_out, env.block_in), env.wgt_dtype, "weight");
    data_buf = te::compute(
        te::shape(1, n, env.batch, env.block_in), [&](auto... i) { return data(i...); },
        "data_buf");
    weight_buf = te::compute(
        te::shape(m, n, env.block_out, env.block_in), [&](auto... i) { return weight(i...); },
        "weight_buf");
    ic = te::reduce_axis({0, n}, "ic");
    ic_tns = te::reduce_axis({0, env.block_in}, "ic_tns");
    const auto out = te::shape(1, m, env.batch, env.block_out);
    res_gemm =
        te::compute(out,
                    [&](auto bo, auto co, auto bi, auto ci) {
                      return te::sum(te::cast(env.acc_dtype, data_buf(bo, ic, bi, ic_tns)) *
                                         te::cast(env.acc_dtype, weight_buf(co, ic, ci, ic_tns)),
                                     {ic, ic_tns});
                    },
                    "res_gem", {"bo", "co", "bi", "ci"});
    res_shr = te::compute(
        out, [&](auto... i) { return res_gemm(i...) >> env.inp_width; }, "res_shr");
    const int inp_max = (1 << (env.inp_width - 1)) - 1;
    res_max = te::compute(
        out, [&](auto... i) { return te::max(res_shr(i...), 0); }, "res_max");
    res_min = te::compute(
        out, [&](auto... i) { return te::min(res_max(i...), inp_max); }, "res_min");
    res = te::compute(
        out, [&](auto... i) { return te::cast(env.inp_dtype, res_min(i...)); }, "res");
  }
  std::vector<te::Tensor> args() const { return {data, weight, res}; }
  te::Schedule schedule(const vta::Env& env, int block) const {
    auto s = te::create_schedule(res);
    s[data_buf].set_scope(env.inp_scope);
    s[weight_buf].set_scope(env.wgt_scope);
    for (const auto& t : {res_gemm, res_shr, res_max, res_min}) s[t].set_scope(env.acc_scope);
    auto [b_out, b_inn] = s[res].split(s[res].axis(0), 1);
    auto [oc_out, oc_inn] = s[res].split(s[res].axis(1), block / env.block_out);
    s[res].reorder({b_out, oc_out, b_inn, oc_inn});
    for (const auto& t : {res_gemm, res_shr, res_max, res_min}) s[t].compute_at(s[res], oc_out);
    auto [ic_out, ic_inn] = s[res_gemm].split(ic, block / env.block_in);
    s[res_gemm].reorder({ic_out, s[res_gemm].axis(0), s[res_gemm].axis(1), ic_inn,
                         s[res_gemm].axis(2), s[res_gemm].axis(3), ic_tns});
    s[data_buf].compute_at(s[res_gemm], ic_out);
    s[weight_buf].compute_at(s[res_gemm], ic_out);
    s[data_buf].pragma(s[data_buf].axis(0), env.dma_copy);
    s[weight_buf].pragma(s[weight_buf].axis(0), env.dma_copy);
    for (const auto& t : {res_shr, res_max, res_min}) s[t].pragma(s[t].axis(0), env.alu);
    s[res].pragma(oc_inn, env.dma_copy);
    s[res_gemm].tensorize(s[res_gemm].axis(2), env.gemm);
    return s;
  }
};

}  // namespace gallery
