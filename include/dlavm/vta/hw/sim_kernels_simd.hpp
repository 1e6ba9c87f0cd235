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
#include <type_traits>
#include <utility>
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

#if HWY_TARGET == HWY_AVX3_DL
// pack_wgt_chunks<16, true> for 16 x 16 elements without gathers: the groups of an element are
// the 4-byte words of its 16 rows transposed (group g, lane o = w[o][4g..4g+3]), two rounds
// of two-source permutes over its four 64-byte loads.
DLAVM_SIM_ATTR inline void pack_wgt_quads16(const std::int8_t* w, std::byte* out, std::size_t elems,
                                            std::size_t stride) {
  // words 0 and 1 (then 2 and 3) of rows 0 to 7 of two loads, as [word a rows, word b rows]
  const __m512i words01 =
      _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
  const __m512i words23 =
      _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
  // the first (then second) halves of rows 0 to 7 and rows 8 to 15
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  const __m512i second =
      _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  const __m512i ones = _mm512_set1_epi8(1);
  for (std::size_t e = 0; e < elems; ++e) {
    const std::int8_t* in = w + e * 256;
    const __m512i z0 = _mm512_loadu_si512(in), z1 = _mm512_loadu_si512(in + 64),
                  z2 = _mm512_loadu_si512(in + 128), z3 = _mm512_loadu_si512(in + 192);
    const __m512i a01 = _mm512_permutex2var_epi32(z0, words01, z1),
                  a23 = _mm512_permutex2var_epi32(z0, words23, z1),
                  b01 = _mm512_permutex2var_epi32(z2, words01, z3),
                  b23 = _mm512_permutex2var_epi32(z2, words23, z3);
    const __m512i g[4] = {
        _mm512_permutex2var_epi32(a01, first, b01), _mm512_permutex2var_epi32(a01, second, b01),
        _mm512_permutex2var_epi32(a23, first, b23), _mm512_permutex2var_epi32(a23, second, b23)};
    std::byte* shadow = out + e * stride;
    __m512i sum = _mm512_setzero_si512();
    for (std::size_t k = 0; k < 4; ++k) {
      _mm512_storeu_si512(shadow + k * 64, g[k]);
      sum = _mm512_dpbusd_epi32(sum, ones, g[k]);  // each row's bytes summed, for the bias
    }
    _mm512_storeu_si512(shadow + 256, _mm512_slli_epi32(sum, 7));
  }
}
#endif

DLAVM_SIM_ATTR inline void pack_wgt(const std::int8_t* w, std::byte* out, std::size_t elems,
                                    TileShape s) {
  const bool quads = uses_quads(s);
#if HWY_TARGET == HWY_AVX3_DL
  if (quads && s.block_in == 16 && s.block_out == 16)
    return pack_wgt_quads16(w, out, elems, layout(s).wgt_bytes);
#endif
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

inline void unpack_wgt(const std::byte* shadow, std::int8_t* w, std::size_t elems, TileShape s) {
  unpack_wgt_groups(shadow, w, elems, s, uses_quads(s));
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
// each, with the input and weight byte offsets of each: a kernel sums a run in registers and
// adds it to the accumulator once, rather than loading and storing the element for every
// micro-op. The order of the products summed into an element does not change it (int32 sums
// wrap), and a GEMM writes no memory it reads, so the micro-ops may be sorted freely.
struct UopRuns {
  std::vector<std::array<std::size_t, 2>> ops;   // input and weight offsets, run after run
  std::vector<std::array<std::size_t, 2>> runs;  // accumulator offset and micro-ops of a run
};

inline UopRuns uop_runs(const GemmCall& c, std::size_t acc_bytes) {
  std::vector<runtime::Uop> u(c.loops.uops, c.loops.uops + c.loops.uop_count);
  std::sort(u.begin(), u.end(),
            [](const runtime::Uop& a, const runtime::Uop& b) { return a.dst < b.dst; });
  UopRuns r;
  r.ops.reserve(u.size());
  for (std::size_t k = 0; k < u.size(); ++k) {
    if (k == 0 || u[k].dst != u[k - 1].dst) r.runs.push_back({u[k].dst * acc_bytes, 0});
    ++r.runs.back()[1];
    r.ops.push_back({u[k].src * c.inp_stride, u[k].wgt * c.wgt_stride});
  }
  return r;
}

// The plan (UopRuns, UopTiles) `make` returns for a GEMM instruction's micro-ops and strides,
// from the last few made on this thread when one was made for the same ones: a stream runs
// the same kernel many times (a convolution's once per block of channels), and comparing its
// micro-ops costs far less than sorting them.
template <class Plan>
const Plan& cached_plan(const GemmCall& c, std::size_t acc_bytes,
                        Plan (*make)(const GemmCall&, std::size_t)) {
  struct Entry {
    std::vector<runtime::Uop> uops;
    std::size_t inp = 0, wgt = 0, acc = 0;
    Plan plan;
  };
  thread_local std::vector<Entry> cache;
  thread_local std::size_t next = 0;
  constexpr std::size_t kEntries = 4;
  const runtime::Uop* u = c.loops.uops;
  const std::size_t n = c.loops.uop_count;
  for (const Entry& e : cache)
    if (e.inp == c.inp_stride && e.wgt == c.wgt_stride && e.acc == acc_bytes &&
        e.uops.size() == n && std::equal(u, u + n, e.uops.begin()))
      return e.plan;
  if (cache.size() < kEntries) cache.emplace_back();
  Entry& e = cache[next++ % cache.size()];
  e.uops.assign(u, u + n);
  e.inp = c.inp_stride;
  e.wgt = c.wgt_stride;
  e.acc = acc_bytes;
  e.plan = make(c, acc_bytes);
  return e.plan;
}

// Calls body(acc, x, w, ops, n) for every run of micro-ops (UopRuns) of every iteration of
// the loops: the run's accumulator element, the iteration's input and weight shadows, and the
// run's n offsets into them.
template <class Body>
DLAVM_SIM_ATTR HWY_INLINE void for_each_run(const GemmCall& c, std::size_t acc_stride,
                                            Body&& body) {
  const std::size_t acc_bytes = acc_stride * sizeof(std::int32_t);
  const UopRuns& r = cached_plan(c, acc_bytes, &uop_runs);
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

// The micro-ops of a GEMM instruction as tiles, for a kernel that keeps weights in registers:
// strips of up to kTileCols micro-ops that share a weight element and write consecutive
// accumulator elements from evenly spaced input elements (a convolution's taps: one weight
// per tap over a row of output columns), gathered by the elements they write. A tile's kernel
// holds its elements in registers over all of its strips and a strip's weights over its
// columns, so that a micro-op loads only its input words. (Sorted like runs, above.)
constexpr std::uint32_t kTileCols = 8;
struct UopStrip {
  std::size_t wgt = 0;      // weight offset (bytes)
  std::size_t src = 0;      // the first column's input offset
  std::ptrdiff_t step = 0;  // from one column's input to the next
};
struct UopTile {
  std::size_t acc = 0;  // the first column's accumulator offset; the others follow
  std::uint32_t cols = 0;
  std::uint32_t strips = 0;  // this many from the previous tile's last
};
struct UopTiles {
  std::vector<UopStrip> strips;  // tile after tile
  std::vector<UopTile> tiles;
};

inline UopTiles uop_tiles(const GemmCall& c, std::size_t acc_bytes) {
  std::vector<runtime::Uop> u(c.loops.uops, c.loops.uops + c.loops.uop_count);
  std::sort(u.begin(), u.end(), [](const runtime::Uop& a, const runtime::Uop& b) {
    return a.wgt != b.wgt ? a.wgt < b.wgt : a.dst < b.dst;
  });
  // Strips, in element indices: the first micro-op, columns, input step.
  struct Strip {
    runtime::Uop first;
    std::uint32_t cols = 0;
    std::int64_t step = 0;
  };
  std::vector<Strip> strips;
  strips.reserve(u.size());
  for (const runtime::Uop& op : u) {
    if (!strips.empty()) {
      Strip& s = strips.back();
      const std::int64_t step = s.cols == 1 ? std::int64_t{op.src} - s.first.src : s.step;
      if (s.cols < kTileCols && op.wgt == s.first.wgt && op.dst == s.first.dst + s.cols &&
          std::int64_t{op.src} == s.first.src + step * s.cols) {
        s.step = step;
        ++s.cols;
        continue;
      }
    }
    strips.push_back({op, 1, 0});
  }
  std::sort(strips.begin(), strips.end(), [](const Strip& a, const Strip& b) {
    return a.first.dst != b.first.dst ? a.first.dst < b.first.dst : a.cols < b.cols;
  });
  UopTiles t;
  t.strips.reserve(strips.size());
  for (std::size_t k = 0; k < strips.size(); ++k) {
    const Strip& s = strips[k];
    if (k == 0 || s.first.dst != strips[k - 1].first.dst || s.cols != strips[k - 1].cols)
      t.tiles.push_back({s.first.dst * acc_bytes, s.cols, 0});
    ++t.tiles.back().strips;
    t.strips.push_back(
        {s.first.wgt * c.wgt_stride, s.first.src * c.inp_stride,
         static_cast<std::ptrdiff_t>(s.step) * static_cast<std::ptrdiff_t>(c.inp_stride)});
  }
  return t;
}

#if HWY_TARGET == HWY_AVX3_DL
// A tile (UopTiles) of kCols accumulator elements of 16 x kChunks outputs with quads
// (vpdpbusd), the group count known at compile time: each column's outputs in partial sums
// (vpdpbusd adds into its destination, so a sum chains its products on the latency: two sums
// per column for narrow tiles, one when eight columns run side by side), a strip's weight
// groups loaded once for all of its columns, the weights' bias summed beside and taken off
// once.
template <std::size_t kGroups, std::size_t kChunks, std::size_t kCols>
DLAVM_SIM_ATTR HWY_INLINE void gemm_tile_quads(std::byte* a, std::size_t acc_bytes,
                                               const std::byte* x, const std::byte* w,
                                               const UopStrip* strips, std::size_t n) {
  const hn::Full512<std::int32_t> d;
  const hn::Repartition<std::uint8_t, decltype(d)> du8;
  const hn::Repartition<std::int8_t, decltype(d)> di8;
  using V = hn::Vec<decltype(d)>;
  constexpr std::size_t kBiasAt = 16 * kChunks * kGroups * 4;  // after the weight groups
  for (std::size_t ch = 0; ch < kChunks; ++ch) {
    const auto out = [&](std::size_t col) {
      return reinterpret_cast<std::int32_t*>(a + col * acc_bytes) + ch * 16;
    };
    constexpr std::size_t kSums = kCols < 8 ? 2 : 1;
    V sums[kSums][kCols];
    for (std::size_t col = 0; col < kCols; ++col) {
      sums[0][col] = hn::LoadU(d, out(col));
      for (std::size_t j = 1; j < kSums; ++j) sums[j][col] = hn::Zero(d);
    }
    const auto bias_of = [&](const UopStrip& s) {
      return hn::LoadU(d, as<std::int32_t>(w + s.wgt + kBiasAt) + ch * 16);
    };
    V bias = bias_of(strips[0]);  // a tile has a strip or more
    for (std::size_t k = 0; k < n; ++k) {
      const std::byte* wc = w + strips[k].wgt + ch * kGroups * 16 * 4;
      hn::Vec<decltype(di8)> wv[kGroups];
      for (std::size_t g = 0; g < kGroups; ++g)
        wv[g] = hn::LoadU(di8, as<std::int8_t>(wc + g * 64));
      if (k > 0) bias = hn::Add(bias, bias_of(strips[k]));
      for (std::size_t col = 0; col < kCols; ++col) {
        const std::byte* xk = x + strips[k].src + static_cast<std::ptrdiff_t>(col) * strips[k].step;
        for (std::size_t g = 0; g < kGroups; ++g) {
          V& sum = sums[g % kSums][col];
          sum = dot4(sum, hn::BitCast(du8, hn::Set(d, word_at(xk + 4 * g))), wv[g]);
        }
      }
    }
    for (std::size_t col = 0; col < kCols; ++col) {
      V sum = sums[0][col];
      for (std::size_t j = 1; j < kSums; ++j) sum = hn::Add(sum, sums[j][col]);
      hn::StoreU(hn::Sub(sum, bias), d, out(col));
    }
  }
}

#endif

// The target's vector registers: 32 with AVX-512, 16 below it.
constexpr std::size_t kVectorRegisters = HWY_TARGET <= HWY_AVX3 ? 32 : 16;

// How many columns of a pairs tile of kL outputs run at a time: their sums (a vector each per
// kL outputs), a weight group's vectors and a broadcast in the registers. With 16 outputs: 29
// with AVX-512, 6 with AVX2, 2 with SSE4.
template <std::size_t kL>
constexpr std::size_t pairs_tile_columns() {
  constexpr std::size_t vecs = kL / hn::MaxLanes(hn::CappedTag<std::int32_t, kL>());
  return (kVectorRegisters - 2 - vecs) / vecs;
}

// A tile (UopTiles) of kCols accumulator elements of kL x kChunks outputs with pairs
// (vpmaddwd), the group count known at compile time, from column c0 on: the columns' sums in
// registers over all of the tile's strips; per strip, each weight group's vectors loaded once
// for all of the columns, each column's input pair broadcast once for all of the vectors.
// The columns go pairs_tile_columns at a time, the rest after.
template <std::size_t kL, std::size_t kGroups, std::size_t kChunks, std::size_t kCols, class D>
DLAVM_SIM_ATTR HWY_INLINE void gemm_tile_pairs(D d, std::byte* a, std::size_t acc_bytes,
                                               const std::byte* x, const std::byte* w,
                                               const UopStrip* strips, std::size_t n,
                                               std::size_t c0 = 0) {
  const hn::Repartition<std::int16_t, D> d16;
  constexpr std::size_t kLanes = hn::MaxLanes(D());
  constexpr std::size_t kVecs = kL / kLanes;
  constexpr std::size_t kN = kCols < pairs_tile_columns<kL>() ? kCols : pairs_tile_columns<kL>();
  for (std::size_t ch = 0; ch < kChunks; ++ch) {
    const auto out = [&](std::size_t col, std::size_t vec) {
      return reinterpret_cast<std::int32_t*>(a + (c0 + col) * acc_bytes) + ch * kL + vec * kLanes;
    };
    hn::Vec<D> sums[kN][kVecs];
    for (std::size_t col = 0; col < kN; ++col)
      for (std::size_t vec = 0; vec < kVecs; ++vec) sums[col][vec] = hn::LoadU(d, out(col, vec));
    for (std::size_t k = 0; k < n; ++k) {
      const std::byte* wc = w + strips[k].wgt + ch * kGroups * kL * 4;
      const std::byte* xs[kN];
      for (std::size_t col = 0; col < kN; ++col)  // (a negative step: never before the shadow)
        xs[col] = x + strips[k].src + static_cast<std::ptrdiff_t>(c0 + col) * strips[k].step;
      for (std::size_t g = 0; g < kGroups; ++g) {
        hn::Vec<decltype(d16)> wv[kVecs];
        for (std::size_t vec = 0; vec < kVecs; ++vec)
          wv[vec] = hn::LoadU(d16, as<std::int16_t>(wc + (g * kL + vec * kLanes) * 4));
        for (std::size_t col = 0; col < kN; ++col) {
          const auto pair = hn::BitCast(d16, hn::Set(d, word_at(xs[col] + 4 * g)));
          for (std::size_t vec = 0; vec < kVecs; ++vec) {
            auto unused = hn::Zero(d);
            sums[col][vec] =
                hn::ReorderWidenMulAccumulate(d, pair, wv[vec], sums[col][vec], unused);
          }
        }
      }
    }
    for (std::size_t col = 0; col < kN; ++col)
      for (std::size_t vec = 0; vec < kVecs; ++vec) hn::StoreU(sums[col][vec], d, out(col, vec));
  }
  if constexpr (kCols > kN)
    gemm_tile_pairs<kL, kGroups, kChunks, kCols - kN>(d, a, acc_bytes, x, w, strips, n, c0 + kN);
}

// fn(std::integral_constant<std::size_t, cols>()), for cols in [1, sizeof...(N)].
template <class Fn, std::size_t... N>
DLAVM_SIM_ATTR HWY_INLINE void with_cols(std::uint32_t cols, Fn&& fn, std::index_sequence<N...>) {
  ((cols == N + 1 ? fn(std::integral_constant<std::size_t, N + 1>()) : void()), ...);
}

// GEMM on a fixed shape, tile by tile (`t`) of every iteration of the loops: quads on VNNI,
// pairs elsewhere.
template <std::size_t kL, bool kQuads, std::size_t kGroups, std::size_t kChunks>
DLAVM_SIM_ATTR HWY_NOINLINE void gemm_tiles(const GemmCall& c, const UopTiles& t,
                                            std::size_t acc_bytes) {
  for_each_iteration(
      c, acc_bytes, [&](std::byte* a, const std::byte* x, const std::byte* w) DLAVM_SIM_ATTR {
        const UopStrip* strips = t.strips.data();
        for (const UopTile& tile : t.tiles) {
          std::byte* at = a + tile.acc;
          const auto run = [&](auto cols) DLAVM_SIM_ATTR {
            constexpr std::size_t kCols = decltype(cols)::value;
            if constexpr (kQuads) {
#if HWY_TARGET == HWY_AVX3_DL
              gemm_tile_quads<kGroups, kChunks, kCols>(at, acc_bytes, x, w, strips, tile.strips);
#endif
            } else {
              gemm_tile_pairs<kL, kGroups, kChunks, kCols>(hn::CappedTag<std::int32_t, kL>(), at,
                                                           acc_bytes, x, w, strips, tile.strips);
            }
          };
          with_cols(tile.cols, run, std::make_index_sequence<kTileCols>());
          strips += tile.strips;
        }
      });
}

// GEMM with chunks of kL outputs; groups per row, BATCH and the chunk count fixed at compile
// time when kGroups, kBatch, kChunks > 0.
template <std::size_t kL, bool kQuads, std::size_t kGroups, int kBatch, std::size_t kChunks>
DLAVM_SIM_ATTR HWY_NOINLINE void gemm_loops(const GemmCall& c) {
  const hn::CappedTag<std::int32_t, kL> d;
  const TileShape s = c.shape;
  if constexpr (kGroups > 0 && kBatch == 1 && kChunks > 0) {
    // Micro-ops that make one tile (or run) each, sharing no element or weight, run faster on
    // the per-micro-op loop below.
    const std::size_t acc_bytes = kL * kChunks * sizeof(std::int32_t);
    // (pairs: tiles where four columns or more fit the registers at a time; with SSE4's two,
    // they measured 40% slower than runs on conv2d)
    if constexpr (kQuads || pairs_tile_columns<kL>() >= 4) {
      const UopTiles& t = cached_plan(c, acc_bytes, &uop_tiles);
      if (t.tiles.size() < c.loops.uop_count)
        return gemm_tiles<kL, kQuads, kGroups, kChunks>(c, t, acc_bytes);
    } else if (cached_plan(c, acc_bytes, &uop_runs).runs.size() < c.loops.uop_count) {
      using Ops = const std::array<std::size_t, 2>*;
      for_each_run(
          c, kL * kChunks,
          [&](std::int32_t* acc, const std::byte* x, const std::byte* w, Ops ops, std::size_t n)
              DLAVM_SIM_ATTR { gemm_run_pairs<kL, kGroups, kChunks>(d, acc, x, w, ops, n); });
      return;
    }
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
  static const SimdKernels kernels{name,  &layout, &pack_inp, &pack_wgt,  &unpack_wgt,
                                   &gemm, &reset,  &alu,      &truncate8, &truncate16};
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
