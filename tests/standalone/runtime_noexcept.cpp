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
  rt::Stream s;
  s.insns.push_back(rt::pack(kLayout, f));
  s.uops = {1, 2, 3, 4};
  s.uop_relocs = {0};
  rt::InsnWord out[1];
  if (!s.relocate(0x100, out)) return 1;
  const auto back = rt::unpack(kLayout, out[0]);
  if (back.dram_base != 0x102 || back.x_size != 4) return 1;
  std::puts("PASS runtime builds without exceptions or RTTI");
  return 0;
}
