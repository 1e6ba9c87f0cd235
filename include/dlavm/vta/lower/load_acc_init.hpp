// Loading an addend as the accumulator's initial value. A kernel that resets an accumulator
// block, accumulates into it (GEMMs, ADDs of other operands) and then adds a block it loaded
// for that purpose alone (a residual: an epilogue's Tensor operand) pays for the reset and the
// ADD, two of the compute module's micro-op slots per tile. The load can go into the
// accumulator in place of the reset instead: the block starts as the addend and the GEMMs
// accumulate onto it. Integer addition wraps at 32 bits in the GEMM core and the ALU alike, so
// the sum is the same whatever the order of its terms.
//
//   attr [gemm_reset] { acc[i] = 0 }            @vta.load(acc, res; 5, ...)   // into acc
//   for (ic.outer ...) { gemm(acc, ...) }        for (ic.outer ...) { gemm(acc, ...) }
//   attr [alu.add] { acc += bias }          ->   attr [alu.add] { acc += bias }
//   @vta.load(res_buf, res; 5, ...)
//   attr [alu.add] { acc += res_buf }
//
// The rewrite applies to statements of one sequence where:
//   - a micro-op kernel only resets accumulator `acc`;
//   - a later ALU ADD kernel adds buffer `b` (not `acc`, no immediate) into `acc`, and a
//     statement between them loads `b` (one load, or loads in serial loops: a block the 2-D
//     DMA moves in several transfers), which nothing else in the function reads or writes;
//   - every statement between the reset and that ADD touches `acc` only by accumulating into
//     it (GEMMs, ADDs of an immediate or another buffer), and a GEMM does;
//   - the ADD maps the loaded entries one to one onto the reset ones at a constant distance:
//     shown entry by entry where every extent, offset and size is a constant; where extents
//     read symbolic dims (the partial last block of an LLM's token rows), shown when the reset,
//     both sides of the ADD and the load (one transfer) each cover a dense range, of sizes
//     that simplify to the same expression.
// The loaded buffer's allocation goes with it. Anything else is left as it is: a symbolic
// block with gaps between its rows (a partial block of a padded width) keeps its reset and
// ADD.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/tir/stmt.hpp>

namespace dlavm::vta {

// Runs after fold_uops (it reads micro-op kernels), before inject_vthread.
tir::Stmt load_acc_init(const tir::Stmt& body);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/lower/load_acc_init-inl.hpp>
#endif
