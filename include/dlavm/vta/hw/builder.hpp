// Command builder modelled on VTA's runtime API (VTALoadBuffer2D, VTAStoreBuffer2D,
// VTAUopLoopBegin/End, VTAUopPush, VTAPushGEMMOp, VTAPushALUOp, VTADepPush, VTADepPop,
// VTASynchronize): builds a vta::Stream by hand. Every value is checked against its field:
// an overflow raises EncodingError naming the instruction, field, value and limit. The work is
// runtime::StreamWriter's (runtime/writer.hpp), the one writer the host and firmware share.
//
//   vta::Builder b(config);
//   b.load({.memory = vta::MemId::Acc, .sram = 0, .dram = a, .x_size = 4});
//   vta::UopKernel k;
//   k.loop_begin(4, 1, 1);  // 4 iterations, dst += 1, src += 1
//   k.push(0, 4);           // acc[0 + i] = acc[0 + i] + acc[4 + i]
//   k.loop_end();
//   b.alu(k, vta::AluOp::Add);
//   ...
//   b.finish();
//   vta::Stream s = b.take();
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/runtime/writer.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::vta {

// x_stride = -1 means dense rows (x_stride = x_size).
using runtime::kDenseStride;

// LOAD: y_size rows of x_size elements, x_stride elements apart in DRAM starting at element
// address `dram` (byte address / element bytes), into SRAM at `sram` with zero padding.
struct Load2D {
  MemId memory = MemId::Inp;
  std::int64_t sram = 0;
  std::int64_t dram = 0;
  std::int64_t y_size = 1;
  std::int64_t x_size = 0;
  std::int64_t x_stride = kDenseStride;
  std::int64_t y_pad_0 = 0, y_pad_1 = 0, x_pad_0 = 0, x_pad_1 = 0;
};

// STORE of accumulator rows (truncated to the output width) to DRAM; no padding.
struct Store2D {
  std::int64_t sram = 0;
  std::int64_t dram = 0;
  std::int64_t y_size = 1;
  std::int64_t x_size = 0;
  std::int64_t x_stride = kDenseStride;
};

// A micro-op kernel: up to two loops (outer = iter_out, inner = iter_in) around a list of
// micro-ops, as captured by VTAUopLoopBegin / VTAUopPush / VTAUopLoopEnd. Loops must enclose
// all micro-ops: open them before the first push.
class UopKernel {
 public:
  struct Loop {
    std::int64_t extent = 1, dst_factor = 0, src_factor = 0, wgt_factor = 0;
    friend bool operator==(const Loop&, const Loop&) = default;
  };
  struct Op {
    std::int64_t dst = 0, src = 0, wgt = 0;
    friend bool operator==(const Op&, const Op&) = default;
  };

  void loop_begin(std::int64_t extent, std::int64_t dst_factor, std::int64_t src_factor,
                  std::int64_t wgt_factor = 0);
  void loop_end();
  void push(std::int64_t dst, std::int64_t src, std::int64_t wgt = 0);

  std::span<const Loop> loops() const { return loops_; }
  std::span<const Op> ops() const { return ops_; }
  bool closed() const { return open_ == 0; }
  friend bool operator==(const UopKernel&, const UopKernel&) = default;

 private:
  std::vector<Loop> loops_;
  std::vector<Op> ops_;
  std::size_t open_ = 0;
};

// What the host Builder stores: the stream, the kernels stored (words -> offset in the
// micro-op buffer) and resident (offset -> micro-op SRAM entry), and the kernel being encoded.
// The storage of runtime::StreamWriter on the host (see runtime/writer.hpp).
class HostStreamStorage {
 public:
  std::size_t insn_count() const { return stream.insns.size(); }
  InsnWord& insn(std::size_t i) { return stream.insns[i]; }
  std::size_t insn_room() const { return stream.insns.max_size() - stream.insns.size(); }
  bool push_insn(const InsnWord& w) {
    stream.insns.push_back(w);
    return true;
  }
  bool repeat_insns(std::size_t from, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const InsnWord w = stream.insns[from + i];  // (push_back may move the words)
      stream.insns.push_back(w);
    }
    return true;
  }
  std::size_t uop_count() const { return stream.uops.size(); }
  bool push_uops(const std::uint32_t* w, std::size_t n) {
    stream.uops.insert(stream.uops.end(), w, w + n);
    return true;
  }
  std::size_t reloc_count() const { return stream.uop_relocs.size(); }
  const std::uint32_t* relocs() const { return stream.uop_relocs.data(); }
  bool push_reloc(std::uint32_t index) {
    stream.uop_relocs.push_back(index);
    return true;
  }
  std::uint32_t* kernel_scratch(std::size_t n) {
    scratch_.resize(n);
    return scratch_.data();
  }
  bool find_kernel(const std::uint32_t* w, std::size_t n, std::uint32_t& at) const {
    if (kernels_.empty()) return false;
    const std::uint64_t h = hash(w, n);
    const std::size_t mask = kernels_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      const KernelEntry& e = kernels_[i];
      if (e.size == 0) return false;
      if (e.hash == h && e.size == n && std::equal(w, w + n, stream.uops.data() + e.at)) {
        at = e.at;
        return true;
      }
    }
  }
  bool add_kernel(std::uint32_t at, std::size_t n) {
    if (2 * (kernel_count_ + 1) > kernels_.size()) grow();
    insert({hash(stream.uops.data() + at, n), at, static_cast<std::uint32_t>(n)});
    ++kernel_count_;
    return true;
  }
  bool find_resident(std::uint32_t dram, std::uint32_t& sram) const {
    if (dram >= resident_.size() || resident_[dram].epoch != epoch_) return false;
    sram = resident_[dram].sram;
    return true;
  }
  bool add_resident(std::uint32_t dram, std::uint32_t sram) {
    if (dram >= resident_.size()) resident_.resize(dram + 1);
    resident_[dram] = {epoch_, sram};
    return true;
  }
  void clear_resident() { ++epoch_; }
  // Forgets the kernels stored and resident (the stream they are in is being taken away).
  void forget_kernels() {
    kernels_.clear();
    kernel_count_ = 0;
    clear_resident();
  }
  std::size_t kernel_count() const { return kernel_count_; }

  Stream stream;

 private:
  // FNV-1a over the words
  static std::uint64_t hash(const std::uint32_t* w, std::size_t n) {
    std::uint64_t h = 14695981039346656037ull;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ w[i]) * 1099511628211ull;
    return h;
  }
  // The kernels stored: an open-addressing table (a power of two, at most half full, size 0
  // marks a free entry: no kernel is empty) of the hash of their words, where they are in
  // stream.uops and how many; compared word by word there (no copy of the words).
  struct KernelEntry {
    std::uint64_t hash = 0;
    std::uint32_t at = 0, size = 0;
  };
  void insert(const KernelEntry& k) {
    const std::size_t mask = kernels_.size() - 1;
    std::size_t i = k.hash & mask;
    while (kernels_[i].size != 0) i = (i + 1) & mask;
    kernels_[i] = k;
  }
  void grow() {
    std::vector<KernelEntry> old(kernels_.empty() ? 32 : 2 * kernels_.size());
    old.swap(kernels_);
    for (const auto& k : old)
      if (k.size != 0) insert(k);
  }
  std::vector<KernelEntry> kernels_;
  std::size_t kernel_count_ = 0;
  // The kernels resident in the micro-op SRAM, by their offset in stream.uops: their first
  // entry there, valid while `epoch` is the current one (the SRAM starting over clears them
  // all at once).
  struct Resident {
    std::uint32_t epoch = 0, sram = 0;
  };
  std::vector<Resident> resident_;
  std::uint32_t epoch_ = 1;
  std::vector<std::uint32_t> scratch_;
};

// The host's runtime::StreamWriter: every failure raises a dlavm::Error naming the
// instruction, the field and the numbers. A Builder stays where it was made (the writer holds
// its storage): it is neither copied nor moved.
class Builder {
 public:
  explicit Builder(const Config& config);
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  const Config& config() const { return config_; }
  const IsaLayout& layout() const { return writer_.layout(); }
  std::size_t size() const { return storage_.insn_count(); }
  // Distinct micro-op kernels stored in the micro-op buffer.
  std::size_t kernel_count() const { return storage_.kernel_count(); }
  const Stream& stream() const { return storage_.stream; }
  // The stream written so far; the Builder goes on with an empty one (whose kernels are
  // stored and loaded anew).
  Stream take() {
    storage_.forget_kernels();
    return std::exchange(storage_.stream, Stream{});
  }
  // Room for this many instructions and micro-op words, so that writing them never regrows.
  void reserve(std::size_t insns, std::size_t uops) {
    storage_.stream.insns.reserve(insns);
    storage_.stream.uops.reserve(uops);
  }
  // The writer itself, for code that drives it directly (vta::Program's replay); check() turns
  // its failure into the Builder's error.
  runtime::StreamWriter<HostStreamStorage>& writer() { return writer_; }
  // Raises the writer's failure, if any, and clears it (the Builder stays usable).
  void check(const char* what = "");

  // The element address of byte address `phys` + `offset` elements for memory type `m`;
  // ValueError when `phys` is not a multiple of the element size.
  std::int64_t dram_elem(std::uint64_t phys, MemId m, std::int64_t offset = 0) const;

  void load(const Load2D& a);

  void store(const Store2D& a);

  // GEMM over the kernel: acc[dst] += inp[src] x wgt[wgt]^T, or acc[dst] = 0 with reset.
  void gemm(const UopKernel& k, bool reset = false);
  // ALU with a tensor operand: acc[dst] = op(acc[dst], acc[src]).
  void alu(const UopKernel& k, AluOp op);
  // ALU with an immediate operand: acc[dst] = op(acc[dst], imm), imm a 16-bit signed value.
  void alu_imm(const UopKernel& k, AluOp op, std::int64_t imm);

  // VTADepPush: after the last instruction of `from`, a token for `to` (a neighbour).
  void dep_push(Queue from, Queue to);
  // Sets the push flag toward neighbour `to` on instruction `index` (already emitted): the
  // dependency tracker attaches a token to the producer of a hazard after the fact.
  void set_push(std::size_t index, Queue to);

  // VTADepPop: the next instruction of `to` waits for, and consumes, a token from `from`.
  void dep_pop(Queue from, Queue to);

  // Orders what follows behind everything before (runtime::StreamWriter::barrier).
  void barrier();

  // VTASynchronize: FINISH after every load and store has completed.
  void finish();

  // Appends an instruction given by its fields (checked; pending pops are applied).
  void emit(InsnFields f);

 private:
  // The kernel's loops and micro-ops, as the writer takes them.
  static void kernel_parts(const UopKernel& k, std::vector<runtime::KernelLoop>& loops,
                           std::vector<runtime::UopOp>& ops);
  void check_kernel(const UopKernel& k, const char* what) const;

  Config config_;
  HostStreamStorage storage_;
  runtime::StreamWriter<HostStreamStorage> writer_;
};

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/builder-inl.hpp>
#endif
