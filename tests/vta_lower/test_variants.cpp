// Lowering for the VTA designs boards run (vta::preset): shifts in the instructions each design
// has (left shifts as opcode 4 on Chisel), and a FeatureError naming the stage for what a
// design lacks (MUL on Xilinx HLS, an int8 copy into the accumulator without ACC_8BIT).
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include "../vta/what_of.hpp"
#include "shift_program.hpp"
#include <string>

namespace lower_variants_test {

using dlavm_test::what_of;

namespace te = dlavm::te;
namespace tir = dlavm::tir;
namespace vta = dlavm::vta;

// How many ALU immediates of opcode `op` the program's text holds.
int alu_ops(const std::string& text, int op) {
  const std::string needle = "; " + std::to_string(op) + ", 1, ";
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST_CASE("lowering for variants: shifts by any amount run on the simulator as each design") {
  for (const auto* preset : {"sim", "pynq", "de10nano"}) {
    const vta::Env env(vta::preset(preset));
    for (const int amount : {3, 20, 31, -7, -20, -31}) {
      CAPTURE(preset);
      CAPTURE(amount);
      auto p = dlavm_test::shift_program(env, amount);
      const auto text = tir::to_string(vta::lower(p.schedule, {p.A, p.S}, env, "shift"));
      // Chisel shifts right by [0, 31] and left with opcode 4 (SHL) by [0, 31]; the others by
      // a SHR of [-16, 15], split
      const bool chisel = std::string(preset) == "de10nano";
      const auto signed_steps = [](int v) { return v == 3 || v == -7 ? 1 : v == 31 ? 3 : 2; };
      const int shl = chisel && amount < 0 ? 1 : 0;
      CHECK(alu_ops(text, 4) == shl);
      CHECK(alu_ops(text, 3) == (chisel ? 1 - shl : signed_steps(amount)));
      CHECK(dlavm_test::runs_as_evaluated(p, env));
    }
  }
}

TEST_CASE("lowering for variants: what the design lacks is a FeatureError naming the stage") {
  const vta::Env pynq(vta::preset("pynq"));
  const auto shape = te::shape(1, 4, pynq.batch, pynq.block_out);
  // a product of two accumulator tiles needs MUL
  {
    auto A = te::placeholder(shape, pynq.acc_dtype, "A");
    auto A_buf = te::compute(
        shape, [&](auto... i) { return A(i...); }, "A_buf");
    auto P_buf = te::compute(
        shape, [&](auto... i) { return A_buf(i...) * A_buf(i...); }, "P_buf");
    auto P = te::compute(
        shape, [&](auto... i) { return te::cast(pynq.out_dtype, P_buf(i...)); }, "P");
    auto s = te::create_schedule(P);
    for (const auto& t : {A_buf, P_buf}) s[t].set_scope(pynq.acc_scope);
    s[A_buf].pragma(s[A_buf].axis(0), pynq.dma_copy);
    s[P_buf].pragma(s[P_buf].axis(0), pynq.alu);
    s[P].pragma(s[P].axis(0), pynq.dma_copy);
    CHECK_THROWS_WITH_AS(vta::lower(s, {A, P}, pynq, "square"),
                         doctest::Contains("needs the ALU's MUL, which the xilinx-hls design "
                                           "does not have (its opcode 4 does nothing)"),
                         dlavm::FeatureError);
    CHECK(what_of([&] { vta::lower(s, {A, P}, pynq, "square"); }).starts_with("stage 'P_buf': "));
    CHECK_NOTHROW(vta::lower(s, {A, P}, vta::Env(), "square"));
  }
  // int8 values loaded into the accumulator need ACC_8BIT
  {
    auto A = te::placeholder(shape, pynq.inp_dtype, "A");
    auto A_buf = te::compute(
        shape, [&](auto... i) { return te::cast(pynq.acc_dtype, A(i...)); }, "A_buf");
    auto B = te::compute(
        shape, [&](auto... i) { return te::cast(pynq.out_dtype, A_buf(i...)); }, "B");
    auto s = te::create_schedule(B);
    s[A_buf].set_scope(pynq.acc_scope);
    s[A_buf].pragma(s[A_buf].axis(0), pynq.dma_copy);
    s[B].pragma(s[B].axis(0), pynq.dma_copy);
    CHECK_THROWS_WITH_AS(
        vta::lower(s, {A, B}, pynq, "widen"),
        "dma_copy 'A' -> 'A_buf': loading int8 A into the accumulator needs LOAD ACC_8BIT, which "
        "the xilinx-hls design does not have; give the accumulator an int32 copy to load",
        dlavm::FeatureError);
    CHECK_NOTHROW(vta::lower(s, {A, B}, vta::Env(), "widen"));
  }
}

}  // namespace lower_variants_test
