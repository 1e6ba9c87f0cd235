// What a VTA design executes: the instruction features on which the designs that boards run
// differ from TVM's functional simulator (../shared/VTA_HARDWARE.md has the facts and where
// they were read). A Variant is part of vta::Config, so lowering, the stream checker
// (vta/hw/check_stream.hpp) and the simulator all see the same one; vta::preset gives the
// configurations of the known designs.
//
//   TVM's simulator   every feature below (the default Variant)
//   Xilinx HLS        no LOAD ACC_8BIT, no ALU MUL, SHR by the low 5 bits taken as signed,
//                     1-D micro-op loads, no weight or accumulator pads, STORE from an output
//                     SRAM that only GEMM and ALU write
//   Chisel            no LOAD ACC_8BIT, ALU opcode 4 shifts left, SHR by the low 5 bits taken
//                     as unsigned (never left), an INP load of 2,048 elements or more is wrong
#pragma once

#include <cstdint>
#include <string_view>

namespace dlavm::vta {

// What ALU opcode 4 does.
enum class AluOpcode4 : std::uint8_t {
  Mul,   // dst * src (TVM's simulator)
  Shl,   // dst << (-src mod 2^LOG_ACC_WIDTH): a left shift by k is opcode 4 with -k (Chisel)
  None,  // nothing: the accumulator keeps its value, the output is undefined (Xilinx HLS)
};

// The designs whose features are known (../shared/VTA_HARDWARE.md).
enum class Design : std::uint8_t { TvmSim, XilinxHls, Chisel };

// "tvm-sim", "xilinx-hls", "chisel": vta_config.json's VARIANT values, and messages' names.
constexpr std::string_view design_name(Design d) {
  switch (d) {
    case Design::XilinxHls:
      return "xilinx-hls";
    case Design::Chisel:
      return "chisel";
    default:
      return "tvm-sim";
  }
}

// How SHR reads its shift amount y (an immediate or a source lane).
enum class ShrAmount : std::uint8_t {
  Signed,       // all of y: right for y >= 0, left by -y otherwise (TVM's simulator)
  SignedLow,    // y's low LOG_ACC_WIDTH bits as a signed number, then as Signed (Xilinx HLS)
  UnsignedLow,  // y's low LOG_ACC_WIDTH bits as an unsigned number, always right (Chisel)
};

struct Variant {
  // The design the features were read from (named in messages, and its cycle model's
  // calibration: CycleParams::for_config); the features below decide what lowering emits.
  Design design = Design::TvmSim;
  bool load_acc8 = true;  // LOAD of memory type ACC_8BIT (5)
  AluOpcode4 alu_opcode4 = AluOpcode4::Mul;
  ShrAmount shr_amount = ShrAmount::Signed;
  bool uop_load_2d = true;            // a LOAD UOP of more than one row, or padded
  bool wgt_load_pads = true;          // LOAD WGT pad fields
  bool acc_load_pads = true;          // LOAD ACC pad fields
  bool store_reads_out_sram = false;  // STORE reads what the last GEMM or ALU wrote there
  // Erratum: a LOAD INP that reads this many DRAM elements or more loads wrong data (0: none).
  std::uint32_t inp_load_limit = 0;

  friend bool operator==(const Variant&, const Variant&) = default;
  std::string_view name() const { return design_name(design); }

  static constexpr Variant tvm_sim() { return {}; }
  static constexpr Variant xilinx_hls() {
    Variant v;
    v.design = Design::XilinxHls;
    v.load_acc8 = false;
    v.alu_opcode4 = AluOpcode4::None;
    v.shr_amount = ShrAmount::SignedLow;
    v.uop_load_2d = false;
    v.wgt_load_pads = false;
    // Accumulator pads arrived in tvm-vta 6096ca0 (2020-12-04); bitstreams built before it,
    // as the published ones may be, ignore them.
    v.acc_load_pads = false;
    v.store_reads_out_sram = true;
    return v;
  }
  static constexpr Variant chisel() {
    Variant v;
    v.design = Design::Chisel;
    v.load_acc8 = false;
    v.alu_opcode4 = AluOpcode4::Shl;
    v.shr_amount = ShrAmount::UnsignedLow;
    // TensorLoadNarrowVME counts 64-bit blocks in flight in 12 bits: 2,048 elements of 16
    // bytes are 4,096 blocks.
    v.inp_load_limit = 2048;
    return v;
  }
};

}  // namespace dlavm::vta
