// VTA instruction set, firmware-sized: opcodes, memory ids, the bit layout of every field for a
// given configuration (derived by the layout rule of VTA_ISA.md / docs/vta.md), and unchecked
// pack/unpack of 128-bit instruction words and 32-bit micro-ops. Standard library only, no
// exceptions, usable in constant expressions. Checked encoding lives in dlavm/vta/hw/isa.hpp.
#pragma once

#include <array>
#include <cstdint>

namespace dlavm::runtime {

enum class Opcode : std::uint8_t { Load = 0, Store = 1, Gemm = 2, Finish = 3, Alu = 4 };
enum class MemId : std::uint8_t { Uop = 0, Wgt = 1, Inp = 2, Acc = 3, Out = 4, Acc8 = 5 };
enum class AluOp : std::uint8_t { Min = 0, Max = 1, Add = 2, Shr = 3, Mul = 4 };
// The three modules (VTA's pipeline stages, with VTA's numbering).
enum class Queue : std::uint8_t { Load = 1, Compute = 2, Store = 3 };

inline constexpr int kOpcodeCount = 5;
inline constexpr int kMemIdCount = 6;
inline constexpr int kAluOpCount = 5;

constexpr const char* opcode_name(Opcode op) {
  switch (op) {
    case Opcode::Load:
      return "LOAD";
    case Opcode::Store:
      return "STORE";
    case Opcode::Gemm:
      return "GEMM";
    case Opcode::Finish:
      return "FINISH";
    case Opcode::Alu:
      return "ALU";
  }
  return "?";
}
constexpr const char* mem_name(MemId m) {
  switch (m) {
    case MemId::Uop:
      return "UOP";
    case MemId::Wgt:
      return "WGT";
    case MemId::Inp:
      return "INP";
    case MemId::Acc:
      return "ACC";
    case MemId::Out:
      return "OUT";
    case MemId::Acc8:
      return "ACC_8BIT";
  }
  return "?";
}
constexpr const char* alu_name(AluOp op) {
  switch (op) {
    case AluOp::Min:
      return "MIN";
    case AluOp::Max:
      return "MAX";
    case AluOp::Add:
      return "ADD";
    case AluOp::Shr:
      return "SHR";
    case AluOp::Mul:
      return "MUL";
  }
  return "?";
}
constexpr const char* queue_name(Queue q) {
  switch (q) {
    case Queue::Load:
      return "load";
    case Queue::Compute:
      return "compute";
    case Queue::Store:
      return "store";
  }
  return "?";
}

// Every field of every instruction form, in no particular order.
enum class Field : std::uint8_t {
  opcode,
  pop_prev_dep,
  pop_next_dep,
  push_prev_dep,
  push_next_dep,
  memory_type,
  sram_base,
  dram_base,
  y_size,
  x_size,
  x_stride,
  y_pad_0,
  y_pad_1,
  x_pad_0,
  x_pad_1,
  reset_reg,
  uop_bgn,
  uop_end,
  iter_out,
  iter_in,
  dst_factor_out,
  dst_factor_in,
  src_factor_out,
  src_factor_in,
  wgt_factor_out,
  wgt_factor_in,
  alu_opcode,
  use_imm,
  imm,
  count
};
inline constexpr int kFieldCount = static_cast<int>(Field::count);

constexpr const char* field_name(Field f) {
  constexpr const char* names[] = {"opcode",
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
  const auto i = static_cast<int>(f);
  return i < kFieldCount ? names[i] : "?";
}

// The three encodings: LOAD/STORE (Mem), GEMM and FINISH (Gemm), ALU.
enum class Form : std::uint8_t { Mem, Gemm, Alu };
constexpr Form form_of(Opcode op) {
  switch (op) {
    case Opcode::Load:
    case Opcode::Store:
      return Form::Mem;
    case Opcode::Alu:
      return Form::Alu;
    default:
      return Form::Gemm;
  }
}

// Fixed widths of VTA_ISA.md.
inline constexpr int kOpcodeBits = 3;
inline constexpr int kMemIdBits = 3;
inline constexpr int kAluOpBits = 3;
inline constexpr int kSramBaseBits = 16;
inline constexpr int kDramBaseBits = 32;
inline constexpr int kSizeBits = 16;
inline constexpr int kStrideBits = 16;
inline constexpr int kPadBits = 4;
inline constexpr int kLoopIterBits = 14;
inline constexpr int kImmBits = 16;
inline constexpr int kInsnBits = 128;
inline constexpr int kUopBits = 32;

// One field's place: bit offset from bit 0 of word 0 (0..127) and width (0 = not in the form).
struct FieldPos {
  std::uint8_t offset = 0;
  std::uint8_t width = 0;
  friend constexpr bool operator==(FieldPos a, FieldPos b) {
    return a.offset == b.offset && a.width == b.width;
  }
  friend constexpr bool operator!=(FieldPos a, FieldPos b) { return !(a == b); }
};

// One 128-bit instruction: two little-endian 64-bit words, word[0] holding bits 0-63.
struct InsnWord {
  std::array<std::uint64_t, 2> word{};
  friend constexpr bool operator==(const InsnWord& a, const InsnWord& b) {
    return a.word[0] == b.word[0] && a.word[1] == b.word[1];
  }
  friend constexpr bool operator!=(const InsnWord& a, const InsnWord& b) { return !(a == b); }
};

// A micro-op: indices into the accumulator, input (or accumulator, for ALU) and weight SRAMs.
struct Uop {
  std::uint32_t dst = 0;
  std::uint32_t src = 0;
  std::uint32_t wgt = 0;
  friend constexpr bool operator==(const Uop& a, const Uop& b) {
    return a.dst == b.dst && a.src == b.src && a.wgt == b.wgt;
  }
  friend constexpr bool operator!=(const Uop& a, const Uop& b) { return !(a == b); }
};

// The value of every field of one instruction, whatever its form (fields outside the form are
// ignored by pack and zero after unpack). Opcode, memory type and ALU opcode hold the raw
// field value, which may be outside the enumerators after unpacking a corrupted word.
struct InsnFields {
  Opcode opcode = Opcode::Finish;
  bool pop_prev_dep = false, pop_next_dep = false, push_prev_dep = false, push_next_dep = false;
  MemId memory_type = MemId::Uop;
  std::uint32_t sram_base = 0, dram_base = 0, y_size = 0, x_size = 0, x_stride = 0;
  std::uint32_t y_pad_0 = 0, y_pad_1 = 0, x_pad_0 = 0, x_pad_1 = 0;
  bool reset_reg = false;
  std::uint32_t uop_bgn = 0, uop_end = 0, iter_out = 0, iter_in = 0;
  std::uint32_t dst_factor_out = 0, dst_factor_in = 0, src_factor_out = 0, src_factor_in = 0;
  std::uint32_t wgt_factor_out = 0, wgt_factor_in = 0;
  AluOp alu_opcode = AluOp::Min;
  bool use_imm = false;
  std::int32_t imm = 0;  // 16-bit signed field, sign-extended

  // (member by member, not through get(): a race check compares a stream's instructions with
  // those of the one before, most of them equal)
  friend constexpr bool operator==(const InsnFields& a, const InsnFields& b) {
    static_assert(static_cast<int>(Field::count) == 29, "every field compared here");
    return a.opcode == b.opcode && a.pop_prev_dep == b.pop_prev_dep &&
           a.pop_next_dep == b.pop_next_dep && a.push_prev_dep == b.push_prev_dep &&
           a.push_next_dep == b.push_next_dep && a.memory_type == b.memory_type &&
           a.sram_base == b.sram_base && a.dram_base == b.dram_base && a.y_size == b.y_size &&
           a.x_size == b.x_size && a.x_stride == b.x_stride && a.y_pad_0 == b.y_pad_0 &&
           a.y_pad_1 == b.y_pad_1 && a.x_pad_0 == b.x_pad_0 && a.x_pad_1 == b.x_pad_1 &&
           a.reset_reg == b.reset_reg && a.uop_bgn == b.uop_bgn && a.uop_end == b.uop_end &&
           a.iter_out == b.iter_out && a.iter_in == b.iter_in &&
           a.dst_factor_out == b.dst_factor_out && a.dst_factor_in == b.dst_factor_in &&
           a.src_factor_out == b.src_factor_out && a.src_factor_in == b.src_factor_in &&
           a.wgt_factor_out == b.wgt_factor_out && a.wgt_factor_in == b.wgt_factor_in &&
           a.alu_opcode == b.alu_opcode && a.use_imm == b.use_imm && a.imm == b.imm;
  }
  friend constexpr bool operator!=(const InsnFields& a, const InsnFields& b) { return !(a == b); }

  // Field value as an unsigned bit pattern of at most 64 bits (imm: two's complement).
  constexpr std::uint64_t get(Field f) const {
    switch (f) {
      case Field::opcode:
        return static_cast<std::uint64_t>(opcode);
      case Field::pop_prev_dep:
        return pop_prev_dep;
      case Field::pop_next_dep:
        return pop_next_dep;
      case Field::push_prev_dep:
        return push_prev_dep;
      case Field::push_next_dep:
        return push_next_dep;
      case Field::memory_type:
        return static_cast<std::uint64_t>(memory_type);
      case Field::sram_base:
        return sram_base;
      case Field::dram_base:
        return dram_base;
      case Field::y_size:
        return y_size;
      case Field::x_size:
        return x_size;
      case Field::x_stride:
        return x_stride;
      case Field::y_pad_0:
        return y_pad_0;
      case Field::y_pad_1:
        return y_pad_1;
      case Field::x_pad_0:
        return x_pad_0;
      case Field::x_pad_1:
        return x_pad_1;
      case Field::reset_reg:
        return reset_reg;
      case Field::uop_bgn:
        return uop_bgn;
      case Field::uop_end:
        return uop_end;
      case Field::iter_out:
        return iter_out;
      case Field::iter_in:
        return iter_in;
      case Field::dst_factor_out:
        return dst_factor_out;
      case Field::dst_factor_in:
        return dst_factor_in;
      case Field::src_factor_out:
        return src_factor_out;
      case Field::src_factor_in:
        return src_factor_in;
      case Field::wgt_factor_out:
        return wgt_factor_out;
      case Field::wgt_factor_in:
        return wgt_factor_in;
      case Field::alu_opcode:
        return static_cast<std::uint64_t>(alu_opcode);
      case Field::use_imm:
        return use_imm;
      case Field::imm:
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(imm));
      case Field::count:
        break;
    }
    return 0;
  }
  // Sets a field from the raw bits read out of a word (imm is sign-extended from 16 bits).
  constexpr void set(Field f, std::uint64_t v) {
    const auto u = static_cast<std::uint32_t>(v);
    switch (f) {
      case Field::opcode:
        opcode = static_cast<Opcode>(u);
        break;
      case Field::pop_prev_dep:
        pop_prev_dep = v != 0;
        break;
      case Field::pop_next_dep:
        pop_next_dep = v != 0;
        break;
      case Field::push_prev_dep:
        push_prev_dep = v != 0;
        break;
      case Field::push_next_dep:
        push_next_dep = v != 0;
        break;
      case Field::memory_type:
        memory_type = static_cast<MemId>(u);
        break;
      case Field::sram_base:
        sram_base = u;
        break;
      case Field::dram_base:
        dram_base = u;
        break;
      case Field::y_size:
        y_size = u;
        break;
      case Field::x_size:
        x_size = u;
        break;
      case Field::x_stride:
        x_stride = u;
        break;
      case Field::y_pad_0:
        y_pad_0 = u;
        break;
      case Field::y_pad_1:
        y_pad_1 = u;
        break;
      case Field::x_pad_0:
        x_pad_0 = u;
        break;
      case Field::x_pad_1:
        x_pad_1 = u;
        break;
      case Field::reset_reg:
        reset_reg = v != 0;
        break;
      case Field::uop_bgn:
        uop_bgn = u;
        break;
      case Field::uop_end:
        uop_end = u;
        break;
      case Field::iter_out:
        iter_out = u;
        break;
      case Field::iter_in:
        iter_in = u;
        break;
      case Field::dst_factor_out:
        dst_factor_out = u;
        break;
      case Field::dst_factor_in:
        dst_factor_in = u;
        break;
      case Field::src_factor_out:
        src_factor_out = u;
        break;
      case Field::src_factor_in:
        src_factor_in = u;
        break;
      case Field::wgt_factor_out:
        wgt_factor_out = u;
        break;
      case Field::wgt_factor_in:
        wgt_factor_in = u;
        break;
      case Field::alu_opcode:
        alu_opcode = static_cast<AluOp>(u);
        break;
      case Field::use_imm:
        use_imm = v != 0;
        break;
      case Field::imm:
        imm = static_cast<std::int32_t>(static_cast<std::int16_t>(u & 0xFFFF));
        break;
      case Field::count:
        break;
    }
  }
};

// Which module executes an instruction: LOAD of INP/WGT on the load module, STORE on the
// store module, everything else (LOAD of UOP/ACC/ACC_8BIT, GEMM, ALU, FINISH) on compute.
constexpr Queue queue_of(const InsnFields& f) {
  if (f.opcode == Opcode::Store) return Queue::Store;
  if (f.opcode == Opcode::Load && (f.memory_type == MemId::Inp || f.memory_type == MemId::Wgt))
    return Queue::Load;
  return Queue::Compute;
}

// The fields of each form, least significant first.
inline constexpr Field kCommonFields[] = {Field::opcode, Field::pop_prev_dep, Field::pop_next_dep,
                                          Field::push_prev_dep, Field::push_next_dep};
inline constexpr Field kMemFields[] = {
    Field::memory_type, Field::sram_base, Field::dram_base, Field::y_size,  Field::x_size,
    Field::x_stride,    Field::y_pad_0,   Field::y_pad_1,   Field::x_pad_0, Field::x_pad_1};
inline constexpr Field kGemmFields[] = {
    Field::reset_reg,     Field::uop_bgn,        Field::uop_end,       Field::iter_out,
    Field::iter_in,       Field::dst_factor_out, Field::dst_factor_in, Field::src_factor_out,
    Field::src_factor_in, Field::wgt_factor_out, Field::wgt_factor_in};
inline constexpr Field kAluFields[] = {
    Field::reset_reg,     Field::uop_bgn,        Field::uop_end,       Field::iter_out,
    Field::iter_in,       Field::dst_factor_out, Field::dst_factor_in, Field::src_factor_out,
    Field::src_factor_in, Field::alu_opcode,     Field::use_imm,       Field::imm};

// The bit position of every field for one configuration, given by its log2 SRAM depths
// (in elements). Layout rule: fields are packed from bit 0 of word 0 upward, and a field
// that does not fit in what is left of the current 64-bit word starts at bit 0 of the next
// word. `ok` is false when a form needs more than 128 bits or the micro-op more than 32;
// `bad_form` / `bad_field` then name the first field that does not fit.
struct IsaLayout {
  int log_uop_depth = 0, log_inp_depth = 0, log_wgt_depth = 0, log_acc_depth = 0;
  std::array<FieldPos, kFieldCount> mem{}, gemm{}, alu{};
  FieldPos uop_dst{}, uop_src{}, uop_wgt{};
  bool ok = true;
  bool uop_ok = true;
  Form bad_form = Form::Mem;
  Field bad_field = Field::count;

  constexpr const std::array<FieldPos, kFieldCount>& form(Form f) const {
    return f == Form::Mem ? mem : f == Form::Gemm ? gemm : alu;
  }
  constexpr FieldPos pos(Form f, Field field) const {
    return form(f)[static_cast<std::size_t>(field)];
  }

  // Width of a field in a form for these depths (0 when the form has no such field).
  static constexpr int width(Form form, Field f, int uop, int inp, int wgt, int acc) {
    switch (f) {
      case Field::opcode:
        return kOpcodeBits;
      case Field::pop_prev_dep:
      case Field::pop_next_dep:
      case Field::push_prev_dep:
      case Field::push_next_dep:
        return 1;
      default:
        break;
    }
    if (form == Form::Mem) {
      switch (f) {
        case Field::memory_type:
          return kMemIdBits;
        case Field::sram_base:
          return kSramBaseBits;
        case Field::dram_base:
          return kDramBaseBits;
        case Field::y_size:
        case Field::x_size:
          return kSizeBits;
        case Field::x_stride:
          return kStrideBits;
        case Field::y_pad_0:
        case Field::y_pad_1:
        case Field::x_pad_0:
        case Field::x_pad_1:
          return kPadBits;
        default:
          return 0;
      }
    }
    switch (f) {
      case Field::reset_reg:
        return 1;
      case Field::uop_bgn:
        return uop;
      case Field::uop_end:
        return uop + 1;
      case Field::iter_out:
      case Field::iter_in:
        return kLoopIterBits;
      case Field::dst_factor_out:
      case Field::dst_factor_in:
        return acc;
      case Field::src_factor_out:
      case Field::src_factor_in:
        return form == Form::Gemm ? inp : acc;
      case Field::wgt_factor_out:
      case Field::wgt_factor_in:
        return form == Form::Gemm ? wgt : 0;
      case Field::alu_opcode:
        return form == Form::Alu ? kAluOpBits : 0;
      case Field::use_imm:
        return form == Form::Alu ? 1 : 0;
      case Field::imm:
        return form == Form::Alu ? kImmBits : 0;
      default:
        return 0;
    }
  }

  static constexpr IsaLayout make(int log_uop_depth, int log_inp_depth, int log_wgt_depth,
                                  int log_acc_depth) {
    IsaLayout l;
    l.log_uop_depth = log_uop_depth;
    l.log_inp_depth = log_inp_depth;
    l.log_wgt_depth = log_wgt_depth;
    l.log_acc_depth = log_acc_depth;
    for (Form form : {Form::Mem, Form::Gemm, Form::Alu}) {
      auto& table = form == Form::Mem ? l.mem : form == Form::Gemm ? l.gemm : l.alu;
      int bit = 0;
      auto place = [&](Field f) {
        const int w = width(form, f, log_uop_depth, log_inp_depth, log_wgt_depth, log_acc_depth);
        if (w <= 0) return;
        if (w > 64 || (bit % 64) + w > 64) bit = (bit + 63) / 64 * 64;
        if (w > 64 || bit + w > kInsnBits) {
          if (l.ok) {
            l.ok = false;
            l.bad_form = form;
            l.bad_field = f;
          }
          return;
        }
        table[static_cast<std::size_t>(f)] = {static_cast<std::uint8_t>(bit),
                                              static_cast<std::uint8_t>(w)};
        bit += w;
      };
      for (Field f : kCommonFields) place(f);
      if (form == Form::Mem) {
        for (Field f : kMemFields) place(f);
      } else if (form == Form::Gemm) {
        for (Field f : kGemmFields) place(f);
      } else {
        for (Field f : kAluFields) place(f);
      }
    }
    const int src = log_acc_depth > log_inp_depth ? log_acc_depth : log_inp_depth;
    const int dst = log_acc_depth, wgt = log_wgt_depth;
    if (dst < 0 || src < 0 || wgt < 0 || dst + src + wgt > kUopBits) {
      l.uop_ok = false;
    } else {
      l.uop_dst = {0, static_cast<std::uint8_t>(dst)};
      l.uop_src = {static_cast<std::uint8_t>(dst), static_cast<std::uint8_t>(src)};
      l.uop_wgt = {static_cast<std::uint8_t>(dst + src), static_cast<std::uint8_t>(wgt)};
    }
    return l;
  }

  // The default VTA configuration: uop 2^13, inp 2^11, wgt 2^10, acc 2^11 elements.
  static constexpr IsaLayout default_layout() { return make(13, 11, 10, 11); }
};

constexpr std::uint64_t low_mask(int width) {
  return width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
}
// The largest value a field of `width` bits holds (-1: no such field, nothing fits).
constexpr std::int64_t field_limit(int width) {
  return width == 0    ? -1
         : width >= 63 ? static_cast<std::int64_t>(~std::uint64_t{0} >> 1)  // INT64_MAX
                       : static_cast<std::int64_t>(low_mask(width));
}

// The encoders' few-instruction helpers, inlined even where a caller is large (a replay's
// encoder): a call costs more than the shift and mask it wraps. Not where the build optimizes
// for size (-Os, as firmware is cross-compiled): each inlined copy of a 64-bit variable shift
// is a dozen 32-bit ARM instructions, and the compiler's own choice keeps the runtime smaller.
#if defined(__GNUC__) && !defined(__OPTIMIZE_SIZE__)
#define DLAVM_RUNTIME_INLINE __attribute__((always_inline)) inline
#else
#define DLAVM_RUNTIME_INLINE inline
#endif
// A part of a function written apart so that two paths share it (a loop memo's recording and a
// tile's), inlined at every level: at -Os one of the paths is not compiled, and a call would
// cost what the part's copy saves.
#if defined(__GNUC__)
#define DLAVM_RUNTIME_PART __attribute__((always_inline)) inline
#else
#define DLAVM_RUNTIME_PART inline
#endif
// A rare path out of a frequent one (a time shortcut's bookkeeping at every load's and
// store's call), kept out of line: inlined, it slowed the loads' replays (the token GEMM's by
// 9%).
#if defined(__GNUC__)
#define DLAVM_RUNTIME_COLD __attribute__((noinline, cold)) inline
#else
#define DLAVM_RUNTIME_COLD inline
#endif
// Whether the writer's encoder is specialized by instruction form (GEMM, ALU), so that a layout
// known when the code compiles (StaticLayout) puts each field with a constant shift, mask and
// bound; and whether the writer and the replay take the shortcuts that save time at a cost in
// code (a kernel written again where it was resident, an in-place ALU's read not checked for
// hazards its write already met). Neither at -Os, where one copy for every form and no
// shortcut keep the runtime's ARM text within its 16 KiB. (Objects built
// at -Os and at other levels then differ in the writer's code, not in what it writes, as with
// DLAVM_RUNTIME_INLINE.)
#ifdef __OPTIMIZE_SIZE__
inline constexpr bool kSpecializedEncoder = false;
inline constexpr bool kTimeShortcuts = false;
#else
inline constexpr bool kSpecializedEncoder = true;
inline constexpr bool kTimeShortcuts = true;
#endif

// Places `value` (masked to the field width) into a word pair. Fields never straddle words.
DLAVM_RUNTIME_INLINE constexpr void put_field(InsnWord& w, FieldPos p, std::uint64_t value) {
  if (p.width == 0) return;
  w.word[p.offset / 64] |= (value & (~std::uint64_t{0} >> (64 - p.width))) << (p.offset % 64);
}
DLAVM_RUNTIME_INLINE constexpr std::uint64_t get_field(const InsnWord& w, FieldPos p) {
  if (p.width == 0) return 0;
  return (w.word[p.offset / 64] >> (p.offset % 64)) & low_mask(p.width);
}
// Replaces a field's value (put_field only sets bits, for a word being built from zero).
DLAVM_RUNTIME_INLINE constexpr void set_field(InsnWord& w, FieldPos p, std::uint64_t value) {
  if (p.width == 0) return;
  w.word[p.offset / 64] &= ~(low_mask(p.width) << (p.offset % 64));
  put_field(w, p, value);
}
// Replaces a field's value with v, or returns false, leaving the word as it was, where v is
// negative or wider than the field (a rewritten instruction's field: vta::Program::
// reinstantiate).
constexpr bool replace_field(InsnWord& w, FieldPos p, std::int64_t v) {
  if (v < 0 || static_cast<std::uint64_t>(v) > low_mask(p.width)) return false;
  set_field(w, p, static_cast<std::uint64_t>(v));
  return true;
}
// Moves an address field by `delta` (a relocation: a stream placed elsewhere than planned).
// Returns false, leaving the word as it was, when the moved value leaves the field's range.
constexpr bool add_to_field(InsnWord& w, FieldPos p, std::int64_t delta) {
  const std::uint64_t old = get_field(w, p);
  // |delta| in unsigned arithmetic: -delta overflows (undefined) for INT64_MIN
  const std::uint64_t size = delta < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(delta)
                                       : static_cast<std::uint64_t>(delta);
  if (delta < 0 ? size > old : size > low_mask(p.width) - old) return false;
  set_field(w, p, old + static_cast<std::uint64_t>(delta));
  return true;
}

// Calls fn(field) for every field of `form`, least significant first.
template <class Fn>
constexpr void for_each_field(Form form, Fn&& fn) {
  for (Field x : kCommonFields) fn(x);
  if (form == Form::Mem) {
    for (Field x : kMemFields) fn(x);
  } else if (form == Form::Gemm) {
    for (Field x : kGemmFields) fn(x);
  } else {
    for (Field x : kAluFields) fn(x);
  }
}

// Unchecked: values wider than their field are masked. Use vta::encode to check them.
// Writes each field of the form straight from its member (the encoder's hot path: a replay
// packs every instruction it writes).
constexpr InsnWord pack(const IsaLayout& layout, const InsnFields& f) {
  InsnWord w;
  const Form form = form_of(f.opcode);
  const auto& t = layout.form(form);
  const auto put = [&](Field x, std::uint64_t v) {
    if (v != 0) put_field(w, t[static_cast<std::size_t>(x)], v);  // most fields are zero
  };
  put(Field::opcode, static_cast<std::uint64_t>(f.opcode));
  put(Field::pop_prev_dep, f.pop_prev_dep);
  put(Field::pop_next_dep, f.pop_next_dep);
  put(Field::push_prev_dep, f.push_prev_dep);
  put(Field::push_next_dep, f.push_next_dep);
  if (form == Form::Mem) {
    put(Field::memory_type, static_cast<std::uint64_t>(f.memory_type));
    put(Field::sram_base, f.sram_base);
    put(Field::dram_base, f.dram_base);
    put(Field::y_size, f.y_size);
    put(Field::x_size, f.x_size);
    put(Field::x_stride, f.x_stride);
    put(Field::y_pad_0, f.y_pad_0);
    put(Field::y_pad_1, f.y_pad_1);
    put(Field::x_pad_0, f.x_pad_0);
    put(Field::x_pad_1, f.x_pad_1);
    return w;
  }
  put(Field::reset_reg, f.reset_reg);
  put(Field::uop_bgn, f.uop_bgn);
  put(Field::uop_end, f.uop_end);
  put(Field::iter_out, f.iter_out);
  put(Field::iter_in, f.iter_in);
  put(Field::dst_factor_out, f.dst_factor_out);
  put(Field::dst_factor_in, f.dst_factor_in);
  put(Field::src_factor_out, f.src_factor_out);
  put(Field::src_factor_in, f.src_factor_in);
  if (form == Form::Gemm) {
    put(Field::wgt_factor_out, f.wgt_factor_out);
    put(Field::wgt_factor_in, f.wgt_factor_in);
  } else {
    put(Field::alu_opcode, static_cast<std::uint64_t>(f.alu_opcode));
    put(Field::use_imm, f.use_imm);
    put(Field::imm, static_cast<std::uint64_t>(static_cast<std::int64_t>(f.imm)));
  }
  return w;
}

// The opcode field: bits 0-2 of every form.
constexpr Opcode opcode_of(const InsnWord& w) { return static_cast<Opcode>(w.word[0] & 7); }

// Reads each field of the form straight into its member of `f`, as pack writes them (a device
// decodes every instruction of each new stream it runs), the other fields left as they are; at
// -Os, one loop over the form's fields. (Into the caller's fields: a decoded stream's vector
// takes each instruction where it is written, not copied from a temporary whose narrow stores
// the copy's wide loads would wait on.)
constexpr void unpack_into(const IsaLayout& layout, const InsnWord& w, InsnFields& f) {
  const Form form = form_of(opcode_of(w));
  const auto& t = layout.form(form);
  if constexpr (!kSpecializedEncoder) {
    for_each_field(form, [&](Field x) { f.set(x, get_field(w, t[static_cast<std::size_t>(x)])); });
    return;
  }
  const auto get = [&](Field x) {
    return static_cast<std::uint32_t>(get_field(w, t[static_cast<std::size_t>(x)]));
  };
  f.opcode = static_cast<Opcode>(get(Field::opcode));
  f.pop_prev_dep = get(Field::pop_prev_dep) != 0;
  f.pop_next_dep = get(Field::pop_next_dep) != 0;
  f.push_prev_dep = get(Field::push_prev_dep) != 0;
  f.push_next_dep = get(Field::push_next_dep) != 0;
  if (form == Form::Mem) {
    f.memory_type = static_cast<MemId>(get(Field::memory_type));
    f.sram_base = get(Field::sram_base);
    f.dram_base = get(Field::dram_base);
    f.y_size = get(Field::y_size);
    f.x_size = get(Field::x_size);
    f.x_stride = get(Field::x_stride);
    f.y_pad_0 = get(Field::y_pad_0);
    f.y_pad_1 = get(Field::y_pad_1);
    f.x_pad_0 = get(Field::x_pad_0);
    f.x_pad_1 = get(Field::x_pad_1);
    return;
  }
  f.reset_reg = get(Field::reset_reg) != 0;
  f.uop_bgn = get(Field::uop_bgn);
  f.uop_end = get(Field::uop_end);
  f.iter_out = get(Field::iter_out);
  f.iter_in = get(Field::iter_in);
  f.dst_factor_out = get(Field::dst_factor_out);
  f.dst_factor_in = get(Field::dst_factor_in);
  f.src_factor_out = get(Field::src_factor_out);
  f.src_factor_in = get(Field::src_factor_in);
  if (form == Form::Gemm) {
    f.wgt_factor_out = get(Field::wgt_factor_out);
    f.wgt_factor_in = get(Field::wgt_factor_in);
  } else {
    f.alu_opcode = static_cast<AluOp>(get(Field::alu_opcode));
    f.use_imm = get(Field::use_imm) != 0;
    f.imm = static_cast<std::int32_t>(static_cast<std::int16_t>(get(Field::imm) & 0xFFFF));
  }
}
// The fields of a word (those of other forms zero).
constexpr InsnFields unpack(const IsaLayout& layout, const InsnWord& w) {
  InsnFields f;
  unpack_into(layout, w, f);
  return f;
}

constexpr std::uint32_t pack_uop(const IsaLayout& l, const Uop& u) {
  const auto put = [](FieldPos p, std::uint32_t v) {
    return p.width == 0 ? 0u : static_cast<std::uint32_t>((v & low_mask(p.width)) << p.offset);
  };
  return put(l.uop_dst, u.dst) | put(l.uop_src, u.src) | put(l.uop_wgt, u.wgt);
}
constexpr Uop unpack_uop(const IsaLayout& l, std::uint32_t word) {
  const auto get = [word](FieldPos p) {
    return p.width == 0 ? 0u : static_cast<std::uint32_t>((word >> p.offset) & low_mask(p.width));
  };
  return {get(l.uop_dst), get(l.uop_src), get(l.uop_wgt)};
}

}  // namespace dlavm::runtime
