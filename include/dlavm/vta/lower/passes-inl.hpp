// Definitions for dlavm/vta/lower/passes.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/tir/lower.hpp>
#include <dlavm/tir/storage_rewrite.hpp>
#include <dlavm/tir/unroll.hpp>
#include <dlavm/tir/vthread.hpp>
#include <dlavm/vta/lower/fold_uop.hpp>
#include <dlavm/vta/lower/gemm_into_acc.hpp>
#include <dlavm/vta/lower/inject_alu.hpp>
#include <dlavm/vta/lower/inject_dma.hpp>
#include <dlavm/vta/lower/load_acc_init.hpp>
#include <dlavm/vta/lower/nest.hpp>
#include <dlavm/vta/lower/passes.hpp>
#include <dlavm/vta/lower/reset_at_first_step.hpp>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dlavm::vta {

// The module that runs a VTA intrinsic call: load (inp/wgt loads), compute (accumulator and
// micro-op loads, GEMM, ALU), store.
DLAVM_INLINE Queue queue_of_call(const te::CallNode& c) {
  if (c.name == intrin::store) return Queue::Store;
  if (c.name == intrin::load) {
    const auto mem = static_cast<MemId>(c.args[0].as<te::IntImmNode>()->value);
    return mem == MemId::Inp || mem == MemId::Wgt ? Queue::Load : Queue::Compute;
  }
  return Queue::Compute;
}

DLAVM_INLINE std::string unmapped_stage_message(const tir::Stmt& body, const te::Buffer& b,
                                                const Env& env) {
  struct Stores : tir::StmtVisitor<Stores> {
    const te::BufferNode* buffer;
    std::string alu_key;
    int alu_depth = 0;
    std::vector<const tir::StoreNode*> found;
    std::vector<bool> under_alu;
    void visit_attr(const tir::AttrNode& n, const tir::Stmt&) {
      alu_depth += n.key == alu_key;
      visit(n.body);
      alu_depth -= n.key == alu_key;
    }
    void visit_store(const tir::StoreNode& n, const tir::Stmt&) {
      if (n.buffer.get() != buffer) return;
      found.push_back(&n);
      under_alu.push_back(alu_depth > 0);
    }
  } stores;
  stores.buffer = b.get();
  stores.alu_key = "pragma_" + env.alu;
  stores.visit(body);
  // A reduction stores its init (a constant) and its update `b = combine(b, source)`.
  const tir::StoreNode* update = nullptr;
  for (const auto* st : stores.found)
    if (update == nullptr && st->value.as<te::IntImmNode>() == nullptr) update = st;
  const auto* bin = update ? update->value.as<te::BinaryNode>() : nullptr;
  const auto* acc = bin ? bin->a.as<te::LoadNode>() : nullptr;
  const auto& name = b.name();
  if (acc != nullptr && acc->buffer.same_as(b) && stores.found.size() > 1) {
    const auto* product = bin->b.as<te::BinaryNode>();
    if (bin->kind() == te::ExprKind::Add && product && product->kind() == te::ExprKind::Mul)
      return fmt::format(
          "stage '{}' is not mapped to VTA: it is a sum of products, `{}`, which VTA computes on "
          "its GEMM core: tensorize it, s[{}].tensorize(axis, env.gemm), at the axis whose loops "
          "inward are a {}x{} output tile and a {}-element reduction",
          name, bin->b, name, env.batch, env.block_out, env.block_in);
    const char* what = bin->kind() == te::ExprKind::Add   ? "sum"
                       : bin->kind() == te::ExprKind::Max ? "max"
                                                          : "min";
    const auto at = std::find(stores.found.begin(), stores.found.end(), update);
    if (stores.under_alu[static_cast<std::size_t>(at - stores.found.begin())])
      return fmt::format(
          "stage '{}': the {} pragma covers the update of its {} reduction but not its init "
          "(`{} = {}`), which te::lower puts outside the first reduction loop; put the pragma on "
          "the stage's outermost loop, so that it covers both",
          name, env.alu, what, name, stores.found.front()->value);
    return fmt::format(
        "stage '{}' is not mapped to VTA: it is a {} reduction of `{}`; run it on the ALU with "
        "the {} pragma (s[{}].pragma(s[{}].axis(0), env.{})), which reduces accumulator tiles "
        "one window element per instruction",
        name, what, bin->b, env.alu, name, name, env.alu);
  }
  const auto* st = update ? update : (stores.found.empty() ? nullptr : stores.found.front());
  return fmt::format(
      "stage '{}' is not mapped to VTA: it computes `{}`; copy it with the {} pragma, compute "
      "it with the {} pragma, or tensorize it with env.gemm",
      name, st ? fmt::format("{}", st->value) : std::string("?"), env.dma_copy, env.alu);
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
// element-wise stage or a reduction under alu; tensorized stages have no stores left). Checked
// before the storage pass renames buffers, so that the message names the stage the user wrote.
class CheckMapped : public tir::StmtVisitor<CheckMapped> {
 public:
  CheckMapped(const Env& env, const tir::Stmt& root) : env_(env), root_(root) {}
  void visit_attr(const tir::AttrNode& n, const tir::Stmt&) {
    const bool mapped = n.key == "pragma_" + env_.dma_copy || n.key == "pragma_" + env_.alu;
    depth_ += mapped;
    visit(n.body);
    depth_ -= mapped;
  }
  void visit_seq(const tir::SeqNode& n, const tir::Stmt&) {
    // A reduction's init that te::lower put in front of the alu pragma is the pragma's.
    for (std::size_t k = 0; k < n.seq.size(); ++k)
      if (k + 1 >= n.seq.size() || !init_before(n.seq[k], n.seq[k + 1], "pragma_" + env_.alu))
        visit(n.seq[k]);
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
    raise<ScheduleError>("{}", unmapped_stage_message(root_, n.buffer, env_));
  }

 private:
  const Env& env_;
  const tir::Stmt& root_;
  int depth_ = 0;
};

}  // namespace detail

// Replaces virtual-thread loops, grouping each module's consecutive statements; a store joins
// the compute statements before it. Each thread's store then follows its own epilogue in the
// stream, not the last thread's: the store module drains thread 0's block while the compute
// module runs thread 1's epilogue, and thread 0's next block, which reuses that accumulator
// block, need not wait for a store issued after every thread's epilogue. (Tokens follow data
// hazards, vta/hw/dep_tracker.hpp, so thread 1's compute does not wait for thread 0's store.)
DLAVM_INLINE tir::Stmt inject_vthread(const tir::Stmt& s) {
  detail::CheckVThreadWrites().visit(s);
  return tir::inject_virtual_threads(s, [](const tir::Stmt& leaf) {
    const auto* e = leaf.as<tir::EvaluateNode>();
    const auto* c = e ? e->value.as<te::CallNode>() : nullptr;
    if (c == nullptr) return 0;
    const Queue q = queue_of_call(*c);
    return static_cast<int>(q == Queue::Store ? Queue::Compute : q);
  });
}

// The function after te::lower and after each VTA pass, in order.
DLAVM_INLINE std::vector<LoweringStep> lower_passes(schedule::Schedule& s,
                                                    const std::vector<te::Tensor>& args,
                                                    const Env& env, std::string name) {
  std::vector<LoweringStep> steps;
  tir::PrimFunc f = te::lower(s, args, std::move(name));
  steps.push_back({"te.lower", f});
  // unrolled first: an ALU immediate may depend on an unrolled loop (a byte plane's shift)
  f.body = tir::unroll_loops(f.body);
  steps.push_back({"unroll_loops", f});
  detail::CheckMapped(env, f.body).visit(f.body);
  check_alu(f.body, env);
  const auto step = [&](const char* pass, auto&& fn) {
    f.body = fn(f.body);
    steps.push_back({pass, f});
  };
  step("reuse_inplace", [](const tir::Stmt& b) { return tir::reuse_inplace(b); });
  step("inject_dma", [&](const tir::Stmt& b) { return inject_dma(b, env); });
  step("inject_alu", [&](const tir::Stmt& b) { return inject_alu(b, env); });
  step("fold_uops", [&](const tir::Stmt& b) { return fold_uops(b, env); });
  step("load_acc_init", [](const tir::Stmt& b) { return load_acc_init(b); });
  step("gemm_into_acc", [](const tir::Stmt& b) { return gemm_into_acc(b); });
  step("reset_at_first_step", [](const tir::Stmt& b) { return reset_at_first_step(b); });
  step("inject_vthread", [](const tir::Stmt& b) { return inject_vthread(b); });
  return steps;
}

// The TIR of schedule s with VTA intrinsics: te::lower followed by the VTA passes.
DLAVM_INLINE tir::PrimFunc lower(schedule::Schedule& s, const std::vector<te::Tensor>& args,
                                 const Env& env, std::string name) {
  return lower_passes(s, args, env, std::move(name)).back().func;
}

}  // namespace dlavm::vta
