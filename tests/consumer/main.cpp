// A minimal user program: includes the umbrella header, builds the vector add for VTA, runs it
// on the simulator and checks it against direct evaluation (exit 0 and "PASS" only if equal).
// Built header-only and against the compiled library (dlavm::dlavm_compiled).
#include <dlavm/dlavm.hpp>

#include <cstdio>

int main() try {
  namespace te = dlavm::te;
  namespace vta = dlavm::vta;
  vta::Env env;
  const auto shape = te::shape(1, 8, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.acc_dtype, "A");
  auto A_buf = te::compute(shape, [&](auto... i) { return A(i...); }, "A_buf");
  auto B_buf = te::compute(shape, [&](auto... i) { return A_buf(i...) + 3; }, "B_buf");
  auto B = te::compute(shape, [&](auto... i) { return te::cast(env.inp_dtype, B_buf(i...)); }, "B");
  auto s = te::create_schedule(B);
  for (const auto& t : {A_buf, B_buf}) s[t].set_scope(env.acc_scope);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[B].pragma(s[B].axis(0), env.dma_copy);
  s[B_buf].pragma(s[B_buf].axis(0), env.alu);
  const auto prog = vta::build(s, {A, B}, env, "add3");
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(env.acc_dtype, {1, 8, 1, 16}, 5, -100, 100);
  te::NDArray b(env.inp_dtype, {1, 8, 1, 16});
  prog.run(dev, {&a, &b});
  const bool pass = b == te::evaluate(B, {{A, a}});
  std::puts(pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
} catch (const dlavm::Error& e) {
  std::printf("error: %s\n", e.what());
  return 1;
}
