// Definitions for dlavm/vta/hw/counters.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/counters.hpp>

namespace dlavm::vta {

DLAVM_INLINE std::uint64_t Counters::load_bytes() const {
  return inp_load_bytes + wgt_load_bytes + acc_load_bytes + uop_load_bytes;
}

DLAVM_INLINE std::uint64_t Counters::gemm_macs(const Config& c) const {
  return gemm_uops * static_cast<std::uint64_t>(c.batch() * c.block_in() * c.block_out());
}

DLAVM_INLINE Counters& Counters::operator+=(const Counters& o) {
  inp_load_bytes += o.inp_load_bytes;
  wgt_load_bytes += o.wgt_load_bytes;
  acc_load_bytes += o.acc_load_bytes;
  uop_load_bytes += o.uop_load_bytes;
  out_store_bytes += o.out_store_bytes;
  gemm_uops += o.gemm_uops;
  alu_uops += o.alu_uops;
  return *this;
}

DLAVM_INLINE void Counters::count(const Config& c, const InsnFields& f) {
  if (f.opcode == Opcode::Load && f.x_size != 0) {
    const std::uint64_t bytes = std::uint64_t{f.y_size} * f.x_size * c.elem_bytes(f.memory_type);
    switch (f.memory_type) {
      case MemId::Inp:
        inp_load_bytes += bytes;
        break;
      case MemId::Wgt:
        wgt_load_bytes += bytes;
        break;
      case MemId::Acc:
      case MemId::Acc8:
        acc_load_bytes += bytes;
        break;
      case MemId::Uop:
        uop_load_bytes += bytes;
        break;
      default:
        break;
    }
  } else if (f.opcode == Opcode::Store && f.x_size != 0) {
    out_store_bytes += std::uint64_t{f.y_size} * f.x_size * c.out_elem_bytes();
  } else if (f.opcode == Opcode::Gemm || f.opcode == Opcode::Alu) {
    const std::uint64_t n = f.uop_end > f.uop_bgn ? f.uop_end - f.uop_bgn : 0;
    const std::uint64_t uops = std::uint64_t{f.iter_out} * f.iter_in * n;
    if (f.opcode == Opcode::Alu) {
      alu_uops += uops;
    } else if (!f.reset_reg) {
      gemm_uops += uops;
    }
  }
}

}  // namespace dlavm::vta

DLAVM_INLINE fmt::format_context::iterator fmt::formatter<dlavm::vta::Counters>::format(
    const dlavm::vta::Counters& c, format_context& ctx) const {
  return fmt::formatter<std::string_view>::format(
      fmt::format("inp_load {} B, wgt_load {} B, acc_load {} B, uop_load {} B, "
                  "out_store {} B, gemm {} uops, alu {} uops",
                  c.inp_load_bytes, c.wgt_load_bytes, c.acc_load_bytes, c.uop_load_bytes,
                  c.out_store_bytes, c.gemm_uops, c.alu_uops),
      ctx);
}
