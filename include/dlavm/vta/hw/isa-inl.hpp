// Definitions for dlavm/vta/hw/isa.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/isa.hpp>

namespace dlavm::vta {

DLAVM_INLINE std::string insn_name(const InsnFields& f) {
  const auto op = static_cast<unsigned>(f.opcode);
  if (op >= runtime::kOpcodeCount) return fmt::format("opcode {}", op);
  return runtime::opcode_name(f.opcode);
}

DLAVM_INLINE void check_field(const IsaLayout& layout, const InsnFields& insn, Field field,
                              std::int64_t value, std::size_t index) {
  const auto pos = layout.pos(runtime::form_of(insn.opcode), field);
  if (pos.width == 0)
    raise<EncodingError>("{} #{} has no field {}", insn_name(insn), index,
                         runtime::field_name(field));
  if (field == Field::imm) {
    const std::int64_t lo = -(std::int64_t{1} << (pos.width - 1));
    const std::int64_t hi = (std::int64_t{1} << (pos.width - 1)) - 1;
    if (value < lo || value > hi)
      raise<EncodingError>("{} #{} field imm = {} is outside its {}-bit signed range {}..{}",
                           insn_name(insn), index, value, pos.width, lo, hi);
    return;
  }
  const auto limit = runtime::low_mask(pos.width);
  if (value < 0)
    raise<EncodingError>("{} #{} field {} = {} is negative; it is a {}-bit unsigned field",
                         insn_name(insn), index, runtime::field_name(field), value, pos.width);
  if (static_cast<std::uint64_t>(value) > limit)
    raise<EncodingError>("{} #{} field {} = {} exceeds its {}-bit limit {}", insn_name(insn), index,
                         runtime::field_name(field), value, pos.width, limit);
}

DLAVM_INLINE void check_enums(const InsnFields& f, std::size_t index) {
  const auto op = static_cast<unsigned>(f.opcode);
  if (op >= runtime::kOpcodeCount)
    raise<EncodingError>(
        "instruction #{}: unknown opcode {} (LOAD 0, STORE 1, GEMM 2, FINISH 3, "
        "ALU 4)",
        index, op);
  if (f.opcode == Opcode::Load || f.opcode == Opcode::Store) {
    const auto m = static_cast<unsigned>(f.memory_type);
    if (m >= runtime::kMemIdCount)
      raise<EncodingError>(
          "{} #{}: unknown memory type {} (UOP 0, WGT 1, INP 2, ACC 3, OUT 4, "
          "ACC_8BIT 5)",
          insn_name(f), index, m);
  }
  if (f.opcode == Opcode::Alu && static_cast<unsigned>(f.alu_opcode) >= runtime::kAluOpCount)
    raise<EncodingError>("ALU #{}: unknown ALU opcode {} (MIN 0, MAX 1, ADD 2, SHR 3, MUL 4)",
                         index, static_cast<unsigned>(f.alu_opcode));
}

DLAVM_INLINE InsnWord encode(const IsaLayout& layout, const InsnFields& f, std::size_t index) {
  check_enums(f, index);
  const auto form = runtime::form_of(f.opcode);
  const auto& table = layout.form(form);
  bool fits = true;
  runtime::for_each_field(form, [&](Field x) {
    const auto width = table[static_cast<std::size_t>(x)].width;
    if (x == Field::imm) {
      const std::int64_t half = std::int64_t{1} << (width - 1);
      fits &= f.imm >= -half && f.imm < half;
    } else {
      fits &= f.get(x) <= runtime::low_mask(width);
    }
  });
  if (!fits) {  // find the first offending field for the message
    runtime::for_each_field(form, [&](Field x) {
      const std::int64_t v = x == Field::imm ? f.imm : static_cast<std::int64_t>(f.get(x));
      check_field(layout, f, x, v, index);
    });
  }
  return runtime::pack(layout, f);
}

DLAVM_INLINE InsnFields decode(const IsaLayout& layout, const InsnWord& w, std::size_t index) {
  auto f = runtime::unpack(layout, w);
  check_enums(f, index);
  return f;
}

DLAVM_INLINE std::vector<InsnFields> decode_all(const IsaLayout& layout,
                                                std::span<const InsnWord> ws) {
  std::vector<InsnFields> out;
  out.reserve(ws.size());
  for (std::size_t i = 0; i < ws.size(); ++i) {
    runtime::unpack_into(layout, ws[i], out.emplace_back());
    check_enums(out.back(), i);
  }
  return out;
}

DLAVM_INLINE std::uint32_t encode_uop(const IsaLayout& layout, const Uop& u, std::size_t index) {
  auto check = [&](const char* name, std::uint32_t v, runtime::FieldPos p) {
    if (v > runtime::low_mask(p.width))
      raise<EncodingError>("micro-op #{} field {} = {} exceeds its {}-bit limit {}", index, name, v,
                           p.width, runtime::low_mask(p.width));
  };
  check("dst_idx", u.dst, layout.uop_dst);
  check("src_idx", u.src, layout.uop_src);
  check("wgt_idx", u.wgt, layout.uop_wgt);
  return runtime::pack_uop(layout, u);
}

DLAVM_INLINE std::string disassemble(const InsnFields& f) {
  std::string s;
  switch (f.opcode) {
    case Opcode::Load:
    case Opcode::Store:
      s += fmt::format("{} {} sram=0x{:04x} dram=0x{:08x} y={} x={} stride={}",
                       runtime::opcode_name(f.opcode),
                       static_cast<unsigned>(f.memory_type) < runtime::kMemIdCount
                           ? runtime::mem_name(f.memory_type)
                           : "MEM?",
                       f.sram_base, f.dram_base, f.y_size, f.x_size, f.x_stride);
      if (f.y_pad_0 || f.y_pad_1 || f.x_pad_0 || f.x_pad_1)
        s += fmt::format(" pad=(y {},{} x {},{})", f.y_pad_0, f.y_pad_1, f.x_pad_0, f.x_pad_1);
      break;
    case Opcode::Gemm:
      s += fmt::format("GEMM{} uop=[{},{}) iter=({},{}) dst=({},{}) src=({},{}) wgt=({},{})",
                       f.reset_reg ? " reset" : "", f.uop_bgn, f.uop_end, f.iter_out, f.iter_in,
                       f.dst_factor_out, f.dst_factor_in, f.src_factor_out, f.src_factor_in,
                       f.wgt_factor_out, f.wgt_factor_in);
      break;
    case Opcode::Alu:
      s += fmt::format("ALU {}", static_cast<unsigned>(f.alu_opcode) < runtime::kAluOpCount
                                     ? runtime::alu_name(f.alu_opcode)
                                     : "OP?");
      if (f.use_imm) s += fmt::format(" imm={}", f.imm);
      if (f.reset_reg) s += fmt::format(" reset");
      s += fmt::format(" uop=[{},{}) iter=({},{}) dst=({},{}) src=({},{})", f.uop_bgn, f.uop_end,
                       f.iter_out, f.iter_in, f.dst_factor_out, f.dst_factor_in, f.src_factor_out,
                       f.src_factor_in);
      break;
    case Opcode::Finish:
      s += "FINISH";
      break;
    default:
      s += fmt::format("UNKNOWN opcode {}", static_cast<unsigned>(f.opcode));
      break;
  }
  if (f.pop_prev_dep || f.pop_next_dep || f.push_prev_dep || f.push_next_dep) {
    s += " |";
    if (f.pop_prev_dep) s += " pop_prev";
    if (f.pop_next_dep) s += " pop_next";
    if (f.push_prev_dep) s += " push_prev";
    if (f.push_next_dep) s += " push_next";
  }
  return s;
}

DLAVM_INLINE std::string disassemble(const IsaLayout& layout, const Stream& stream) {
  std::string s;
  for (std::size_t i = 0; i < stream.insns.size(); ++i) {
    const auto f = decode(layout, stream.insns[i], i);
    s += fmt::format("{:4}  {:7}  {}\n", i, runtime::queue_name(runtime::queue_of(f)),
                     disassemble(f));
  }
  for (std::size_t i = 0; i < stream.uops.size(); ++i) {
    const auto u = runtime::unpack_uop(layout, stream.uops[i]);
    s += fmt::format("uop {:4}  dst={} src={} wgt={}\n", i, u.dst, u.src, u.wgt);
  }
  return s;
}

}  // namespace dlavm::vta

DLAVM_INLINE fmt::format_context::iterator fmt::formatter<dlavm::runtime::InsnFields>::format(
    const dlavm::runtime::InsnFields& f, format_context& ctx) const {
  return fmt::formatter<std::string_view>::format(dlavm::vta::disassemble(f), ctx);
}
DLAVM_INLINE fmt::format_context::iterator fmt::formatter<dlavm::runtime::InsnWord>::format(
    const dlavm::runtime::InsnWord& w, format_context& ctx) const {
  return fmt::formatter<std::string_view>::format(
      fmt::format("{:016x}{:016x}", w.word[1], w.word[0]), ctx);
}
DLAVM_INLINE fmt::format_context::iterator fmt::formatter<dlavm::runtime::Uop>::format(
    const dlavm::runtime::Uop& u, format_context& ctx) const {
  return fmt::formatter<std::string_view>::format(
      fmt::format("uop(dst={}, src={}, wgt={})", u.dst, u.src, u.wgt), ctx);
}
