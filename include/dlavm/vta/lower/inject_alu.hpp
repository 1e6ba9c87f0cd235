// ALU injection: nests under `pragma_alu` become loops over accumulator tiles around vta.alu
// calls, one call per tile; FoldUops then turns those loops into micro-op loops.
//
//   r[i] = a[i] + b[i]   ->  for (t, 0, tiles) @vta.alu(r, b; add, 0, 0, r0 + t, b0 + t)
//   r[i] = r[i] >> 8     ->  for (t, 0, tiles) @vta.alu(r, r; shr, 1, 8, r0 + t, r0 + t)
//   p[i] = max over (dy, dx) of d[2i + dy*W + dx]   (te::max under the alu pragma)
//                        ->  for (t) @vta.gemm_reset(p; t)
//                            for (t) @vta.alu(p, d; add, 0, 0, t, 2t)
//                            for (dy', 0, ky - 1) for (dx, 0, kx) for (t) @vta.alu(p, d; max, ...)
//                            for (dx', 0, kx - 1) for (t) @vta.alu(p, d; max, ...)
//
// VTA's ALU updates its destination in place: `dst = op(dst, src | imm)`; it has no move. A
// stage whose first operand is another buffer is first copied there: a GEMM reset zeroes the
// tiles (one cycle per tile; the ALU's MUL by 0 takes two) and an ADD brings the operand in;
// the storage-reuse pass makes most element-wise stages in place so that this is rare.
// Supported:
//   - element-wise: min, max, add, shift right and multiply, of a tile by a tile or an
//     immediate; subtraction and shift left of an immediate map onto add and shift right. A
//     multiply or shift by a tile takes each lane's multiplier or amount from the second
//     operand: VTA's compute module reads only its low 8 bits (signed) or low LOG_ACC_WIDTH
//     bits ([-16, 15]), the simulators the whole value, so keep those lanes in range;
//   - constant fills `dst[i] = c`: a reset, then ADD c (c outside the 16-bit immediate is
//     built as (hi << 16) + lo: two to five ALU passes); a value of the loops that move whole
//     tiles alone (`te::select(k == 0, c0, c1)`: rows of different constants, at most 64) is
//     one reset of every tile, then each row's ADDs;
//   - a MIN or MAX of each tile with its mirror image in one loop, in place (the storage pass
//     puts it there): `m[k] = min(m[k], m[1 - k])` is one instruction of a micro-op a tile,
//     whose later micro-ops may read the earlier ones' results or not, the same minimum;
//   - reductions te::max / te::min / te::sum of an accumulator tile over window loops whose
//     extents do not depend on the output loops (pooling): each window element is one ALU
//     instruction over the output tiles; a sum is a reset and one ADD per element, a max or
//     min a reset, an ADD of the first element and a MAX/MIN per other element. Without a
//     move, k elements need k + 1 passes over the output; the reset makes one of them a GEMM
//     pass of one cycle per tile;
//   - a guard from a split whose factor does not divide the extent, when it bounds single
//     loops: the loops are clipped to the iterations it keeps.
// Immediates are checked against what the hardware takes: the 16-bit immediate field and the
// 8-bit multiplier argument (VTA_MUL_ARG_BIT_WIDTH); a shift by up to 31 wider than the shift
// argument (VTA_SHR_ARG_BIT_WIDTH, [-16, 15] for 32-bit accumulators) becomes several shifts,
// exact for an arithmetic shift: x >> 24 is (x >> 15) >> 9. Messages name the stage (the buffer the
// nest stores into before the storage pass renames it: check_alu runs then).
//
// Intrinsics: vta.alu(dst_buf, src_buf; op, use_imm, imm, dst_tile, src_tile),
// vta.gemm_reset(dst_buf; dst_tile).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/tir/stmt.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <cstdint>
#include <utility>

namespace dlavm::vta {

// Nests under `pragma_alu` become vta.alu calls (see above).
tir::Stmt inject_alu(const tir::Stmt& body, const Env& env);

// Raises the errors inject_alu would raise for `body`, changing nothing: run on te::lower's
// output, before the storage pass renames buffers, so that messages name the stages.
void check_alu(const tir::Stmt& body, const Env& env);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/lower/inject_alu-inl.hpp>
#endif
