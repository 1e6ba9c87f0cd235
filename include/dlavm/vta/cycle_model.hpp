// Cycle model: the load, compute and store modules each run their instruction queue in order,
// concurrently, synchronised only by the dependency tokens between them (a discrete-event
// model: an instruction starts when its module is free and the tokens it pops have been
// pushed, and pushes its own tokens when it ends). Reports total cycles, busy and stall
// cycles per module, bytes per memory type, the roofline bound, and a Chrome-trace timeline.
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
// Modules are modelled with unbounded command queues and independent DRAM ports.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/vta/config.hpp>
#include <dlavm/vta/counters.hpp>
#include <dlavm/vta/dispatch.hpp>
#include <dlavm/vta/isa.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <fstream>
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

  // VTA's design at `config`: the bus width comes from LOG_BUS_WIDTH.
  static CycleParams for_config(const Config& c) {
    CycleParams p;
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
  std::array<ModuleTime, 3> modules{};  // load, compute, store
  Counters counters;                    // bytes per memory type, micro-ops
  std::uint64_t compute_cycles = 0;     // GEMM and ALU micro-op cycles
  std::uint64_t memory_cycles = 0;      // all DRAM bytes / bus bytes per cycle
  std::uint64_t roofline_cycles = 0;    // max(compute_cycles, memory_cycles)
  std::vector<TraceEvent> trace;        // filled when asked for
  std::vector<std::string> names;       // one-line disassembly per traced instruction

  const ModuleTime& module(Queue q) const { return modules[static_cast<std::size_t>(q) - 1]; }

  // Chrome trace / Perfetto JSON: {"traceEvents": [...]} with one "X" event per instruction,
  // one thread per module; timestamps are cycles (shown as microseconds by the viewers).
  std::string chrome_trace() const {
    detail::Json events = detail::Json::array();
    for (Queue q : {Queue::Load, Queue::Compute, Queue::Store}) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", 0},
                        {"tid", static_cast<int>(q)},
                        {"args", {{"name", std::string(runtime::queue_name(q)) + " module"}}}});
    }
    for (std::size_t k = 0; k < trace.size(); ++k) {
      const auto& e = trace[k];
      events.push_back({{"name", k < names.size() ? names[k] : std::to_string(e.index)},
                        {"cat", runtime::queue_name(e.queue)},
                        {"ph", "X"},
                        {"ts", e.start},
                        {"dur", e.duration},
                        {"pid", 0},
                        {"tid", static_cast<int>(e.queue)},
                        {"args", {{"index", e.index}}}});
    }
    detail::Json doc;
    doc["traceEvents"] = std::move(events);
    doc["displayTimeUnit"] = "ns";
    doc["otherData"] = {{"time_unit", "cycles"}, {"total_cycles", total_cycles}};
    return doc.dump(1);
  }
  void write_chrome_trace(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    out << chrome_trace();
    if (!out) raise<ValueError>("cannot write trace file '{}'", path);
  }
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
  std::uint64_t duration(const InsnFields& f) const {
    const auto& p = params_;
    auto ceil_div = [](std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; };
    switch (f.opcode) {
      case Opcode::Load:
      case Opcode::Store: {
        if (f.x_size == 0) return p.insn_overhead;
        const std::size_t eb = f.opcode == Opcode::Store ? config_.out_elem_bytes()
                                                         : config_.elem_bytes(f.memory_type);
        const std::uint64_t bytes = std::uint64_t{f.y_size} * f.x_size * eb;
        const std::uint64_t padded = (std::uint64_t{f.y_pad_0} + f.y_size + f.y_pad_1) *
                                         (std::uint64_t{f.x_pad_0} + f.x_size + f.x_pad_1) -
                                     std::uint64_t{f.y_size} * f.x_size;
        return p.insn_overhead + p.dram_latency + ceil_div(bytes, p.bus_bytes_per_cycle) +
               ceil_div(padded, p.pad_elems_per_cycle);
      }
      case Opcode::Gemm:
        return p.insn_overhead + p.gemm_latency + ceil_div(uops(f), p.gemm_uops_per_cycle);
      case Opcode::Alu:
        return p.insn_overhead + p.alu_latency + uops(f) * p.alu_cycles_per_uop;
      default:
        return p.insn_overhead;
    }
  }

  CycleReport run(std::span<const InsnFields> prog, bool trace = false) const {
    CycleReport r;
    std::array<std::uint64_t, 3> free_at{};
    std::uint64_t gemm_all = 0, alu_all = 0;
    detail::dispatch(prog, [&](std::uint32_t i, std::uint64_t ready) -> std::uint64_t {
      const auto& f = prog[i];
      const auto q = runtime::queue_of(f);
      auto& m = r.modules[static_cast<std::size_t>(q) - 1];
      auto& at = free_at[static_cast<std::size_t>(q) - 1];
      const std::uint64_t start = std::max(at, ready);
      const std::uint64_t d = duration(f);
      m.stall += start - at;
      m.busy += d;
      ++m.instructions;
      at = start + d;
      m.end = at;
      r.counters.count(config_, f);
      if (f.opcode == Opcode::Gemm) gemm_all += uops(f);
      if (f.opcode == Opcode::Alu) alu_all += uops(f);
      if (trace) {
        r.trace.push_back({i, q, start, d});
        r.names.push_back(disassemble(f));
      }
      return at;
    });
    for (const auto& m : r.modules) r.total_cycles = std::max(r.total_cycles, m.end);
    const auto& p = params_;
    r.compute_cycles = (gemm_all + p.gemm_uops_per_cycle - 1) / p.gemm_uops_per_cycle +
                       alu_all * p.alu_cycles_per_uop;
    r.memory_cycles =
        (r.counters.memory_bytes() + p.bus_bytes_per_cycle - 1) / p.bus_bytes_per_cycle;
    r.roofline_cycles = std::max(r.compute_cycles, r.memory_cycles);
    return r;
  }

 private:
  static std::uint64_t uops(const InsnFields& f) {
    const std::uint64_t n = f.uop_end > f.uop_bgn ? f.uop_end - f.uop_bgn : 0;
    return std::uint64_t{f.iter_out} * f.iter_in * n;
  }

  Config config_;
  CycleParams params_;
};

}  // namespace dlavm::vta

template <>
struct fmt::formatter<dlavm::vta::CycleReport> : fmt::formatter<std::string_view> {
  auto format(const dlavm::vta::CycleReport& r, format_context& ctx) const {
    auto out = fmt::format_to(ctx.out(), "{} cycles (roofline {}: compute {}, memory {})",
                              r.total_cycles, r.roofline_cycles, r.compute_cycles, r.memory_cycles);
    const char* names[] = {"load", "compute", "store"};
    for (int m = 0; m < 3; ++m)
      out = fmt::format_to(out, "; {} busy {} stall {}", names[m], r.modules[m].busy,
                           r.modules[m].stall);
    return out;
  }
};
