// Definitions for dlavm/vta/hw/cycle_model.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/json_writer.hpp>
#include <dlavm/vta/hw/cycle_model.hpp>
#include <dlavm/vta/hw/dispatch.hpp>

#include <fstream>

namespace dlavm::vta {

DLAVM_INLINE std::string CycleReport::chrome_trace() const {
  // Chrome's trace event format: one complete ("X") event per instruction on its module's
  // thread, and metadata ("M") events naming the three threads.
  dlavm::detail::JsonWriter w(1);
  w.begin_object();
  w.key("traceEvents");
  w.begin_array();
  for (Queue q : {Queue::Load, Queue::Compute, Queue::Store}) {
    w.begin_object();
    w.field("name", "thread_name");
    w.field("ph", "M");
    w.field("pid", 0);
    w.field("tid", static_cast<int>(q));
    w.key("args");
    w.begin_object();
    w.field("name", std::string(runtime::queue_name(q)) + " module");
    w.end_object();
    w.end_object();
  }
  for (std::size_t k = 0; k < trace.size(); ++k) {
    const auto& e = trace[k];
    w.begin_object();
    w.field("name", k < names.size() ? names[k] : std::to_string(e.index));
    w.field("cat", runtime::queue_name(e.queue));
    w.field("ph", "X");
    w.field("ts", e.start);
    w.field("dur", e.duration);
    w.field("pid", 0);
    w.field("tid", static_cast<int>(e.queue));
    w.key("args");
    w.begin_object();
    w.field("index", e.index);
    w.end_object();
    w.end_object();
  }
  w.end_array();
  w.field("displayTimeUnit", "ns");
  w.key("otherData");
  w.begin_object();
  w.field("time_unit", "cycles");
  w.field("total_cycles", total_cycles);
  w.end_object();
  w.end_object();
  return std::move(w).str();
}

DLAVM_INLINE void CycleReport::write_chrome_trace(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out << chrome_trace();
  if (!out) raise<ValueError>("cannot write trace file '{}'", path);
}

DLAVM_INLINE std::uint64_t CycleModel::transfer_bytes(const InsnFields& f) const {
  if ((f.opcode != Opcode::Load && f.opcode != Opcode::Store) || f.x_size == 0) return 0;
  const std::size_t eb =
      f.opcode == Opcode::Store ? config_.out_elem_bytes() : config_.elem_bytes(f.memory_type);
  return std::uint64_t{f.y_size} * f.x_size * eb;
}

DLAVM_INLINE std::uint64_t CycleModel::duration(const InsnFields& f) const {
  const auto& p = params_;
  auto ceil_div = [](std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; };
  switch (f.opcode) {
    case Opcode::Load:
    case Opcode::Store: {
      if (f.x_size == 0) return p.insn_overhead;
      const std::uint64_t bytes = transfer_bytes(f);
      const std::uint64_t padded = (std::uint64_t{f.y_pad_0} + f.y_size + f.y_pad_1) *
                                       (std::uint64_t{f.x_pad_0} + f.x_size + f.x_pad_1) -
                                   std::uint64_t{f.y_size} * f.x_size;
      const std::uint64_t later_rows = f.y_size > 1 ? std::uint64_t{f.y_size} - 1 : 0;
      const std::uint64_t row_latency =
          f.opcode == Opcode::Store ? p.store_row_latency : p.load_row_latency;
      return p.insn_overhead + p.dram_latency + later_rows * row_latency +
             ceil_div(bytes, p.bus_bytes_per_cycle) + ceil_div(padded, p.pad_elems_per_cycle);
    }
    case Opcode::Gemm:
      return p.insn_overhead + p.gemm_latency + ceil_div(uops(f), p.gemm_uops_per_cycle);
    case Opcode::Alu:
      return p.insn_overhead + p.alu_latency +
             uops(f) * (f.use_imm ? p.alu_imm_cycles_per_uop : p.alu_cycles_per_uop);
    default:
      return p.insn_overhead;
  }
}

DLAVM_INLINE CycleReport CycleModel::run(std::span<const InsnFields> prog, bool trace) const {
  CycleReport r;
  std::array<std::uint64_t, 3> free_at{}, port_bytes{};
  std::uint64_t gemm_all = 0, alu_all = 0, alu_imm_all = 0;
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
    port_bytes[static_cast<std::size_t>(q) - 1] += transfer_bytes(f);
    if (f.opcode == Opcode::Gemm) gemm_all += uops(f);
    if (f.opcode == Opcode::Alu) (f.use_imm ? alu_imm_all : alu_all) += uops(f);
    if (trace) {
      r.trace.push_back({i, q, start, d});
      r.names.push_back(disassemble(f));
    }
    return at;
  });
  for (const auto& m : r.modules) r.total_cycles = std::max(r.total_cycles, m.end);
  r.total_cycles += params_.launch_cycles;
  const auto& p = params_;
  r.compute_cycles = (gemm_all + p.gemm_uops_per_cycle - 1) / p.gemm_uops_per_cycle +
                     alu_all * p.alu_cycles_per_uop + alu_imm_all * p.alu_imm_cycles_per_uop;
  for (std::size_t m = 0; m < 3; ++m) {
    r.port_cycles[m] = (port_bytes[m] + p.bus_bytes_per_cycle - 1) / p.bus_bytes_per_cycle;
    r.memory_cycles = std::max(r.memory_cycles, r.port_cycles[m]);
  }
  r.roofline_cycles = std::max(r.compute_cycles, r.memory_cycles);
  return r;
}

DLAVM_INLINE std::uint64_t CycleModel::uops(const InsnFields& f) {
  const std::uint64_t n = f.uop_end > f.uop_bgn ? f.uop_end - f.uop_bgn : 0;
  return std::uint64_t{f.iter_out} * f.iter_in * n;
}

}  // namespace dlavm::vta

DLAVM_INLINE fmt::format_context::iterator fmt::formatter<dlavm::vta::CycleReport>::format(
    const dlavm::vta::CycleReport& r, format_context& ctx) const {
  auto text = fmt::format(
      "{} cycles (roofline {}: compute {}, memory {}: ports load {} compute {} store {})",
      r.total_cycles, r.roofline_cycles, r.compute_cycles, r.memory_cycles, r.port_cycles[0],
      r.port_cycles[1], r.port_cycles[2]);
  const char* names[] = {"load", "compute", "store"};
  for (int m = 0; m < 3; ++m)
    text += fmt::format("; {} busy {} stall {}", names[m], r.modules[m].busy, r.modules[m].stall);
  return fmt::formatter<std::string_view>::format(text, ctx);
}
