#include <dlavm/runtime.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <random>

namespace rt = dlavm::runtime;
using rt::Field;
using rt::FieldPos;
using rt::Form;

namespace {

// [first bit, last bit] of a field, as VTA_ISA.md writes them.
void check_bits(const rt::IsaLayout& l, Form form, Field f, int first, int last) {
  CAPTURE(rt::field_name(f));
  CHECK(l.pos(form, f) ==
        FieldPos{static_cast<std::uint8_t>(first), static_cast<std::uint8_t>(last - first + 1)});
}

}  // namespace

TEST_CASE("runtime layout: default configuration matches VTA_ISA.md bit for bit") {
  constexpr auto l = rt::IsaLayout::default_layout();
  static_assert(l.ok && l.uop_ok);
  // LOAD/STORE
  check_bits(l, Form::Mem, Field::opcode, 0, 2);
  check_bits(l, Form::Mem, Field::pop_prev_dep, 3, 3);
  check_bits(l, Form::Mem, Field::push_next_dep, 6, 6);
  check_bits(l, Form::Mem, Field::memory_type, 7, 9);
  check_bits(l, Form::Mem, Field::sram_base, 10, 25);
  check_bits(l, Form::Mem, Field::dram_base, 26, 57);
  check_bits(l, Form::Mem, Field::y_size, 64, 79);
  check_bits(l, Form::Mem, Field::x_size, 80, 95);
  check_bits(l, Form::Mem, Field::x_stride, 96, 111);
  check_bits(l, Form::Mem, Field::y_pad_0, 112, 115);
  check_bits(l, Form::Mem, Field::x_pad_1, 124, 127);
  // GEMM
  check_bits(l, Form::Gemm, Field::reset_reg, 7, 7);
  check_bits(l, Form::Gemm, Field::uop_bgn, 8, 20);
  check_bits(l, Form::Gemm, Field::uop_end, 21, 34);
  check_bits(l, Form::Gemm, Field::iter_out, 35, 48);
  check_bits(l, Form::Gemm, Field::iter_in, 49, 62);
  check_bits(l, Form::Gemm, Field::dst_factor_out, 64, 74);
  check_bits(l, Form::Gemm, Field::dst_factor_in, 75, 85);
  check_bits(l, Form::Gemm, Field::src_factor_out, 86, 96);
  check_bits(l, Form::Gemm, Field::src_factor_in, 97, 107);
  check_bits(l, Form::Gemm, Field::wgt_factor_out, 108, 117);
  check_bits(l, Form::Gemm, Field::wgt_factor_in, 118, 127);
  CHECK(l.pos(Form::Gemm, Field::imm).width == 0);
  // ALU
  check_bits(l, Form::Alu, Field::src_factor_in, 97, 107);
  check_bits(l, Form::Alu, Field::alu_opcode, 108, 110);
  check_bits(l, Form::Alu, Field::use_imm, 111, 111);
  check_bits(l, Form::Alu, Field::imm, 112, 127);
  CHECK(l.pos(Form::Alu, Field::wgt_factor_out).width == 0);
  // micro-op
  CHECK(l.uop_dst == FieldPos{0, 11});
  CHECK(l.uop_src == FieldPos{11, 11});
  CHECK(l.uop_wgt == FieldPos{22, 10});
}

TEST_CASE("runtime layout: a field that does not fit moves to the next word; overflow detected") {
  // LOG_BLOCK 5: depths uop 13, inp 10, wgt 8, acc 10.
  constexpr auto l = rt::IsaLayout::make(13, 10, 8, 10);
  static_assert(l.ok);
  check_bits(l, Form::Gemm, Field::dst_factor_out, 64, 73);
  check_bits(l, Form::Gemm, Field::wgt_factor_in, 112, 119);
  // uop depth 16: uop_end is 17 bits, iter_in no longer fits word 0.
  constexpr auto wide = rt::IsaLayout::make(16, 11, 10, 11);
  check_bits(wide, Form::Gemm, Field::iter_out, 41, 54);
  check_bits(wide, Form::Gemm, Field::iter_in, 64, 77);
  CHECK_FALSE(wide.ok);  // the factors then overflow 128 bits
  CHECK(wide.bad_form == Form::Gemm);
  constexpr auto deep = rt::IsaLayout::make(13, 16, 10, 16);
  CHECK_FALSE(deep.uop_ok);
}

TEST_CASE("runtime pack/unpack: random fields round-trip for several layouts") {
  std::mt19937_64 rng(42);
  for (auto l : {rt::IsaLayout::default_layout(), rt::IsaLayout::make(13, 10, 8, 10),
                 rt::IsaLayout::make(12, 10, 9, 11), rt::IsaLayout::make(10, 7, 6, 8)}) {
    REQUIRE(l.ok);
    for (int n = 0; n < 300; ++n) {
      rt::InsnFields f;
      f.opcode = static_cast<rt::Opcode>(rng() % 5);
      const auto form = rt::form_of(f.opcode);
      for (int i = 1; i < rt::kFieldCount; ++i) {
        const auto p = l.form(form)[static_cast<std::size_t>(i)];
        if (p.width == 0) continue;
        f.set(static_cast<Field>(i), rng() & rt::low_mask(p.width));
      }
      if (form == Form::Mem) f.memory_type = static_cast<rt::MemId>(rng() % 6);
      if (form == Form::Alu) f.alu_opcode = static_cast<rt::AluOp>(rng() % 5);
      const auto w = rt::pack(l, f);
      CHECK(rt::unpack(l, w) == f);
      CHECK(rt::pack(l, rt::unpack(l, w)) == w);
    }
    for (int n = 0; n < 100; ++n) {
      const rt::Uop u{static_cast<std::uint32_t>(rng() & rt::low_mask(l.uop_dst.width)),
                      static_cast<std::uint32_t>(rng() & rt::low_mask(l.uop_src.width)),
                      static_cast<std::uint32_t>(rng() & rt::low_mask(l.uop_wgt.width))};
      CHECK(rt::unpack_uop(l, rt::pack_uop(l, u)) == u);
    }
  }
}

TEST_CASE("runtime: add_to_field moves an address field, refusing to leave its range") {
  const auto l = rt::IsaLayout::default_layout();
  rt::InsnFields load;
  load.opcode = rt::Opcode::Load;
  load.memory_type = rt::MemId::Inp;
  load.dram_base = 8;
  load.x_size = 2;
  load.sram_base = 77;
  const auto dram = l.pos(Form::Mem, Field::dram_base);
  rt::InsnWord w = rt::pack(l, load);
  REQUIRE(rt::add_to_field(w, dram, 1000));
  CHECK(rt::unpack(l, w).dram_base == 1008);
  REQUIRE(rt::add_to_field(w, dram, -1000));  // moved back: a block below the plan
  CHECK(rt::unpack(l, w).dram_base == 8);
  // the neighbours of the field are untouched
  CHECK(rt::unpack(l, w).sram_base == 77);
  CHECK(rt::unpack(l, w).x_size == 2);
  // out of range either way: refused, the word as it was
  const rt::InsnWord before = w;
  CHECK_FALSE(rt::add_to_field(w, dram, -9));
  CHECK_FALSE(rt::add_to_field(w, dram, static_cast<std::int64_t>(rt::low_mask(dram.width)) - 7));
  CHECK(w == before);
  CHECK(rt::add_to_field(w, dram, static_cast<std::int64_t>(rt::low_mask(dram.width)) - 8));
  CHECK(rt::unpack(l, w).dram_base == rt::low_mask(dram.width));
}
