// Definitions for dlavm/vta/hw/sim_kernels.hpp (see core/api.hpp): the kernels compiled once per
// Highway target (sim_kernels_simd.hpp, re-included by Highway's foreach_target.h), the choice
// among them, and the shadow packing.
//
// dlavm::dlavm_compiled compiles the kernels once, for every target. Header-only programs run
// the scalar loops unless they define DLAVM_SIM_SIMD_HEADER_ONLY: the five targets' kernels
// would otherwise cost every translation unit that includes the simulator about 15 s of
// compile time. Highway's foreach_target.h can serve only one file per translation unit in
// Highway 1.0: a program that also uses it should include dlavm after its own per-target code,
// or link dlavm::dlavm_compiled.
#pragma once

#include <dlavm/vta/hw/sim_kernels.hpp>

#if !defined(DLAVM_SIM_NO_SIMD) &&                                          \
    (defined(DLAVM_COMPILED_LIB) || defined(DLAVM_SIM_SIMD_HEADER_ONLY)) && \
    __has_include(<hwy/highway.h>) &&                                                \
    __has_include("dlavm/vta/hw/sim_kernels_simd.hpp")
#define DLAVM_SIM_SIMD 1
#else
#define DLAVM_SIM_SIMD 0
#endif

#if DLAVM_SIM_SIMD
// Also compile the AVX-512 VNNI target (Ice Lake, Zen 4 and later); this only adds a target
// to the ones Highway compiles when it is first included here.
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "dlavm/vta/hw/sim_kernels_simd.hpp"
#include <hwy/foreach_target.h>
#include <hwy/highway.h>
// clang-format off
#include "dlavm/vta/hw/sim_kernels_simd.hpp"  // the static target (the others came above)
// clang-format on
#undef HWY_TARGET_INCLUDE
#undef HIGHWAY_HWY_FOREACH_TARGET_H_
#endif

#include <array>
#include <cstring>

namespace dlavm::vta::detail {

DLAVM_INLINE std::span<const SimdKernels* const> simd_kernel_sets() {
#if DLAVM_SIM_SIMD
  struct Sets {
    std::array<const SimdKernels*, 8> sets{};
    std::size_t count = 0;
    void add(std::int64_t target, const SimdKernels* k) {
      if (k && (hwy::SupportedTargets() & target) && count < sets.size()) sets[count++] = k;
    }
  };
  static const Sets chosen = [] {
    Sets s;
    // Best first; HWY_TARGETS lists what this translation unit compiled.
#if HWY_TARGETS & HWY_AVX3_DL
    s.add(HWY_AVX3_DL, N_AVX3_DL::sim_kernels());
#endif
#if HWY_TARGETS & HWY_AVX3
    s.add(HWY_AVX3, N_AVX3::sim_kernels());
#endif
#if HWY_TARGETS & HWY_AVX2
    s.add(HWY_AVX2, N_AVX2::sim_kernels());
#endif
#if HWY_TARGETS & HWY_SSE4
    s.add(HWY_SSE4, N_SSE4::sim_kernels());
#endif
#if HWY_TARGETS & HWY_SSSE3
    s.add(HWY_SSSE3, N_SSSE3::sim_kernels());
#endif
    return s;
  }();
  return {chosen.sets.data(), chosen.count};
#else
  return {};
#endif
}

DLAVM_INLINE const SimdKernels* simd_kernels() {
  const auto sets = simd_kernel_sets();
  return sets.empty() ? nullptr : sets.front();
}

namespace shadow {

constexpr std::size_t round64(std::size_t n) { return (n + 63) / 64 * 64; }
inline std::size_t pairs(TileShape s) { return static_cast<std::size_t>(s.block_in + 1) / 2; }
inline std::size_t quads(TileShape s) { return static_cast<std::size_t>(s.block_in + 3) / 4; }
inline std::int8_t at(const std::int8_t* row, std::size_t k, TileShape s) {
  return k < static_cast<std::size_t>(s.block_in) ? row[k] : std::int8_t{0};
}
inline void put16(std::byte* out, std::size_t index, std::int16_t v) {
  std::memcpy(out + 2 * index, &v, sizeof(v));
}
// Where weight k of row o sits in an element's shadow, in groups of g values (2: pairs, 4:
// quads), `groups` of them a row: the groups of `chunk` rows side by side.
inline std::size_t wgt_slot(std::size_t o, std::size_t k, std::size_t chunk, std::size_t groups,
                            std::size_t g) {
  return (((o / chunk) * groups + k / g) * chunk + o % chunk) * g + k % g;
}

}  // namespace shadow

DLAVM_INLINE ShadowLayout pair_layout(TileShape s) {
  const std::size_t kp = shadow::pairs(s);
  return {static_cast<std::size_t>(s.batch) * kp * 4,
          shadow::round64(static_cast<std::size_t>(s.block_out) * kp * 4)};
}

DLAVM_INLINE void pack_inp_pairs(const std::int8_t* x, std::byte* out, std::size_t elems,
                                 TileShape s) {
  const std::size_t row = 2 * shadow::pairs(s), rows = elems * static_cast<std::size_t>(s.batch);
  for (std::size_t r = 0; r < rows; ++r, x += s.block_in)
    for (std::size_t k = 0; k < row; ++k) shadow::put16(out, r * row + k, shadow::at(x, k, s));
}

DLAVM_INLINE void pack_wgt_pairs(const std::int8_t* w, std::byte* out, std::size_t elems,
                                 TileShape s) {
  const std::size_t kp = shadow::pairs(s),
                    chunk = static_cast<std::size_t>(gemm_chunk(s.block_out));
  const std::size_t stride = pair_layout(s).wgt_bytes;
  for (std::size_t e = 0; e < elems; ++e, out += stride)
    for (std::size_t o = 0; o < static_cast<std::size_t>(s.block_out); ++o, w += s.block_in)
      for (std::size_t k = 0; k < 2 * kp; ++k)
        shadow::put16(out, shadow::wgt_slot(o, k, chunk, kp, 2), shadow::at(w, k, s));
}

DLAVM_INLINE ShadowLayout quad_layout(TileShape s) {
  const std::size_t kq = shadow::quads(s), bo = static_cast<std::size_t>(s.block_out);
  return {static_cast<std::size_t>(s.batch) * kq * 4, shadow::round64(bo * kq * 4 + bo * 4)};
}

DLAVM_INLINE void pack_inp_quads(const std::int8_t* x, std::byte* out, std::size_t elems,
                                 TileShape s) {
  const std::size_t row = 4 * shadow::quads(s), rows = elems * static_cast<std::size_t>(s.batch);
  for (std::size_t r = 0; r < rows; ++r, x += s.block_in)
    for (std::size_t k = 0; k < row; ++k)
      out[r * row + k] =
          static_cast<std::byte>(static_cast<std::uint8_t>(shadow::at(x, k, s)) ^ 0x80u);
}

DLAVM_INLINE void pack_wgt_quads(const std::int8_t* w, std::byte* out, std::size_t elems,
                                 TileShape s) {
  const std::size_t kq = shadow::quads(s),
                    chunk = static_cast<std::size_t>(gemm_chunk(s.block_out));
  const std::size_t bo = static_cast<std::size_t>(s.block_out), stride = quad_layout(s).wgt_bytes;
  for (std::size_t e = 0; e < elems; ++e, out += stride)
    for (std::size_t o = 0; o < bo; ++o, w += s.block_in) {
      std::int32_t sum = 0;
      for (std::size_t k = 0; k < 4 * kq; ++k) {
        const std::int8_t v = shadow::at(w, k, s);
        out[shadow::wgt_slot(o, k, chunk, kq, 4)] = static_cast<std::byte>(v);
        sum += v;
      }
      const std::int32_t bias = 128 * sum;
      std::memcpy(out + bo * kq * 4 + o * 4, &bias, sizeof(bias));
    }
}

DLAVM_INLINE void unpack_wgt_groups(const std::byte* in, std::int8_t* w, std::size_t elems,
                                    TileShape s, bool quads) {
  const std::size_t g = quads ? 4 : 2, groups = quads ? shadow::quads(s) : shadow::pairs(s),
                    chunk = static_cast<std::size_t>(gemm_chunk(s.block_out));
  const std::size_t stride = (quads ? quad_layout(s) : pair_layout(s)).wgt_bytes;
  for (std::size_t e = 0; e < elems; ++e, in += stride)
    for (std::size_t o = 0; o < static_cast<std::size_t>(s.block_out); ++o, w += s.block_in)
      for (std::size_t k = 0; k < static_cast<std::size_t>(s.block_in); ++k) {
        const std::size_t slot = shadow::wgt_slot(o, k, chunk, groups, g);
        std::int16_t v = 0;
        if (quads)
          v = static_cast<std::int8_t>(in[slot]);
        else
          std::memcpy(&v, in + 2 * slot, sizeof(v));
        w[k] = static_cast<std::int8_t>(v);
      }
}

}  // namespace dlavm::vta::detail
