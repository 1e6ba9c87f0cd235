// Compiled with -fno-exceptions -fno-rtti: the runtime layer must build as firmware does.
#include <dlavm/runtime.hpp>

#include <cstdio>

namespace rt = dlavm::runtime;

constexpr rt::IsaLayout kLayout = rt::IsaLayout::default_layout();
static_assert(kLayout.ok && kLayout.uop_ok);
static_assert(kLayout.pos(rt::Form::Mem, rt::Field::y_size) == rt::FieldPos{64, 16});
static_assert(kLayout.pos(rt::Form::Alu, rt::Field::imm) == rt::FieldPos{112, 16});

int main() {
  rt::InsnFields f;
  f.opcode = rt::Opcode::Load;
  f.memory_type = rt::MemId::Uop;
  f.x_size = 4;
  f.dram_base = 2;
  rt::InsnWord w = rt::pack(kLayout, f);
  const auto dram = kLayout.pos(rt::Form::Mem, rt::Field::dram_base);
  if (!rt::add_to_field(w, dram, 0x100)) return 1;  // a relocation, as Session::place does
  const auto back = rt::unpack(kLayout, w);
  if (back.dram_base != 0x102 || back.x_size != 4) return 1;
  if (rt::add_to_field(w, dram, -0x103)) return 1;  // below zero: refused, the word kept
  if (rt::unpack(kLayout, w).dram_base != 0x102) return 1;
  std::puts("PASS runtime builds without exceptions or RTTI");
  return 0;
}
