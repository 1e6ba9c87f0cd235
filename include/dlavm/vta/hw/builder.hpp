// Command builder modelled on VTA's runtime API (VTALoadBuffer2D, VTAStoreBuffer2D,
// VTAUopLoopBegin/End, VTAUopPush, VTAPushGEMMOp, VTAPushALUOp, VTADepPush, VTADepPop,
// VTASynchronize): builds a vta::Stream by hand. Every value is checked against its field:
// an overflow raises EncodingError naming the instruction, field, value and limit.
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
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

namespace dlavm::vta {

// x_stride = -1 means dense rows (x_stride = x_size).
inline constexpr std::int64_t kDenseStride = -1;

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

class Builder {
 public:
  explicit Builder(const Config& config) : config_(config) {
    config_.validate();
    layout_ = config_.layout();
  }

  const Config& config() const { return config_; }
  const IsaLayout& layout() const { return layout_; }
  std::size_t size() const { return stream_.insns.size(); }
  // Distinct micro-op kernels stored in the micro-op buffer.
  std::size_t kernel_count() const { return kernels_.size(); }
  const Stream& stream() const { return stream_; }
  Stream take() { return std::exchange(stream_, Stream{}); }

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

  // VTASynchronize: FINISH after every load and store has completed.
  void finish();

  // Appends an instruction given by its fields (checked; pending pops are applied).
  void emit(InsnFields f);

 private:
  static std::size_t index(Queue q) { return static_cast<std::size_t>(q) - 1; }

  // Appends an instruction whose fields were checked as they were set (`set`); only the
  // enumerations, which callers pass through, are checked again.
  void append(InsnFields f);

  static void check_neighbours(const char* what, Queue from, Queue to);

  static InsnFields make_nop(Queue q);

  void commit_pending_pop(Queue q);

  // Sets a field after checking the value against its width for this instruction.
  void set(InsnFields& f, Field field, std::int64_t v) const;
  void set_mem(InsnFields& f, std::int64_t sram, std::int64_t dram, std::int64_t y, std::int64_t x,
               std::int64_t stride) const;

  void push_kernel(InsnFields f, const UopKernel& k, bool gemm);

  // Stores a kernel's micro-ops once in the DRAM buffer and makes them resident in the
  // micro-op SRAM (emitting a LOAD UOP when they are not); returns [begin, end) in SRAM.
  std::pair<std::int64_t, std::int64_t> place_kernel(std::vector<std::uint32_t> words);

  Config config_;
  IsaLayout layout_;
  Stream stream_;
  InsnFields last_;
  std::array<bool, 3> pending_pop_prev_{}, pending_pop_next_{};
  std::map<std::vector<std::uint32_t>, std::uint32_t> kernels_;  // words -> DRAM offset
  std::map<std::uint32_t, std::uint32_t> resident_;              // DRAM offset -> SRAM offset
  std::uint32_t uop_next_ = 0;
};

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/builder-inl.hpp>
#endif
