// GEMM, the VTA matrix_multiply tutorial in C++: C[1, 16, 1, 16] = A x B^T with on-chip copies
// loaded per reduction step, the reduction reordered outermost and the tile tensorized onto
// VTA's GEMM core.
//   gemm [--dump DIR] [--trace FILE]
#include "gallery.hpp"
#include "gallery_ops.hpp"

int main(int argc, char** argv) try {
  const auto opts = gallery::parse(argc, argv);
  gallery::vta::Env env(opts.config);
  const int m = 16, n = 16;  // output and input channels, in tiles of 16
  const gallery::Gemm op(env, 1, n, m);
  auto s = op.schedule(env);
  const auto prog = gallery::vta::build(s, op.args(), env, "gemm");

  gallery::vta::SimDevice dev(env.config);
  dev.set_trace(!opts.trace.empty());
  auto a = gallery::te::NDArray::random(env.inp_dtype, {1, n, 1, 16}, 3);
  auto b = gallery::te::NDArray::random(env.wgt_dtype, {m, n, 16, 16}, 4);
  gallery::te::NDArray c(env.inp_dtype, {1, m, 1, 16});
  const auto run = prog.run(dev, {&a, &b, &c}, {}, {.dump_dir = opts.dump});
  return gallery::report(prog, run, c == gallery::te::evaluate(op.C, {{op.A, a}, {op.B, b}}), opts);
} catch (const dlavm::Error& e) {
  // A user mistake (a bad path, a schedule that does not fit): the message, not an abort.
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
