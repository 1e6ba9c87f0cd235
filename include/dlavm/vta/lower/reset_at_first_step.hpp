// An accumulator's reset moved into the first step of the reduction that follows it, right
// before the step's first GEMM. With two virtual threads a block ends with thread 0's
// epilogue and store, then thread 1's, and the next block begins with both threads' resets:
// thread 1's reset must wait until its store has read the accumulator block (a hazard the
// dependency tokens enforce), while the compute module has only thread 0's reset to run
// meanwhile. Inside the first step, thread 1's reset follows thread 0's first GEMMs instead,
// and the store drains behind them (in ResNet-18, about 450 cycles a block).
//
//   attr [gemm_reset] { acc = 0 }                  @vta.load(inp, ...; ic = 0)
//   for (ic.outer, 0, 4) {                    ->   attr [gemm_reset] { acc = 0 }
//     @vta.load(inp, ...)                          attr [gemm] { gemm(acc, ...; ic = 0) }
//     attr [gemm] { gemm(acc, ...) }               for (ic.outer, 1, 3) { ... }
//   }
//
// It applies inside virtual-thread loops, to a kernel that only resets accumulator `acc`
// followed by a serial loop of constant bounds, or by the allocations of a reduction of one
// step, whose body (under its allocations) holds a GEMM kernel into `acc` with nothing before
// it touching `acc`. The reset and the loads of the
// first step touch different buffers, so the order between them is free; the values are the
// same.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/tir/stmt.hpp>

namespace dlavm::vta {

// Runs after fold_uops (it reads micro-op kernels), before inject_vthread.
tir::Stmt reset_at_first_step(const tir::Stmt& body);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/lower/reset_at_first_step-inl.hpp>
#endif
