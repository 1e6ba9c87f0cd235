// The VTA lowering pipeline, TIR to TIR. After te::lower (and two checks on the stages as
// written: every stage is mapped, every alu nest is one the ALU runs):
//   reuse_inplace     element-wise stages write into their input's buffer (tir)
//   inject_dma        copy nests under `pragma_dma_copy` -> vta.load / vta.store (2D, padded,
//                     strided, ACC_8BIT; padding in the accumulator -> an alu fill + loads)
//   inject_alu        nests under `pragma_alu` -> vta.alu per accumulator tile (element-wise,
//                     constant fills, max/min/sum reductions one instruction per element)
//   fold_uops         nests of GEMM / ALU calls -> micro-op kernels with two loop levels
//   load_acc_init     a block loaded only to be added to an accumulator -> loaded into it in
//                     place of its reset
//   gemm_into_acc     a block of GEMMs only to be added to an accumulator (a bias through the
//                     GEMM core) -> GEMMs into the accumulator
//   reset_at_first_step  under virtual threads, an accumulator's reset -> inside the first
//                     reduction step, before its GEMMs (a thread's store drains meanwhile)
//   inject_vthread    virtual-thread loops -> interleaved threads with their own buffers
// Every step is printable (vta::lower_passes returns each function in turn). Mistakes raise a
// dlavm::Error naming the stage or buffer and the numbers: a copy VTA cannot express, an ALU
// operation it lacks, an immediate too wide for the hardware, a thread writing shared data.
//
//   for (const auto& step : vta::lower_passes(s, {A, B, C}, env))
//     fmt::print("// after {}\n{}", step.pass, tir::to_string(step.func));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/tir/stmt.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <string>
#include <utility>
#include <vector>

namespace dlavm::vta {

// The module that runs a VTA intrinsic call: load (inp/wgt loads), compute (accumulator and
// micro-op loads, GEMM, ALU), store.
Queue queue_of_call(const te::CallNode& c);

// The on-chip buffer an intrinsic call writes, if any.
inline const te::BufferNode* written_by(const te::CallNode& c) {
  if (c.name == intrin::load || c.name == intrin::gemm || c.name == intrin::gemm_reset ||
      c.name == intrin::alu)
    return c.buffers.empty() ? nullptr : c.buffers[0].get();
  return nullptr;
}

// The message for a stage of `body` left as plain stores (into `b`): what it computes and how
// to map it (a reduction of products is a GEMM to tensorize, another reduction or an
// element-wise stage runs under the alu pragma, a copy under dma_copy).
std::string unmapped_stage_message(const tir::Stmt& body, const te::Buffer& b, const Env& env);

// Replaces virtual-thread loops, grouping each module's consecutive statements.
tir::Stmt inject_vthread(const tir::Stmt& s);

// One step of the pipeline: its name and the function after it.
struct LoweringStep {
  std::string pass;
  tir::PrimFunc func;
};

// The function after te::lower and after each VTA pass, in order.
std::vector<LoweringStep> lower_passes(schedule::Schedule& s, const std::vector<te::Tensor>& args,
                                       const Env& env, std::string name = "main");

// The TIR of schedule s with VTA intrinsics: te::lower followed by the VTA passes.
tir::PrimFunc lower(schedule::Schedule& s, const std::vector<te::Tensor>& args, const Env& env,
                    std::string name = "main");

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/lower/passes-inl.hpp>
#endif
