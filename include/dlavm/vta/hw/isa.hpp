// Checked VTA encoding: every field value is checked against its width for the configuration
// (EncodingError naming the instruction, the field, the value and the limit), decoding rejects
// words with an unknown opcode, memory type or ALU opcode, and a disassembler prints one
// readable line per instruction.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/stream.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <vector>

namespace dlavm::vta {

// The mnemonic of an instruction for messages: "LOAD", "STORE", "GEMM", "ALU", "FINISH".
std::string insn_name(const InsnFields& f);

// Raises EncodingError unless `value` fits field `field` of `form` in `layout`. `index` is the
// instruction's position in its stream, for the message.
void check_field(const IsaLayout& layout, const InsnFields& insn, Field field, std::int64_t value,
                 std::size_t index);

// Checks the enumerated fields of a decoded or hand-filled instruction.
void check_enums(const InsnFields& f, std::size_t index);

// Checked encoding: every field of the instruction's form must fit its width.
InsnWord encode(const IsaLayout& layout, const InsnFields& f, std::size_t index = 0);

// Decodes one word; raises EncodingError naming `index` for an unknown opcode, memory type
// or ALU opcode.
InsnFields decode(const IsaLayout& layout, const InsnWord& w, std::size_t index = 0);

std::vector<InsnFields> decode_all(const IsaLayout& layout, std::span<const InsnWord> ws);

std::uint32_t encode_uop(const IsaLayout& layout, const Uop& u, std::size_t index = 0);

// One line, e.g. "LOAD INP sram=0x0010 dram=0x00000100 y=1 x=16 stride=16 pad=(0,0,0,0)
// | pop_next push_next".
std::string disassemble(const InsnFields& f);

// A whole stream, one numbered line per instruction, then the micro-op buffer.
std::string disassemble(const IsaLayout& layout, const Stream& stream);

}  // namespace dlavm::vta

template <>
struct fmt::formatter<dlavm::runtime::InsnFields> : fmt::formatter<std::string_view> {
  format_context::iterator format(const dlavm::runtime::InsnFields& f, format_context& ctx) const;
};
template <>
struct fmt::formatter<dlavm::runtime::InsnWord> : fmt::formatter<std::string_view> {
  format_context::iterator format(const dlavm::runtime::InsnWord& w, format_context& ctx) const;
};
template <>
struct fmt::formatter<dlavm::runtime::Uop> : fmt::formatter<std::string_view> {
  format_context::iterator format(const dlavm::runtime::Uop& u, format_context& ctx) const;
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/isa-inl.hpp>
#endif
