// VTA variants (vta/hw/variant.hpp): the presets, their vta_config.json keys, the stream checker
// and the simulator acting as each design, against semantics derived by hand from the designs'
// sources (../shared/VTA_HARDWARE.md).
#include <dlavm/vta.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <doctest/doctest.h>

#include "alu_run.hpp"
#include "what_of.hpp"
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace variant_test {

namespace vta = dlavm::vta;
using dlavm_test::what_of;
using vta::AluOp;
using vta::MemId;
using vta::Queue;

vta::InsnFields load(MemId m, std::uint32_t y, std::uint32_t x) {
  vta::InsnFields f;
  f.opcode = vta::Opcode::Load;
  f.memory_type = m;
  f.y_size = y;
  f.x_size = x;
  f.x_stride = x;
  return f;
}

vta::InsnFields alu_imm(AluOp op, std::int32_t imm) {
  vta::InsnFields f;
  f.opcode = vta::Opcode::Alu;
  f.alu_opcode = op;
  f.use_imm = true;
  f.imm = imm;
  f.iter_out = f.iter_in = 1;
  f.uop_end = 1;
  return f;
}

std::string problem(const char* preset, const vta::InsnFields& f) {
  const vta::InsnFields one[] = {f};
  return vta::stream_feature_problem(vta::preset(preset), one);
}

TEST_CASE("variant: the presets name the boards' designs") {
  CHECK(vta::preset("sim") == vta::Config{});
  for (const auto* name : {"pynq", "ultra96", "zcu104"}) {
    const auto c = vta::preset(name);
    CHECK(c.variant == vta::Variant::xilinx_hls());
    CHECK(c.target == name);
    CHECK(c.bus_bytes() == (std::string(name) == "pynq" ? 8 : 16));
    c.validate();
  }
  for (const auto* name : {"de10nano", "tsim"}) {
    const auto c = vta::preset(name);
    CHECK(c.variant == vta::Variant::chisel());
    CHECK(c.uop_depth() == 2048);
    c.validate();
  }
  CHECK(vta::preset_names().size() == 6);
  CHECK_THROWS_WITH_AS(vta::preset("pynk"),
                       "no VTA preset named 'pynk'; the presets are sim, pynq, ultra96, zcu104, "
                       "de10nano, tsim",
                       dlavm::ConfigError);
  CHECK(fmt::format("{}", vta::preset("pynq")).ends_with("bus 64 bits, xilinx-hls design)"));
}

TEST_CASE("variant: vta_config.json names the design; TVM's files mean its simulator") {
  for (const auto name : vta::preset_names()) {
    const auto c = vta::preset(name);
    CHECK(vta::read_config(c.to_json()) == c);
  }
  CHECK(vta::preset("sim").to_json().find("VARIANT") == std::string::npos);
  CHECK(vta::preset("pynq").to_json().find("\"VARIANT\": \"xilinx-hls\"") != std::string::npos);
  // a feature that differs from the design's is written, and read back
  auto newer = vta::preset("pynq");
  newer.variant.acc_load_pads = true;
  CHECK(newer.to_json().find("\"ACC_LOAD_PADS\": true") != std::string::npos);
  CHECK(vta::read_config(newer.to_json()) == newer);
  const std::string base =
      R"("LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5, "LOG_BATCH": 0,
         "LOG_BLOCK": 4, "LOG_UOP_BUFF_SIZE": 15, "LOG_INP_BUFF_SIZE": 15,
         "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 17)";
  const auto with = [&](const std::string& keys) {
    return vta::read_config("{" + base + (keys.empty() ? "" : ", " + keys) + "}");
  };
  CHECK(with("").variant == vta::Variant::tvm_sim());
  const auto custom = with(R"("VARIANT": "chisel", "ALU_OPCODE_4": "NONE", "INP_LOAD_LIMIT": 0,
                              "SHR_AMOUNT": "signed", "LOAD_ACC_8BIT": true)");
  CHECK(custom.variant.alu_opcode4 == vta::AluOpcode4::None);
  CHECK(custom.variant.shr_amount == vta::ShrAmount::Signed);
  CHECK(custom.variant.load_acc8);
  CHECK(custom.variant.inp_load_limit == 0);
  CHECK(vta::read_config(custom.to_json()) == custom);
  CHECK_THROWS_WITH_AS(with(R"("VARIANT": "vhdl")"),
                       "vta_config.json: VARIANT = 'vhdl' is not a VTA design: tvm-sim, "
                       "xilinx-hls or chisel",
                       dlavm::ConfigError);
  CHECK_THROWS_WITH_AS(with(R"("ALU_OPCODE_4": "DIV")"),
                       "vta_config.json: ALU_OPCODE_4 = 'DIV' is not one of MUL, SHL, NONE",
                       dlavm::ConfigError);
  CHECK_THROWS_WITH_AS(with(R"("LOAD_ACC_8BIT": 1)"),
                       "vta_config.json: key 'LOAD_ACC_8BIT' must be true or false, got 1",
                       dlavm::ParseError);
  CHECK(
      what_of([&] {
        with(R"("INP_LOAD_LIMIT": -1)");
      }).starts_with("vta_config.json: key 'INP_LOAD_LIMIT' must be an integer in 0..4294967295"));
}

TEST_CASE("variant: the stream checker refuses what each design lacks, naming the instruction") {
  const auto acc8 = load(MemId::Acc8, 1, 4);
  CHECK(problem("sim", acc8).empty());
  CHECK(problem("pynq", acc8)
            .starts_with(
                "instruction #0 (LOAD ACC_8BIT sram=0x0000 dram=0x00000000 y=1 x=4 stride=4"));
  CHECK(problem("pynq", acc8)
            .ends_with("the xilinx-hls design has no LOAD ACC_8BIT (Xilinx HLS "
                       "skips it, leaving wrong results; Chisel never finishes)"));
  CHECK(problem("de10nano", acc8).find("the chisel design has no LOAD ACC_8BIT") !=
        std::string::npos);
  // opcode 4: MUL on the simulator, SHL on Chisel, nothing on Xilinx HLS
  const auto mul = alu_imm(AluOp::Mul, 3);
  CHECK(problem("sim", mul).empty());
  CHECK(problem("de10nano", alu_imm(AluOp::Mul, -3)).empty());
  CHECK(problem("pynq", mul).find("has no ALU opcode 4 (MUL)") != std::string::npos);
  // SHR amounts: signed 5 bits on Xilinx HLS, unsigned on Chisel
  CHECK(problem("sim", alu_imm(AluOp::Shr, -20)).empty());
  CHECK(problem("pynq", alu_imm(AluOp::Shr, -16)).empty());
  CHECK(problem("pynq", alu_imm(AluOp::Shr, -17)).find("SHR amount in [-16, 15] only") !=
        std::string::npos);
  CHECK(problem("pynq", alu_imm(AluOp::Shr, 16)).find("not 16") != std::string::npos);
  CHECK(problem("de10nano", alu_imm(AluOp::Shr, 31)).empty());
  CHECK(problem("de10nano", alu_imm(AluOp::Shr, -1))
            .find("SHR amount in [0, 31] only (the low bits as unsigned: a negative amount shifts "
                  "right), not -1") != std::string::npos);
  // loads: micro-ops in one row, no weight or accumulator pads on Xilinx HLS
  CHECK(problem("pynq", load(MemId::Uop, 1, 8)).empty());
  CHECK(problem("pynq", load(MemId::Uop, 2, 8)).find("loads micro-ops in one row") !=
        std::string::npos);
  CHECK(problem("de10nano", load(MemId::Uop, 2, 8)).empty());
  auto padded = load(MemId::Wgt, 1, 2);
  padded.x_pad_0 = 1;
  CHECK(problem("pynq", padded).find("ignores the pads of weight loads") != std::string::npos);
  CHECK(problem("de10nano", padded).empty());
  padded.memory_type = MemId::Acc;
  CHECK(problem("pynq", padded).find("ignores the pads of accumulator loads") != std::string::npos);
  padded.memory_type = MemId::Inp;
  CHECK(problem("pynq", padded).empty());
  // the Chisel erratum: an INP load of 2,048 elements
  CHECK(problem("de10nano", load(MemId::Inp, 1, 2047)).empty());
  CHECK(problem("de10nano", load(MemId::Inp, 8, 256)).find("this one reads 2048") !=
        std::string::npos);
  CHECK(problem("pynq", load(MemId::Inp, 8, 256)).empty());
  // the first offending instruction of a stream, as a FeatureError
  const vta::InsnFields stream[] = {load(MemId::Acc, 1, 4), mul, acc8};
  CHECK_THROWS_WITH_AS(vta::check_stream(vta::preset("pynq"), stream),
                       doctest::Contains("instruction #1 (ALU MUL"), dlavm::FeatureError);
}

using dlavm_test::run_alu;

template <class F>
std::vector<std::int8_t> expect(const std::vector<std::int32_t>& a,
                                const std::vector<std::int32_t>& b, F f) {
  std::vector<std::int8_t> e(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    e[i] = static_cast<std::int8_t>(static_cast<std::uint32_t>(f(a[i], b[i])) & 0xFF);
  return e;
}

std::int32_t shift_left(std::int32_t x, int k) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << k);
}

TEST_CASE("variant: the simulator reads shift amounts as each design does") {
  std::vector<std::int32_t> a(64), b(64);
  std::mt19937 rng(3);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<std::int32_t>(rng());
    b[i] = static_cast<std::int32_t>(rng() % 200) - 100;  // amounts far outside 5 bits too
  }
  // Chisel (TensorAlu.scala): SHR by the amount's low 5 bits, unsigned; opcode 4 shifts left
  // by the low 5 bits of the amount's negation
  const auto chisel = vta::preset("de10nano");
  CHECK(run_alu(chisel, AluOp::Shr, a, b) ==
        expect(a, b, [](std::int32_t x, std::int32_t y) { return x >> (y & 31); }));
  CHECK(run_alu(chisel, AluOp::Mul, a, b) ==
        expect(a, b, [](std::int32_t x, std::int32_t y) { return shift_left(x, (-y) & 31); }));
  CHECK(run_alu(chisel, AluOp::Mul, a, b, true, -5) ==
        expect(a, b, [](std::int32_t x, std::int32_t) { return shift_left(x, 5); }));
  // Xilinx HLS (vta.cc): SHR by the low 5 bits as a signed number, negative shifting left
  const auto hls = vta::preset("pynq");
  CHECK(run_alu(hls, AluOp::Shr, a, b) == expect(a, b, [](std::int32_t x, std::int32_t y) {
          const int k = (y & 31) >= 16 ? (y & 31) - 32 : (y & 31);
          return k >= 0 ? x >> k : shift_left(x, -k);
        }));
  // TVM's simulator: the whole amount, saturating
  CHECK(run_alu(vta::Config{}, AluOp::Shr, a, b) ==
        expect(a, b, [](std::int32_t x, std::int32_t y) {
          return y >= 32 ? (x < 0 ? -1 : 0) : y >= 0 ? x >> y : y <= -32 ? 0 : shift_left(x, -y);
        }));
  // every immediate each design runs (the stream checker refuses the others) means what it
  // does on TVM's simulator: these run on the SIMD kernels, the amounts above on scalar loops
  const auto shifted = [](int k) {
    return [k](std::int32_t x, std::int32_t) { return k >= 0 ? x >> k : shift_left(x, -k); };
  };
  for (int k = -16; k <= 15; ++k) {
    INFO("pynq SHR by the immediate ", k);
    CHECK(run_alu(hls, AluOp::Shr, a, b, true, k) == expect(a, b, shifted(k)));
  }
  for (int k = 0; k <= 31; ++k) {
    INFO("de10nano SHR by the immediate ", k);
    CHECK(run_alu(chisel, AluOp::Shr, a, b, true, k) == expect(a, b, shifted(k)));
  }
  // a stream using what the design lacks is refused before it runs
  CHECK_THROWS_WITH_AS(run_alu(hls, AluOp::Mul, a, b), doctest::Contains("has no ALU opcode 4"),
                       dlavm::FeatureError);
}

// LOAD ACC (and a GEMM reset over the same entries when `reset`), then STORE, with no GEMM or
// ALU instruction writing the stored entries.
void store_after(const vta::Config& config, bool reset) {
  vta::SimDevice dev(config);
  const std::vector<std::int32_t> a(32, 7);
  const auto A = dev.alloc_for(std::span<const std::int32_t>(a));
  const auto C = dev.alloc(a.size());
  vta::Builder bld{config};
  bld.load(
      {.memory = MemId::Acc, .sram = 0, .dram = bld.dram_elem(A.phys, MemId::Acc), .x_size = 2});
  if (reset) {
    vta::UopKernel k;
    k.loop_begin(2, 1, 0);
    k.push(0, 0);
    k.loop_end();
    bld.gemm(k, true);
  }
  bld.dep_push(Queue::Compute, Queue::Store);
  bld.dep_pop(Queue::Compute, Queue::Store);
  bld.store({.sram = 0, .dram = bld.dram_elem(C.phys, MemId::Out), .x_size = 2});
  bld.finish();
  dev.run(bld.take());
}

TEST_CASE("variant: Xilinx HLS stores its output SRAM: a STORE of entries no GEMM or ALU wrote") {
  store_after(vta::Config{}, false);
  store_after(vta::preset("de10nano"), true);
  CHECK_THROWS_WITH_AS(store_after(vta::preset("pynq"), false),
                       doctest::Contains("accumulator entry 0 was last written by a LOAD; the "
                                         "xilinx-hls design stores its output SRAM"),
                       dlavm::FeatureError);
  CHECK_THROWS_WITH_AS(store_after(vta::preset("pynq"), true),
                       doctest::Contains("entry 0 was last written by a GEMM reset"),
                       dlavm::FeatureError);
}

}  // namespace variant_test
