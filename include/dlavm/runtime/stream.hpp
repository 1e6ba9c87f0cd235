// An encoded VTA program: instruction words, the micro-op words its LOAD UOP instructions read,
// and which instructions those are. Standard library only, exception-free.
//
// The micro-op buffer is relocatable: the listed LOAD UOP instructions carry a dram_base
// relative to the start of `uops` (in 4-byte micro-op units). Whoever places the buffer in
// DRAM (a Device, a firmware loader) adds its physical address / 4 with `relocate`.
#pragma once

#include <dlavm/runtime/isa.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlavm::runtime {

struct Stream {
  std::vector<InsnWord> insns;
  std::vector<std::uint32_t> uops;
  std::vector<std::uint32_t> uop_relocs;  // indices into insns of relocatable LOAD UOPs

  std::size_t insn_bytes() const { return insns.size() * sizeof(InsnWord); }
  std::size_t uop_bytes() const { return uops.size() * sizeof(std::uint32_t); }

  // Writes the instructions to `out` (insns.size() words) with every relocatable LOAD UOP
  // pointing at a micro-op buffer placed at `uop_base` (in micro-op units). Returns false,
  // leaving `out` partly written, if a relocated address no longer fits dram_base.
  bool relocate(std::uint64_t uop_base, InsnWord* out) const {
    for (std::size_t i = 0; i < insns.size(); ++i) out[i] = insns[i];
    const FieldPos dram = IsaLayout::default_layout().pos(Form::Mem, Field::dram_base);
    for (std::uint32_t index : uop_relocs) {
      if (index >= insns.size()) return false;
      InsnWord& w = out[index];
      const std::uint64_t addr = get_field(w, dram) + uop_base;
      if (addr > low_mask(dram.width)) return false;
      w.word[dram.offset / 64] &= ~(low_mask(dram.width) << (dram.offset % 64));
      put_field(w, dram, addr);
    }
    return true;
  }
};

// LOAD/STORE fields have fixed widths, so their layout is the same for every configuration.
constexpr bool same_mem_layout(const IsaLayout& a, const IsaLayout& b) {
  for (std::size_t i = 0; i < a.mem.size(); ++i)
    if (a.mem[i] != b.mem[i]) return false;
  return true;
}
static_assert(same_mem_layout(IsaLayout::make(13, 11, 10, 11), IsaLayout::make(8, 6, 4, 9)));

}  // namespace dlavm::runtime
