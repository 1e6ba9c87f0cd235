// vta::detail::ReplayPlan: a program's host loops and intrinsic calls flattened once, when the
// program is built, for instantiation (Program::instantiate, Program::write). Instantiating
// replays them for new values of the symbolic dims; walking the loop IR for that would look up
// every variable by name and evaluate every field as a tree, every time. The plan is a flat
// list of operations with jumps for the loops and branches, each intrinsic's buffers resolved
// to their SRAM base, region and parameter, and each field compiled over a register file of
// [1 | dims | loop variables | values of the dims alone]: an affine field (an offset plus
// multiples of loop variables, whose coefficients may be dims or values of them) as its terms,
// a block's extent (min(token - i*64, 64), times a constant or subtracted from one) as an
// affine field clamped, any other through ne::compile. The first two are used only where
// interval bounds over the registers' ranges show they cannot overflow; the rest keep
// ne::eval's checks.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/compile.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/runtime/replay.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/tir/stmt.hpp>
#include <dlavm/vta/hw/builder.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlavm::vta {

// Where an on-chip buffer lives: its memory and first entry.
struct SramSlot {
  runtime::MemId memory;
  std::int64_t base = 0;  // entries
  std::int64_t entries = 0;
  std::uint32_t arm = 0;  // the arm of a condition on the dims it lives in (runtime::SramRegion)
};

// What re-instantiating a stream for other values of its dims needs (Program::reinstantiate),
// recorded as Program::instantiate writes it: the DRAM addresses it was written for and, in the
// order its replay meets them, the bounds of the loops and the conditions of the branches that
// read the dims (their values) and the transfers whose fields read them (their instructions).
// `valid` is false where a loop copy could not be followed or the entries would be too many.
struct StreamTape {
  struct Entry {
    std::uint32_t op = 0;  // the replay plan's operation
    // a loop's min, a branch's condition (0 or 1), or the instruction of a transfer or a
    // kernel (-1: a kernel that wrote none)
    std::int64_t value = 0;
    std::int64_t extent = 0;  // a loop's extent
  };
  // more entries than this (a long prefill's stream): not valid, none kept
  static constexpr std::size_t kMaxEntries = std::size_t{1} << 16;
  std::vector<Entry> entries;
  std::vector<std::uint64_t> phys;
  std::vector<std::int64_t> dims;  // the dims' values it was written for
  bool valid = false;
};

namespace detail {

// What a replay plan is made from and writes with: the parts of a built vta::Program
// (Program::replay_source), so that the plan does not depend on the class that holds it.
struct ReplaySource {
  const tir::PrimFunc& func;
  const Env& env;
  const std::unordered_map<const te::BufferNode*, SramSlot>& sram;
  const std::unordered_map<const te::BufferNode*, std::uint32_t>& region_of;
  const std::vector<runtime::SramRegion>& regions;
  std::size_t max_kernel_ops = 0;
  runtime::ElemBytes elem_bytes{};
  const std::string& name() const { return func.name; }
};

class ReplayPlan {
 public:
  explicit ReplayPlan(const ReplaySource& p);

  // Program p's instructions (p: the program the plan was made from) for `bindings` with
  // parameter k at DRAM address phys[k], written to b (without FINISH). `copy_loops`: the
  // memoized loops copy an iteration like the one before (runtime::LoopMemo); false writes
  // every call, the same words.
  void write(const ReplaySource& p, Builder& b, std::span<const ne::Binding> bindings,
             std::span<const std::uint64_t> phys, bool copy_loops = true,
             StreamTape* tape = nullptr) const;

  // Rewrites `insns`, written by write() with `tape` (into a builder of its own), for
  // `bindings`: true where the replay meets the same loop bounds and branches that read the
  // dims (the stream's shape, and so its kernels, micro-ops and dependency flags, unchanged),
  // its transfers' fields then rewritten in place; false, changing nothing, where it does not
  // or a new field is out of its range (write() then raises the error).
  bool repatch(const ReplaySource& p, std::span<runtime::InsnWord> insns, const StreamTape& tape,
               std::span<const ne::Binding> bindings) const;

  // A loop whose iterations may be copied (runtime::LoopMemo), as vta::replay_source memoizes
  // the same loops: outermost outside kernels, each value its body reads from its variable
  // (DRAM offsets aside) computable at the top of an iteration. Its keys (the fields
  // memo_keys_ lists from first_key) are those values; `affine`: its DRAM offsets move by one step
  // per iteration; `calls`: at most how many calls of an iteration write an instruction (capped).
  struct LoopMemo {
    std::uint32_t first_key = 0, keys = 0, calls = 1;
    bool affine = true;
  };
  std::size_t memoized_loops() const { return memos_.size(); }

  // A kernel's instruction depends on the loops around it only through `keys` (fields, from
  // first_key in keys_): within one instantiation, a kernel entered again with the same values
  // there writes the instruction it wrote before (runtime::StreamWriter::again), which write()
  // then does without evaluating its other fields or encoding its micro-ops.
  struct Kernel {
    std::uint32_t first_key = 0, keys = 0;
  };

  // The words of the last stream instantiated from the plan, by any thread: what the next
  // instantiation reserves. (Reserving the bound for any dims instead costs more than the
  // words: a stream far smaller than it leaves most of a large block untouched, whose fresh
  // pages the allocator may return to the system and take back on every instantiation.)
  std::pair<std::size_t, std::size_t> last_size() const {
    return {last_insns_.load(std::memory_order_relaxed),
            last_uops_.load(std::memory_order_relaxed)};
  }
  void set_last_size(std::size_t insns, std::size_t uops) const {
    last_insns_.store(insns, std::memory_order_relaxed);
    last_uops_.store(uops, std::memory_order_relaxed);
  }

  // Fields compiled through ne::compile (Program::general_fields); a general value of the
  // dims alone, computed once into a register, is not one.
  std::size_t general_fields() const { return general_.size() - invariants_.size(); }

  enum class OpKind : std::uint8_t {
    For,          // fields: min, extent; jump: past its EndFor
    Iteration,    // a memoized loop's iteration: jump: its EndFor (the body copied)
    EndFor,       // jump: its body's first operation (a memoized loop's Iteration)
    If,           // field: the condition; jump: the else branch, or past the branch
    Else,         // jump: past the else branch
    KernelBegin,  // jump: its KernelEnd; slot: the kernel's number; keys: see Kernel
    KernelEnd,    // the GEMM or ALU instruction of the kernel's last micro-op call
    LoopBegin,    // fields: extent, dst, src, wgt factors
    Push,         // a micro-op: fields dst, src, wgt offsets (ALU: op, use_imm, imm after them)
    Load,         // fields: memory, sram offset, dram offset, y, x, stride, 4 paddings
    Store,        // fields: sram offset, dram offset, y, x, stride
  };
  enum class Micro : std::uint8_t { Gemm, GemmReset, Alu };  // a Push's intrinsic
  struct Op {
    OpKind kind = OpKind::For;
    Micro micro = Micro::Gemm;
    std::uint32_t jump = 0;
    std::uint32_t slot = 0;   // For, EndFor: the loop variable's register
    std::uint32_t field = 0;  // the first of its fields
    std::uint32_t regions[3] = {};
    std::int64_t sram[3] = {};
    std::uint32_t param = 0;
    std::uint32_t memo = kNoMemo;        // For, Iteration, EndFor: its loop's memo (memos_)
    const te::CallNode* call = nullptr;  // its intrinsic (messages; the kernel's instruction)
  };
  static constexpr std::uint32_t kNoMemo = 0xffffffffu;
  // the entries a kernel site's memo holds (each its keys' values and what it wrote), the
  // oldest replaced: as many as a generated replay's that need more than one
  static constexpr int kKernelEntries = static_cast<int>(runtime::kKernelMemoEntries);

 private:
  friend class PlanCompiler;
  // value = constant + sum(coef * register a * register b) (b: a dim, a value computed from
  // dims alone, or the register holding 1), then, when clamped, post + scale * (that value
  // clamped to [lo, hi]) (the min(token - i*64, 64) of a block's rows); or general_[general]
  // over `count` registers.
  struct Field {
    std::int64_t constant = 0;
    std::uint32_t first = 0, count = 0;  // into terms_ (affine) or args_ (general)
    std::int32_t general = -1;
    bool clamped = false;
    std::int64_t lo = 0, hi = 0, scale = 1, post = 0;
  };
  struct Term {
    std::uint32_t a = 0, b = 0;
    std::int64_t coef = 0;
  };
  struct Symbol {
    ne::Var var;  // bound by name, checked against its range
    std::uint32_t slot = 0;
  };

  // A field's value for the registers: affine ones inline, the others through general().
  [[gnu::always_inline]] std::int64_t value(std::uint32_t field, const std::int64_t* regs) const {
    const Field& f = fields_[field];
    if (f.general >= 0) [[unlikely]]
      return general(f, regs);
    std::int64_t v = f.constant;
    for (const Term *t = terms_.data() + f.first, *end = t + f.count; t != end; ++t)
      v += t->coef * regs[t->a] * regs[t->b];
    if (f.clamped) v = f.post + (f.scale * (v < f.lo ? f.lo : v > f.hi ? f.hi : v));
    return v;
  }
  std::int64_t general(const Field& f, const std::int64_t* regs) const;
  // The dims' registers from the bindings (ValueError for one missing or out of its range),
  // then the registers computed from them alone.
  void bind(std::span<const ne::Binding> bindings, std::int64_t* regs) const;
  // The replay's failure at `op` as the error the host raises (naming the program, the buffers
  // and the numbers).
  void raise_failure(const ReplaySource& p, Builder& b,
                     const runtime::Replay<HostStreamStorage>& replay, const Op& op,
                     const std::int64_t* regs) const;

  // The dims a field reads (a bit per dim, symbols_' order), given those of each register.
  std::uint64_t dims_read(const Field& f, const std::vector<std::uint64_t>& dims) const;
  // After compiling: the dims each operation reads (reads_dims_), and the kernels.
  void find_dim_reads();
  // repatch's rewrite of the kernel at KernelBegin `at` (its micro-op loops).
  bool kernel_loops(std::uint32_t at, const std::int64_t* r, const runtime::IsaLayout& layout,
                    std::span<const runtime::InsnWord> insns, const StreamTape::Entry* e,
                    std::vector<std::pair<std::size_t, runtime::InsnWord>>& patches) const;

  std::vector<Op> ops_;
  // per operation: the dims a loop's bounds, a branch's condition or a transfer's fields read
  // (StreamTape), and those any kernel reads
  std::vector<std::uint64_t> reads_dims_;
  std::uint64_t kernel_dims_ = 0;
  std::vector<Field> fields_;
  std::vector<Term> terms_;
  std::vector<std::uint32_t> args_;
  std::vector<Kernel> kernels_;  // by kernel number
  std::vector<LoopMemo> memos_;
  std::vector<std::uint32_t> memo_keys_;  // fields
  std::vector<std::uint32_t> keys_;       // fields
  std::vector<ne::CompiledExpr> general_;
  std::vector<Symbol> symbols_;
  // general fields of the dims alone, each computed into a register once per instantiation
  std::vector<std::pair<Field, std::uint32_t>> invariants_;
  std::uint32_t registers_ = 0;
  mutable std::atomic<std::size_t> last_insns_{0}, last_uops_{0};
  static constexpr std::uint32_t kOne = 0;  // the register holding 1
};

}  // namespace detail
}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/replay_plan-inl.hpp>
#endif
