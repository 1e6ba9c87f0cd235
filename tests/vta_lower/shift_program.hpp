// A shift on VTA's ALU by a constant amount (negative: left), as the suites that check how
// shifts lower build it: A (int32) copied into the accumulator, shifted there, stored as int8.
#pragma once

#include <dlavm/dlavm.hpp>

#include <utility>

namespace dlavm_test {

struct ShiftProgram {
  dlavm::te::Tensor A, S;
  dlavm::te::Schedule schedule;
};

inline ShiftProgram shift_program(const dlavm::vta::Env& env, int amount) {
  namespace te = dlavm::te;
  const auto shape = te::shape(1, 4, env.batch, env.block_out);
  auto A = te::placeholder(shape, env.acc_dtype, "A");
  auto A_buf = te::compute(
      shape, [&](auto... i) { return A(i...); }, "A_buf");
  auto S_buf = te::compute(
      shape, [&](auto... i) { return amount > 0 ? A_buf(i...) >> amount : A_buf(i...) << -amount; },
      "S_buf");
  auto S = te::compute(
      shape, [&](auto... i) { return te::cast(env.out_dtype, S_buf(i...)); }, "S");
  auto s = te::create_schedule(S);
  for (const auto& t : {A_buf, S_buf}) s[t].set_scope(env.acc_scope);
  s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
  s[S_buf].pragma(s[S_buf].axis(0), env.alu);
  s[S].pragma(s[S].axis(0), env.dma_copy);
  return {A, S, std::move(s)};
}

// Builds the program for env's design, runs it on the simulator acting as that design on
// values of every magnitude and sign, and compares with te::evaluate.
inline bool runs_as_evaluated(ShiftProgram& p, const dlavm::vta::Env& env) {
  namespace te = dlavm::te;
  auto prog = dlavm::vta::build(p.schedule, {p.A, p.S}, env, "shift");
  dlavm::vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(env.acc_dtype, {1, 4, 1, 16}, 5, -(1 << 30), 1 << 30);
  te::NDArray out(env.out_dtype, {1, 4, 1, 16});
  return prog.run(dev, {&a, &out}).result.finished && out == te::evaluate(p.S, {{p.A, a}});
}

}  // namespace dlavm_test
