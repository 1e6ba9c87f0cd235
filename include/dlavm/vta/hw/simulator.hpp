// Functional VTA simulator with exactly the semantics of VTA_ISA.md: DRAM as a set of
// allocations with physical addresses, the four SRAMs as typed arrays, the three modules and
// their token queues, and the reference counters. It reports, naming the instruction index:
// deadlock on dependency tokens, SRAM index out of range, DRAM access outside any allocation,
// unknown opcode or memory type.
//
// Supported element types: int8 inputs and weights, int32 accumulators, 8/16/32-bit outputs
// (VTA's default; other widths encode and decode but do not simulate).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/counters.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <span>
#include <vector>

namespace dlavm::vta {

// Simulated DRAM: allocations at physical addresses in a 32-bit space (VTA's vta_phy_addr_t).
// Allocations are page aligned; address 0 and the first page are never handed out.
class Dram {
 public:
  static constexpr std::uint64_t kPage = 4096;
  static constexpr std::uint64_t kBase = 0x10000;

  explicit Dram(std::uint64_t limit = std::uint64_t{1} << 32) : limit_(limit) {}

  // First fit; raises DeviceError when the address space is exhausted.
  std::uint64_t alloc(std::size_t bytes);
  void free(std::uint64_t phys);
  bool free_noexcept(std::uint64_t phys) noexcept { return allocs_.erase(phys) != 0; }
  // The host copy of the allocation that starts at `phys`.
  std::span<std::byte> allocation(std::uint64_t phys);
  // [phys, phys + bytes) inside one allocation, or nullptr.
  std::byte* find(std::uint64_t phys, std::uint64_t bytes);
  std::size_t allocation_count() const { return allocs_.size(); }
  std::uint64_t in_use() const;

 private:
  std::uint64_t limit_;
  std::map<std::uint64_t, std::vector<std::byte>> allocs_;
};

struct RunInfo {
  Counters counters;      // of this run
  bool finished = false;  // a FINISH instruction executed
  std::size_t instructions = 0;
};

class Simulator {
 public:
  explicit Simulator(const Config& config) : config_(config) {
    config_.validate();
    if (config_.log_inp_width != 3 || config_.log_wgt_width != 3 || config_.log_acc_width != 5)
      raise<ConfigError>(
          "simulator: LOG_INP_WIDTH = {}, LOG_WGT_WIDTH = {}, LOG_ACC_WIDTH = {}; only int8 "
          "inputs and weights with int32 accumulators (3, 3, 5) are simulated",
          config_.log_inp_width, config_.log_wgt_width, config_.log_acc_width);
    if (config_.log_out_width < 3)
      raise<ConfigError>("simulator: LOG_OUT_WIDTH = {}; outputs of 8, 16 or 32 bits only",
                         config_.log_out_width);
    layout_ = config_.layout();
    batch_ = config_.batch();
    block_in_ = config_.block_in();
    block_out_ = config_.block_out();
    inp_.assign(std::size_t{config_.inp_depth()} * batch_ * block_in_, 0);
    wgt_.assign(std::size_t{config_.wgt_depth()} * block_out_ * block_in_, 0);
    acc_.assign(std::size_t{config_.acc_depth()} * batch_ * block_out_, 0);
    uop_.assign(config_.uop_depth(), Uop{});
  }

  const Config& config() const { return config_; }
  const IsaLayout& layout() const { return layout_; }
  Dram& dram() { return dram_; }
  // Totals over every run since construction or reset_counters().
  const Counters& counters() const { return total_; }
  void reset_counters() { total_ = {}; }

  // SRAM contents, element-major: inp [depth][BATCH][BLOCK_IN], wgt [depth][BLOCK_OUT]
  // [BLOCK_IN], acc [depth][BATCH][BLOCK_OUT], uop [depth].
  std::span<std::int8_t> inp_sram() { return inp_; }
  std::span<std::int8_t> wgt_sram() { return wgt_; }
  std::span<std::int32_t> acc_sram() { return acc_; }
  std::span<const Uop> uop_sram() const { return uop_; }

  // Runs `count` instructions read from DRAM at physical address `insn_phys`, as
  // VTADeviceRun does.
  RunInfo run(std::uint64_t insn_phys, std::uint32_t count);

  // Runs decoded instructions (micro-ops still come from DRAM through LOAD UOP).
  RunInfo run(std::span<const InsnFields> prog);

 private:
  [[noreturn]] void fail_sram(const InsnFields& f, std::size_t i, const char* what,
                              std::uint64_t first, std::uint64_t end, std::uint64_t depth) const;

  std::byte* dram_rows(const InsnFields& f, std::size_t i, std::size_t elem_bytes);

  void execute(const InsnFields& f, std::size_t i, RunInfo& info);

  void load(const InsnFields& f, std::size_t i, Counters& counters);

  void store(const InsnFields& f, std::size_t i, Counters& counters);

  // Checks uop range and the largest index every micro-op loop reaches; returns false for an
  // empty loop nest.
  bool check_loops(const InsnFields& f, std::size_t i, bool gemm);

  template <int B, int BI, int BO>
  void gemm_loops(const InsnFields& f);

  void gemm(const InsnFields& f, std::size_t i, Counters& counters);

  template <class Op>
  void alu_loops(const InsnFields& f, Op op);

  void alu(const InsnFields& f, std::size_t i, Counters& counters);

  Config config_;
  IsaLayout layout_;
  int batch_ = 1, block_in_ = 16, block_out_ = 16;
  Dram dram_;
  std::vector<std::int8_t> inp_, wgt_;
  std::vector<std::int32_t> acc_;
  std::vector<Uop> uop_;
  Counters total_;
};

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/simulator-inl.hpp>
#endif
