// ALU injection: element-wise nests under `pragma_alu` become loops over accumulator tiles
// around vta.alu calls, one call per tile; FoldUops then turns those loops into micro-op loops.
//
//   r[i] = a[i] + b[i]   ->  for (t, 0, tiles) @vta.alu(r, b; add, 0, 0, r0 + t, b0 + t)
//   r[i] = r[i] >> 8     ->  for (t, 0, tiles) @vta.alu(r, r; shr, 1, 8, r0 + t, r0 + t)
//
// VTA's ALU updates its destination in place: `dst = op(dst, src | imm)`. A stage whose first
// operand is another buffer is first copied there (dst = dst * 0; dst = dst + lhs); the
// storage-reuse pass makes most element-wise stages in place so that this is rare. Supported:
// min, max, add, shift right and multiply, of a tile by a tile or an immediate; subtraction
// and shift left of an immediate map onto add and shift right. Immediates are checked against
// what the hardware takes: the 16-bit immediate field, the 8-bit multiplier argument and the
// 5-bit shift argument (VTA_MUL_ARG_BIT_WIDTH, VTA_SHR_ARG_BIT_WIDTH).
//
// Intrinsic: vta.alu(dst_buf, src_buf; op, use_imm, imm, dst_tile, src_tile).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/tir/stmt.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <cstdint>
#include <utility>

namespace dlavm::vta {

// What the hardware accepts as an ALU immediate for `op`: [lo, hi].
std::pair<std::int64_t, std::int64_t> alu_imm_range(runtime::AluOp op, const Config& c);

// Element-wise nests under `pragma_alu` become vta.alu calls (see above).
tir::Stmt inject_alu(const tir::Stmt& body, const Env& env);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/lower/inject_alu-inl.hpp>
#endif
