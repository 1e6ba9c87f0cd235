// VTA hardware configuration: the log2 parameters of vta_config.json, the widths and depths
// derived from them, validation against what the instruction encoding can express, and
// reading / writing the vta_config.json format.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/vta/hw/variant.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::vta {

using runtime::AluOp;
using runtime::Field;
using runtime::Form;
using runtime::InsnFields;
using runtime::InsnWord;
using runtime::IsaLayout;
using runtime::MemId;
using runtime::Opcode;
using runtime::Queue;
using runtime::Uop;

struct Config {
  std::string target = "sim";
  std::string hw_ver = "0.0.2";
  int log_inp_width = 3;
  int log_wgt_width = 3;
  int log_acc_width = 5;
  int log_out_width = 3;  // defaults to log_inp_width when read from JSON without the key
  int log_batch = 0;
  int log_block_in = 4;
  int log_block_out = 4;
  int log_uop_buff_size = 15;
  int log_inp_buff_size = 15;
  int log_wgt_buff_size = 18;
  int log_acc_buff_size = 17;
  int log_bus_width = 6;
  // What the design executes beyond the common core (vta/hw/variant.hpp); TVM's JSON has no
  // key for it, and its absence means TVM's simulator.
  Variant variant;

  friend bool operator==(const Config&, const Config&) = default;

  // Tile shape.
  int batch() const { return 1 << log_batch; }
  int block_in() const { return 1 << log_block_in; }
  int block_out() const { return 1 << log_block_out; }
  int inp_width() const { return 1 << log_inp_width; }
  int wgt_width() const { return 1 << log_wgt_width; }
  int acc_width() const { return 1 << log_acc_width; }
  int out_width() const { return 1 << log_out_width; }

  // Element sizes: one SRAM element is a whole tile row set (VTA_ISA.md).
  int log_inp_elem_bits() const { return log_batch + log_block_in + log_inp_width; }
  int log_wgt_elem_bits() const { return log_block_out + log_block_in + log_wgt_width; }
  int log_acc_elem_bits() const { return log_batch + log_block_out + log_acc_width; }
  int log_out_elem_bits() const { return log_batch + log_block_out + log_out_width; }
  std::size_t inp_elem_bytes() const { return std::size_t{1} << (log_inp_elem_bits() - 3); }
  std::size_t wgt_elem_bytes() const { return std::size_t{1} << (log_wgt_elem_bits() - 3); }
  std::size_t acc_elem_bytes() const { return std::size_t{1} << (log_acc_elem_bits() - 3); }
  std::size_t out_elem_bytes() const { return std::size_t{1} << (log_out_elem_bits() - 3); }
  // ACC_8BIT loads: one byte per accumulator lane.
  std::size_t acc8_elem_bytes() const { return std::size_t{1} << (log_batch + log_block_out); }
  static constexpr std::size_t uop_elem_bytes() { return 4; }
  // Bytes of one DRAM element for a LOAD/STORE of this memory type (DRAM addresses count these).
  std::size_t elem_bytes(MemId m) const {
    switch (m) {
      case MemId::Uop:
        return uop_elem_bytes();
      case MemId::Wgt:
        return wgt_elem_bytes();
      case MemId::Inp:
        return inp_elem_bytes();
      case MemId::Acc:
        return acc_elem_bytes();
      case MemId::Out:
        return out_elem_bytes();
      case MemId::Acc8:
        return acc8_elem_bytes();
    }
    return 1;
  }

  // SRAM depths in elements, and their log2 (the index widths).
  int log_uop_depth() const { return log_uop_buff_size - 2; }
  int log_inp_depth() const { return log_inp_buff_size - (log_inp_elem_bits() - 3); }
  int log_wgt_depth() const { return log_wgt_buff_size - (log_wgt_elem_bits() - 3); }
  int log_acc_depth() const { return log_acc_buff_size - (log_acc_elem_bits() - 3); }
  std::uint32_t uop_depth() const { return 1u << log_uop_depth(); }
  std::uint32_t inp_depth() const { return 1u << log_inp_depth(); }
  std::uint32_t wgt_depth() const { return 1u << log_wgt_depth(); }
  std::uint32_t acc_depth() const { return 1u << log_acc_depth(); }
  // LOG_OUT_BUFF_SIZE: the output view of the accumulator (same depth).
  int log_out_buff_size() const { return log_acc_buff_size - log_acc_width + log_out_width; }
  int bus_bytes() const { return (1 << log_bus_width) / 8; }

  DType inp_dtype() const { return DType::int_bits(inp_width()); }
  DType wgt_dtype() const { return DType::int_bits(wgt_width()); }
  DType acc_dtype() const { return DType::int_bits(acc_width()); }
  DType out_dtype() const { return DType::int_bits(out_width()); }

  // The bit layout of this configuration's instructions (call validate() first for a
  // configuration that did not come from vta::read_config).
  IsaLayout layout() const {
    // the default configuration's, computed when the library compiles (a Builder, made per
    // instantiation, asks for it)
    static constexpr IsaLayout kDefault = IsaLayout::default_layout();
    const int uop = log_uop_depth(), inp = log_inp_depth(), wgt = log_wgt_depth(),
              acc = log_acc_depth();
    if (uop == kDefault.log_uop_depth && inp == kDefault.log_inp_depth &&
        wgt == kDefault.log_wgt_depth && acc == kDefault.log_acc_depth)
      return kDefault;
    return IsaLayout::make(uop, inp, wgt, acc);
  }

  // Raises ConfigError naming the first field that is out of range or cannot be encoded.
  void validate() const;

  // vta_config.json (the keys are listed at vta::read_config, which reads it back:
  // <dlavm/vta/hw/read.hpp>).
  std::string to_json() const;
  void save(const std::string& path) const;
};

// What the hardware accepts as an ALU immediate for `op`: [lo, hi]. The field is 16 bits
// (VTA_ALUOP_IMM_BIT_WIDTH), but MUL uses 8 of them and SHR LOG_ACC_WIDTH. The shifts follow
// the variant: SHR by [-2^(w-1), 2^(w-1) - 1] (negative: left) where it reads a signed amount,
// [0, 2^w - 1] where it reads an unsigned one (Chisel), with w = LOG_ACC_WIDTH; opcode 4 as
// SHL takes -k for a left shift by k, [-(2^w - 1), 0]; a design without opcode 4 accepts none
// (lo > hi).
std::pair<std::int64_t, std::int64_t> alu_imm_range(runtime::AluOp op, const Config& c);

// The configurations of the designs boards run, by name:
//   "sim"       TVM's functional simulator (the default Config)
//   "pynq"      Xilinx HLS, 64-bit bus (Pynq Z1/Z2)
//   "ultra96", "zcu104"  Xilinx HLS, 128-bit bus
//   "de10nano", "tsim"   Chisel, its published build's 2,048-entry micro-op SRAM
// ConfigError for another name, listing these.
Config preset(std::string_view name);
const std::vector<std::string_view>& preset_names();

// The most rows or columns of zeros an INP load pads a side with (its 4-bit pad fields).
inline constexpr std::int64_t kMaxLoadPad = (std::int64_t{1} << runtime::kPadBits) - 1;

}  // namespace dlavm::vta

template <>
struct fmt::formatter<dlavm::vta::Config> : fmt::formatter<std::string_view> {
  format_context::iterator format(const dlavm::vta::Config& c, format_context& ctx) const;
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/config-inl.hpp>
#endif
