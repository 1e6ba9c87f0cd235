// Header-only mode (no DLAVM_COMPILED_LIB): two translation units of one program include the
// whole library, so that a definition missing its `inline` (DLAVM_INLINE) is a link error
// here. This one builds and runs the vector add on the simulator.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

namespace te = dlavm::te;
namespace vta = dlavm::vta;

TEST_CASE("header-only: the vector add builds, runs and matches te::evaluate") {
#ifdef DLAVM_COMPILED_LIB
  FAIL("this suite must build without DLAVM_COMPILED_LIB");
#endif
  vta::Env env;
  const auto shape = te::shape(1, 4, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.acc_dtype, "A");
  auto B = te::placeholder(shape, env.acc_dtype, "B");
  auto A_buf = te::compute(shape, [&](auto... i) { return A(i...); }, "A_buf");
  auto B_buf = te::compute(shape, [&](auto... i) { return B(i...); }, "B_buf");
  auto C_buf = te::compute(shape, [&](auto... i) { return A_buf(i...) + B_buf(i...); }, "C_buf");
  auto C = te::compute(shape, [&](auto... i) { return te::cast(env.inp_dtype, C_buf(i...)); }, "C");
  auto s = te::create_schedule(C);
  for (const auto& t : {A_buf, B_buf, C_buf}) s[t].set_scope(env.acc_scope);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[B_buf].pragma(s[B_buf].axis(0), env.dma_copy);
  s[C].pragma(s[C].axis(0), env.dma_copy);
  s[C_buf].pragma(s[C_buf].axis(0), env.alu);
  const auto prog = vta::build(s, {A, B, C}, env, "vadd");
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(env.acc_dtype, {1, 4, 1, 16}, 1, -100, 100);
  auto b = te::NDArray::random(env.acc_dtype, {1, 4, 1, 16}, 2, -100, 100);
  te::NDArray c(env.inp_dtype, {1, 4, 1, 16});
  const auto run = prog.run(dev, {&a, &b, &c});
  CHECK(run.result.finished);
  CHECK(c == te::evaluate(C, {{A, a}, {B, b}}));
}
