// Definitions for dlavm/vta/hw/device.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/device.hpp>

namespace dlavm::vta {

DLAVM_INLINE void Device::check_range(const char* what, Buffer b, std::size_t offset,
                                      std::size_t bytes) {
  if (offset > b.bytes || bytes > b.bytes - offset)
    raise<ValueError>("{}: bytes [{}, {}) outside the {}-byte buffer at 0x{:x}", what, offset,
                      offset + bytes, b.bytes, b.phys);
}

DLAVM_INLINE std::vector<InsnWord> Device::relocate(const Stream& s, std::uint64_t uop_phys) {
  std::vector<InsnWord> words(s.insns.size());
  if (!s.relocate(uop_phys / Config::uop_elem_bytes(), words.data()))
    raise<DeviceError>("stream relocation failed: a LOAD UOP address does not fit dram_base");
  return words;
}

DLAVM_INLINE RunResult Device::run(const Stream& stream) {
  struct Scoped {
    Device& d;
    Buffer b;
    ~Scoped() {
      try {
        d.free(b);
      } catch (...) {  // freeing what this run allocated cannot fail unless the device is broken
      }
    }
  };
  Scoped uops{*this, alloc(std::max<std::size_t>(stream.uop_bytes(), 1))};
  Scoped insns{*this, alloc(std::max<std::size_t>(stream.insn_bytes(), 1))};
  return run_at(stream, {insns.b, 0, uops.b, 0});
}

DLAVM_INLINE std::vector<InsnWord> Device::place(const Stream& s, const StreamPlacement& at,
                                                 std::uint64_t& insn_phys) {
  check_range("stream instructions", at.insns, at.insn_offset, s.insn_bytes());
  check_range("stream micro-ops", at.uops, at.uop_offset, s.uop_bytes());
  if ((at.uops.phys + at.uop_offset) % Config::uop_elem_bytes() != 0 ||
      (at.insns.phys + at.insn_offset) % sizeof(InsnWord) != 0)
    raise<ValueError>(
        "stream placement: instructions at 0x{:x} or micro-ops at 0x{:x} are not "
        "aligned to their words",
        at.insns.phys + at.insn_offset, at.uops.phys + at.uop_offset);
  const auto words = relocate(s, at.uops.phys + at.uop_offset);
  const auto uop_bytes = to_bytes(std::span<const std::uint32_t>(s.uops));
  const auto insn_bytes = to_bytes(std::span<const InsnWord>(words));
  if (!uop_bytes.empty()) copy_in(at.uops, at.uop_offset, uop_bytes.data(), uop_bytes.size());
  if (!insn_bytes.empty()) copy_in(at.insns, at.insn_offset, insn_bytes.data(), insn_bytes.size());
  insn_phys = at.insns.phys + at.insn_offset;
  return words;
}

DLAVM_INLINE std::vector<std::byte> Device::to_bytes(std::span<const InsnWord> words) {
  std::vector<std::byte> out(words.size() * 16);
  for (std::size_t i = 0; i < words.size(); ++i)
    for (int h = 0; h < 2; ++h)
      for (int b = 0; b < 8; ++b)
        out[i * 16 + h * 8 + b] = static_cast<std::byte>((words[i].word[h] >> (8 * b)) & 0xFF);
  return out;
}

DLAVM_INLINE std::vector<std::byte> Device::to_bytes(std::span<const std::uint32_t> uops) {
  std::vector<std::byte> out(uops.size() * 4);
  for (std::size_t i = 0; i < uops.size(); ++i)
    for (int b = 0; b < 4; ++b)
      out[i * 4 + b] = static_cast<std::byte>((uops[i] >> (8 * b)) & 0xFF);
  return out;
}

}  // namespace dlavm::vta
