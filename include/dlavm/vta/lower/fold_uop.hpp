// Micro-op folding: a loop nest whose leaves are all one kind of compute call (vta.gemm,
// vta.gemm_reset, or vta.alu with one operation and immediate) becomes one GEMM or ALU
// instruction, the way TVM's VTA flow builds a micro-op kernel:
//   - its two outermost loops become the instruction's two micro-op loop levels (iter_out,
//     iter_in), their strides in each operand becoming the dst/src/wgt factors;
//   - the loops inside them are unrolled into the kernel's micro-op list.
// A loop stays a host loop around the instruction when it cannot be a level (operands not
// linear in it with one stride, a negative or too wide factor, an extent wider than the
// iteration field) and the list inside would not fit the micro-op buffer. An ALU kernel
// updates each accumulator entry once (VTA's ALU pipeline does not forward a result to a later
// micro-op of the same instruction): a loop that does not move an ALU call's destination (a
// reduction window) stays a host loop. The result:
//
//   attr [gemm] vta.uop_kernel = 126 {
//     @vta.uop_loop_begin(8, 98, 0, 9)          // extent, dst, src, wgt factor
//     @vta.uop_loop_begin(7, 14, 16, 0)
//     for (dy, 0, 3) { for (dx, 0, 3) { for (j, 0, 14) {
//       @vta.gemm(res_conv, data_buf, kernel_buf; j, (dy*16) + dx + j, (dy*3) + dx)
//     } } }
//     @vta.uop_loop_end()
//     @vta.uop_loop_end()
//   }
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/tir/stmt.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <cstdint>
#include <utility>

namespace dlavm::vta {

// Nests of GEMM / ALU calls become micro-op kernels (see above).
tir::Stmt fold_uops(const tir::Stmt& body, const Env& env);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/lower/fold_uop-inl.hpp>
#endif
