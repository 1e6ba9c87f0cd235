// 2D convolution, the VTA convolution_opt tutorial in C++: a ResNet-18 layer (14 x 14 x 256 ->
// 256, 3 x 3, pad 1, stride 1) on NCHW data packed into VTA's tiled layout. The input DMA pads
// the borders, the GEMM core runs 126-micro-op kernels, the output channel blocks run on two
// virtual threads so that one thread's loads overlap the other's GEMMs (double buffering), and
// the ALU requantizes (shift right by 8, clip to [0, 127]) in place. Checked against a direct
// NCHW convolution.
//   conv2d [--dump DIR] [--trace FILE]
#include "gallery.hpp"
#include "gallery_ops.hpp"

int main(int argc, char** argv) try {
  namespace te = gallery::te;
  namespace vta = gallery::vta;
  const auto opts = gallery::parse(argc, argv);
  vta::Env env(opts.config);
  const int h = 14, w = 14, in_c = 256, out_c = 256, k = 3, pad = 1, stride = 1;
  const int oc_block = 8, h_block = 7, w_block = 14;  // the tutorial's tiling
  const gallery::Conv2d op(env, h, w, in_c, out_c, k, pad, stride);
  auto s = op.schedule(env, oc_block, h_block, w_block);
  const auto prog = vta::build(s, op.args(), env, "conv2d");

  const auto nchw = te::NDArray::random(env.inp_dtype, {1, in_c, h, w}, 7);
  const auto oihw = te::NDArray::random(env.wgt_dtype, {out_c, in_c, k, k}, 8, -8, 8);
  auto data = vta::pack_activation(nchw, env);
  auto kernel = vta::pack_weight(oihw, env);
  te::NDArray res(env.inp_dtype, {1, out_c / env.block_out, op.out_h, op.out_w, 1, env.block_out});
  vta::SimDevice dev(env.config);
  dev.set_trace(!opts.trace.empty());
  const auto run = prog.run(dev, {&data, &kernel, &res}, {}, {.dump_dir = opts.dump});
  const auto out = vta::unpack_activation(res, 1, out_c);
  return gallery::report(prog, run, out == gallery::conv2d_reference(nchw, oihw, pad, stride), opts,
                         op.tiling_traffic(env, oc_block, h_block, w_block));
} catch (const dlavm::Error& e) {
  // A user mistake (a bad path, a schedule that does not fit): the message, not an abort.
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
