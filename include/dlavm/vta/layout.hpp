// Host-side layout transforms between the tensors users hold and VTA's tiled layouts, the
// layouts the gallery's operators are declared in (TVM's VTA "packed" layouts):
//   activations  NCHW              <-> [N/B, C/BI, H, W, B, BI]    (B = BATCH, BI = BLOCK_IN)
//   weights      OIHW              <-> [O/BO, I/BI, H, W, BO, BI]  (BO = BLOCK_OUT)
//   matrices     [M, K]            <-> [M/B, K/BI, B, BI]          (GEMM inputs)
//                [N, K] (weights)  <-> [N/BO, K/BI, BO, BI]
// Packing zero-pads N and C (or M and K) up to whole tiles, so a 27-channel input becomes two
// 16-channel tiles; unpacking drops the padding again. Packed outputs use BLOCK_OUT for their
// channel tiles; unpacking reads the tile sizes from the packed shape: unpack_activation(res, n,
// c).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/te/ndarray.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <vector>

namespace dlavm::vta {

namespace detail {

std::int64_t tiles(std::int64_t n, std::int64_t t);

void require_rank(const te::NDArray& a, std::size_t rank, const char* what, const char* layout);

// Calls fn(plain, packed) for every element of an [a, b, h, w] array: its offset there and in
// the tiled [a/ta, b_tiles, h, w, ta, tb] layout.
template <class Fn>
void for_each_tiled(std::int64_t a, std::int64_t b, std::int64_t h, std::int64_t w, std::int64_t ta,
                    std::int64_t tb, std::int64_t b_tiles, Fn&& fn) {
  // element (i, j, y, x) at ((i / ta * b_tiles + j / tb) * h * w + y * w + x) * ta * tb +
  // (i % ta) * tb + j % tb: the tile coordinates counted, not divided, per element
  const std::int64_t hw = h * w, tile = ta * tb;
  std::size_t plain = 0;
  for (std::int64_t i = 0, it = 0, ir = 0; i < a; ++i) {
    for (std::int64_t j = 0, jt = 0, jr = 0; j < b; ++j) {
      std::int64_t packed = (it * b_tiles + jt) * hw * tile + ir * tb + jr;
      for (std::int64_t k = 0; k < hw; ++k, packed += tile)
        fn(plain++, static_cast<std::size_t>(packed));
      if (++jr == tb) {
        jr = 0;
        ++jt;
      }
    }
    if (++ir == ta) {
      ir = 0;
      ++it;
    }
  }
}

// Packs a 4-d array [A, Bc, H, W] into [A/ta, Bc/tb, H, W, ta, tb], zero-padding A and Bc.
te::NDArray pack4(const te::NDArray& in, std::int64_t ta, std::int64_t tb);

// The inverse of pack4, keeping the first `a` x `b` rows and channels.
te::NDArray unpack4(const te::NDArray& in, std::int64_t a, std::int64_t b);

}  // namespace detail

// The tiling all the layouts below are: [A, B, H, W] -> [A/ta, B/tb, H, W, ta, tb], zero-padding
// A and B to whole tiles (ShapeError for another rank or a tile below 1); and its inverse,
// keeping the first a x b of the tiled dims.
te::NDArray pack_tiled(const te::NDArray& abhw, std::int64_t ta, std::int64_t tb);
te::NDArray unpack_tiled(const te::NDArray& packed, std::int64_t a, std::int64_t b);

// NCHW -> [N/BATCH, C/BLOCK_IN, H, W, BATCH, BLOCK_IN].
te::NDArray pack_activation(const te::NDArray& nchw, const Env& env);

// [N/B, C/BO, H, W, B, BO] -> NCHW, keeping n images and c channels.
te::NDArray unpack_activation(const te::NDArray& packed, std::int64_t n, std::int64_t c);

// OIHW -> [O/BLOCK_OUT, I/BLOCK_IN, H, W, BLOCK_OUT, BLOCK_IN].
te::NDArray pack_weight(const te::NDArray& oihw, const Env& env);

namespace detail {
// A matrix [R, C] -> [R/tr, C/tc, tr, tc].
te::NDArray pack_rows(const te::NDArray& rc, std::int64_t tr, std::int64_t tc, const char* what,
                      const char* layout);
}  // namespace detail

// [M, K] -> [M/BATCH, K/BLOCK_IN, BATCH, BLOCK_IN].
te::NDArray pack_matrix(const te::NDArray& mk, const Env& env);

// [N, K] weights -> [N/BLOCK_OUT, K/BLOCK_IN, BLOCK_OUT, BLOCK_IN].
te::NDArray pack_matrix_weight(const te::NDArray& nk, const Env& env);

// [M/B, N/BO, B, BO] -> [M, N], keeping m rows and n columns.
te::NDArray unpack_matrix(const te::NDArray& packed, std::int64_t m, std::int64_t n);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/layout-inl.hpp>
#endif
