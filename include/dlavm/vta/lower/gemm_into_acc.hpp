// A GEMM into a block of its own, added to an accumulator, done in the accumulator instead. A
// kernel whose epilogue adds a bias through the GEMM core (graph::Epilogue's ChannelWeights
// operand) computes it as a te stage of its own: a block reset, one GEMM micro-op per tile
// (the constant input row times the bias's int8 weights), and an ALU ADD of that block into
// the accumulator. The GEMMs can accumulate into the accumulator directly: the reset, the ADD
// and the block go, and the bias costs one GEMM cycle a tile instead of an ALU pass of two.
// Integer sums wrap alike in any order, so the result is the same.
//
//   attr [gemm_reset] { acc[i] = 0 }             attr [gemm_reset] { acc[i] = 0 }
//   for (ic.outer ...) { gemm(acc, ...) }        for (ic.outer ...) { gemm(acc, ...) }
//   attr [gemm_reset] { g[i] = 0 }          ->
//   @vta.load(unit, ...) @vta.load(wgt, ...)     @vta.load(unit, ...) @vta.load(wgt, ...)
//   attr [gemm] { gemm(g, unit, wgt) }           attr [gemm] { gemm(acc, unit, wgt) }
//   attr [alu.add] { acc += g }
//
// The rewrite applies to statements of one sequence where:
//   - an ALU ADD kernel adds buffer `g` (not `acc`, no immediate) into accumulator `acc`;
//   - before it, a micro-op kernel only resets `g`, and after that reset GEMM kernels
//     accumulate into `g` from buffers other than `acc` and `g`; nothing else in the function
//     reads or writes `g`;
//   - before the first of those GEMMs, `acc` is initialised (a kernel that only resets it, or a
//     load into it: vta::load_acc_init's), and every statement from there to the ADD touches
//     `acc` only by accumulating into it;
//   - the ADD maps the reset entries of `g` one to one onto entries of `acc` at a constant
//     distance, and the GEMMs write only reset entries: shown entry by entry where every extent
//     is a constant; where extents read symbolic dims, shown when the reset, both sides of the
//     ADD and each GEMM's destinations cover a dense range, of sizes that simplify to the same
//     expression.
// Anything else is left as it is.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/tir/stmt.hpp>

namespace dlavm::vta {

// Runs after fold_uops (it reads micro-op kernels) and load_acc_init, before inject_vthread.
tir::Stmt gemm_into_acc(const tir::Stmt& body);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/lower/gemm_into_acc-inl.hpp>
#endif
