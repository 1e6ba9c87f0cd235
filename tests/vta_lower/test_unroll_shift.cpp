// Unrolled loops and wide shifts on VTA's ALU: a stage whose shift depends on an unrolled loop
// (byte plane p of an int32 value, `a >> 8p`) becomes one ALU immediate per iteration, and a
// shift wider than the 5-bit argument becomes several; run on the simulator against
// te::evaluate, with values of every magnitude and sign; the pass alone on a small nest.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include "shift_program.hpp"
#include <string>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;

namespace {

// The ALU instructions of a program's text with shift immediate `imm`.
int shifts_by(const std::string& text, int imm) {
  const std::string needle = "; 3, 1, " + std::to_string(imm) + ",";
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("vta unroll: byte planes of int32 values, one immediate shift per unrolled plane") {
  vta::Env env;
  const auto shape = te::shape(1, 8, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.acc_dtype, "A");
  auto A_buf = te::compute(
      shape, [&](auto... i) { return A(i...); }, "A_buf");
  auto P_buf = te::compute(
      te::shape(1, 8, 4, env.batch, env.block_out),
      [&](auto n, auto c, auto p, auto b, auto t) {
        return A_buf(n, c, b, t) >> te::index_value(p * 8, env.acc_dtype);
      },
      "P_buf");
  auto P = te::compute(
      te::shape(1, 8, 4, env.batch, env.block_out),
      [&](auto... i) { return te::cast(env.out_dtype, P_buf(i...)); }, "P");
  auto s = te::create_schedule(P);
  for (const auto& t : {A_buf, P_buf}) s[t].set_scope(env.acc_scope);
  s[A_buf].compute_at(s[P], s[P].axis(1));
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[P_buf].compute_at(s[P], s[P].axis(2));
  s[P_buf].pragma(s[P_buf].axis(0), env.alu);
  s[P].unroll(s[P].axis(2));
  s[P].pragma(s[P].axis(3), env.dma_copy);
  const auto text = tir::to_string(vta::lower(s, {A, P}, env, "planes"));
  // planes 1, 2, 3: >> 8, >> 15 then >> 1, >> 15 then >> 9 (the argument holds [-16, 15])
  CHECK(shifts_by(text, 8) == 1);
  CHECK(shifts_by(text, 15) == 2);
  CHECK(shifts_by(text, 1) == 1);
  CHECK(shifts_by(text, 9) == 1);
  CHECK(shifts_by(text, 0) == 0);  // plane 0 is the copy alone
  auto prog = vta::build(s, {A, P}, env, "planes");
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(env.acc_dtype, {1, 8, 1, 16}, 3, INT32_MIN, INT32_MAX);
  a.set_flat(0, INT32_MIN);
  a.set_flat(1, INT32_MAX);
  a.set_flat(2, -1);
  te::NDArray p(env.out_dtype, {1, 8, 4, 1, 16});
  CHECK(prog.run(dev, {&a, &p}).result.finished);
  CHECK(p == te::evaluate(P, {{A, a}}));
}

TEST_CASE("vta unroll: a shift by 20 or by -20 is split; by 32 it is refused") {
  vta::Env env;
  for (const int amount : {20, -20, 31, 32}) {
    CAPTURE(amount);
    auto p = dlavm_test::shift_program(env, amount);
    if (amount == 32) {
      CHECK_THROWS_WITH_AS(vta::build(p.schedule, {p.A, p.S}, env, "shift"),
                           doctest::Contains("does not fit the hardware's SHR argument"),
                           dlavm::EncodingError);
      continue;
    }
    CHECK(dlavm_test::runs_as_evaluated(p, env));
  }
}

TEST_CASE("tir unroll: constant loops marked unrolled become copies; others stay loops") {
  const auto i = ne::var("i", 0, 7), j = ne::var("j", 0, 7);
  auto buf = te::make_buffer("B", dlavm::DType::int32(), {ne::Expr(8)}, "global");
  const auto body = tir::make_store(buf, {ne::Expr(i) * 2},
                                    te::index_value(ne::Expr(i) * 3, dlavm::DType::int32()));
  const auto unrolled = tir::make_for(i, ne::Expr(1), ne::Expr(3), tir::ForKind::Unrolled, body);
  const auto text = tir::to_string(tir::unroll_loops(unrolled));
  CHECK(text.find("for") == std::string::npos);
  CHECK(text.find("B[2] = 3") != std::string::npos);
  CHECK(text.find("B[6] = 9") != std::string::npos);
  const auto serial = tir::make_for(j, ne::Expr(0), ne::Expr(3), tir::ForKind::Serial, body);
  CHECK(tir::unroll_loops(serial).same_as(serial));
  const auto symbolic =
      tir::make_for(i, ne::Expr(0), ne::var("n", 1, 4), tir::ForKind::Unrolled, body);
  CHECK(tir::unroll_loops(symbolic).same_as(symbolic));
}
