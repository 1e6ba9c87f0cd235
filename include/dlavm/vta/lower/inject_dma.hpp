// DMA injection: copy nests under `pragma_dma_copy` become vta.load / vta.store calls, VTA's
// 2D strided transfers of whole SRAM entries, with host loops around them for what one
// transfer cannot express.
//
// A nest `dst[f(i)] = src[g(i)]` (or `= select(inside(i), src[g(i)], 0)` for a padded input,
// as te::pad writes it) is read as dims (loops merged where both sides are contiguous):
//   x   the innermost dim, unit stride on both sides, a whole number of tiles: x_size
//   y   the next dim, when its SRAM rows follow each other densely: y_size, and its DRAM
//       stride in tiles is x_stride (folded only while that fits the 16-bit field)
//   the rest stay host loops, one transfer per iteration.
// Padding: each conjunct of `inside` bounds one loop (`lo <= i` or `i <= hi`, in outer loop
// variables), giving pad counts max(lo, 0) and max(extent - 1 - hi, 0) that may depend on
// host loops (the first and last block of a convolution). Along the x and y dims they become
// the LOAD's pad fields, in tiles and rows; along a host loop, its padded iterations load
// boxes of padding rows only (y_size 0). VTA pads only input loads, with zeros: a padded
// buffer in the accumulator gets its border filled with the pad value by an ALU nest (a
// `pragma_alu` nest storing the constant, which inject_alu lowers), then its interior loaded
// without padding (the loops clipped to the interior):
//   acc[i] = select(1 <= i && i < 5, src[i - 1], -128)
//     ->  attr pragma_alu { acc[0] = -128 }  attr pragma_alu { acc[5] = -128 }
//         vta.load(acc, src; ...) of rows 1..4
// A source narrower than the accumulator (int8) loads as ACC_8BIT, sign-extended (FeatureError
// on a design without it: config.variant). A strided
// read (src[2x]) is an x of one tile and a y over x with its DRAM stride. A guard around the
// store (a split whose factor does not divide the extent) that bounds one loop clips it.
//
// Intrinsic arguments (all in SRAM entries / DRAM elements of the memory's element type):
//   vta.load(sram, dram; mem, sram_off, dram_off, y_size, x_size, x_stride,
//            y_pad_0, y_pad_1, x_pad_0, x_pad_1)
//   vta.store(sram, dram; mem, sram_off, dram_off, y_size, x_size, x_stride)
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/tir/stmt.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <cstdint>
#include <utility>

namespace dlavm::vta {

// Copy nests under `pragma_dma_copy` become vta.load / vta.store calls (see above).
tir::Stmt inject_dma(const tir::Stmt& body, const Env& env);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/lower/inject_dma-inl.hpp>
#endif
