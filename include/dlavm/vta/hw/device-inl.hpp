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
