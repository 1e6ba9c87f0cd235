// Header-only mode (no DLAVM_COMPILED_LIB): a program that includes the whole library (the file
// readers too) builds and runs the vector add on the simulator, reads a configuration back and
// disassembles a stream. A definition missing its `inline` (DLAVM_INLINE) is caught by
// header_only_umbrella_emits_nothing (tests/standalone), which fails on any dlavm function or
// global object a unit emits without using it: what a second unit here would make a duplicate
// symbol, for the cost of parsing the library once more.
#include <dlavm/dlavm.hpp>
#include <dlavm/vta/hw/read.hpp>

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
  auto a = te::NDArray::random(env.acc_dtype, {1, 4, 1, 16}, 1, -100, 100);
  auto b = te::NDArray::random(env.acc_dtype, {1, 4, 1, 16}, 2, -100, 100);
  te::NDArray c(env.inp_dtype, {1, 4, 1, 16});
  const auto run = prog.run(dev, {&a, &b, &c});
  CHECK(run.result.finished);
  CHECK(c == te::evaluate(C, {{A, a}, {B, b}}));
}

TEST_CASE("header-only: a configuration round-trips through vta_config.json") {
  vta::Config c;
  c.log_acc_buff_size = 16;
  CHECK(vta::read_config(c.to_json()) == c);
  CHECK_THROWS_AS(vta::read_config("{"), dlavm::ParseError);
}

TEST_CASE("header-only: a built stream disassembles") {
  vta::Builder b(vta::Config{});
  b.load({.memory = vta::MemId::Acc, .sram = 0, .dram = 0, .x_size = 2});
  b.finish();
  const auto text = vta::disassemble(b.layout(), b.stream());
  CHECK(text.find("LOAD ACC") != std::string::npos);
  CHECK(text.find("FINISH") != std::string::npos);
}
