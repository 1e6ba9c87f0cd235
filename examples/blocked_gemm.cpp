// Blocked GEMM, the VTA matrix_multiply_opt tutorial in C++: 1 x 1024 x 1024 int8, blocked by
// 256 so that each block's operands fit the on-chip buffers, then shifted and clipped to int8
// on the ALU.
//   blocked_gemm [--dump DIR] [--trace FILE]
#include "gallery.hpp"

namespace te = dlavm::te;
namespace vta = dlavm::vta;

int main(int argc, char** argv) {
  const auto opts = gallery::parse(argc, argv);
  vta::Env env;
  const int channels = 1024, block = 256;
  const int n = channels / env.block_in, m = channels / env.block_out;
  auto data = te::placeholder(te::shape(1, n, env.batch, env.block_in), env.inp_dtype, "data");
  auto weight =
      te::placeholder(te::shape(m, n, env.block_out, env.block_in), env.wgt_dtype, "weight");
  auto data_buf = te::compute(
      te::shape(1, n, env.batch, env.block_in), [&](auto... i) { return data(i...); }, "data_buf");
  auto weight_buf = te::compute(
      te::shape(m, n, env.block_out, env.block_in), [&](auto... i) { return weight(i...); },
      "weight_buf");
  auto ic = te::reduce_axis({0, n}, "ic");
  auto ic_tns = te::reduce_axis({0, env.block_in}, "ic_tns");
  const auto out = te::shape(1, m, env.batch, env.block_out);
  auto res_gemm =
      te::compute(out,
                  [&](auto bo, auto co, auto bi, auto ci) {
                    return te::sum(te::cast(env.acc_dtype, data_buf(bo, ic, bi, ic_tns)) *
                                       te::cast(env.acc_dtype, weight_buf(co, ic, ci, ic_tns)),
                                   {ic, ic_tns});
                  },
                  "res_gem", {"bo", "co", "bi", "ci"});
  auto res_shr = te::compute(
      out, [&](auto... i) { return res_gemm(i...) >> env.inp_width; }, "res_shr");
  const int inp_max = (1 << (env.inp_width - 1)) - 1;
  auto res_max = te::compute(
      out, [&](auto... i) { return te::max(res_shr(i...), 0); }, "res_max");
  auto res_min = te::compute(
      out, [&](auto... i) { return te::min(res_max(i...), inp_max); }, "res_min");
  auto res = te::compute(
      out, [&](auto... i) { return te::cast(env.inp_dtype, res_min(i...)); }, "res");

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
  const auto prog = vta::build(s, {data, weight, res}, env, "blocked_gemm");

  vta::SimDevice dev(env.config);
  dev.set_trace(!opts.trace.empty());
  auto d = te::NDArray::random(env.inp_dtype, {1, n, 1, 16}, 5);
  auto w = te::NDArray::random(env.wgt_dtype, {m, n, 16, 16}, 6);
  te::NDArray r(env.inp_dtype, {1, m, 1, 16});
  const auto run = prog.run(dev, {&d, &w, &r}, {}, {.dump_dir = opts.dump});
  return gallery::report(prog, run, r == te::evaluate(res, {{data, d}, {weight, w}}), opts);
}
