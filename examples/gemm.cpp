// GEMM, the VTA matrix_multiply tutorial in C++: C[1, 16, 1, 16] = A x B^T with on-chip copies
// loaded per reduction step, the reduction reordered outermost and the tile tensorized onto
// VTA's GEMM core.
//   gemm [--dump DIR] [--trace FILE]
#include "gallery.hpp"

namespace te = dlavm::te;
namespace vta = dlavm::vta;

int main(int argc, char** argv) {
  const auto opts = gallery::parse(argc, argv);
  vta::Env env;
  const int m = 16, n = 16;  // output and input channels, in tiles of 16
  auto A = te::placeholder(te::shape(1, n, env.batch, env.block_in), env.inp_dtype, "A");
  auto B = te::placeholder(te::shape(m, n, env.block_out, env.block_in), env.wgt_dtype, "B");
  auto A_buf = te::compute(
      te::shape(1, n, env.batch, env.block_in), [&](auto... i) { return A(i...); }, "A_buf");
  auto B_buf = te::compute(
      te::shape(m, n, env.block_out, env.block_in), [&](auto... i) { return B(i...); }, "B_buf");
  auto ko = te::reduce_axis({0, n}, "ko");
  auto ki = te::reduce_axis({0, env.block_in}, "ki");
  auto C_buf = te::compute(te::shape(1, m, env.batch, env.block_out),
                           [&](auto bo, auto co, auto bi, auto ci) {
                             return te::sum(te::cast(env.acc_dtype, A_buf(bo, ko, bi, ki)) *
                                                te::cast(env.acc_dtype, B_buf(co, ko, ci, ki)),
                                            {ko, ki});
                           },
                           "C_buf", {"bo", "co", "bi", "ci"});
  auto C = te::compute(
      te::shape(1, m, env.batch, env.block_out),
      [&](auto... i) { return te::cast(env.inp_dtype, C_buf(i...)); }, "C");

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
  const auto prog = vta::build(s, {A, B, C}, env, "gemm");

  vta::SimDevice dev(env.config);
  dev.set_trace(!opts.trace.empty());
  auto a = te::NDArray::random(env.inp_dtype, {1, n, 1, 16}, 3);
  auto b = te::NDArray::random(env.wgt_dtype, {m, n, 16, 16}, 4);
  te::NDArray c(env.inp_dtype, {1, m, 1, 16});
  const auto run = prog.run(dev, {&a, &b, &c}, {}, {.dump_dir = opts.dump});
  return gallery::report(prog, run, c == te::evaluate(C, {{A, a}, {B, b}}), opts);
}
