// runtime/isa.hpp against VTA_ISA.md, independently of the runtime's own tables: the test holds
// its own copy of the document's field lists (names, order, widths as functions of the log2
// SRAM depths) and its own placement of the layout rule ("a field that does not fit in what is
// left of the current 64-bit word starts at bit 0 of the next"), a packer that sets bits one at
// a time, and an accessor that reads InsnFields' members by name. Checked: IsaLayout::make for
// every depth combination in [4, 16]^4 (positions, `ok`, `bad_form` / `bad_field`, the
// micro-op), pack / unpack / pack_uop / unpack_uop against the bit-by-bit packer for random
// fields and random words of every form, InsnFields' get / set / ==, add_to_field at the ends
// of its range, queue_of, form_of, opcode_of and every name function.
#include <dlavm/runtime/isa.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace runtime_isa_test {

namespace rt = dlavm::runtime;
using rt::Field;
using rt::Form;
using u64 = std::uint64_t;

// ---- VTA_ISA.md's field lists, copied from the document ---------------------------------

struct DocField {
  Field field;
  int width;
};

// The fields of a form, least significant first, with their widths for log2 depths
// (uop, inp, wgt, acc): "Every instruction starts: opcode(3), pop_prev_dep(1), ..." and the
// LOAD/STORE, GEMM and ALU lists of VTA_ISA.md.
std::vector<DocField> doc_fields(Form form, int uop, int inp, int wgt, int acc) {
  std::vector<DocField> f = {{Field::opcode, 3},
                             {Field::pop_prev_dep, 1},
                             {Field::pop_next_dep, 1},
                             {Field::push_prev_dep, 1},
                             {Field::push_next_dep, 1}};
  if (form == Form::Mem) {
    f.insert(f.end(), {{Field::memory_type, 3},
                       {Field::sram_base, 16},
                       {Field::dram_base, 32},
                       {Field::y_size, 16},
                       {Field::x_size, 16},
                       {Field::x_stride, 16},
                       {Field::y_pad_0, 4},
                       {Field::y_pad_1, 4},
                       {Field::x_pad_0, 4},
                       {Field::x_pad_1, 4}});
    return f;
  }
  f.insert(f.end(), {{Field::reset_reg, 1},
                     {Field::uop_bgn, uop},
                     {Field::uop_end, uop + 1},
                     {Field::iter_out, 14},
                     {Field::iter_in, 14},
                     {Field::dst_factor_out, acc},
                     {Field::dst_factor_in, acc}});
  if (form == Form::Gemm) {
    f.insert(f.end(), {{Field::src_factor_out, inp},
                       {Field::src_factor_in, inp},
                       {Field::wgt_factor_out, wgt},
                       {Field::wgt_factor_in, wgt}});
  } else {
    f.insert(f.end(), {{Field::src_factor_out, acc},
                       {Field::src_factor_in, acc},
                       {Field::alu_opcode, 3},
                       {Field::use_imm, 1},
                       {Field::imm, 16}});
  }
  return f;
}

struct Place {
  int offset = 0, width = 0;  // width 0: not in the form
};

struct RefLayout {
  std::array<std::array<Place, rt::kFieldCount>, 3> form{};
  bool ok = true;
  Form bad_form = Form::Mem;
  Field bad_field = Field::count;
  bool uop_ok = true;
  Place uop[3];  // dst, src, wgt
};

// The layout rule, written out for the test.
RefLayout ref_layout(int uop, int inp, int wgt, int acc) {
  RefLayout l;
  for (Form form : {Form::Mem, Form::Gemm, Form::Alu}) {
    int bit = 0;
    for (const auto& [field, width] : doc_fields(form, uop, inp, wgt, acc)) {
      if (bit % 64 + width > 64) bit = (bit / 64 + 1) * 64;  // the next word
      if (bit + width > 128) {
        if (l.ok) {
          l.ok = false;
          l.bad_form = form;
          l.bad_field = field;
        }
        break;  // the rest of this form is not compared
      }
      l.form[static_cast<int>(form)][static_cast<int>(field)] = {bit, width};
      bit += width;
    }
  }
  // "Micro-op: dst_idx(LOG_ACC_DEPTH), src_idx(max(LOG_ACC_DEPTH, LOG_INP_DEPTH)),
  // wgt_idx(LOG_WGT_DEPTH)", packed from bit 0 of a 32-bit word
  const int src = std::max(acc, inp);
  l.uop_ok = acc + src + wgt <= 32;
  l.uop[0] = {0, acc};
  l.uop[1] = {acc, src};
  l.uop[2] = {acc + src, wgt};
  return l;
}

// ---- a packer that sets one bit at a time -------------------------------------------------

using Bits = std::array<u64, 2>;

void ref_put(Bits& w, Place p, u64 v) {
  for (int b = 0; b < p.width; ++b)
    if ((v >> b) & 1) w[(p.offset + b) / 64] |= u64{1} << ((p.offset + b) % 64);
}
u64 ref_get(const Bits& w, Place p) {
  u64 v = 0;
  for (int b = 0; b < p.width; ++b)
    if ((w[(p.offset + b) / 64] >> ((p.offset + b) % 64)) & 1) v |= u64{1} << b;
  return v;
}

// InsnFields' members by name (not through InsnFields::get), as unsigned bit patterns.
u64 member(const rt::InsnFields& f, Field x) {
  switch (x) {
    case Field::opcode:
      return static_cast<u64>(f.opcode);
    case Field::pop_prev_dep:
      return f.pop_prev_dep;
    case Field::pop_next_dep:
      return f.pop_next_dep;
    case Field::push_prev_dep:
      return f.push_prev_dep;
    case Field::push_next_dep:
      return f.push_next_dep;
    case Field::memory_type:
      return static_cast<u64>(f.memory_type);
    case Field::sram_base:
      return f.sram_base;
    case Field::dram_base:
      return f.dram_base;
    case Field::y_size:
      return f.y_size;
    case Field::x_size:
      return f.x_size;
    case Field::x_stride:
      return f.x_stride;
    case Field::y_pad_0:
      return f.y_pad_0;
    case Field::y_pad_1:
      return f.y_pad_1;
    case Field::x_pad_0:
      return f.x_pad_0;
    case Field::x_pad_1:
      return f.x_pad_1;
    case Field::reset_reg:
      return f.reset_reg;
    case Field::uop_bgn:
      return f.uop_bgn;
    case Field::uop_end:
      return f.uop_end;
    case Field::iter_out:
      return f.iter_out;
    case Field::iter_in:
      return f.iter_in;
    case Field::dst_factor_out:
      return f.dst_factor_out;
    case Field::dst_factor_in:
      return f.dst_factor_in;
    case Field::src_factor_out:
      return f.src_factor_out;
    case Field::src_factor_in:
      return f.src_factor_in;
    case Field::wgt_factor_out:
      return f.wgt_factor_out;
    case Field::wgt_factor_in:
      return f.wgt_factor_in;
    case Field::alu_opcode:
      return static_cast<u64>(f.alu_opcode);
    case Field::use_imm:
      return f.use_imm;
    case Field::imm:
      return static_cast<u64>(static_cast<std::int64_t>(f.imm));
    case Field::count:
      break;
  }
  return 0;
}

// Sets a member by name to `v` (any bits: pack must mask them).
void set_member(rt::InsnFields& f, Field x, u64 v) {
  const auto u = static_cast<std::uint32_t>(v);
  switch (x) {
    case Field::opcode:
      f.opcode = static_cast<rt::Opcode>(u);
      return;
    case Field::pop_prev_dep:
      f.pop_prev_dep = v & 1;
      return;
    case Field::pop_next_dep:
      f.pop_next_dep = v & 1;
      return;
    case Field::push_prev_dep:
      f.push_prev_dep = v & 1;
      return;
    case Field::push_next_dep:
      f.push_next_dep = v & 1;
      return;
    case Field::memory_type:
      f.memory_type = static_cast<rt::MemId>(u & 0xFF);
      return;
    case Field::sram_base:
      f.sram_base = u;
      return;
    case Field::dram_base:
      f.dram_base = u;
      return;
    case Field::y_size:
      f.y_size = u;
      return;
    case Field::x_size:
      f.x_size = u;
      return;
    case Field::x_stride:
      f.x_stride = u;
      return;
    case Field::y_pad_0:
      f.y_pad_0 = u;
      return;
    case Field::y_pad_1:
      f.y_pad_1 = u;
      return;
    case Field::x_pad_0:
      f.x_pad_0 = u;
      return;
    case Field::x_pad_1:
      f.x_pad_1 = u;
      return;
    case Field::reset_reg:
      f.reset_reg = v & 1;
      return;
    case Field::uop_bgn:
      f.uop_bgn = u;
      return;
    case Field::uop_end:
      f.uop_end = u;
      return;
    case Field::iter_out:
      f.iter_out = u;
      return;
    case Field::iter_in:
      f.iter_in = u;
      return;
    case Field::dst_factor_out:
      f.dst_factor_out = u;
      return;
    case Field::dst_factor_in:
      f.dst_factor_in = u;
      return;
    case Field::src_factor_out:
      f.src_factor_out = u;
      return;
    case Field::src_factor_in:
      f.src_factor_in = u;
      return;
    case Field::wgt_factor_out:
      f.wgt_factor_out = u;
      return;
    case Field::wgt_factor_in:
      f.wgt_factor_in = u;
      return;
    case Field::alu_opcode:
      f.alu_opcode = static_cast<rt::AluOp>(u & 0xFF);
      return;
    case Field::use_imm:
      f.use_imm = v & 1;
      return;
    case Field::imm:
      f.imm = static_cast<std::int32_t>(u);
      return;
    case Field::count:
      return;
  }
}

// The word the document's layout gives `f` (its opcode chooses the form).
Bits ref_pack(const RefLayout& l, Form form, const rt::InsnFields& f) {
  Bits w{};
  for (int x = 0; x < rt::kFieldCount; ++x) {
    const Place p = l.form[static_cast<int>(form)][x];
    ref_put(w, p, member(f, static_cast<Field>(x)));
  }
  return w;
}

Form doc_form(rt::Opcode op) {  // VTA_ISA.md: LOAD/STORE; GEMM (and FINISH); ALU
  const auto v = static_cast<int>(op);
  return v == 0 || v == 1 ? Form::Mem : v == 4 ? Form::Alu : Form::Gemm;
}

struct Depths {
  int uop, inp, wgt, acc;
};
// Layouts that fit, beside the default: other block sizes and buffer sizes.
const Depths kLayouts[] = {{13, 11, 10, 11}, {13, 10, 8, 10}, {12, 9, 8, 10},
                           {10, 7, 6, 8},    {11, 9, 7, 9},   {6, 5, 4, 5}};

TEST_CASE("runtime isa: IsaLayout::make places every field where VTA_ISA.md's rule does") {
  int compared = 0, refused = 0;
  for (int uop = 4; uop <= 16; ++uop)
    for (int inp = 4; inp <= 16; ++inp)
      for (int wgt = 4; wgt <= 16; ++wgt)
        for (int acc = 4; acc <= 16; ++acc) {
          const auto l = rt::IsaLayout::make(uop, inp, wgt, acc);
          const auto ref = ref_layout(uop, inp, wgt, acc);
          if (l.ok != ref.ok || l.uop_ok != ref.uop_ok) {
            FAIL_CHECK("ok differs at depths ", uop, " ", inp, " ", wgt, " ", acc);
            continue;
          }
          if (!l.ok) {
            ++refused;
            if (l.bad_form != ref.bad_form || l.bad_field != ref.bad_field)
              FAIL_CHECK("bad field differs at ", uop, " ", inp, " ", wgt, " ", acc, ": ",
                         rt::field_name(l.bad_field), " vs ", rt::field_name(ref.bad_field));
            continue;
          }
          for (Form form : {Form::Mem, Form::Gemm, Form::Alu})
            for (int x = 0; x < rt::kFieldCount; ++x) {
              const Place p = ref.form[static_cast<int>(form)][x];
              const rt::FieldPos want{static_cast<std::uint8_t>(p.width ? p.offset : 0),
                                      static_cast<std::uint8_t>(p.width)};
              if (l.form(form)[static_cast<std::size_t>(x)] != want)
                FAIL_CHECK("field ", rt::field_name(static_cast<Field>(x)), " of form ",
                           static_cast<int>(form), " at depths ", uop, " ", inp, " ", wgt, " ",
                           acc);
              // the static width function agrees with the document too
              if (rt::IsaLayout::width(form, static_cast<Field>(x), uop, inp, wgt, acc) != p.width)
                FAIL_CHECK("width of ", rt::field_name(static_cast<Field>(x)));
            }
          if (l.uop_ok)
            for (int k = 0; k < 3; ++k) {
              const rt::FieldPos got = k == 0 ? l.uop_dst : k == 1 ? l.uop_src : l.uop_wgt;
              if (got != rt::FieldPos{static_cast<std::uint8_t>(ref.uop[k].offset),
                                      static_cast<std::uint8_t>(ref.uop[k].width)})
                FAIL_CHECK("micro-op field ", k, " at depths ", uop, " ", inp, " ", wgt, " ", acc);
            }
          ++compared;
        }
  // the sweep crosses the boundary: many layouts fit, many do not
  CHECK(compared > 1000);
  CHECK(refused > 1000);
  MESSAGE(compared, " layouts compared field by field, ", refused, " refused by both");
}

TEST_CASE("runtime isa: a non-default layout, bit positions derived by hand") {
  // depths uop 12, inp 9, wgt 8, acc 10. GEMM: reset 7, uop_bgn 8-19, uop_end 20-32,
  // iter_out 33-46, iter_in 47-60; dst_factor_out (10) would end at 70: word 1, 64-73;
  // dst_in 74-83, src_out (9) 84-92, src_in 93-101, wgt_out (8) 102-109, wgt_in 110-117.
  // ALU: dst 64-73, 74-83, src (acc 10) 84-93, 94-103, alu_opcode 104-106, use_imm 107,
  // imm 108-123. Micro-op: dst 0-9, src max(10, 9) = 10-19, wgt 20-27.
  constexpr auto l = rt::IsaLayout::make(12, 9, 8, 10);
  static_assert(l.ok && l.uop_ok);
  const auto at = [&](Form form, Field f) { return l.pos(form, f); };
  CHECK(at(Form::Gemm, Field::uop_bgn) == rt::FieldPos{8, 12});
  CHECK(at(Form::Gemm, Field::uop_end) == rt::FieldPos{20, 13});
  CHECK(at(Form::Gemm, Field::iter_in) == rt::FieldPos{47, 14});
  CHECK(at(Form::Gemm, Field::dst_factor_out) == rt::FieldPos{64, 10});
  CHECK(at(Form::Gemm, Field::src_factor_in) == rt::FieldPos{93, 9});
  CHECK(at(Form::Gemm, Field::wgt_factor_in) == rt::FieldPos{110, 8});
  CHECK(at(Form::Alu, Field::src_factor_in) == rt::FieldPos{94, 10});
  CHECK(at(Form::Alu, Field::alu_opcode) == rt::FieldPos{104, 3});
  CHECK(at(Form::Alu, Field::use_imm) == rt::FieldPos{107, 1});
  CHECK(at(Form::Alu, Field::imm) == rt::FieldPos{108, 16});
  CHECK(l.uop_dst == rt::FieldPos{0, 10});
  CHECK(l.uop_src == rt::FieldPos{10, 10});
  CHECK(l.uop_wgt == rt::FieldPos{20, 8});
  // LOAD/STORE fields have fixed widths: the same place in every configuration
  CHECK(at(Form::Mem, Field::x_stride) == rt::FieldPos{96, 16});
  // the log depths are kept
  CHECK(l.log_uop_depth == 12);
  CHECK(l.log_acc_depth == 10);
  // a micro-op of 12 + 12 + 9 bits does not fit 32
  CHECK_FALSE(rt::IsaLayout::make(12, 12, 9, 12).uop_ok);
  CHECK(rt::IsaLayout::make(12, 12, 8, 12).uop_ok);
}

TEST_CASE("runtime isa: pack and unpack equal the bit-by-bit packer for every form") {
  std::mt19937_64 rng(1234);
  for (const auto d : kLayouts) {
    const auto l = rt::IsaLayout::make(d.uop, d.inp, d.wgt, d.acc);
    const auto ref = ref_layout(d.uop, d.inp, d.wgt, d.acc);
    REQUIRE(l.ok);
    for (int op = 0; op < rt::kOpcodeCount; ++op) {
      const Form form = doc_form(static_cast<rt::Opcode>(op));
      CHECK(rt::form_of(static_cast<rt::Opcode>(op)) == form);
      for (int n = 0; n < 200; ++n) {
        // random bits in every member, wider than the fields: pack masks them
        rt::InsnFields f;
        for (int x = 1; x < rt::kFieldCount; ++x)
          set_member(f, static_cast<Field>(x), n % 2 == 0 ? rng() : rng() % 4);
        f.opcode = static_cast<rt::Opcode>(op);
        const Bits want = ref_pack(ref, form, f);
        const rt::InsnWord w = rt::pack(l, f);
        CHECK(w.word[0] == want[0]);
        CHECK(w.word[1] == want[1]);
        CHECK(rt::opcode_of(w) == f.opcode);
        // unpack: every field of the form read back (imm sign-extended), the others zero
        const rt::InsnFields back = rt::unpack(l, w);
        for (int x = 0; x < rt::kFieldCount; ++x) {
          const Place p = ref.form[static_cast<int>(form)][x];
          u64 v = ref_get(want, p);
          if (static_cast<Field>(x) == Field::imm && p.width > 0 && (v >> 15) != 0)
            v |= ~u64{0xFFFF};
          CAPTURE(rt::field_name(static_cast<Field>(x)));
          CHECK(member(back, static_cast<Field>(x)) == v);
        }
        CHECK(rt::pack(l, back) == w);
      }
    }
  }
}

TEST_CASE("runtime isa: unpack of any word reads the raw fields, even a corrupted opcode") {
  std::mt19937_64 rng(99);
  for (const auto d : kLayouts) {
    const auto l = rt::IsaLayout::make(d.uop, d.inp, d.wgt, d.acc);
    const auto ref = ref_layout(d.uop, d.inp, d.wgt, d.acc);
    for (int n = 0; n < 500; ++n) {
      rt::InsnWord w;
      w.word = {rng(), rng()};
      const auto op = static_cast<int>(w.word[0] & 7);  // 5..7: not an opcode, read as GEMM
      const Form form = doc_form(static_cast<rt::Opcode>(op));
      const rt::InsnFields f = rt::unpack(l, w);
      CHECK(static_cast<int>(f.opcode) == op);
      for (int x = 1; x < rt::kFieldCount; ++x) {
        const Place p = ref.form[static_cast<int>(form)][x];
        u64 v = ref_get({w.word[0], w.word[1]}, p);
        if (static_cast<Field>(x) == Field::imm && p.width > 0 && (v >> 15) != 0) v |= ~u64{0xFFFF};
        CAPTURE(rt::field_name(static_cast<Field>(x)));
        CHECK(member(f, static_cast<Field>(x)) == v);
      }
    }
  }
}

TEST_CASE("runtime isa: micro-ops pack as the document's dst | src | wgt, masked") {
  std::mt19937_64 rng(5);
  for (const auto d : kLayouts) {
    const auto l = rt::IsaLayout::make(d.uop, d.inp, d.wgt, d.acc);
    const auto ref = ref_layout(d.uop, d.inp, d.wgt, d.acc);
    REQUIRE(l.uop_ok);
    for (int n = 0; n < 300; ++n) {
      const rt::Uop u{static_cast<std::uint32_t>(rng()), static_cast<std::uint32_t>(rng()),
                      static_cast<std::uint32_t>(rng())};
      Bits want{};
      ref_put(want, ref.uop[0], u.dst);
      ref_put(want, ref.uop[1], u.src);
      ref_put(want, ref.uop[2], u.wgt);
      const std::uint32_t word = rt::pack_uop(l, u);
      CHECK(word == want[0]);
      const rt::Uop back = rt::unpack_uop(l, word);
      CHECK(back.dst == ref_get(want, ref.uop[0]));
      CHECK(back.src == ref_get(want, ref.uop[1]));
      CHECK(back.wgt == ref_get(want, ref.uop[2]));
    }
  }
  // a layout whose micro-op does not fit packs nothing rather than overlapping fields
  const auto bad = rt::IsaLayout::make(13, 16, 10, 16);
  REQUIRE_FALSE(bad.uop_ok);
  CHECK(rt::pack_uop(bad, {1, 1, 1}) == 0u);
  CHECK(rt::unpack_uop(bad, 0xFFFFFFFFu) == rt::Uop{});
}

TEST_CASE("runtime isa: InsnFields get / set / == by member") {
  std::mt19937_64 rng(77);
  for (int x = 0; x < rt::kFieldCount; ++x) {
    const auto field = static_cast<Field>(x);
    CAPTURE(rt::field_name(field));
    for (int n = 0; n < 50; ++n) {
      rt::InsnFields f;
      const u64 raw = n == 0 ? 1 : rng() & 0xFFFF;
      f.set(field, raw);
      u64 want = raw;
      if (field == Field::imm) want = (raw & 0x8000) ? (raw | ~u64{0xFFFF}) : raw;  // sign-extend
      if (field == Field::pop_prev_dep || field == Field::pop_next_dep ||
          field == Field::push_prev_dep || field == Field::push_next_dep ||
          field == Field::reset_reg || field == Field::use_imm)
        want = raw != 0;
      if (field == Field::opcode || field == Field::memory_type || field == Field::alu_opcode)
        want = raw & 0xFF;  // uint8 enums
      CHECK(member(f, field) == want);
      CHECK(f.get(field) == want);
      // == sees every field: a default InsnFields differs exactly when this one is not zero
      CHECK((f == rt::InsnFields{}) == (want == member(rt::InsnFields{}, field)));
      CHECK((f != rt::InsnFields{}) == !(f == rt::InsnFields{}));
    }
  }
  // imm keeps 16 bits of what it is given
  rt::InsnFields f;
  f.set(Field::imm, 0x17FFF);
  CHECK(f.imm == 0x7FFF);
  f.set(Field::imm, 0x8000);
  CHECK(f.imm == -32768);
  CHECK(f.get(Field::imm) == static_cast<u64>(std::int64_t{-32768}));
  CHECK(f.get(Field::count) == 0);
}

TEST_CASE("runtime isa: add_to_field at the ends of a field's range, neighbours untouched") {
  const auto l = rt::IsaLayout::default_layout();
  // fields in word 0, word 1, a 1-bit field and the top of word 1
  for (Field x : {Field::dram_base, Field::sram_base, Field::y_size, Field::x_pad_1}) {
    const rt::FieldPos p = l.pos(Form::Mem, x);
    CAPTURE(rt::field_name(x));
    const u64 max = rt::low_mask(p.width);
    const auto top = static_cast<std::int64_t>(max);
    // every other bit set: the neighbours must keep theirs
    rt::InsnWord w;
    w.word = {~u64{0}, ~u64{0}};
    const auto clear = [&](u64 v) {
      w.word[p.offset / 64] &= ~(max << (p.offset % 64));
      w.word[p.offset / 64] |= v << (p.offset % 64);
    };
    const auto value = [&] { return (w.word[p.offset / 64] >> (p.offset % 64)) & max; };
    const auto others = [&] {
      rt::InsnWord o = w;
      o.word[p.offset / 64] |= max << (p.offset % 64);
      return o.word[0] == ~u64{0} && o.word[1] == ~u64{0};
    };
    clear(0);
    CHECK(rt::add_to_field(w, p, 0));
    CHECK_FALSE(rt::add_to_field(w, p, -1));  // below 0
    CHECK(value() == 0);
    CHECK(rt::add_to_field(w, p, top));  // 0 -> max
    CHECK(value() == max);
    CHECK_FALSE(rt::add_to_field(w, p, 1));  // past max
    CHECK_FALSE(rt::add_to_field(w, p, std::numeric_limits<std::int64_t>::max()));
    CHECK(value() == max);
    CHECK(rt::add_to_field(w, p, -top));  // max -> 0
    CHECK(value() == 0);
    CHECK_FALSE(rt::add_to_field(w, p, -top - 1));
    CHECK_FALSE(rt::add_to_field(w, p, std::numeric_limits<std::int64_t>::min()));
    CHECK(value() == 0);
    clear(max / 2);
    CHECK(rt::add_to_field(w, p, 1));
    CHECK(value() == max / 2 + 1);
    CHECK(others());
  }
  // a field no form has (width 0) holds only 0: moving it by anything else is refused
  rt::InsnWord w;
  const rt::FieldPos none = l.pos(Form::Mem, Field::imm);
  REQUIRE(none.width == 0);
  CHECK(rt::add_to_field(w, none, 0));
  CHECK_FALSE(rt::add_to_field(w, none, 1));
  CHECK_FALSE(rt::add_to_field(w, none, -1));
  CHECK(w == rt::InsnWord{});
}

// add_to_field in a constant expression: undefined behaviour there (a negated INT64_MIN) would
// not compile.
constexpr bool moved_by_min() {
  rt::InsnWord w;
  const auto p = rt::IsaLayout::default_layout().pos(Form::Mem, Field::dram_base);
  rt::put_field(w, p, 0xFFFFFFFFu);
  return rt::add_to_field(w, p, std::numeric_limits<std::int64_t>::min()) ||
         rt::get_field(w, p) != 0xFFFFFFFFu;
}
static_assert(!moved_by_min());

TEST_CASE("runtime isa: queue_of follows VTA_ISA.md's three modules") {
  using rt::MemId;
  using rt::Opcode;
  using rt::Queue;
  // "load module: LOAD of INP or WGT; compute module: LOAD of UOP, ACC or ACC_8BIT, GEMM, ALU,
  // FINISH; store module: STORE"
  const auto q = [](Opcode op, MemId m) {
    rt::InsnFields f;
    f.opcode = op;
    f.memory_type = m;
    return rt::queue_of(f);
  };
  CHECK(q(Opcode::Load, MemId::Inp) == Queue::Load);
  CHECK(q(Opcode::Load, MemId::Wgt) == Queue::Load);
  CHECK(q(Opcode::Load, MemId::Uop) == Queue::Compute);
  CHECK(q(Opcode::Load, MemId::Acc) == Queue::Compute);
  CHECK(q(Opcode::Load, MemId::Acc8) == Queue::Compute);
  for (int m = 0; m < rt::kMemIdCount; ++m) {
    CHECK(q(Opcode::Store, static_cast<MemId>(m)) == Queue::Store);
    CHECK(q(Opcode::Gemm, static_cast<MemId>(m)) == Queue::Compute);
    CHECK(q(Opcode::Alu, static_cast<MemId>(m)) == Queue::Compute);
    CHECK(q(Opcode::Finish, static_cast<MemId>(m)) == Queue::Compute);
  }
  // VTA's numbering of the modules
  CHECK(static_cast<int>(Queue::Load) == 1);
  CHECK(static_cast<int>(Queue::Compute) == 2);
  CHECK(static_cast<int>(Queue::Store) == 3);
}

TEST_CASE("runtime isa: every enumerator has VTA_ISA.md's value and name; others get '?'") {
  using rt::AluOp;
  using rt::MemId;
  using rt::Opcode;
  const std::pair<Opcode, const char*> ops[] = {{Opcode::Load, "LOAD"},
                                                {Opcode::Store, "STORE"},
                                                {Opcode::Gemm, "GEMM"},
                                                {Opcode::Finish, "FINISH"},
                                                {Opcode::Alu, "ALU"}};
  for (int i = 0; i < 5; ++i) {
    CHECK(static_cast<int>(ops[i].first) == i);
    CHECK(std::string(rt::opcode_name(ops[i].first)) == ops[i].second);
  }
  const std::pair<MemId, const char*> mems[] = {{MemId::Uop, "UOP"}, {MemId::Wgt, "WGT"},
                                                {MemId::Inp, "INP"}, {MemId::Acc, "ACC"},
                                                {MemId::Out, "OUT"}, {MemId::Acc8, "ACC_8BIT"}};
  for (int i = 0; i < 6; ++i) {
    CHECK(static_cast<int>(mems[i].first) == i);
    CHECK(std::string(rt::mem_name(mems[i].first)) == mems[i].second);
  }
  const std::pair<AluOp, const char*> alus[] = {{AluOp::Min, "MIN"},
                                                {AluOp::Max, "MAX"},
                                                {AluOp::Add, "ADD"},
                                                {AluOp::Shr, "SHR"},
                                                {AluOp::Mul, "MUL"}};
  for (int i = 0; i < 5; ++i) {
    CHECK(static_cast<int>(alus[i].first) == i);
    CHECK(std::string(rt::alu_name(alus[i].first)) == alus[i].second);
  }
  CHECK(std::string(rt::queue_name(rt::Queue::Load)) == "load");
  CHECK(std::string(rt::queue_name(rt::Queue::Compute)) == "compute");
  CHECK(std::string(rt::queue_name(rt::Queue::Store)) == "store");
  CHECK(std::string(rt::opcode_name(static_cast<Opcode>(7))) == "?");
  CHECK(std::string(rt::mem_name(static_cast<MemId>(6))) == "?");
  CHECK(std::string(rt::alu_name(static_cast<AluOp>(5))) == "?");
  CHECK(std::string(rt::queue_name(static_cast<rt::Queue>(0))) == "?");
  CHECK(std::string(rt::field_name(Field::count)) == "?");
  // field names: the document's spelling, one per field, all distinct
  const char* doc[] = {"opcode",
                       "pop_prev_dep",
                       "pop_next_dep",
                       "push_prev_dep",
                       "push_next_dep",
                       "memory_type",
                       "sram_base",
                       "dram_base",
                       "y_size",
                       "x_size",
                       "x_stride",
                       "y_pad_0",
                       "y_pad_1",
                       "x_pad_0",
                       "x_pad_1",
                       "reset_reg",
                       "uop_bgn",
                       "uop_end",
                       "iter_out",
                       "iter_in",
                       "dst_factor_out",
                       "dst_factor_in",
                       "src_factor_out",
                       "src_factor_in",
                       "wgt_factor_out",
                       "wgt_factor_in",
                       "alu_opcode",
                       "use_imm",
                       "imm"};
  REQUIRE(std::size(doc) == static_cast<std::size_t>(rt::kFieldCount));
  std::set<std::string> seen;
  for (int x = 0; x < rt::kFieldCount; ++x) {
    CHECK(std::string(rt::field_name(static_cast<Field>(x))) == doc[x]);
    seen.insert(rt::field_name(static_cast<Field>(x)));
  }
  CHECK(seen.size() == static_cast<std::size_t>(rt::kFieldCount));
  CHECK(rt::low_mask(0) == 0);
  CHECK(rt::low_mask(1) == 1);
  CHECK(rt::low_mask(32) == 0xFFFFFFFFull);
  CHECK(rt::low_mask(64) == ~u64{0});
}

}  // namespace runtime_isa_test
