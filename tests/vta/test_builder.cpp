#include <dlavm/vta.hpp>

#include <doctest/doctest.h>

#include "what_of.hpp"
#include <string>

namespace vta = dlavm::vta;
using vta::Queue;

namespace {
using dlavm_test::what_of;
std::vector<vta::InsnFields> decoded(const vta::Builder& b) {
  return vta::decode_all(b.layout(), b.stream().insns);
}
}  // namespace

TEST_CASE("vta builder: kernels are stored once and loaded when not resident") {
  vta::Builder b{vta::Config{}};
  vta::UopKernel k;
  k.loop_begin(4, 1, 1, 0);
  k.push(0, 0, 0);
  k.loop_end();
  b.gemm(k);
  b.gemm(k);  // resident: no second LOAD UOP
  vta::UopKernel k2;
  k2.push(1, 2, 3);
  k2.push(4, 5, 6);
  b.gemm(k2, true);
  auto same = k;
  b.gemm(same);
  const auto p = decoded(b);
  // k2's micro-ops follow k's in the buffer and in the SRAM: k's LOAD UOP loads them too
  REQUIRE(p.size() == 5);
  CHECK(p[0].opcode == vta::Opcode::Load);
  CHECK(p[0].memory_type == vta::MemId::Uop);
  CHECK(p[0].sram_base == 0);
  CHECK(p[0].dram_base == 0);
  CHECK(p[0].x_size == 3);
  CHECK(p[1].opcode == vta::Opcode::Gemm);
  CHECK(p[1].iter_out == 4);
  CHECK(p[1].iter_in == 1);
  CHECK(p[1].dst_factor_out == 1);
  CHECK(p[2].opcode == vta::Opcode::Gemm);
  CHECK(p[3].reset_reg);
  CHECK(p[3].uop_bgn == 1);
  CHECK(p[3].uop_end == 3);
  CHECK(p[4].uop_bgn == 0);
  CHECK(b.kernel_count() == 2);
  CHECK(b.stream().uops.size() == 3);
  CHECK(b.stream().uop_relocs == std::vector<std::uint32_t>{0});
}

TEST_CASE("vta builder: a LOAD UOP widens only while x_size and x_stride hold its words") {
  // the largest micro-op SRAM sram_base addresses, 2^16 entries, one more than a 16-bit x_size
  // counts: kernels of 30,000, 30,000 and 5,536 micro-ops stored one after the other fill it;
  // the second is loaded by the first's LOAD (60,000 words), the third by a LOAD of its own
  // (65,536 words would not fit the field)
  vta::Config c;
  c.log_uop_buff_size = 2 + 16;
  c.log_inp_buff_size = 4 + 4;  // 16 elements each: the wider micro-op fields still fit
  c.log_wgt_buff_size = 4 + 8;  // the 128-bit GEMM and ALU instructions
  c.log_acc_buff_size = 4 + 6;
  vta::Builder b{c};
  const int sizes[] = {30000, 30000, 5536};
  std::vector<vta::UopKernel> k(3);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < sizes[i]; ++j) k[static_cast<std::size_t>(i)].push(i, 0, 0);
  for (const auto& kernel : k) b.gemm(kernel);
  const auto p = decoded(b);
  REQUIRE(p.size() == 5);  // LOAD UOP, GEMM, GEMM, LOAD UOP, GEMM
  CHECK(p[0].memory_type == vta::MemId::Uop);
  CHECK(p[0].x_size == 60000);
  CHECK(p[0].x_stride == 60000);
  CHECK(p[2].uop_bgn == 30000);
  CHECK(p[3].memory_type == vta::MemId::Uop);
  CHECK(p[3].sram_base == 60000);
  CHECK(p[3].dram_base == 60000);
  CHECK(p[3].x_size == 5536);
  CHECK(p[4].uop_bgn == 60000);
  CHECK(p[4].uop_end == 65536);
}

TEST_CASE("vta builder: a full micro-op SRAM starts over and reloads what it dropped") {
  vta::Config c;
  c.log_uop_buff_size = 2 + 2;  // four micro-ops
  vta::Builder b{c};
  vta::UopKernel three, two;
  for (int i = 0; i < 3; ++i) three.push(i, i, i);
  two.push(5, 5, 5);
  two.push(6, 6, 6);
  b.gemm(three);  // SRAM [0, 3)
  b.gemm(two);    // 3 + 2 > 4: starts over at 0, dropping `three`
  b.gemm(three);  // no longer resident: loaded again, starting over
  b.gemm(three);  // resident
  const auto p = decoded(b);
  REQUIRE(p.size() == 7);
  for (const std::size_t i : {0, 2, 4}) {
    CAPTURE(i);
    CHECK(p[i].memory_type == vta::MemId::Uop);
    CHECK(p[i].sram_base == 0);
  }
  CHECK(p[0].dram_base == 0);
  CHECK(p[2].dram_base == 3);
  CHECK(p[4].dram_base == 0);
  CHECK(p[5].uop_bgn == 0);
  CHECK(p[5].uop_end == 3);
  CHECK(p[6].opcode == vta::Opcode::Gemm);
  CHECK(b.kernel_count() == 2);
  CHECK(b.stream().uops.size() == 5);
}

TEST_CASE("vta builder: after take(), kernels are stored and loaded anew") {
  vta::Builder b{vta::Config{}};
  vta::UopKernel k;
  k.push(1, 2, 3);
  b.gemm(k);
  const vta::Stream first = b.take();
  CHECK(first.insns.size() == 2);
  b.gemm(k);  // its micro-ops were in the stream taken: stored and loaded again
  const auto p = decoded(b);
  REQUIRE(p.size() == 2);
  CHECK(p[0].memory_type == vta::MemId::Uop);
  CHECK(p[0].dram_base == 0);
  CHECK(b.stream().uops == first.uops);
  CHECK(b.kernel_count() == 1);
}

TEST_CASE("vta builder: dependency push/pop follow VTA's runtime") {
  vta::Builder b{vta::Config{}};
  b.load({.memory = vta::MemId::Inp, .x_size = 1});
  b.dep_push(Queue::Load, Queue::Compute);  // sets push_next on the load
  b.dep_pop(Queue::Load, Queue::Compute);   // pending on the next compute instruction
  vta::UopKernel k;
  k.push(0, 0, 0);
  b.gemm(k);  // LOAD UOP gets the pop
  b.dep_push(Queue::Compute, Queue::Store);
  b.dep_pop(Queue::Compute, Queue::Store);
  b.store({.x_size = 1});
  b.finish();
  const auto p = decoded(b);
  CHECK(p[0].push_next_dep);
  CHECK(p[1].memory_type == vta::MemId::Uop);
  CHECK(p[1].pop_prev_dep);
  CHECK(p[2].opcode == vta::Opcode::Gemm);
  CHECK(p[2].push_next_dep);
  CHECK(p[3].opcode == vta::Opcode::Store);
  CHECK(p[3].pop_prev_dep);
  CHECK(p[3].push_prev_dep);                // finish: store -> compute
  CHECK(p[4].opcode == vta::Opcode::Load);  // load NOP pushing to compute
  CHECK(p[4].x_size == 0);
  CHECK(p[4].push_next_dep);
  CHECK(p[5].pop_prev_dep);  // compute NOP popping both
  CHECK(p[5].pop_next_dep);
  CHECK(p.back().opcode == vta::Opcode::Finish);
  CHECK_FALSE(p.back().pop_prev_dep);
  vta::SimDevice dev;
  const auto in = dev.alloc(16), out = dev.alloc(16);
  vta::Builder r{vta::Config{}};
  (void)in;
  (void)out;
  CHECK_THROWS_AS(r.dep_push(Queue::Load, Queue::Store), dlavm::ValueError);
}

TEST_CASE("vta builder: every value is checked against its field") {
  vta::Builder b{vta::Config{}};
  b.load({.memory = vta::MemId::Inp, .x_size = 1});
  b.load({.memory = vta::MemId::Inp, .x_size = 1});
  b.load({.memory = vta::MemId::Inp, .x_size = 1});
  CHECK(what_of([&] { b.load({.memory = vta::MemId::Inp, .x_size = 70000}); }) ==
        "LOAD #3 field x_size = 70000 exceeds its 16-bit limit 65535");
  CHECK(what_of([&] {
          b.load({.memory = vta::MemId::Inp, .dram = -1, .x_size = 1});
        }).find("dram_base = -1 is negative") != std::string::npos);
  CHECK(what_of([&] { b.store({.dram = 1ll << 32, .x_size = 1}); }) ==
        "STORE #3 field dram_base = 4294967296 exceeds its 32-bit limit 4294967295");
  vta::UopKernel k;
  k.loop_begin(16384, 0, 0);
  k.push(0, 0);
  k.loop_end();
  CHECK(what_of([&] { b.gemm(k); }).find("field iter_out = 16384 exceeds its 14-bit limit 16383") !=
        std::string::npos);
  vta::UopKernel big;
  big.push(2048, 0, 0);
  CHECK(what_of([&] { b.gemm(big); }) ==
        "micro-op #0 field dst_idx = 2048 exceeds its 11-bit limit 2047");
  vta::UopKernel ok;
  ok.push(0, 0);
  CHECK(what_of([&] {
          b.alu_imm(ok, vta::AluOp::Add, 32768);
        }).find("imm = 32768 is outside its 16-bit signed range") != std::string::npos);
  vta::UopKernel bad;
  bad.push(0, 0);
  CHECK_THROWS_AS(bad.loop_begin(2, 1, 1), dlavm::ValueError);
  vta::UopKernel three;
  three.loop_begin(2, 0, 0);
  three.loop_begin(2, 0, 0);
  CHECK_THROWS_AS(three.loop_begin(2, 0, 0), dlavm::ValueError);
  CHECK(b.size() == 3);  // nothing half-emitted
}
