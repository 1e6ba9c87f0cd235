// Vector add, the VTA get-started tutorial in C++: two int32 vectors copied into the
// accumulator by DMA, added by the ALU, cast to int8 and stored back.
//   vadd [--dump DIR] [--trace FILE]
#include "gallery.hpp"

namespace te = dlavm::te;
namespace vta = dlavm::vta;

int main(int argc, char** argv) {
  const auto opts = gallery::parse(argc, argv);
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
  const auto prog = vta::build(s, {A, B, C}, env, "vadd");

  vta::SimDevice dev(env.config);
  dev.set_trace(!opts.trace.empty());
  auto a = te::NDArray::random(env.acc_dtype, {1, 64, 1, 16}, 1, -128, 127);
  auto b = te::NDArray::random(env.acc_dtype, {1, 64, 1, 16}, 2, -128, 127);
  te::NDArray c(env.inp_dtype, {1, 64, 1, 16});
  const auto run = prog.run(dev, {&a, &b, &c}, {}, {.dump_dir = opts.dump});
  return gallery::report(prog, run, c == te::evaluate(C, {{A, a}, {B, b}}), opts);
}
