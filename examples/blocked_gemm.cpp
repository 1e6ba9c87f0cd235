// Blocked GEMM, the VTA matrix_multiply_opt tutorial in C++: 1 x 1024 x 1024 int8, blocked by
// 256 so that each block's operands fit the on-chip buffers, then shifted and clipped to int8
// on the ALU. The output blocks run on two virtual threads: one thread's 64 KiB weight block
// loads while the other's GEMM runs (double buffering).
//   blocked_gemm [--dump DIR] [--trace FILE]
#include "gallery.hpp"
#include "gallery_ops.hpp"

int main(int argc, char** argv) try {
  const auto opts = gallery::parse(argc, argv);
  gallery::vta::Env env(opts.config);
  const int channels = 1024, tiles = channels / 16;
  const gallery::BlockedGemm op(env, channels);
  auto s = op.schedule(env, 256, /*vthreads=*/2);
  const auto prog = gallery::vta::build(s, op.args(), env, "blocked_gemm");

  gallery::vta::SimDevice dev(env.config);
  dev.set_trace(!opts.trace.empty());
  auto d = gallery::te::NDArray::random(env.inp_dtype, {1, tiles, 1, 16}, 5);
  auto w = gallery::te::NDArray::random(env.wgt_dtype, {tiles, tiles, 16, 16}, 6);
  gallery::te::NDArray r(env.inp_dtype, {1, tiles, 1, 16});
  const auto run = prog.run(dev, {&d, &w, &r}, {}, {.dump_dir = opts.dump});
  return gallery::report(prog, run,
                         r == gallery::te::evaluate(op.res, {{op.data, d}, {op.weight, w}}), opts,
                         op.tiling_traffic(channels, 256));
} catch (const dlavm::Error& e) {
  // A user mistake (a bad path, a schedule that does not fit): the message, not an abort.
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
