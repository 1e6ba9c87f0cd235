// An encoded VTA program as the host holds it: instruction words, the micro-op words its LOAD
// UOP instructions read, and which instructions those are. (Firmware holds streams in arrays
// of its own: runtime::StaticStream, runtime::StreamWriter's storage.)
//
// The micro-op buffer is relocatable: the listed LOAD UOP instructions carry a dram_base
// relative to the start of `uops` (in 4-byte micro-op units). Whoever places the buffer in
// DRAM (a Device, the firmware emitter) adds its physical address / 4 with `relocate`.
//
//   vta::Stream s = prog.instantiate(bindings, phys);
//   std::vector<runtime::InsnWord> placed(s.insns.size());
//   if (!s.relocate(uop_phys / 4, placed.data())) ...   // an address past dram_base's width
#pragma once

#include <dlavm/runtime/isa.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlavm::vta {

struct Stream {
  std::vector<runtime::InsnWord> insns;
  std::vector<std::uint32_t> uops;
  std::vector<std::uint32_t> uop_relocs;  // indices into insns of relocatable LOAD UOPs

  std::size_t insn_bytes() const { return insns.size() * sizeof(runtime::InsnWord); }
  std::size_t uop_bytes() const { return uops.size() * sizeof(std::uint32_t); }

  // Writes the instructions to `out` (insns.size() words) with every relocatable LOAD UOP
  // pointing at a micro-op buffer placed at `uop_base` (in micro-op units). Returns false,
  // leaving `out` partly written, if a relocated address no longer fits dram_base.
  bool relocate(std::uint64_t uop_base, runtime::InsnWord* out) const {
    for (std::size_t i = 0; i < insns.size(); ++i) out[i] = insns[i];
    const runtime::FieldPos dram =
        runtime::IsaLayout::default_layout().pos(runtime::Form::Mem, runtime::Field::dram_base);
    if (uop_base > runtime::low_mask(dram.width)) return false;
    for (std::uint32_t index : uop_relocs)
      if (index >= insns.size() ||
          !runtime::add_to_field(out[index], dram, static_cast<std::int64_t>(uop_base)))
        return false;
    return true;
  }
};

// LOAD/STORE fields have fixed widths, so their layout is the same for every configuration.
constexpr bool same_mem_layout(const runtime::IsaLayout& a, const runtime::IsaLayout& b) {
  for (std::size_t i = 0; i < a.mem.size(); ++i)
    if (a.mem[i] != b.mem[i]) return false;
  return true;
}
static_assert(same_mem_layout(runtime::IsaLayout::make(13, 11, 10, 11),
                              runtime::IsaLayout::make(8, 6, 4, 9)));

}  // namespace dlavm::vta
