// The VTA lowering pipeline, TIR to TIR. After te::lower:
//   reuse_inplace     element-wise stages write into their input's buffer (tir)
//   inject_dma        copy nests under `pragma_dma_copy` -> vta.load / vta.store (2D, padded)
//   inject_alu        element-wise nests under `pragma_alu` -> vta.alu per accumulator tile
//   fold_uops         nests of GEMM / ALU calls -> micro-op kernels with two loop levels
//   inject_vthread    virtual-thread loops -> interleaved threads with their own buffers
// Every step is printable (vta::lower_passes returns each function in turn). Mistakes raise a
// dlavm::Error naming the buffer and the numbers: a copy VTA cannot express, an ALU
// operation it lacks, an immediate too wide for the hardware, a thread writing shared data.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/schedule.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/tir/storage_rewrite.hpp>
#include <dlavm/tir/vthread.hpp>
#include <dlavm/vta/env.hpp>
#include <dlavm/vta/fold_uop.hpp>
#include <dlavm/vta/inject_alu.hpp>
#include <dlavm/vta/inject_dma.hpp>

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dlavm::vta {

// The module that runs a VTA intrinsic call: load (inp/wgt loads), compute (accumulator and
// micro-op loads, GEMM, ALU), store.
inline Queue queue_of_call(const te::CallNode& c) {
  if (c.name == intrin::store) return Queue::Store;
  if (c.name == intrin::load) {
    const auto mem = static_cast<MemId>(c.args[0].as<te::IntImmNode>()->value);
    return mem == MemId::Inp || mem == MemId::Wgt ? Queue::Load : Queue::Compute;
  }
  return Queue::Compute;
}

// The on-chip buffer an intrinsic call writes, if any.
inline const te::BufferNode* written_by(const te::CallNode& c) {
  if (c.name == intrin::load || c.name == intrin::gemm || c.name == intrin::gemm_reset ||
      c.name == intrin::alu)
    return c.buffers.empty() ? nullptr : c.buffers[0].get();
  return nullptr;
}

namespace detail {

// Threads of a virtual-thread loop may be interleaved only if none writes an on-chip buffer
// the others see: every buffer written inside the loop must be allocated inside it.
class CheckVThreadWrites : public tir::StmtVisitor<CheckVThreadWrites> {
 public:
  void visit_for(const tir::ForNode& n, const tir::Stmt&) {
    if (n.for_kind != tir::ForKind::VThread) return visit(n.body);
    threads_.push_back({n.var.name(), {}});
    visit(n.body);
    threads_.pop_back();
  }
  void visit_allocate(const tir::AllocateNode& n, const tir::Stmt&) {
    if (!threads_.empty()) threads_.back().local.insert(n.buffer.get());
    visit(n.body);
  }
  void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
    if (threads_.empty()) return;
    const auto* c = n.value.as<te::CallNode>();
    const auto* w = c ? written_by(*c) : nullptr;
    if (w == nullptr || w->scope == "global") return;
    for (const auto& t : threads_)
      if (t.local.count(w) == 0)
        raise<ScheduleError>(
            "virtual thread '{}' writes buffer '{}', which is allocated outside the thread loop "
            "and so shared by the threads; compute '{}' at a loop inside the thread axis",
            t.name, w->name, w->name);
  }

 private:
  struct Thread {
    std::string name;
    std::unordered_set<const te::BufferNode*> local;
  };
  std::vector<Thread> threads_;
};

// After te::lower: every computation must be one VTA maps (a copy under dma_copy, an
// element-wise stage under alu; tensorized stages have no stores left). Checked before the
// storage pass renames buffers, so that the message names the stage the user wrote.
class CheckMapped : public tir::StmtVisitor<CheckMapped> {
 public:
  explicit CheckMapped(const Env& env) : env_(env) {}
  void visit_attr(const tir::AttrNode& n, const tir::Stmt&) {
    const bool mapped = n.key == "pragma_" + env_.dma_copy || n.key == "pragma_" + env_.alu;
    depth_ += mapped;
    visit(n.body);
    depth_ -= mapped;
  }
  void visit_store(const tir::StoreNode& n, const tir::Stmt&) {
    if (depth_ > 0) return;
    te::Expr v = n.value;
    if (const auto* c = v.as<te::CastNode>()) v = c->value;
    if (const auto* l = v.as<te::LoadNode>(); l && l->buffer.scope() == "global")
      raise<ScheduleError>(
          "stage '{}' fills {} from DRAM tensor '{}' without the {} pragma; VTA moves data "
          "into its SRAM only by DMA",
          n.buffer.name(), n.buffer.scope(), l->buffer.name(), env_.dma_copy);
    raise<ScheduleError>(
        "stage '{}' is not mapped to VTA: copy it with the {} pragma, compute it with the {} "
        "pragma, or tensorize it with env.gemm (`{}`)",
        n.buffer.name(), env_.dma_copy, env_.alu, n.value);
  }

 private:
  const Env& env_;
  int depth_ = 0;
};

}  // namespace detail

// Replaces virtual-thread loops, grouping each module's consecutive statements.
inline tir::Stmt inject_vthread(const tir::Stmt& s) {
  detail::CheckVThreadWrites().visit(s);
  return tir::inject_virtual_threads(s, [](const tir::Stmt& leaf) {
    const auto* e = leaf.as<tir::EvaluateNode>();
    const auto* c = e ? e->value.as<te::CallNode>() : nullptr;
    return c ? static_cast<int>(queue_of_call(*c)) : 0;
  });
}

// One step of the pipeline: its name and the function after it.
struct LoweringStep {
  std::string pass;
  tir::PrimFunc func;
};

// The function after te::lower and after each VTA pass, in order.
inline std::vector<LoweringStep> lower_passes(schedule::Schedule& s,
                                              const std::vector<te::Tensor>& args, const Env& env,
                                              std::string name = "main") {
  std::vector<LoweringStep> steps;
  tir::PrimFunc f = te::lower(s, args, std::move(name));
  detail::CheckMapped(env).visit(f.body);
  steps.push_back({"te.lower", f});
  const auto step = [&](const char* pass, auto&& fn) {
    f.body = fn(f.body);
    steps.push_back({pass, f});
  };
  step("reuse_inplace", [](const tir::Stmt& b) { return tir::reuse_inplace(b); });
  step("inject_dma", [&](const tir::Stmt& b) { return InjectDma(env).visit(b); });
  step("inject_alu", [&](const tir::Stmt& b) { return InjectAlu(env).visit(b); });
  step("fold_uops", [&](const tir::Stmt& b) { return FoldUops(env).visit(b); });
  step("inject_vthread", [](const tir::Stmt& b) { return inject_vthread(b); });
  return steps;
}

// The TIR of schedule s with VTA intrinsics: te::lower followed by the VTA passes.
inline tir::PrimFunc lower(schedule::Schedule& s, const std::vector<te::Tensor>& args,
                           const Env& env, std::string name = "main") {
  return lower_passes(s, args, env, std::move(name)).back().func;
}

}  // namespace dlavm::vta
