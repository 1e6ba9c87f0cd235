// The functional simulator's inner loops as SIMD kernels (Google Highway): GEMM, accumulator
// reset, ALU and the truncating store, one set per x86 instruction set (AVX-512 with VNNI
// "AVX3_DL", AVX-512 "AVX3", AVX2, SSE4, SSSE3), the best one this CPU runs chosen once at run
// time, so that dlavm compiled without -march flags still runs AVX-512 where the CPU has it.
// A kernel runs a whole instruction (both micro-op loops, bounds checked by the caller), so the
// choice costs one indirect call per instruction. The simulator keeps its scalar loops as the
// reference (Simulator::set_kernels(SimKernels::Scalar)); tests/vta compares every kernel set
// this CPU runs with them on random streams.
//
// GEMM reads shadow copies of the input and weight SRAMs, rewritten by every LOAD, in the form
// its multiply instruction wants (L = min(BLOCK_OUT, 16) outputs per chunk):
// - pmaddwd (AVX3, AVX2, SSE4, SSSE3): int16 pairs, KP = ceil(BLOCK_IN / 2), zero-padded:
//     input  [element][b][p][2]     = x[b][2p + j]
//     weight [element][c][p][l][2]  = w[c*L + l][2p + j]
//   acc[b][c*L + l] += sum_p madd(input pair p broadcast, weight pairs [c][p]).
// - vpdpbusd (AVX3_DL, which multiplies unsigned by signed bytes): KQ = ceil(BLOCK_IN / 4),
//     input  [element][b][q][4]     = x[b][4q + j] + 128 (as uint8; padding 128)
//     weight [element][c][q][l][4]  = w[c*L + l][4q + j] (padding 0), then
//            [element][o]           = 128 * sum_k w[o][k] (int32), the bias the +128 adds
//   acc[b][c*L + l] += sum_q dpbusd(input quad q broadcast, weight quads [c][q]) - 128 sum w.
// Integer sums wrap modulo 2^32 in any order, so both are exact against the scalar loops.
//
//   const auto* k = vta::detail::simd_kernels();   // nullptr: no SIMD in this build / on this CPU
//   if (k) k->gemm(call);                          // call: loops, SRAM pointers and strides
//
// The kernels exist in dlavm::dlavm_compiled, and in header-only programs that define
// DLAVM_SIM_SIMD_HEADER_ONLY. Elsewhere (header-only by default, the single header, a build
// without Highway or that defines DLAVM_SIM_NO_SIMD) the simulator runs its scalar loops.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/isa.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace dlavm::vta::detail {

struct TileShape {
  int batch = 1, block_in = 16, block_out = 16;
};

// The two micro-op loops of one GEMM or ALU instruction, with the micro-ops it runs.
struct UopLoops {
  std::uint32_t iter_out = 0, iter_in = 0;
  std::uint32_t dst_out = 0, dst_in = 0, src_out = 0, src_in = 0, wgt_out = 0, wgt_in = 0;
  const runtime::Uop* uops = nullptr;
  std::size_t uop_count = 0;
};

// A GEMM instruction over the shadows (a reset only uses loops, acc and the shape).
struct GemmCall {
  UopLoops loops;
  std::int32_t* acc = nullptr;
  const std::byte* inp = nullptr;              // input shadow
  const std::byte* wgt = nullptr;              // weight shadow
  std::size_t inp_stride = 0, wgt_stride = 0;  // shadow bytes per SRAM element
  TileShape shape;
};

// An ALU instruction on the accumulator; `lanes` = BATCH x BLOCK_OUT int32 per element, at
// least 4 (Highway 1.0.3 shifts a one-lane vector by a 64-bit count: narrower elements run on
// the simulator's scalar loops).
struct AluCall {
  UopLoops loops;
  std::int32_t* acc = nullptr;
  std::size_t lanes = 16;
  runtime::AluOp op = runtime::AluOp::Add;
  bool use_imm = false;
  std::int32_t imm = 0;
};

// Shadow bytes per input and weight SRAM element, for a kernel set and tile shape.
struct ShadowLayout {
  std::size_t inp_bytes = 0, wgt_bytes = 0;
};

// Bytes past the last element a weight packing (SimdKernels::pack_wgt) may read: its 32-bit
// gathers of a row's last pair. Every buffer it packs from keeps this many after its end.
inline constexpr std::size_t kWgtPackReadsPast = 4;

struct SimdKernels {
  const char* target = "";  // Highway's name of the instruction set
  ShadowLayout (*layout)(TileShape) = nullptr;
  // `elems` SRAM elements -> their shadows; the weight packing may read kWgtPackReadsPast bytes
  // past the last.
  void (*pack_inp)(const std::int8_t* x, std::byte* shadow, std::size_t elems, TileShape) = nullptr;
  void (*pack_wgt)(const std::int8_t* w, std::byte* shadow, std::size_t elems, TileShape) = nullptr;
  // The weight elements `elems` shadows hold, back (pack_wgt's inverse).
  void (*unpack_wgt)(const std::byte* shadow, std::int8_t* w, std::size_t elems,
                     TileShape) = nullptr;
  void (*gemm)(const GemmCall&) = nullptr;
  void (*reset)(const GemmCall&) = nullptr;
  void (*alu)(const AluCall&) = nullptr;
  // n int32 values -> their low 8 or 16 bits (two's-complement wrap, as STORE truncates).
  void (*truncate8)(const std::int32_t* acc, std::uint8_t* out, std::size_t n) = nullptr;
  void (*truncate16)(const std::int32_t* acc, std::uint16_t* out, std::size_t n) = nullptr;
};

// Outputs per weight chunk: L above.
constexpr int gemm_chunk(int block_out) { return block_out < 16 ? block_out : 16; }

// The kernel sets this build compiled and this CPU runs, best first (empty without SIMD).
std::span<const SimdKernels* const> simd_kernel_sets();
// The best of them, or nullptr.
const SimdKernels* simd_kernels();

// The two shadow forms in plain loops (odd BLOCK_IN, and the kernels' reference).
ShadowLayout pair_layout(TileShape s);
void pack_inp_pairs(const std::int8_t* x, std::byte* shadow, std::size_t elems, TileShape s);
void pack_wgt_pairs(const std::int8_t* w, std::byte* shadow, std::size_t elems, TileShape s);
ShadowLayout quad_layout(TileShape s);
void pack_inp_quads(const std::int8_t* x, std::byte* shadow, std::size_t elems, TileShape s);
void pack_wgt_quads(const std::int8_t* w, std::byte* shadow, std::size_t elems, TileShape s);
// The weight elements either form's shadows hold (pack_wgt_pairs' or pack_wgt_quads' inverse).
void unpack_wgt_groups(const std::byte* shadow, std::int8_t* w, std::size_t elems, TileShape s,
                       bool quads);

}  // namespace dlavm::vta::detail

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/sim_kernels-inl.hpp>
#endif
