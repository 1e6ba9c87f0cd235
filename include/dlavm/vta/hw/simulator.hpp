// Functional VTA simulator with exactly the semantics of VTA_ISA.md: DRAM as a set of
// allocations with physical addresses, the four SRAMs as typed arrays, the three modules and
// their token queues, and the reference counters. It reports, naming the instruction index:
// deadlock on dependency tokens, SRAM index out of range, DRAM access outside any allocation,
// unknown opcode or memory type, and a run that would exceed its work budget.
//
// Supported element types: int8 inputs and weights, int32 accumulators, 8/16/32-bit outputs
// (VTA's default; other widths encode and decode but do not simulate).
//
// Variants (config.variant, vta/hw/variant.hpp): the simulator acts as the configured design.
// It refuses a stream check_stream refuses (FeatureError naming the instruction), reads SHR and
// opcode-4 amounts as the design does, and on a design whose STORE reads a separate output
// SRAM (Xilinx HLS) refuses a STORE of an entry a LOAD or a GEMM reset wrote last, whose bytes
// the board would not have.
//
// Speed: GEMM and ALU instructions run on SIMD kernels for the best instruction set of the CPU
// (vta/hw/sim_kernels.hpp), which read shadow copies of the input and weight SRAMs that every
// LOAD keeps in step (a weight LOAD writes the shadow alone, from which wgt_sram() unpacks the
// SRAM when asked); set_kernels(SimKernels::Scalar) runs the plain loops they are checked
// against. Bounds are checked once per instruction, not per micro-op.
//
// Limits: a configuration whose four SRAMs (2^LOG_*_BUFF_SIZE bytes each) total more than
// kMaxSramBytes (64 MiB) is refused before anything is allocated; the shadow copies add at most
// 8 bytes per input or weight SRAM byte (2 for the default shape) plus 64 per element. A run is
// charged one work unit per GEMM or ALU micro-op execution (resets included) and per SRAM
// element a LOAD or STORE moves (padding included); an instruction that would take the run past
// the work budget (kDefaultWorkBudget = 2^26 units: well under a second of GEMM micro-ops on the
// SIMD kernels, about 150 times the largest ResNet-18 layer; set_work_budget changes it) is
// refused before it runs, naming the instruction.
//
//   vta::Simulator sim(config);
//   sim.set_work_budget(std::uint64_t{1} << 30);
//   auto info = sim.run(insn_phys, count);   // info.counters, info.work
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/counters.hpp>
#include <dlavm/vta/hw/isa.hpp>
#include <dlavm/vta/hw/sim_kernels.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::vta {

namespace detail {
// Storage on 64-byte boundaries, for the SRAMs the SIMD kernels read and write in vectors: an
// accumulator element of 16 int32 lanes is one cache line, so that the kernels' 512-bit loads
// and stores of it never straddle two, and the shadows' groups start on lines.
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <class U>
  constexpr CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};
}  // namespace detail

// Simulated DRAM: allocations at physical addresses in a 32-bit space (VTA's vta_phy_addr_t).
// Allocations are page aligned; address 0 and the first page are never handed out. A new
// allocation reads as zeros. Its host copy comes from calloc, whose large blocks are pages the
// operating system maps as zeros when first touched: a model's memory plan, sized at the
// maxima of its symbolic dims (a 2,048-token LLM layer's runtime region and KV cache), costs
// only the pages a run writes or reads, where zeroing it touched every page up front.
class Dram {
 public:
  static constexpr std::uint64_t kPage = 4096;
  static constexpr std::uint64_t kBase = 0x10000;
  // Bytes of each host copy past its allocation, never part of it: the simulator packs weight
  // LOADs straight from DRAM, and the packing reads past the last element it packs.
  static constexpr std::size_t kHostSlack = detail::kWgtPackReadsPast;

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
  // An allocation's host copy: `size` bytes from calloc (and kHostSlack more).
  struct Block {
    struct Free {
      void operator()(std::byte* p) const noexcept { std::free(p); }
    };
    std::unique_ptr<std::byte, Free> bytes;
    std::size_t size = 0;
  };

  std::uint64_t limit_;
  std::map<std::uint64_t, Block> allocs_;
};

struct RunInfo {
  Counters counters;      // of this run
  bool finished = false;  // a FINISH instruction executed
  std::size_t instructions = 0;
  std::uint64_t work = 0;  // work units charged against the budget
};

// Which loops run GEMM and ALU micro-ops: the SIMD kernels of the best instruction set the CPU
// has (the default; the scalar loops when the build has no SIMD), or the scalar loops.
enum class SimKernels : std::uint8_t { Simd, Scalar };

class Simulator {
 public:
  static constexpr std::uint64_t kMaxSramBytes = std::uint64_t{64} << 20;
  static constexpr std::uint64_t kDefaultWorkBudget = std::uint64_t{1} << 26;

  // Raises ConfigError for element widths it does not simulate and for SRAMs over
  // kMaxSramBytes (naming the LOG_*_BUFF_SIZE keys and their bytes), before allocating.
  explicit Simulator(const Config& config);

  const Config& config() const { return config_; }
  const IsaLayout& layout() const { return layout_; }
  Dram& dram() { return dram_; }
  // Totals over every run since construction or reset_counters().
  const Counters& counters() const { return total_; }
  void reset_counters() { total_ = {}; }

  // SRAM contents, element-major: inp [depth][BATCH][BLOCK_IN], wgt [depth][BLOCK_OUT]
  // [BLOCK_IN], acc [depth][BATCH][BLOCK_OUT], uop [depth]. Writing through the input or
  // weight span is seen by the next GEMM (the shadow copies are rebuilt from them). A weight
  // span shows the SRAM as it was when taken: with the SIMD kernels a later weight LOAD writes
  // the shadow alone, so ask for the span again after a run.
  std::span<std::int8_t> inp_sram() {
    inp_stale_ = true;
    return inp_;
  }
  std::span<std::int8_t> wgt_sram() {
    if (wgt_behind_) catch_up_wgt();
    wgt_stale_ = true;
    return {wgt_.data(), wgt_.size() - kWgtSlack};
  }
  std::span<std::int32_t> acc_sram() { return acc_; }
  std::span<const Uop> uop_sram() const { return uop_; }

  // Runs `count` instructions read from DRAM at physical address `insn_phys`, as
  // VTADeviceRun does.
  RunInfo run(std::uint64_t insn_phys, std::uint32_t count);

  // Runs decoded instructions (micro-ops still come from DRAM through LOAD UOP).
  RunInfo run(std::span<const InsnFields> prog);

  // Work units one run may use (see the header comment); raising it lets longer streams run.
  void set_work_budget(std::uint64_t units) { work_budget_ = units; }
  std::uint64_t work_budget() const { return work_budget_; }

  void set_kernels(SimKernels k);
  SimKernels kernels() const { return simd_ ? SimKernels::Simd : SimKernels::Scalar; }
  // The instruction set GEMM and ALU run with: "AVX3" (AVX-512), "AVX2", "SSE4", "SSSE3", or
  // "scalar".
  std::string_view kernel_target() const { return simd_ ? simd_->target : "scalar"; }
  // The SIMD instruction sets this build and CPU offer, best first (empty without SIMD).
  static std::vector<std::string> simd_targets();
  // Runs the kernels of one of simd_targets() (tests compare each with the scalar loops);
  // raises ValueError naming the ones available.
  void set_simd_target(std::string_view target);

 private:
  [[noreturn]] void fail_sram(const InsnFields& f, std::size_t i, const char* what,
                              std::uint64_t first, std::uint64_t end, std::uint64_t depth) const;

  std::byte* dram_rows(const InsnFields& f, std::size_t i, std::size_t elem_bytes);

  void execute(const InsnFields& f, std::size_t i, RunInfo& info);

  // Adds what instruction i costs to info.work; raises DeviceError past the budget.
  void charge(const InsnFields& f, std::size_t i, RunInfo& info) const;

  // Switches kernels: sizes the shadows for the new set (none for the scalar loops), the
  // input shadow stale, the weight shadow packed.
  void use_kernels(const detail::SimdKernels* k);
  // Rewrites the shadows of `count` input or weight elements from `first` (with the SIMD
  // kernels; the scalar loops do not read them, so that mode only marks them stale).
  void pack_shadow(MemId m, std::size_t first, std::size_t count);
  void refresh_shadows();
  // The weight SRAM from its shadow, where LOADs packed their elements into the shadow alone.
  void catch_up_wgt();
  detail::TileShape tile() const { return {batch_, block_in_, block_out_}; }
  // The micro-op loops of a GEMM or ALU instruction whose ranges check_loops accepted.
  detail::UopLoops uop_loops(const InsnFields& f) const;

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

  // A design whose STORE reads a separate output SRAM (Variant::store_reads_out_sram): what
  // last wrote each accumulator entry, and the check that a STORE reads only entries a GEMM or
  // ALU instruction wrote last.
  enum class OutWriter : std::uint8_t { None, Load, Reset, Compute };
  void mark_out_sram(const InsnFields& f, OutWriter writer);
  void check_out_sram(const InsnFields& f, std::size_t i, std::uint64_t n) const;

  Config config_;
  IsaLayout layout_;
  int batch_ = 1, block_in_ = 16, block_out_ = 16;
  Dram dram_;
  std::vector<std::int8_t> inp_, wgt_;
  std::vector<std::int32_t, detail::CacheLineAllocator<std::int32_t>> acc_;
  std::vector<Uop> uop_;
  std::vector<OutWriter> out_writer_;  // empty unless the design stores an output SRAM
  // Bytes after the weight SRAM that the weight packing kernel may read.
  static constexpr std::size_t kWgtSlack = detail::kWgtPackReadsPast;
  // With the SIMD kernels a weight LOAD packs DRAM straight into the shadow, which the kernels
  // read: copying it to wgt_ as well took twice as long as the packing in an LLM decode step,
  // which loads each weight once. wgt_ then lags (wgt_behind_) until wgt_sram() or a switch of
  // kernels asks for it.
  bool wgt_behind_ = false;
  // Shadow copies for the SIMD GEMM (sim_kernels.hpp) in the form of the kernel set in use,
  // shadow_ bytes per element; stale after a write through inp_sram() / wgt_sram().
  std::vector<std::byte, detail::CacheLineAllocator<std::byte>> inp_shadow_, wgt_shadow_;
  detail::ShadowLayout shadow_;
  bool inp_stale_ = false, wgt_stale_ = false;
  const detail::SimdKernels* simd_ = nullptr;
  std::uint64_t work_budget_ = kDefaultWorkBudget;
  Counters total_;
};

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/simulator-inl.hpp>
#endif
