// The gallery's operators, declared and scheduled once: the example programs run them, the
// benchmarks time their compilation. Each follows a TVM-VTA tutorial's schedule.
#pragma once

#include <dlavm/vta.hpp>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace gallery {

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace vta = dlavm::vta;

// The tutorials' requantization of an accumulator tensor: shift right, clip to [0, 127] (the
// int8 maximum), cast to int8; three ALU stages and the stored result.
struct Requantize {
  te::Tensor shr, max, min, res;
  Requantize(const vta::Env& env, const te::Tensor& acc, int shift) {
    const auto& shape = acc.shape();
    const int inp_max = (1 << (env.inp_width - 1)) - 1;
    shr = te::compute_dynamic(
        shape,
        [&](std::span<const ne::Var> i) {
          return acc.read({i.begin(), i.end()}) >> shift;
        },
        "res_shr");
    max = te::compute_dynamic(
        shape,
        [&](std::span<const ne::Var> i) {
          return te::max(shr.read({i.begin(), i.end()}), 0);
        },
        "res_max");
    min = te::compute_dynamic(
        shape,
        [&](std::span<const ne::Var> i) {
          return te::min(max.read({i.begin(), i.end()}), inp_max);
        },
        "res_min");
    res = te::compute_dynamic(
        shape,
        [&](std::span<const ne::Var> i) {
          return te::cast(env.inp_dtype, min.read({i.begin(), i.end()}));
        },
        "res");
  }
};

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
    const Requantize q(env, res_gemm, env.inp_width);
    res_shr = q.shr, res_max = q.max, res_min = q.min, res = q.res;
  }
  std::vector<te::Tensor> args() const { return {data, weight, res}; }
  // The tutorial's schedule; `vthreads` > 1 also splits the output blocks over virtual
  // threads, so that each thread's weight block loads while another thread computes.
  te::Schedule schedule(const vta::Env& env, int block, int vthreads = 1) const {
    auto s = te::create_schedule(res);
    s[data_buf].set_scope(env.inp_scope);
    s[weight_buf].set_scope(env.wgt_scope);
    for (const auto& t : {res_gemm, res_shr, res_max, res_min}) s[t].set_scope(env.acc_scope);
    auto [b_out, b_inn] = s[res].split(s[res].axis(0), 1);
    auto [oc_out, oc_inn] = s[res].split(s[res].axis(1), block / env.block_out);
    s[res].reorder({b_out, oc_out, b_inn, oc_inn});
    te::IterVar attach = oc_out;
    if (vthreads > 1) {
      auto [oc_o, tx] = s[res].split(oc_out, vthreads);
      s[res].reorder({tx, b_out, oc_o});
      s[res].bind(tx, te::thread_axis("cthread"));
      attach = oc_o;
    }
    for (const auto& t : {res_gemm, res_shr, res_max, res_min}) s[t].compute_at(s[res], attach);
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
  // DRAM bytes the tiling must move: the input once per output block, the weights once, the
  // result once.
  std::int64_t tiling_traffic(int channels, int block) const {
    return std::int64_t{channels} * (channels / block) + std::int64_t{channels} * channels +
           channels;
  }
};

// 2D convolution (convolution_opt tutorial): NCHW activations and OIHW weights in VTA's packed
// layouts ([N/B, C/BI, H, W, B, BI] and [O/BO, I/BI, KH, KW, BO, BI]), zero padding done by
// the input DMA, then the tutorial's requantization: shift right by 8, clip to [0, 127].
struct Conv2d {
  int height, width, in_channels, out_channels, kernel_size, pad, stride, out_h, out_w;
  te::Tensor data, kernel, data_buf, kernel_buf, res_conv, res_shr, res_max, res_min, res;
  te::IterVar ic, dy, dx, ic_tns;
  Conv2d(const vta::Env& env, int h, int w, int in_c, int out_c, int k, int p, int st)
      : height(h),
        width(w),
        in_channels(in_c),
        out_channels(out_c),
        kernel_size(k),
        pad(p),
        stride(st),
        out_h((h + 2 * p - k) / st + 1),
        out_w((w + 2 * p - k) / st + 1) {
    const int ic_t = in_c / env.block_in, oc_t = out_c / env.block_out;
    data =
        te::placeholder(te::shape(1, ic_t, h, w, env.batch, env.block_in), env.inp_dtype, "data");
    kernel = te::placeholder(te::shape(oc_t, ic_t, k, k, env.block_out, env.block_in),
                             env.wgt_dtype, "kernel");
    data_buf = te::pad(data, {0, 0, p, p, 0, 0}, {0, 0, p, p, 0, 0}, 0, "data_buf");
    kernel_buf = te::compute(
        te::shape(oc_t, ic_t, k, k, env.block_out, env.block_in),
        [&](auto... i) { return kernel(i...); }, "kernel_buf");
    ic = te::reduce_axis({0, ic_t}, "ic");
    dy = te::reduce_axis({0, k}, "dy");
    dx = te::reduce_axis({0, k}, "dx");
    ic_tns = te::reduce_axis({0, env.block_in}, "ic_tns");
    const auto out = te::shape(1, oc_t, out_h, out_w, env.batch, env.block_out);
    res_conv = te::compute(
        out,
        [&](auto bo, auto co, auto i, auto j, auto bi, auto ci) {
          return te::sum(
              te::cast(env.acc_dtype, data_buf(bo, ic, i * st + dy, j * st + dx, bi, ic_tns)) *
                  te::cast(env.acc_dtype, kernel_buf(co, ic, dy, dx, ci, ic_tns)),
              {ic, dy, dx, ic_tns});
        },
        "res_conv", {"bo", "co", "i", "j", "bi", "ci"});
    const Requantize q(env, res_conv, 8);
    res_shr = q.shr, res_max = q.max, res_min = q.min, res = q.res;
  }
  std::vector<te::Tensor> args() const { return {data, kernel, res}; }

  // The tutorial's schedule: output blocks of oc_block channel tiles x h_block rows x w_block
  // columns, the input channels reduced ic_block tiles at a time with the input and weight
  // blocks loaded per step, and the output channel blocks split over `vthreads` virtual
  // threads (double buffering).
  te::Schedule schedule(const vta::Env& env, int oc_block, int h_block, int w_block,
                        int ic_block = 1, int vthreads = 2) const {
    auto s = te::create_schedule(res);
    auto [b_out, b_inn] = s[res].split(s[res].axis(0), 1);
    auto [oc_out, oc_inn] = s[res].split(s[res].axis(1), oc_block);
    auto [y_out, y_inn] = s[res].split(s[res].axis(2), h_block);
    auto [x_out, x_inn] = s[res].split(s[res].axis(3), w_block);
    s[res].reorder(
        {b_out, oc_out, y_out, x_out, b_inn, oc_inn, y_inn, x_inn, s[res].axis(4), s[res].axis(5)});
    for (const auto& t : {res_conv, res_shr, res_max, res_min}) s[t].compute_at(s[res], x_out);
    const auto c = s[res_conv].node()->root;  // bo, co, i, j, bi, ci
    auto [ic_out, ic_inn] = s[res_conv].split(ic, ic_block);
    s[res_conv].reorder({ic_out, c[0], c[1], c[2], ic_inn, dy, dx, c[3], c[4], c[5], ic_tns});
    if (vthreads > 1) {
      auto [oc_o, tx] = s[res].split(oc_out, vthreads);
      s[res].reorder({tx, b_out});
      s[res].bind(tx, te::thread_axis("cthread"));
      (void)oc_o;
    }
    s[data_buf].set_scope(env.inp_scope);
    s[kernel_buf].set_scope(env.wgt_scope);
    for (const auto& t : {res_conv, res_shr, res_max, res_min}) s[t].set_scope(env.acc_scope);
    s[data_buf].compute_at(s[res_conv], ic_out);
    s[kernel_buf].compute_at(s[res_conv], ic_out);
    s[data_buf].pragma(s[data_buf].axis(0), env.dma_copy);
    s[kernel_buf].pragma(s[kernel_buf].axis(0), env.dma_copy);
    s[res].pragma(b_inn, env.dma_copy);
    s[res_conv].tensorize(c[4], env.gemm);
    for (const auto& t : {res_shr, res_max, res_min}) s[t].pragma(s[t].axis(0), env.alu);
    return s;
  }

  // DRAM bytes the tiling must move: for every output-channel block and row block, the input
  // rows it covers (halo included, padding excluded); the weights once per spatial block; the
  // result once.
  std::int64_t tiling_traffic(const vta::Env& env, int oc_block, int h_block, int w_block) const {
    const std::int64_t oc_blocks = out_channels / env.block_out / oc_block;
    std::int64_t rows = 0;
    for (int y0 = 0; y0 < out_h; y0 += h_block) {
      const int last = std::min(y0 + h_block, out_h) - 1;
      const int lo = std::max(y0 * stride - pad, 0);
      const int hi = std::min(last * stride - pad + kernel_size - 1, height - 1);
      rows += hi - lo + 1;
    }
    const std::int64_t x_blocks = (out_w + w_block - 1) / w_block;
    const std::int64_t y_blocks = (out_h + h_block - 1) / h_block;
    return oc_blocks * rows * width * in_channels * x_blocks +
           y_blocks * x_blocks * std::int64_t{out_channels} * in_channels * kernel_size *
               kernel_size +
           std::int64_t{out_channels} * out_h * out_w;
  }
};

// The convolution computed directly on NCHW / OIHW arrays, the independent reference for
// Conv2d: int32 accumulation, shift right by `shift`, clip to [0, 127], int8 result.
inline te::NDArray conv2d_reference(const te::NDArray& data, const te::NDArray& weight, int pad,
                                    int stride, int shift = 8) {
  const auto n = data.shape()[0], c = data.shape()[1], h = data.shape()[2], w = data.shape()[3];
  const auto o = weight.shape()[0], k = weight.shape()[2];
  const auto oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  te::NDArray out(dlavm::DType::int8(), {n, o, oh, ow});
  const auto d = data.data();
  const auto wt = weight.data();
  auto r = out.data();
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t oc = 0; oc < o; ++oc)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t x = 0; x < ow; ++x) {
          std::int32_t acc = 0;
          for (std::int64_t ic = 0; ic < c; ++ic)
            for (std::int64_t ky = 0; ky < k; ++ky)
              for (std::int64_t kx = 0; kx < k; ++kx) {
                const auto iy = y * stride - pad + ky, ix = x * stride - pad + kx;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                acc += static_cast<std::int32_t>(
                    d[static_cast<std::size_t>(((b * c + ic) * h + iy) * w + ix)] *
                    wt[static_cast<std::size_t>(((oc * c + ic) * k + ky) * k + kx)]);
              }
          r[static_cast<std::size_t>(((b * o + oc) * oh + y) * ow + x)] =
              std::clamp(acc >> shift, 0, 127);
        }
  return out;
}

}  // namespace gallery
