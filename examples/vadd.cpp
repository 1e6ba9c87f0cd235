// Vector add, the VTA get-started tutorial in C++: two int32 vectors copied into the
// accumulator by DMA, added by the ALU, cast to int8 and stored back.
//   vadd [--dump DIR] [--trace FILE]
#include "gallery.hpp"
#include "gallery_ops.hpp"

int main(int argc, char** argv) try {
  const auto opts = gallery::parse(argc, argv);
  gallery::vta::Env env(opts.config);
  const gallery::Vadd op(env);
  auto s = op.schedule(env);
  const auto prog = gallery::vta::build(s, op.args(), env, "vadd");

  gallery::vta::SimDevice dev(env.config);
  dev.set_trace(!opts.trace.empty());
  auto a = gallery::te::NDArray::random(env.acc_dtype, {1, 64, 1, 16}, 1, -128, 127);
  auto b = gallery::te::NDArray::random(env.acc_dtype, {1, 64, 1, 16}, 2, -128, 127);
  gallery::te::NDArray c(env.inp_dtype, {1, 64, 1, 16});
  const auto run = prog.run(dev, {&a, &b, &c}, {}, {.dump_dir = opts.dump});
  return gallery::report(prog, run, c == gallery::te::evaluate(op.C, {{op.A, a}, {op.B, b}}), opts);
} catch (const dlavm::Error& e) {
  // A user mistake (a bad path, a schedule that does not fit): the message, not an abort.
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
