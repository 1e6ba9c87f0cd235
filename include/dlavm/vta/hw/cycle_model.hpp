// Cycle model: the load, compute and store modules each run their instruction queue in order,
// concurrently, synchronised only by the dependency tokens between them (a discrete-event
// model: an instruction starts when its module is free and the tokens it pops have been
// pushed, and pushes its own tokens when it ends). Reports total cycles, busy and stall
// cycles per module, bytes per memory type, the roofline bound, and a Chrome-trace timeline.
//
// Memory system: as in VTA's hardware, where the load, compute and store modules are separate
// blocks each with its own AXI master port to DRAM, every module moves its own bytes on its
// own port at bus_bytes_per_cycle: the load module INP and WGT, the compute module UOP, ACC and
// ACC_8BIT, the store module OUT. Transfers of different modules overlap; those of one module
// follow each other. The roofline bound uses the same memory system, so it is a true lower
// bound of the model (total_cycles >= roofline_cycles for every stream):
//   compute_cycles  = ceil(GEMM micro-ops / gemm_uops_per_cycle) + ALU micro-ops x
//                     alu_cycles_per_uop (resetting GEMMs included: they occupy the core);
//   port_cycles[m]  = ceil(bytes module m moves / bus_bytes_per_cycle);
//   memory_cycles   = the busiest port's port_cycles;
//   roofline_cycles = max(compute_cycles, memory_cycles).
// Each term is at most one module's busy time in the model, hence at most total_cycles.
//
// Parameters (CycleParams, all in cycles of the accelerator clock; defaults follow VTA's
// design at the default configuration):
//   bus_bytes_per_cycle  DRAM bytes per cycle on a load or store: the AXI bus width,
//                        2^LOG_BUS_WIDTH / 8 = 8 for VTA's 64-bit bus.
//   dram_latency         cycles from a LOAD/STORE request to its first data beat (32).
//   insn_overhead        fetch/decode/issue cycles every instruction pays on its module (4).
//   gemm_uops_per_cycle  GEMM micro-ops (one BATCH x BLOCK_IN x BLOCK_OUT tile each) retired
//                        per cycle once the pipeline is full: 1, VTA's fully pipelined core.
//   gemm_latency         pipeline fill/drain per GEMM instruction (4).
//   alu_cycles_per_uop   cycles per ALU micro-op: 2 (VTA's ALU loop reads two accumulator
//                        tiles per micro-op, initiation interval 2).
//   alu_latency          pipeline fill/drain per ALU instruction (4).
//   pad_elems_per_cycle  zero-padding elements written into SRAM per cycle (1).
//   alu_imm_cycles_per_uop  cycles per ALU micro-op with an immediate operand, which reads
//                        one accumulator tile, not two (2: VTA's HLS loop has the same
//                        initiation interval either way).
//   load_row_latency, store_row_latency  cycles each row of a 2-D LOAD / STORE after the
//                        first adds: a DMA that waits for each row's burst (0).
//   launch_cycles        a stream's launch and drain: the first instruction fetched, FINISH
//                        reported to the host (0).
// Modules are modelled with unbounded command queues and a DRAM port each (above).
//
// Calibration (CycleParams::for_config): the defaults above are VTA's design as TVM's simulator
// describes it, with no RTL figure to fit them to. The Chisel design's parameters are fitted
// to its RTL under Verilator (../shared/VTA_HARDWARE.md, "RTL cycles against dlavm's cycle
// model": memory first-beat latency 32 cycles for reads and write responses, one 64-bit beat
// per cycle, the design's own cycle counter), held to within 10% of every row of that table by
// tests/vta/test_cycle_rtl.cpp (within 8% with these values): a STORE row waits for its write
// response (store_row_latency = the memory latency, 32: the 7x7 stem's 25,088 store rows are
// its 1.55x), a LOAD row costs a cycle, an ALU immediate a cycle per micro-op, and a stream 35
// cycles to launch and drain (a lone FINISH takes 39). The Xilinx HLS design has no figures yet
// and keeps the defaults.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/counters.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dlavm::vta {

struct CycleParams {
  std::uint64_t bus_bytes_per_cycle = 8;
  std::uint64_t dram_latency = 32;
  std::uint64_t insn_overhead = 4;
  std::uint64_t gemm_uops_per_cycle = 1;
  std::uint64_t gemm_latency = 4;
  std::uint64_t alu_cycles_per_uop = 2;
  std::uint64_t alu_latency = 4;
  std::uint64_t pad_elems_per_cycle = 1;
  std::uint64_t alu_imm_cycles_per_uop = 2;
  std::uint64_t load_row_latency = 0;
  std::uint64_t store_row_latency = 0;
  std::uint64_t launch_cycles = 0;

  // The Chisel design's RTL, fitted to its figures (see the header comment).
  static CycleParams chisel_rtl() {
    CycleParams p;
    p.alu_imm_cycles_per_uop = 1;
    p.load_row_latency = 1;
    p.store_row_latency = p.dram_latency;
    p.launch_cycles = 35;
    return p;
  }

  // VTA's design at `config`: the bus width comes from LOG_BUS_WIDTH, the rest from the
  // calibration of config.variant's design where there is one (the Chisel design's).
  static CycleParams for_config(const Config& c) {
    CycleParams p = c.variant.design == Design::Chisel ? chisel_rtl() : CycleParams{};
    p.bus_bytes_per_cycle = static_cast<std::uint64_t>(c.bus_bytes());
    return p;
  }
};

struct ModuleTime {
  std::uint64_t busy = 0;   // cycles executing instructions
  std::uint64_t stall = 0;  // cycles waiting for a dependency token
  std::uint64_t end = 0;    // when its last instruction finished
  std::uint64_t instructions = 0;
};

struct TraceEvent {
  std::uint32_t index = 0;
  Queue queue = Queue::Compute;
  std::uint64_t start = 0;
  std::uint64_t duration = 0;
};

struct CycleReport {
  std::uint64_t total_cycles = 0;
  std::array<ModuleTime, 3> modules{};         // load, compute, store
  Counters counters;                           // bytes per memory type, micro-ops
  std::uint64_t compute_cycles = 0;            // GEMM and ALU micro-op cycles
  std::array<std::uint64_t, 3> port_cycles{};  // DRAM bytes of each module's port / bus bytes
  std::uint64_t memory_cycles = 0;             // the busiest port: max(port_cycles)
  std::uint64_t roofline_cycles = 0;           // max(compute_cycles, memory_cycles)
  std::vector<TraceEvent> trace;               // filled when asked for
  std::vector<std::string> names;              // one-line disassembly per traced instruction

  const ModuleTime& module(Queue q) const { return modules[static_cast<std::size_t>(q) - 1]; }
  std::uint64_t port(Queue q) const { return port_cycles[static_cast<std::size_t>(q) - 1]; }

  // Chrome trace / Perfetto JSON: {"traceEvents": [...]} with one "X" event per instruction,
  // one thread per module; timestamps are cycles (shown as microseconds by the viewers).
  std::string chrome_trace() const;
  void write_chrome_trace(const std::string& path) const;
};

class CycleModel {
 public:
  explicit CycleModel(const Config& config) : CycleModel(config, CycleParams::for_config(config)) {}
  CycleModel(const Config& config, const CycleParams& params) : config_(config), params_(params) {
    if (params_.bus_bytes_per_cycle == 0 || params_.gemm_uops_per_cycle == 0 ||
        params_.pad_elems_per_cycle == 0)
      raise<ValueError>(
          "cycle model: bus_bytes_per_cycle, gemm_uops_per_cycle and "
          "pad_elems_per_cycle must be positive");
  }

  const CycleParams& params() const { return params_; }

  // Cycles one instruction occupies its module.
  std::uint64_t duration(const InsnFields& f) const;
  // DRAM bytes a LOAD or STORE moves on its module's port (0 for other instructions).
  std::uint64_t transfer_bytes(const InsnFields& f) const;

  CycleReport run(std::span<const InsnFields> prog, bool trace = false) const;

 private:
  static std::uint64_t uops(const InsnFields& f);

  Config config_;
  CycleParams params_;
};

}  // namespace dlavm::vta

template <>
struct fmt::formatter<dlavm::vta::CycleReport> : fmt::formatter<std::string_view> {
  format_context::iterator format(const dlavm::vta::CycleReport& r, format_context& ctx) const;
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/cycle_model-inl.hpp>
#endif
