// Replay of a lowered VTA program's intrinsics: what vta::Program::instantiate runs on the host
// (evaluating the program's loops and fields) and what the C++ that deploy::emit generates
// runs in firmware (the same loops and fields, compiled), so that both write the same words.
// Each intrinsic orders itself after its data hazards (dependency tokens), checks its sizes,
// turns DRAM byte addresses into element addresses and writes its instruction:
//
//   load(mem, region, sram, param, offset, y, x, stride, pads)   vta.load
//   store(region, sram, param, offset, y, x, stride)             vta.store
//   kernel_begin(); loop_begin(extent, dst, src, wgt); push(dst, src, wgt);
//   gemm(reset, acc, inp, wgt) / alu(op, use_imm, imm, dst, src) a GEMM or ALU micro-op kernel
//   again(kernel, accesses)                                      a kernel written before
//   gemm_again(memo, ...) / alu_again(memo, ...)                 a memoized site (KernelMemo)
//
// `param` indexes the program's parameters, whose byte addresses the replay is given; a region
// indexes the program's on-chip regions (SramRegion), their hazard states the caller's array.
// A kernel with a loop of no iterations (the last block of a symbolic dim) or no micro-op
// writes nothing. The writer is the caller's: several programs may write one stream, joined
// by StreamWriter::barrier. Standard library only, no exceptions, no heap, C++17.
#pragma once

#include <dlavm/runtime/writer.hpp>

#include <cstddef>
#include <cstdint>

namespace dlavm::runtime {

// The integer operations of the index expressions the generated replays compute (ne's
// FloorDiv, FloorMod, Min, Max), for divisors the generator has checked are nonzero constants.
constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b, r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? q - 1 : q;
}
constexpr std::int64_t floor_mod(std::int64_t a, std::int64_t b) {
  const std::int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}
constexpr std::int64_t min(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
constexpr std::int64_t max(std::int64_t a, std::int64_t b) { return a < b ? b : a; }

// The bytes of one element of each memory (UOP, WGT, INP, ACC, OUT, ACC_8BIT), by MemId.
struct ElemBytes {
  std::uint64_t of[kMemIdCount] = {};
};

// The micro-ops of the kernel being replayed, in the caller's array of `capacity` entries
// (the program's largest kernel, which the host computes).
struct OpBuffer {
  UopOp* data = nullptr;
  std::size_t capacity = 0;
};

// What a kernel site of a generated replay (vta::replay_source) wrote the last time it was
// entered, with the values of the loops around it that its fields read: entered again with the
// same values, it writes the same instruction (Replay::gemm_again, alu_again) without
// collecting and encoding its micro-ops, as the host's replay plan does.
//
//   if (k3.hit(i1)) { if (!r.gemm_again(k3, false, 5u, 7u, 9u)) return false; }
//   else { k3.enter(r.writer(), i1); r.kernel_begin(); ...; if (!r.gemm(...)) return false;
//          k3.leave(r.writer()); }
template <std::size_t Keys>
struct KernelMemo {
  std::int64_t key[Keys + 1] = {};  // one more: no array of size zero
  WrittenKernel written{};
  std::size_t insns_before = 0;
  bool valid = false, wrote = false;

  template <class... K>
  constexpr bool hit(K... k) const {
    static_assert(sizeof...(K) == Keys, "a key per loop value the kernel reads");
    const std::int64_t now[Keys + 1] = {static_cast<std::int64_t>(k)..., 0};
    if (!valid) return false;
    for (std::size_t i = 0; i < Keys; ++i)
      if (key[i] != now[i]) return false;
    return true;
  }
  template <class Writer, class... K>
  constexpr void enter(const Writer& w, K... k) {
    static_assert(sizeof...(K) == Keys, "a key per loop value the kernel reads");
    const std::int64_t now[Keys + 1] = {static_cast<std::int64_t>(k)..., 0};
    for (std::size_t i = 0; i < Keys; ++i) key[i] = now[i];
    insns_before = w.size();
    valid = false;
  }
  // After the kernel's gemm or alu call succeeded: a kernel with no iterations wrote nothing.
  template <class Writer>
  constexpr void leave(const Writer& w) {
    wrote = w.size() != insns_before;
    if (wrote) written = w.last_kernel();
    valid = true;
  }
};

template <class Storage, class Layout = DynamicLayout>
class Replay {
 public:
  constexpr Replay(StreamWriter<Storage, Layout>& writer, std::uint32_t uop_depth,
                   const ElemBytes& elem, const SramRegion* regions, RegionState* states,
                   std::size_t region_count, const std::uint64_t* param_phys, OpBuffer ops)
      : w_(writer),
        uop_depth_(uop_depth),
        deps_(regions, states, region_count),
        elem_(elem),
        phys_(param_phys),
        ops_(ops) {
    // element sizes are powers of two on VTA: a shift instead of a 64-bit division per transfer
    for (std::size_t m = 0; m < static_cast<std::size_t>(kMemIdCount); ++m) {
      const std::uint64_t b = elem_.of[m];
      if (b == 0 || (b & (b - 1)) != 0) continue;
      int shift = 0;
      while ((std::uint64_t{1} << shift) != b) ++shift;
      elem_shift_[m] = shift;
    }
  }

  constexpr bool ok() const { return w_.ok(); }
  constexpr StreamWriter<Storage, Layout>& writer() { return w_; }
  constexpr const DepTracker& deps() const { return deps_; }

  constexpr bool load(MemId mem, std::uint32_t region, std::int64_t sram, std::size_t param,
                      std::int64_t offset, std::int64_t y, std::int64_t x, std::int64_t stride,
                      std::int64_t y_pad_0, std::int64_t y_pad_1, std::int64_t x_pad_0,
                      std::int64_t x_pad_1) {
    const Queue q = mem == MemId::Inp || mem == MemId::Wgt ? Queue::Load : Queue::Compute;
    const RegionAccess access{region, true};
    std::int64_t dram = 0;
    // a block of padding rows only reads no DRAM: its address is the tensor's start
    return sizes(Opcode::Load, mem, y, x) && element(Opcode::Load, param, mem, dram) &&
           deps_.before(w_, q, &access, 1) &&
           w_.load(mem, sram, dram + (y > 0 ? offset : 0), y, x, stride, y_pad_0, y_pad_1, x_pad_0,
                   x_pad_1) &&
           after(q, &access, 1);
  }

  constexpr bool store(std::uint32_t region, std::int64_t sram, std::size_t param,
                       std::int64_t offset, std::int64_t y, std::int64_t x, std::int64_t stride) {
    const RegionAccess access{region, false};
    std::int64_t dram = 0;
    return sizes(Opcode::Store, MemId::Out, y, x) &&
           element(Opcode::Store, param, MemId::Out, dram) &&
           deps_.before(w_, Queue::Store, &access, 1) &&
           w_.store(sram, dram + offset, y, x, stride) && after(Queue::Store, &access, 1);
  }

  constexpr void kernel_begin() {
    nloops_ = 0;
    nops_ = 0;
    empty_ = false;
  }
  constexpr void loop_begin(std::int64_t extent, std::int64_t dst, std::int64_t src,
                            std::int64_t wgt) {
    if (empty_) return;
    if (extent < 1) {
      empty_ = true;  // no iterations: the kernel writes nothing
      return;
    }
    if (nloops_ == 2) {
      InsnFields none;
      w_.fail(Status::LoopShape, none, Field::count, 3);
      return;
    }
    loops_[nloops_++] = {extent, dst, src, wgt};
  }
  constexpr void push(std::int64_t dst, std::int64_t src, std::int64_t wgt) {
    if (empty_) return;
    if (nops_ < ops_.capacity) ops_.data[nops_] = {dst, src, wgt};
    ++nops_;  // counted past the capacity, so that a kernel too large names its size
  }

  // A GEMM kernel (acc += inp x wgt), or with reset (acc = 0, inp and wgt unused).
  constexpr bool gemm(bool reset, std::uint32_t acc, std::uint32_t inp, std::uint32_t wgt) {
    if (empty_ || nops_ == 0) return ok();
    const RegionAccess accesses[] = {{acc, true}, {inp, false}, {wgt, false}};
    const std::size_t n = reset ? 1 : 3;
    return fits(Opcode::Gemm) && deps_.before(w_, Queue::Compute, accesses, n) &&
           w_.gemm(loops_, nloops_, ops_.data, nops_, reset) && after(Queue::Compute, accesses, n);
  }

  // A kernel written before in this stream (its writer's last_kernel() then), again, with
  // the accesses it made then (GEMM: acc written, inp and wgt read; reset: acc; ALU: dst
  // written, src read): what a replay that enters a kernel with the same values writes,
  // without collecting and encoding its micro-ops.
  constexpr bool again(const WrittenKernel& k, const RegionAccess* accesses, std::size_t n) {
    return deps_.before(w_, Queue::Compute, accesses, n) && w_.again(k) &&
           after(Queue::Compute, accesses, n);
  }

  // A memoized GEMM kernel site entered with the values it was last entered with.
  template <std::size_t K>
  constexpr bool gemm_again(const KernelMemo<K>& m, bool reset, std::uint32_t acc,
                            std::uint32_t inp, std::uint32_t wgt) {
    if (!m.wrote) return ok();
    const RegionAccess accesses[] = {{acc, true}, {inp, false}, {wgt, false}};
    return again(m.written, accesses, reset ? 1 : 3);
  }
  // A memoized ALU kernel site entered with the values it was last entered with.
  template <std::size_t K>
  constexpr bool alu_again(const KernelMemo<K>& m, std::uint32_t dst, std::uint32_t src) {
    if (!m.wrote) return ok();
    const RegionAccess accesses[] = {{dst, true}, {src, false}};
    return again(m.written, accesses, 2);
  }

  // An ALU kernel: dst = op(dst, src), or op(dst, imm).
  constexpr bool alu(AluOp op, bool use_imm, std::int64_t imm, std::uint32_t dst,
                     std::uint32_t src) {
    if (empty_ || nops_ == 0) return ok();
    const RegionAccess accesses[] = {{dst, true}, {src, false}};
    return fits(Opcode::Alu) && deps_.before(w_, Queue::Compute, accesses, 2) &&
           w_.alu(loops_, nloops_, ops_.data, nops_, op, use_imm, imm) &&
           after(Queue::Compute, accesses, 2);
  }

 private:
  // x_size = 0 makes a transfer a no-op on VTA: for a padded block it would also drop the
  // padding, so an empty row is an error, not a silent no-op (rows of padding only, with
  // y_size = 0, are what input loads write).
  constexpr bool sizes(Opcode op, MemId mem, std::int64_t y, std::int64_t x) {
    InsnFields f;
    f.opcode = op;
    f.memory_type = mem;
    if (y < 0) return w_.fail(Status::EmptyTransfer, f, Field::y_size, y);
    if (x < 1) return w_.fail(Status::EmptyTransfer, f, Field::x_size, x);
    return true;
  }
  constexpr bool element(Opcode op, std::size_t param, MemId mem, std::int64_t& out) {
    const std::uint64_t phys = phys_[param];
    const auto m = static_cast<std::size_t>(mem);
    if (elem_shift_[m] >= 0) {
      if ((phys & (elem_.of[m] - 1)) == 0) {
        out = static_cast<std::int64_t>(phys >> elem_shift_[m]);
        return true;
      }
    } else if (StreamWriter<Storage, Layout>::dram_elem(phys, elem_.of[m], out)) {
      return true;
    }
    InsnFields f;
    f.opcode = op;
    f.memory_type = mem;
    return w_.fail(Status::Misaligned, f, Field::dram_base, static_cast<std::int64_t>(phys));
  }
  constexpr bool fits(Opcode op) {
    if (nops_ <= ops_.capacity) return true;
    InsnFields f;
    f.opcode = op;
    return w_.fail(nops_ > uop_depth_ ? Status::KernelTooLarge : Status::UopsFull, f, Field::count,
                   static_cast<std::int64_t>(nops_));
  }
  constexpr bool after(Queue q, const RegionAccess* accesses, std::size_t n) {
    deps_.after(q, static_cast<std::int64_t>(w_.size()) - 1, accesses, n);
    return true;
  }

  StreamWriter<Storage, Layout>& w_;
  std::uint32_t uop_depth_;
  DepTracker deps_;
  ElemBytes elem_;
  const std::uint64_t* phys_;
  OpBuffer ops_;
  int elem_shift_[kMemIdCount] = {-1, -1, -1, -1, -1, -1};  // log2 of each element size
  KernelLoop loops_[2] = {};
  std::size_t nloops_ = 0, nops_ = 0;
  bool empty_ = false;
};

}  // namespace dlavm::runtime
