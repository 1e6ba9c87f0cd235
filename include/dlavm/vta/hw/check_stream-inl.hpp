// Definitions for dlavm/vta/hw/check_stream.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/check_stream.hpp>

#include <fmt/format.h>

namespace dlavm::vta {

namespace detail {

// Why `f` would not run as TVM's simulator runs it on `c`'s design, or "".
inline std::string feature_problem(const Config& c, const InsnFields& f) {
  const Variant& v = c.variant;
  const bool padded = f.y_pad_0 || f.y_pad_1 || f.x_pad_0 || f.x_pad_1;
  if (f.opcode == Opcode::Load) {
    switch (f.memory_type) {
      case MemId::Acc8:
        if (!v.load_acc8)
          return "has no LOAD ACC_8BIT (Xilinx HLS skips it, leaving wrong results; Chisel "
                 "never finishes)";
        if (padded && !v.acc_load_pads) return "ignores the pads of accumulator loads";
        break;
      case MemId::Acc:
        if (padded && !v.acc_load_pads) return "ignores the pads of accumulator loads";
        break;
      case MemId::Wgt:
        if (padded && !v.wgt_load_pads) return "ignores the pads of weight loads";
        break;
      case MemId::Uop:
        if (!v.uop_load_2d && (f.y_size > 1 || padded))
          return "loads micro-ops in one row without pads (y_size 1)";
        break;
      case MemId::Inp:
        if (v.inp_load_limit != 0 &&
            std::uint64_t{f.y_size} * f.x_size >= std::uint64_t{v.inp_load_limit})
          return fmt::format(
              "loads wrong data when one INP load reads {} elements or more (erratum: a "
              "counter of blocks in flight overflows); this one reads {}",
              v.inp_load_limit, std::uint64_t{f.y_size} * f.x_size);
        break;
      default:
        break;
    }
  }
  if (f.opcode == Opcode::Alu) {
    if (f.alu_opcode == AluOp::Mul && v.alu_opcode4 == AluOpcode4::None)
      return "has no ALU opcode 4 (MUL): the accumulator keeps its value";
    if (f.alu_opcode == AluOp::Shr && f.use_imm) {
      const auto [lo, hi] = alu_imm_range(AluOp::Shr, c);
      if (f.imm < lo || f.imm > hi)
        return fmt::format("reads a SHR amount in [{}, {}] only ({}), not {}", lo, hi,
                           v.shr_amount == ShrAmount::UnsignedLow
                               ? "the low bits as unsigned: a negative amount shifts right"
                               : "the low bits as signed",
                           f.imm);
    }
  }
  return {};
}

}  // namespace detail

DLAVM_INLINE std::string stream_feature_problem(const Config& config,
                                                std::span<const InsnFields> insns) {
  if (config.variant == Variant::tvm_sim()) return {};
  for (std::size_t i = 0; i < insns.size(); ++i) {
    const auto why = detail::feature_problem(config, insns[i]);
    if (!why.empty())
      return fmt::format("instruction #{} ({}): the {} design {}", i, disassemble(insns[i]),
                         config.variant.name(), why);
  }
  return {};
}

DLAVM_INLINE void check_stream(const Config& config, std::span<const InsnFields> insns) {
  const auto problem = stream_feature_problem(config, insns);
  if (!problem.empty()) raise<FeatureError>("{}", problem);
}

DLAVM_INLINE void check_stream(const Config& config, const Stream& stream) {
  if (config.variant == Variant::tvm_sim()) return;
  check_stream(config, decode_all(config.layout(), stream.insns));
}

}  // namespace dlavm::vta
