// The kernels of sim_kernels.hpp for one Highway target. Not a header to include:
// sim_kernels-inl.hpp has Highway's foreach_target.h include it once per target (with
// HWY_TARGET and HWY_NAMESPACE set, e.g. N_AVX2), so the guard below is Highway's per-target
// toggle rather than `#pragma once`. Each pass defines dlavm::vta::detail::N_<TARGET>::
// sim_kernels(): the kernel set, or nullptr for targets without one (Highway's scalar and
// emulated targets, other architectures), where the simulator's scalar loops serve.
//
// x86 semantics the kernels rely on: Highway's ReorderWidenMulAccumulate on int16 is pmaddwd
// (int32 lane i = a[2i] * b[2i] + a[2i+1] * b[2i+1], exact for int8 values); vpdpbusd (AVX3_DL
// only, through its intrinsic: Highway 1.0 has no op for it) adds to int32 lane i the four
// products of unsigned bytes a[4i+j] and signed bytes b[4i+j], wrapping.
#if defined(DLAVM_VTA_HW_SIM_KERNELS_SIMD_TOGGLE) == defined(HWY_TARGET_TOGGLE)
#ifdef DLAVM_VTA_HW_SIM_KERNELS_SIMD_TOGGLE
#undef DLAVM_VTA_HW_SIM_KERNELS_SIMD_TOGGLE
#else
#define DLAVM_VTA_HW_SIM_KERNELS_SIMD_TOGGLE
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <hwy/highway.h>
#include <numeric>
#include <vector>

HWY_BEFORE_NAMESPACE();
namespace dlavm::vta::detail {
namespace HWY_NAMESPACE {

#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128

namespace hn = hwy::HWY_NAMESPACE;

// AVX3_DL runs vpdpbusd on quads (sim_kernels.hpp) for chunks of 16 outputs, in 512-bit
// vectors only: Highway 1.0's AVX3_DL target enables the VEX "avxvnni" rather than
// "avx512vnni", so these functions add the latter, and narrower vpdpbusd could be encoded as
// VEX, which AVX-512 CPUs without AVX-VNNI (Ice Lake, Zen 4) do not run. Other shapes and
// targets use pmaddwd on pairs.
#if HWY_TARGET == HWY_AVX3_DL
#define DLAVM_SIM_ATTR __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
constexpr bool kVnni = true;
#else
#define DLAVM_SIM_ATTR HWY_ATTR
constexpr bool kVnni = false;
#endif
inline bool uses_quads(TileShape s) { return kVnni && s.block_out >= 16; }

DLAVM_SIM_ATTR HWY_INLINE std::int32_t word_at(const std::byte* p) {
  std::int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <class T>
HWY_INLINE const T* as(const std::byte* p) {
  return reinterpret_cast<const T*>(p);
}

inline ShadowLayout layout(TileShape s) { return uses_quads(s) ? quad_layout(s) : pair_layout(s); }

#if HWY_TARGET == HWY_AVX3_DL
// vpdpbusd: acc[i] += sum_j a[4i+j] (unsigned) * b[4i+j] (signed).
DLAVM_SIM_ATTR HWY_INLINE hn::Vec512<std::int32_t> dot4(hn::Vec512<std::int32_t> acc,
                                                        hn::Vec512<std::uint8_t> a,
                                                        hn::Vec512<std::int8_t> b) {
  return hn::Vec512<std::int32_t>{_mm512_dpbusd_epi32(acc.raw, a.raw, b.raw)};
}
#endif

// ---- Shadows -------------------------------------------------------------------------------

// Input rows: with BLOCK_IN a multiple of the group (2 or 4) a row needs no padding, so the
// shadow is the whole range widened to int16 (pairs) or offset by 128 (quads).
DLAVM_SIM_ATTR inline void pack_inp(const std::int8_t* x, std::byte* out, std::size_t elems,
                                    TileShape s) {
  const std::size_t total = elems * static_cast<std::size_t>(s.batch) * s.block_in;
  std::size_t k = 0;
  if (uses_quads(s)) {
    if (s.block_in % 4 != 0) return pack_inp_quads(x, out, elems, s);
    const hn::ScalableTag<std::uint8_t> du8;
    const auto bias = hn::Set(du8, 0x80);
    auto* o = reinterpret_cast<std::uint8_t*>(out);
    const auto* in = reinterpret_cast<const std::uint8_t*>(x);
    for (; k + hn::Lanes(du8) <= total; k += hn::Lanes(du8))
      hn::StoreU(hn::Xor(hn::LoadU(du8, in + k), bias), du8, o + k);
    for (; k < total; ++k) o[k] = static_cast<std::uint8_t>(in[k] ^ 0x80u);
  } else {
    if (s.block_in % 2 != 0) return pack_inp_pairs(x, out, elems, s);
    const hn::ScalableTag<std::int16_t> d16;
    const hn::Rebind<std::int8_t, decltype(d16)> d8;
    auto* o = reinterpret_cast<std::int16_t*>(out);
    for (; k + hn::Lanes(d16) <= total; k += hn::Lanes(d16))
      hn::StoreU(hn::PromoteTo(d16, hn::LoadU(d8, x + k)), d16, o + k);
    for (; k < total; ++k) o[k] = x[k];
  }
}

// Weight groups of a chunk: one gather per group g of the 32-bit words at w[o][G g] for the
// chunk's rows o (G = 2 or 4 bytes per group). Pairs sign-extend the two low bytes into int16
// lanes; quads keep the four bytes and also sum them per row (vpdpbusd with ones) for the bias.
template <std::size_t kL, bool kQuads>
DLAVM_SIM_ATTR HWY_NOINLINE void pack_wgt_chunks(const std::int8_t* w, std::byte* out,
                                                 std::size_t elems, TileShape s) {
  const hn::CappedTag<std::int32_t, kL> d;
  const std::size_t n = hn::Lanes(d), bo = static_cast<std::size_t>(s.block_out);
  const std::size_t group = kQuads ? 4 : 2, groups = (s.block_in + group - 1) / group;
  const std::size_t stride = layout(s).wgt_bytes, elem_bytes = bo * s.block_in;
  const auto rows = hn::Mul(hn::Iota(d, 0), hn::Set(d, s.block_in));  // row byte offsets
  for (std::size_t e = 0; e < elems; ++e) {
    const auto* base = reinterpret_cast<const std::int32_t*>(w + e * elem_bytes);
    std::byte* shadow = out + e * stride;
    for (std::size_t o0 = 0; o0 < bo; o0 += n) {
      const std::size_t chunk = o0 / kL, lane = o0 % kL;
      auto sum = hn::Zero(d);
      for (std::size_t g = 0; g < groups; ++g) {
        const auto at = hn::Set(d, static_cast<std::int32_t>(o0 * s.block_in + g * group));
        auto v = hn::GatherOffset(d, base, hn::Add(rows, at));
        if constexpr (kQuads) {
#if HWY_TARGET == HWY_AVX3_DL
          const hn::Repartition<std::uint8_t, decltype(d)> du8;
          sum = dot4(sum, hn::Set(du8, 1),
                     hn::BitCast(hn::Repartition<std::int8_t, decltype(d)>(), v));
#endif
        } else {
          const auto lo = hn::And(hn::ShiftRight<24>(hn::ShiftLeft<24>(v)), hn::Set(d, 0xFFFF));
          v = hn::Or(lo, hn::ShiftLeft<16>(hn::ShiftRight<24>(hn::ShiftLeft<16>(v))));
        }
        hn::StoreU(v, d,
                   reinterpret_cast<std::int32_t*>(shadow) + (chunk * groups + g) * kL + lane);
      }
      if constexpr (kQuads)
        hn::StoreU(hn::ShiftLeft<7>(sum), d,
                   reinterpret_cast<std::int32_t*>(shadow + bo * groups * 4) + o0);
    }
  }
}

DLAVM_SIM_ATTR inline void pack_wgt(const std::int8_t* w, std::byte* out, std::size_t elems,
                                    TileShape s) {
  const bool quads = uses_quads(s);
  if (s.block_in % (quads ? 4 : 2) != 0)
    return quads ? pack_wgt_quads(w, out, elems, s) : pack_wgt_pairs(w, out, elems, s);
  switch (gemm_chunk(s.block_out)) {
    case 16:
      return quads ? pack_wgt_chunks<16, kVnni>(w, out, elems, s)
                   : pack_wgt_chunks<16, false>(w, out, elems, s);
    case 8:
      return pack_wgt_chunks<8, false>(w, out, elems, s);
    case 4:
      return pack_wgt_chunks<4, false>(w, out, elems, s);
    case 2:
      return pack_wgt_chunks<2, false>(w, out, elems, s);
    default:
      return pack_wgt_chunks<1, false>(w, out, elems, s);
  }
}

// ---- GEMM ----------------------------------------------------------------------------------

// Calls body(a, x, w) for every iteration of an instruction's two loops: the accumulator,
// input and weight bases (bytes) its micro-ops' offsets are added to.
template <class Body>
DLAVM_SIM_ATTR HWY_INLINE void for_each_iteration(const GemmCall& c, std::size_t acc_bytes,
                                                  Body&& body) {
  // Locals, not reads through `c`: the accumulator stores could alias it for the compiler.
  const UopLoops l = c.loops;
  auto* const acc = reinterpret_cast<std::byte*>(c.acc);
  const std::byte* const inp = c.inp;
  const std::byte* const wgt = c.wgt;
  const std::size_t inp_stride = c.inp_stride, wgt_stride = c.wgt_stride;
  for (std::uint32_t o = 0; o < l.iter_out; ++o)
    for (std::uint32_t i = 0; i < l.iter_in; ++i)
      body(acc + (o * l.dst_out + i * l.dst_in) * acc_bytes,
           inp + (o * l.src_out + i * l.src_in) * inp_stride,
           wgt + (o * l.wgt_out + i * l.wgt_in) * wgt_stride);
}

// Calls body(acc, x, w) for every micro-op of the loops: the accumulator element and the input
// and weight shadows it uses. The micro-ops' byte offsets are computed once per instruction.
template <class Body>
DLAVM_SIM_ATTR HWY_INLINE void for_each_uop(const GemmCall& c, std::size_t acc_stride,
                                            Body&& body) {
  const UopLoops& l = c.loops;
  const std::size_t acc_bytes = acc_stride * sizeof(std::int32_t), count = l.uop_count;
  std::vector<std::array<std::size_t, 3>> offsets(count);
  for (std::size_t u = 0; u < count; ++u)
    offsets[u] = {l.uops[u].dst * acc_bytes, l.uops[u].src * c.inp_stride,
                  l.uops[u].wgt * c.wgt_stride};
  const auto* const off = offsets.data();
  for_each_iteration(
      c, acc_bytes, [&](std::byte* a, const std::byte* x, const std::byte* w) DLAVM_SIM_ATTR {
        for (std::size_t u = 0; u < count; ++u)
          body(reinterpret_cast<std::int32_t*>(a + off[u][0]), x + off[u][1], w + off[u][2]);
      });
}

// The micro-ops of a GEMM instruction gathered into runs that write one accumulator element
// each (in their order within a run), with the input and weight byte offsets of each: a
// kernel sums a run in registers and adds it to the accumulator once, rather than loading and
// storing the element for every micro-op. The order of the products summed into an element
// does not change it (int32 sums wrap), and a GEMM writes no memory it reads.
struct UopRuns {
  std::vector<std::array<std::size_t, 2>> ops;   // input and weight offsets, run after run
  std::vector<std::array<std::size_t, 2>> runs;  // accumulator offset and micro-ops of a run
};

inline UopRuns uop_runs(const GemmCall& c, std::size_t acc_bytes) {
  const UopLoops& l = c.loops;
  std::vector<std::uint32_t> order(l.uop_count);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return l.uops[a].dst < l.uops[b].dst; });
  UopRuns r;
  r.ops.reserve(l.uop_count);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const runtime::Uop& u = l.uops[order[k]];
    if (k == 0 || u.dst != l.uops[order[k - 1]].dst) r.runs.push_back({u.dst * acc_bytes, 0});
    ++r.runs.back()[1];
    r.ops.push_back({u.src * c.inp_stride, u.wgt * c.wgt_stride});
  }
  return r;
}

// Calls body(acc, x, w, ops, n) for every run of micro-ops (UopRuns) of every iteration of
// the loops: the run's accumulator element, the iteration's input and weight shadows, and the
// run's n offsets into them.
template <class Body>
DLAVM_SIM_ATTR HWY_INLINE void for_each_run(const GemmCall& c, std::size_t acc_stride,
                                            Body&& body) {
  const std::size_t acc_bytes = acc_stride * sizeof(std::int32_t);
  const UopRuns r = uop_runs(c, acc_bytes);
  const auto* const ops = r.ops.data();
  const auto* const runs = r.runs.data();
  const std::size_t nruns = r.runs.size();
  for_each_iteration(
      c, acc_bytes, [&](std::byte* a, const std::byte* x, const std::byte* w) DLAVM_SIM_ATTR {
        const auto* op = ops;
        for (std::size_t k = 0; k < nruns; op += runs[k][1], ++k)
          body(reinterpret_cast<std::int32_t*>(a + runs[k][0]), x, w, op, runs[k][1]);
      });
}

// One chunk of kL outputs of one batch row, vector by vector: the groups' products summed in
// two partial sums from zero, then added to the accumulator (so that micro-ops writing the
// same accumulator overlap). `x` is the row's input shadow, `w` the chunk's weight groups.
template <std::size_t kL, bool kQuads, class D>
DLAVM_SIM_ATTR HWY_INLINE void gemm_chunk_row(D d, std::int32_t* acc, const std::byte* x,
                                              const std::byte* w, const std::byte* bias,
                                              std::size_t groups) {
  for (std::size_t v = 0; v < kL; v += hn::Lanes(d)) {
    auto s0 = hn::Zero(d), s1 = hn::Zero(d);
    const auto step = [&](auto& sum, std::size_t g) DLAVM_SIM_ATTR {
      const std::byte* wg = w + (g * kL + v) * 4;
      if constexpr (kQuads) {
#if HWY_TARGET == HWY_AVX3_DL
        const hn::Repartition<std::uint8_t, D> du8;
        const hn::Repartition<std::int8_t, D> di8;
        sum = dot4(sum, hn::BitCast(du8, hn::Set(d, word_at(x + 4 * g))),
                   hn::LoadU(di8, as<std::int8_t>(wg)));
#endif
      } else {
        const hn::Repartition<std::int16_t, D> d16;
        auto unused = hn::Zero(d);
        sum = hn::ReorderWidenMulAccumulate(d, hn::BitCast(d16, hn::Set(d, word_at(x + 4 * g))),
                                            hn::LoadU(d16, as<std::int16_t>(wg)), sum, unused);
      }
    };
    std::size_t g = 0;
    for (; g + 1 < groups; g += 2) {
      step(s0, g);
      step(s1, g + 1);
    }
    if (g < groups) step(s0, g);
    auto sum = hn::Add(hn::LoadU(d, acc + v), hn::Add(s0, s1));
    if constexpr (kQuads) sum = hn::Sub(sum, hn::LoadU(d, as<std::int32_t>(bias) + v));
    hn::StoreU(sum, d, acc + v);
  }
}

// A run of micro-ops (UopRuns) on one row of kL x kChunks outputs with pairs, the group count
// known at compile time: the outputs summed in registers over the run, each micro-op's input
// pairs broadcast once into registers for all of its chunks and vectors, so that a micro-op
// loads each input word and each weight word once and the accumulator is read and written
// once per run.
template <std::size_t kL, std::size_t kGroups, std::size_t kChunks, class D>
DLAVM_SIM_ATTR HWY_INLINE void gemm_run_pairs(D d, std::int32_t* acc, const std::byte* x,
                                              const std::byte* w,
                                              const std::array<std::size_t, 2>* ops,
                                              std::size_t n) {
  const hn::Repartition<std::int16_t, D> d16;
  constexpr std::size_t kLanes = hn::MaxLanes(D());
  constexpr std::size_t kVectors = kChunks * kL / kLanes;
  hn::Vec<D> sums[kVectors];
  for (std::size_t j = 0; j < kVectors; ++j) sums[j] = hn::LoadU(d, acc + j * kLanes);
  for (std::size_t k = 0; k < n; ++k) {
    const std::byte* xk = x + ops[k][0];
    const std::byte* wk = w + ops[k][1];
    hn::Vec<decltype(d16)> pairs[kGroups];
    for (std::size_t g = 0; g < kGroups; ++g)
      pairs[g] = hn::BitCast(d16, hn::Set(d, word_at(xk + 4 * g)));
    for (std::size_t ch = 0; ch < kChunks; ++ch) {
      const std::byte* wc = wk + ch * kGroups * kL * 4;
      for (std::size_t v = 0; v < kL; v += kLanes) {
        auto& sum = sums[(ch * kL + v) / kLanes];
        for (std::size_t g = 0; g < kGroups; ++g) {
          auto unused = hn::Zero(d);
          sum = hn::ReorderWidenMulAccumulate(
              d, pairs[g], hn::LoadU(d16, as<std::int16_t>(wc + (g * kL + v) * 4)), sum, unused);
        }
      }
    }
  }
  for (std::size_t j = 0; j < kVectors; ++j) hn::StoreU(sums[j], d, acc + j * kLanes);
}

#if HWY_TARGET == HWY_AVX3_DL
// A run of micro-ops on one row of 16 x kChunks outputs with quads (vpdpbusd), the group count
// known at compile time: two partial sums per chunk, the first from the accumulator, the
// weights' bias summed beside them and taken off once. (A run of one micro-op, as in a GEMM
// whose micro-ops all write different elements, costs what it did before runs.)
template <std::size_t kGroups, std::size_t kChunks>
DLAVM_SIM_ATTR HWY_INLINE void gemm_run_quads(std::int32_t* acc, const std::byte* x,
                                              const std::byte* w,
                                              const std::array<std::size_t, 2>* ops,
                                              std::size_t n) {
  const hn::Full512<std::int32_t> d;
  const hn::Repartition<std::uint8_t, decltype(d)> du8;
  const hn::Repartition<std::int8_t, decltype(d)> di8;
  constexpr std::size_t kBiasAt = 16 * kChunks * kGroups * 4;  // after the weight groups
  for (std::size_t ch = 0; ch < kChunks; ++ch) {
    auto s0 = hn::LoadU(d, acc + ch * 16), s1 = hn::Zero(d);
    auto bias = hn::LoadU(d, as<std::int32_t>(w + ops[0][1] + kBiasAt) + ch * 16);
    for (std::size_t k = 0; k < n; ++k) {
      const std::byte* xk = x + ops[k][0];
      const std::byte* wk = w + ops[k][1];
      const std::byte* wc = wk + ch * kGroups * 16 * 4;
      if (k > 0) bias = hn::Add(bias, hn::LoadU(d, as<std::int32_t>(wk + kBiasAt) + ch * 16));
      for (std::size_t g = 0; g < kGroups; ++g) {
        auto& sum = g % 2 == 0 ? s0 : s1;
        sum = dot4(sum, hn::BitCast(du8, hn::Set(d, word_at(xk + 4 * g))),
                   hn::LoadU(di8, as<std::int8_t>(wc + g * 64)));
      }
    }
    hn::StoreU(hn::Sub(hn::Add(s0, s1), bias), d, acc + ch * 16);
  }
}
#endif

// GEMM with chunks of kL outputs; groups per row, BATCH and the chunk count fixed at compile
// time when kGroups, kBatch, kChunks > 0.
template <std::size_t kL, bool kQuads, std::size_t kGroups, int kBatch, std::size_t kChunks>
DLAVM_SIM_ATTR HWY_NOINLINE void gemm_loops(const GemmCall& c) {
  const hn::CappedTag<std::int32_t, kL> d;
  const TileShape s = c.shape;
  if constexpr (kGroups > 0 && kBatch == 1 && kChunks > 0) {
    using Ops = const std::array<std::size_t, 2>*;
    for_each_run(c, kL * kChunks,
                 [&](std::int32_t* acc, const std::byte* x, const std::byte* w, Ops ops,
                     std::size_t n) DLAVM_SIM_ATTR {
#if HWY_TARGET == HWY_AVX3_DL
                   if constexpr (kQuads) {
                     gemm_run_quads<kGroups, kChunks>(acc, x, w, ops, n);
                     return;
                   }
#endif
                   gemm_run_pairs<kL, kGroups, kChunks>(d, acc, x, w, ops, n);
                 });
    return;
  }
  const std::size_t group = kQuads ? 4 : 2;
  const std::size_t groups = kGroups > 0 ? kGroups : (s.block_in + group - 1) / group;
  const int batch = kBatch > 0 ? kBatch : s.batch;
  const std::size_t bo = static_cast<std::size_t>(s.block_out);
  const std::size_t chunks = kChunks > 0 ? kChunks : bo / kL;
  const std::size_t row_bytes = groups * 4, bias_at = bo * groups * 4;
  for_each_uop(c, static_cast<std::size_t>(batch) * bo,
               [&](std::int32_t* acc, const std::byte* x, const std::byte* w) DLAVM_SIM_ATTR {
                 // The quads' bias follows the weight groups (pairs have none).
                 const std::byte* bias = kQuads ? w + bias_at : w;
                 for (int b = 0; b < batch; ++b, acc += bo, x += row_bytes)
                   for (std::size_t ch = 0; ch < chunks; ++ch)
                     gemm_chunk_row<kL, kQuads>(d, acc + ch * kL, x, w + ch * groups * kL * 4,
                                                bias + (kQuads ? ch * kL * 4 : 0), groups);
               });
}

// Chunks of 16 outputs: the default 1x16x16 and the 1x32x32 shapes with compile-time loops.
template <bool kQuads>
DLAVM_SIM_ATTR inline void gemm16(const GemmCall& c) {
  const TileShape s = c.shape;
  constexpr std::size_t group = kQuads ? 4 : 2;
  if (s.batch == 1 && s.block_in == 16 && s.block_out == 16)
    return gemm_loops<16, kQuads, 16 / group, 1, 1>(c);
  if (s.batch == 1 && s.block_in == 32 && s.block_out == 32)
    return gemm_loops<16, kQuads, 32 / group, 1, 2>(c);
  return gemm_loops<16, kQuads, 0, 0, 0>(c);
}

DLAVM_SIM_ATTR inline void gemm(const GemmCall& c) {
  switch (gemm_chunk(c.shape.block_out)) {
    case 16:
      return uses_quads(c.shape) ? gemm16<kVnni>(c) : gemm16<false>(c);
    case 8:
      if (c.shape.batch == 1 && c.shape.block_in == 8) return gemm_loops<8, false, 4, 1, 1>(c);
      return gemm_loops<8, false, 0, 0, 0>(c);
    case 4:
      return gemm_loops<4, false, 0, 0, 0>(c);
    case 2:
      return gemm_loops<2, false, 0, 0, 0>(c);
    default:
      return gemm_loops<1, false, 0, 0, 0>(c);
  }
}

// ---- Accumulator-wide loops: reset, ALU, truncation ------------------------------------------

// Calls body(d) with a tag of min(lanes, the target's width) int32 lanes (lanes a power of 2).
template <class Body>
DLAVM_SIM_ATTR HWY_INLINE void with_lanes(std::size_t lanes, Body&& body) {
  const hn::ScalableTag<std::int32_t> full;
  if (lanes >= hn::Lanes(full)) return body(full);
  switch (lanes) {
    case 8:
      return body(hn::CappedTag<std::int32_t, 8>());
    case 4:
      return body(hn::CappedTag<std::int32_t, 4>());
    case 2:
      return body(hn::CappedTag<std::int32_t, 2>());
    default:
      return body(hn::CappedTag<std::int32_t, 1>());
  }
}

template <class D>
DLAVM_SIM_ATTR HWY_NOINLINE void reset_loops(const GemmCall& c, D d) {
  const std::size_t lanes = static_cast<std::size_t>(c.shape.batch) * c.shape.block_out;
  for_each_uop(c, lanes, [&](std::int32_t* acc, const std::byte*, const std::byte*) DLAVM_SIM_ATTR {
    for (std::size_t k = 0; k < lanes; k += hn::Lanes(d)) hn::StoreU(hn::Zero(d), d, acc + k);
  });
}

// The first element and count when one micro-op's loops reset consecutive elements in order
// (the usual reset of a block), else count 0.
inline std::pair<std::size_t, std::size_t> reset_range(const UopLoops& l) {
  if (l.uop_count != 1) return {0, 0};
  const std::size_t n = std::size_t{l.iter_out} * l.iter_in;
  const bool in_steps = l.iter_in == 1 || l.dst_in == 1;
  const std::size_t in_span = l.iter_in == 1 ? 1 : l.iter_in;
  const bool out_steps = l.iter_out == 1 || l.dst_out == in_span;
  return in_steps && out_steps ? std::pair{std::size_t{l.uops[0].dst}, n}
                               : std::pair{std::size_t{0}, std::size_t{0}};
}

DLAVM_SIM_ATTR inline void reset(const GemmCall& c) {
  const std::size_t lanes = static_cast<std::size_t>(c.shape.batch) * c.shape.block_out;
  const auto [first, count] = reset_range(c.loops);
  if (count) {
    std::memset(c.acc + first * lanes, 0, count * lanes * sizeof(std::int32_t));
    return;
  }
  with_lanes(lanes, [&](auto d) DLAVM_SIM_ATTR { reset_loops(c, d); });
}

// ALU operations on int32 lanes, with VTA_ISA.md's semantics (wrapping ADD and MUL; SHR right
// for y >= 0 and left for y < 0, shifts by 32 or more saturating as the scalar loops do).
struct MinOp {
  template <class D, class V>
  DLAVM_SIM_ATTR HWY_INLINE V operator()(D, V x, V y) const {
    return hn::Min(x, y);
  }
};
struct MaxOp {
  template <class D, class V>
  DLAVM_SIM_ATTR HWY_INLINE V operator()(D, V x, V y) const {
    return hn::Max(x, y);
  }
};
struct AddOp {
  template <class D, class V>
  DLAVM_SIM_ATTR HWY_INLINE V operator()(D, V x, V y) const {
    return hn::Add(x, y);
  }
};
struct MulOp {
  template <class D, class V>
  DLAVM_SIM_ATTR HWY_INLINE V operator()(D, V x, V y) const {
    return hn::Mul(x, y);
  }
};
struct ShrOp {
  template <class D, class V>
  DLAVM_SIM_ATTR HWY_INLINE V operator()(D d, V x, V y) const {
    const auto zero = hn::Zero(d), max_shift = hn::Set(d, 31), min_shift = hn::Set(d, -32);
    // Counts clamped to [0, 31]: the lanes that need more are fixed by the selects.
    const auto right = x >> hn::Min(hn::Max(y, zero), max_shift);
    const auto left_by = hn::Min(hn::Max(hn::Neg(hn::Max(y, min_shift)), zero), max_shift);
    const auto left = hn::IfThenElseZero(hn::Gt(y, min_shift), x << left_by);
    return hn::IfThenElse(hn::Lt(y, zero), left, right);
  }
};

// kOne: an element is one vector.
template <bool kImm, bool kOne, class D, class Op>
DLAVM_SIM_ATTR HWY_NOINLINE void alu_loops(const AluCall& c, D d, Op op) {
  const auto imm = hn::Set(d, c.imm);
  const std::size_t lanes = kOne ? hn::Lanes(d) : c.lanes;
  const UopLoops l = c.loops;  // locals: the stores could alias `c` for the compiler
  std::int32_t* const acc = c.acc;
  for (std::uint32_t o = 0; o < l.iter_out; ++o) {
    for (std::uint32_t i = 0; i < l.iter_in; ++i) {
      const std::size_t d0 = o * l.dst_out + i * l.dst_in;
      const std::size_t s0 = o * l.src_out + i * l.src_in;
      for (std::size_t u = 0; u < l.uop_count; ++u) {
        std::int32_t* dst = acc + (l.uops[u].dst + d0) * lanes;
        const std::int32_t* src = acc + (l.uops[u].src + s0) * lanes;
        for (std::size_t k = 0; k < lanes; k += hn::Lanes(d)) {
          const auto y = kImm ? imm : hn::LoadU(d, src + k);
          hn::StoreU(op(d, hn::LoadU(d, dst + k), y), d, dst + k);
        }
      }
    }
  }
}

template <class Op>
DLAVM_SIM_ATTR HWY_INLINE void alu_op(const AluCall& c, Op op) {
  with_lanes(c.lanes, [&](auto d) DLAVM_SIM_ATTR {
    const bool one = c.lanes == hn::Lanes(d);
    if (c.use_imm) {
      one ? alu_loops<true, true>(c, d, op) : alu_loops<true, false>(c, d, op);
    } else {
      one ? alu_loops<false, true>(c, d, op) : alu_loops<false, false>(c, d, op);
    }
  });
}

DLAVM_SIM_ATTR inline void alu(const AluCall& c) {
  switch (c.op) {
    case runtime::AluOp::Min:
      return alu_op(c, MinOp{});
    case runtime::AluOp::Max:
      return alu_op(c, MaxOp{});
    case runtime::AluOp::Add:
      return alu_op(c, AddOp{});
    case runtime::AluOp::Shr:
      return alu_op(c, ShrOp{});
    case runtime::AluOp::Mul:
      return alu_op(c, MulOp{});
  }
}

// The low bits of each lane, then a saturating demotion that no longer saturates anything
// (Highway 1.0.3's TruncateTo to bytes is wrong on AVX3_DL: a 32-bit permute where a byte
// permute is needed).
template <class T>
DLAVM_SIM_ATTR HWY_INLINE void truncate(const std::int32_t* acc, T* out, std::size_t n) {
  const hn::ScalableTag<std::int32_t> d;
  const hn::Rebind<T, decltype(d)> dn;
  const auto mask = hn::Set(d, static_cast<std::int32_t>(static_cast<T>(~0u)));
  std::size_t k = 0;
  for (; k + hn::Lanes(d) <= n; k += hn::Lanes(d))
    hn::StoreU(hn::DemoteTo(dn, hn::And(hn::LoadU(d, acc + k), mask)), dn, out + k);
  for (; k < n; ++k) out[k] = static_cast<T>(static_cast<std::uint32_t>(acc[k]));
}
DLAVM_SIM_ATTR inline void truncate8(const std::int32_t* acc, std::uint8_t* out, std::size_t n) {
  truncate(acc, out, n);
}
DLAVM_SIM_ATTR inline void truncate16(const std::int32_t* acc, std::uint16_t* out, std::size_t n) {
  truncate(acc, out, n);
}

inline const SimdKernels* sim_kernels() {
#if HWY_TARGET == HWY_AVX3_DL
  constexpr const char* name = "AVX3_DL";
#elif HWY_TARGET == HWY_AVX3
  constexpr const char* name = "AVX3";
#elif HWY_TARGET == HWY_AVX2
  constexpr const char* name = "AVX2";
#elif HWY_TARGET == HWY_SSE4
  constexpr const char* name = "SSE4";
#else
  constexpr const char* name = "SSSE3";
#endif
  static const SimdKernels kernels{name,   &layout, &pack_inp,  &pack_wgt,  &gemm,
                                   &reset, &alu,    &truncate8, &truncate16};
  return &kernels;
}

#else

inline const SimdKernels* sim_kernels() { return nullptr; }

#endif

}  // namespace HWY_NAMESPACE
}  // namespace dlavm::vta::detail
HWY_AFTER_NAMESPACE();

#undef DLAVM_SIM_ATTR
#endif  // per-target toggle
