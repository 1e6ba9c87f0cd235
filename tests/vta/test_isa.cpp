#include <dlavm/vta.hpp>

#include <doctest/doctest.h>

#include "what_of.hpp"
#include <cstdint>
#include <random>
#include <string>

namespace vta = dlavm::vta;
namespace rt = dlavm::runtime;
using vta::Field;

using dlavm_test::what_of;

TEST_CASE("vta isa: golden words for the default configuration, derived by hand") {
  const auto l = vta::Config{}.layout();
  using u64 = std::uint64_t;
  SUBCASE("LOAD INP") {
    vta::InsnFields f;
    f.opcode = vta::Opcode::Load;
    f.pop_next_dep = true;
    f.memory_type = vta::MemId::Inp;
    f.sram_base = 0x123;
    f.dram_base = 0xABCDE;
    f.y_size = 7;
    f.x_size = 16;
    f.x_stride = 32;
    f.y_pad_0 = 1;
    f.y_pad_1 = 2;
    f.x_pad_0 = 3;
    f.x_pad_1 = 15;
    const u64 w0 = 0 | (u64{1} << 4) | (u64{2} << 7) | (u64{0x123} << 10) | (u64{0xABCDE} << 26);
    const u64 w1 = u64{7} | (u64{16} << 16) | (u64{32} << 32) | (u64{1} << 48) | (u64{2} << 52) |
                   (u64{3} << 56) | (u64{15} << 60);
    const auto w = vta::encode(l, f);
    CHECK(w.word[0] == w0);
    CHECK(w.word[1] == w1);
    CHECK(vta::decode(l, w) == f);
  }
  SUBCASE("GEMM") {
    vta::InsnFields f;
    f.opcode = vta::Opcode::Gemm;
    f.pop_prev_dep = true;
    f.push_next_dep = true;
    f.uop_bgn = 5;
    f.uop_end = 8191;
    f.iter_out = 16383;
    f.iter_in = 3;
    f.dst_factor_out = 2047;
    f.dst_factor_in = 1;
    f.src_factor_out = 16;
    f.src_factor_in = 2;
    f.wgt_factor_out = 1023;
    f.wgt_factor_in = 512;
    const u64 w0 = u64{2} | (u64{1} << 3) | (u64{1} << 6) | (u64{5} << 8) | (u64{8191} << 21) |
                   (u64{16383} << 35) | (u64{3} << 49);
    const u64 w1 = u64{2047} | (u64{1} << 11) | (u64{16} << 22) | (u64{2} << 33) |
                   (u64{1023} << 44) | (u64{512} << 54);
    const auto w = vta::encode(l, f);
    CHECK(w.word[0] == w0);
    CHECK(w.word[1] == w1);
    CHECK(vta::decode(l, w) == f);
  }
  SUBCASE("ALU with a negative immediate") {
    vta::InsnFields f;
    f.opcode = vta::Opcode::Alu;
    f.push_prev_dep = true;
    f.uop_bgn = 1;
    f.uop_end = 2;
    f.iter_out = 4;
    f.iter_in = 1;
    f.dst_factor_out = 1;
    f.src_factor_out = 1;
    f.alu_opcode = vta::AluOp::Shr;
    f.use_imm = true;
    f.imm = -3;
    const u64 w0 =
        u64{4} | (u64{1} << 5) | (u64{1} << 8) | (u64{2} << 21) | (u64{4} << 35) | (u64{1} << 49);
    const u64 w1 = u64{1} | (u64{1} << 22) | (u64{3} << 44) | (u64{1} << 47) | (u64{0xFFFD} << 48);
    const auto w = vta::encode(l, f);
    CHECK(w.word[0] == w0);
    CHECK(w.word[1] == w1);
    CHECK(vta::decode(l, w).imm == -3);
  }
  SUBCASE("FINISH and micro-op") {
    vta::InsnFields f;
    f.opcode = vta::Opcode::Finish;
    const auto w = vta::encode(l, f);
    CHECK(w.word[0] == 3);
    CHECK(w.word[1] == 0);
    CHECK(vta::encode_uop(l, {2047, 1000, 1023}) == (2047u | (1000u << 11) | (1023u << 22)));
  }
}

TEST_CASE("vta isa: encode/decode round-trip for several configurations") {
  std::mt19937_64 rng(7);
  for (auto [log_batch, log_block, inp_buff, wgt_buff, acc_buff] :
       {std::tuple{0, 4, 15, 18, 17}, std::tuple{0, 3, 14, 16, 16}, std::tuple{0, 5, 15, 18, 18},
        std::tuple{1, 4, 16, 18, 18}, std::tuple{1, 3, 13, 16, 15}}) {
    vta::Config c;
    c.log_batch = log_batch;
    c.log_block_in = c.log_block_out = log_block;
    c.log_inp_buff_size = inp_buff;
    c.log_wgt_buff_size = wgt_buff;
    c.log_acc_buff_size = acc_buff;
    c.validate();
    const auto l = c.layout();
    for (int n = 0; n < 200; ++n) {
      vta::InsnFields f;
      f.opcode = static_cast<vta::Opcode>(rng() % 5);
      const auto form = rt::form_of(f.opcode);
      for (int i = 1; i < rt::kFieldCount; ++i) {
        const auto p = l.form(form)[static_cast<std::size_t>(i)];
        if (p.width) f.set(static_cast<Field>(i), rng() & rt::low_mask(p.width));
      }
      if (form == rt::Form::Mem) f.memory_type = static_cast<vta::MemId>(rng() % 6);
      if (form == rt::Form::Alu) f.alu_opcode = static_cast<vta::AluOp>(rng() % 5);
      const auto w = vta::encode(l, f, n);
      CHECK(vta::decode(l, w, n) == f);
    }
  }
}

TEST_CASE("vta isa: overflowing fields and undecodable words are precise errors") {
  const auto l = vta::Config{}.layout();
  vta::InsnFields f;
  f.opcode = vta::Opcode::Load;
  f.memory_type = vta::MemId::Inp;
  f.x_size = 70000;  // does not fit an uint32_t field? it does; the 16-bit field does not
  CHECK(what_of([&] { vta::encode(l, f, 3); }) ==
        "LOAD #3 field x_size = 70000 exceeds its 16-bit limit 65535");
  f.x_size = 1;
  f.y_pad_0 = 16;
  CHECK(what_of([&] { vta::encode(l, f, 0); }) ==
        "LOAD #0 field y_pad_0 = 16 exceeds its 4-bit limit 15");
  vta::InsnFields g;
  g.opcode = vta::Opcode::Gemm;
  g.dst_factor_out = 2048;
  CHECK(what_of([&] { vta::encode(l, g, 9); }) ==
        "GEMM #9 field dst_factor_out = 2048 exceeds its 11-bit limit 2047");
  vta::InsnFields a;
  a.opcode = vta::Opcode::Alu;
  CHECK(what_of([&] { vta::check_field(l, a, Field::imm, 40000, 1); }) ==
        "ALU #1 field imm = 40000 is outside its 16-bit signed range -32768..32767");
  CHECK_THROWS_AS(vta::encode_uop(l, {2048, 0, 0}), dlavm::EncodingError);

  vta::InsnWord bad;
  bad.word[0] = 7;
  CHECK(what_of([&] { vta::decode(l, bad, 12); }).find("instruction #12: unknown opcode 7") == 0);
  bad.word[0] = 0 | (6u << 7);
  CHECK(what_of([&] { vta::decode(l, bad, 2); }).find("LOAD #2: unknown memory type 6") == 0);
  bad.word[0] = 4;
  bad.word[1] = std::uint64_t{7} << 44;
  CHECK(what_of([&] { vta::decode(l, bad, 1); }).find("unknown ALU opcode 7") != std::string::npos);
  // a stream's words decoded at once name the word's index in it
  const vta::InsnWord words[] = {vta::encode(l, a, 0), vta::encode(l, a, 1), bad};
  CHECK(what_of([&] { vta::decode_all(l, words); }).find("ALU #2: unknown ALU opcode 7") == 0);
}

TEST_CASE("vta isa: disassembler prints one readable line per instruction") {
  vta::InsnFields f;
  f.opcode = vta::Opcode::Load;
  f.memory_type = vta::MemId::Wgt;
  f.sram_base = 16;
  f.dram_base = 256;
  f.y_size = 1;
  f.x_size = 16;
  f.x_stride = 16;
  f.pop_next_dep = true;
  CHECK(vta::disassemble(f) ==
        "LOAD WGT sram=0x0010 dram=0x00000100 y=1 x=16 stride=16 | pop_next");
  vta::InsnFields a;
  a.opcode = vta::Opcode::Alu;
  a.alu_opcode = vta::AluOp::Add;
  a.use_imm = true;
  a.imm = -1;
  a.uop_end = 1;
  a.iter_out = 2;
  a.iter_in = 1;
  CHECK(fmt::format("{}", a) == "ALU ADD imm=-1 uop=[0,1) iter=(2,1) dst=(0,0) src=(0,0)");
  vta::InsnFields fin;
  CHECK(fmt::format("{}", fin) == "FINISH");
}

TEST_CASE("vta::Stream::relocate adds the micro-op base to its LOAD UOP addresses only") {
  const auto l = dlavm::runtime::IsaLayout::default_layout();
  dlavm::runtime::InsnFields uop_load;
  uop_load.opcode = dlavm::runtime::Opcode::Load;
  uop_load.memory_type = dlavm::runtime::MemId::Uop;
  uop_load.dram_base = 8;
  uop_load.x_size = 2;
  auto inp_load = uop_load;
  inp_load.memory_type = dlavm::runtime::MemId::Inp;
  dlavm::vta::Stream s;
  s.insns = {dlavm::runtime::pack(l, inp_load), dlavm::runtime::pack(l, uop_load)};
  s.uop_relocs = {1};
  dlavm::runtime::InsnWord out[2];
  REQUIRE(s.relocate(1000, out));
  CHECK(dlavm::runtime::unpack(l, out[0]).dram_base == 8);
  CHECK(dlavm::runtime::unpack(l, out[1]).dram_base == 1008);
  CHECK_FALSE(s.relocate(0xFFFFFFFFull, out));  // no longer fits 32 bits
  s.uop_relocs = {2};                           // past the stream
  CHECK_FALSE(s.relocate(0, out));
}
