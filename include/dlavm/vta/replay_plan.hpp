// vta::detail::ReplayPlan: a program's host loops and intrinsic calls flattened once, when the
// program is built, for instantiation (Program::instantiate, Program::write). Instantiating
// replays them for new values of the symbolic dims; walking the loop IR for that would look up
// every variable by name and evaluate every field as a tree, every time. The plan is a flat
// list of operations with jumps for the loops and branches, each intrinsic's buffers resolved
// to their SRAM base, region and parameter, and each field compiled: an affine field (most of
// them: an offset plus constant multiples of loop variables and dims) as its terms over a
// register file of [dims | loop variables], any other through ne::compile. An affine field is
// used only where interval bounds over the loops' ranges show it cannot overflow; the rest
// keep ne::eval's checks.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/compile.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/runtime/replay.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/vta/hw/builder.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dlavm::vta {

class Program;

namespace detail {

class ReplayPlan {
 public:
  explicit ReplayPlan(const Program& p);

  // Program p's instructions (p: the program the plan was made from) for `bindings` with
  // parameter k at DRAM address phys[k], written to b (without FINISH).
  void write(const Program& p, Builder& b, std::span<const ne::Binding> bindings,
             std::span<const std::uint64_t> phys) const;

  // A kernel's micro-ops depend on the registers of the loops around it only through `keys`
  // (indices into keys_): within one instantiation, a kernel entered again with the same
  // values there repeats the loop_begin and push calls it made before, which write() then
  // replays without evaluating their fields.
  struct Kernel {
    std::uint32_t first_key = 0, keys = 0;
  };

  // Fields compiled as affine terms, and through ne::compile (for tests and diagnostics).
  // (a general field of the dims alone is read from the register it is computed into once)
  std::size_t affine_fields() const { return fields_.size() - general_fields(); }
  std::size_t general_fields() const { return general_.size() - invariants_.size(); }

  enum class OpKind : std::uint8_t {
    For,          // fields: min, extent; jump: past its EndFor
    EndFor,       // jump: its body's first operation
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
    const te::CallNode* call = nullptr;  // its intrinsic (messages; the kernel's instruction)
  };

 private:
  friend class PlanCompiler;
  // value = constant + sum(coef * register), or general_[general] over `count` registers
  struct Field {
    std::int64_t constant = 0;
    std::uint32_t first = 0, count = 0;  // into terms_ (affine) or args_ (general)
    std::int32_t general = -1;
  };
  struct Term {
    std::uint32_t slot = 0;
    std::int64_t coef = 0;
  };
  struct Symbol {
    ne::Var var;  // bound by name, checked against its range
    std::uint32_t slot = 0;
  };

  // A field's value for the registers: affine ones inline, the others through general().
  std::int64_t value(std::uint32_t field, const std::int64_t* regs) const {
    const Field& f = fields_[field];
    if (f.general >= 0) [[unlikely]]
      return general(f, regs);
    std::int64_t v = f.constant;
    for (const Term *t = terms_.data() + f.first, *end = t + f.count; t != end; ++t)
      v += t->coef * regs[t->slot];
    return v;
  }
  std::int64_t general(const Field& f, const std::int64_t* regs) const;
  // The dims' registers from the bindings (ValueError for one missing or out of its range),
  // then the registers computed from them alone.
  void bind(std::span<const ne::Binding> bindings, std::int64_t* regs) const;
  // The replay's failure at `op` as the error the host raises (naming the program, the buffers
  // and the numbers).
  void raise_failure(const Program& p, Builder& b, const runtime::Replay<HostStreamStorage>& replay,
                     const Op& op, const std::int64_t* regs) const;

  std::vector<Op> ops_;
  std::vector<Field> fields_;
  std::vector<Term> terms_;
  std::vector<std::uint32_t> args_;
  std::vector<Kernel> kernels_;      // by kernel number
  std::vector<std::uint32_t> keys_;  // registers
  std::vector<ne::CompiledExpr> general_;
  std::vector<Symbol> symbols_;
  // general fields of the dims alone, each computed into a register once per instantiation
  std::vector<std::pair<Field, std::uint32_t>> invariants_;
  std::uint32_t registers_ = 0;
};

}  // namespace detail
}  // namespace dlavm::vta
