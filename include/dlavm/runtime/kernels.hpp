// The host steps of a model as kernels over raw arrays: what firmware runs between VTA steps
// (deploy::emit's generated code calls them) and what dlavm's host kernels (host/, graph's
// pack and unpack) run inside their checks, so that both compute the same values. Elements
// are the C++ types of their dtypes (int8_t ... int32_t, float); integer arithmetic follows
// the host's rules: sums in int64, products wrapping modulo 2^32, results wrapped to the
// output type. Standard library only, no exceptions, no heap, C++17; the caller checks
// shapes (the generator did, at emit time). The element-wise math and the reductions are
// closed lists of kinds (Unary, Binary, Reduce), each kind's value defined once, the kernels
// templates over the kind, so firmware holds the code of the kinds it calls only.
//
//   runtime::pack_tiled(x, xp, n, c, h, w, 1, 16);          // [N, C, H, W] -> VTA's tiles
//   runtime::pool_window_avg(y, g, {planes, 7, 7, 1, 1, 7, 7, 1, 1, 0, 0}, true);
//   runtime::dense(g, w, logits, 1, 1000, 512);             // int32 logits
//   runtime::unary<runtime::Unary::Sigmoid>(x, y, n);
//   runtime::reduce<runtime::Reduce::Mean>(x, y, shape, reduced, rank);
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace dlavm::runtime {

// ---- layouts: VTA's tiles ([A, B, H, W] -> [A/R, B/C, H, W, R, C], zero-padded) ----------

// Tiles of the value read(a, b, y, x) of logical shape [A, B, H, W].
template <class T, class Read>
void pack_tiled_with(T* dst, std::int64_t a, std::int64_t b, std::int64_t h, std::int64_t w,
                     std::int64_t rows, std::int64_t cols, Read&& read) {
  const std::int64_t at = (a + rows - 1) / rows, bt = (b + cols - 1) / cols;
  std::int64_t o = 0;
  for (std::int64_t i = 0; i < at; ++i)
    for (std::int64_t j = 0; j < bt; ++j)
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t x = 0; x < w; ++x)
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c, ++o) {
              const std::int64_t ai = i * rows + r, bj = j * cols + c;
              dst[o] = ai < a && bj < b ? read(ai, bj, y, x) : T(0);
            }
}

template <class T>
void pack_tiled(const T* src, T* dst, std::int64_t a, std::int64_t b, std::int64_t h,
                std::int64_t w, std::int64_t rows, std::int64_t cols) {
  pack_tiled_with(dst, a, b, h, w, rows, cols,
                  [&](std::int64_t i, std::int64_t j, std::int64_t y, std::int64_t x) {
                    return src[((i * b + j) * h + y) * w + x];
                  });
}

template <class T>
void unpack_tiled(const T* src, T* dst, std::int64_t a, std::int64_t b, std::int64_t h,
                  std::int64_t w, std::int64_t rows, std::int64_t cols) {
  const std::int64_t bt = (b + cols - 1) / cols;
  for (std::int64_t ai = 0; ai < a; ++ai)
    for (std::int64_t bj = 0; bj < b; ++bj)
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t x = 0; x < w; ++x)
          dst[((ai * b + bj) * h + y) * w + x] =
              src[((((ai / rows) * bt + bj / cols) * h + y) * w + x) * rows * cols +
                  (ai % rows) * cols + bj % cols];
}

// A convolution's input with its kernel width folded into the channels (graph/layout.hpp),
// then tiled: x [N, C, H, W] -> x' [N, C*KW, H, OW], x'[n, c*KW + dx, y, j] =
// x[n, c, y, j*stride + dx - pad_left] (0 outside x), packed as [N, C*KW, H, OW].
// A batched matmul's operands and result (graph's BatchedMatrix and MatmulWeight layouts):
// `products` matrices one after another, each [M, C] packed as pack_tiled's [M, C, 1, 1]; a
// MatmulWeight product [K, N] is packed transposed, as the dense weight [N, K].
template <class T>
void pack_batched(const T* src, T* dst, std::int64_t products, std::int64_t m, std::int64_t c,
                  std::int64_t rows, std::int64_t cols) {
  const std::int64_t packed = (m + rows - 1) / rows * rows * ((c + cols - 1) / cols) * cols;
  for (std::int64_t p = 0; p < products; ++p)
    pack_tiled(src + p * m * c, dst + p * packed, m, c, 1, 1, rows, cols);
}

template <class T>
void unpack_batched(const T* src, T* dst, std::int64_t products, std::int64_t m, std::int64_t c,
                    std::int64_t rows, std::int64_t cols) {
  const std::int64_t packed = (m + rows - 1) / rows * rows * ((c + cols - 1) / cols) * cols;
  for (std::int64_t p = 0; p < products; ++p)
    unpack_tiled(src + p * packed, dst + p * m * c, m, c, 1, 1, rows, cols);
}

// A BatchedMatrix with lane groups (graph/layout.hpp): [outer, queries, m, c] with `groups` of
// the queries in a tile's lanes, packed as pack_batched's [outer * ceil(queries / groups), m,
// groups * c] (groups * c <= cols: one column tile), query q in product q / groups, its columns
// from (q % groups) * c; the lanes of queries past the last are zero.
namespace detail {
// Calls f(logical, packed) with the offsets of each row of c elements, in logical order.
template <class F>
void for_each_grouped_row(std::int64_t outer, std::int64_t queries, std::int64_t m, std::int64_t c,
                          std::int64_t groups, std::int64_t rows, std::int64_t cols, F&& f) {
  const std::int64_t tiles = (queries + groups - 1) / groups;
  const std::int64_t product = (m + rows - 1) / rows * rows * cols;
  std::int64_t at = 0;
  for (std::int64_t b = 0; b < outer; ++b)
    for (std::int64_t q = 0; q < queries; ++q)
      for (std::int64_t k = 0; k < m; ++k, at += c)
        f(at, (b * tiles + q / groups) * product + k * cols + (q % groups) * c);
}
}  // namespace detail

template <class T>
void pack_batched_grouped(const T* src, T* dst, std::int64_t outer, std::int64_t queries,
                          std::int64_t m, std::int64_t c, std::int64_t groups, std::int64_t rows,
                          std::int64_t cols) {
  const std::int64_t size =
      outer * ((queries + groups - 1) / groups) * ((m + rows - 1) / rows) * rows * cols;
  for (std::int64_t i = 0; i < size; ++i) dst[i] = T(0);
  detail::for_each_grouped_row(outer, queries, m, c, groups, rows, cols,
                               [&](std::int64_t logical, std::int64_t packed) {
                                 for (std::int64_t j = 0; j < c; ++j)
                                   dst[packed + j] = src[logical + j];
                               });
}

template <class T>
void unpack_batched_grouped(const T* src, T* dst, std::int64_t outer, std::int64_t queries,
                            std::int64_t m, std::int64_t c, std::int64_t groups, std::int64_t rows,
                            std::int64_t cols) {
  detail::for_each_grouped_row(outer, queries, m, c, groups, rows, cols,
                               [&](std::int64_t logical, std::int64_t packed) {
                                 for (std::int64_t j = 0; j < c; ++j)
                                   dst[logical + j] = src[packed + j];
                               });
}

// An int32 value VTA stored as `planes` byte planes (graph/layout.hpp): tiles
// [A/R, B/C, P, H, W, R, C], plane p holding bits 8p to 8p + 7, the low planes unsigned and the
// top one signed; reassembled into [A, B, H, W].
inline void unpack_tiled_planes(const std::int8_t* src, std::int32_t* dst, std::int64_t a,
                                std::int64_t b, std::int64_t h, std::int64_t w, std::int64_t planes,
                                std::int64_t rows, std::int64_t cols) {
  const std::int64_t bt = (b + cols - 1) / cols, plane = h * w * rows * cols;
  for (std::int64_t ai = 0; ai < a; ++ai)
    for (std::int64_t bj = 0; bj < b; ++bj)
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t x = 0; x < w; ++x) {
          const std::int8_t* at = src + ((ai / rows) * bt + bj / cols) * planes * plane +
                                  (y * w + x) * rows * cols + (ai % rows) * cols + bj % cols;
          // the top plane's sign, then each lower byte below it (unsigned arithmetic: the
          // shifts of a negative value are defined)
          std::uint32_t v =
              static_cast<std::uint32_t>(static_cast<std::int32_t>(at[(planes - 1) * plane]));
          for (std::int64_t p = planes - 2; p >= 0; --p)
            v = (v << 8) | static_cast<std::uint8_t>(at[p * plane]);
          dst[((ai * b + bj) * h + y) * w + x] = static_cast<std::int32_t>(v);
        }
}

// A batched matmul's result as byte planes: `products` of [M/R, C/T, P, R, T] one after another.
inline void unpack_batched_planes(const std::int8_t* src, std::int32_t* dst, std::int64_t products,
                                  std::int64_t m, std::int64_t c, std::int64_t planes,
                                  std::int64_t rows, std::int64_t cols) {
  const std::int64_t packed =
      (m + rows - 1) / rows * rows * ((c + cols - 1) / cols) * cols * planes;
  for (std::int64_t p = 0; p < products; ++p)
    unpack_tiled_planes(src + p * packed, dst + p * m * c, m, c, 1, 1, planes, rows, cols);
}

template <class T>
void pack_matmul_weight(const T* src, T* dst, std::int64_t products, std::int64_t k, std::int64_t n,
                        std::int64_t rows, std::int64_t cols) {
  const std::int64_t packed = (n + rows - 1) / rows * rows * ((k + cols - 1) / cols) * cols;
  for (std::int64_t p = 0; p < products; ++p) {
    const T* b = src + p * k * n;
    pack_tiled_with(
        dst + p * packed, n, k, 1, 1, rows, cols,
        [&](std::int64_t i, std::int64_t j, std::int64_t, std::int64_t) { return b[j * n + i]; });
  }
}

// ---- a growing state held packed (a KV cache a matmul reads as its weight) ---------------
// The state [S0, ..., S(rank-1)], its growing dim `axis` at some length, is kept with its dims
// permuted (packed dim i is the state's dim perm[i]) as the matmul weight [B..., K, N] in
// VTA's layout [prod(B), N/rows, K/cols, rows, cols], `width` bytes per element (DRAM's
// little-endian bytes). The growing dim is K or N. `held` = {the positions held, the length the
// bytes are laid out for, the positions written (the bytes past them are zero)}: what a run
// that fails after its append leaves behind is undone by the next append.
struct PackedStateShape {
  std::int64_t rank = 0;
  std::int64_t shape[8] = {};  // the growing dim's entry is not read
  std::int64_t perm[8] = {};
  std::int64_t axis = 0, rows = 1, cols = 1, width = 1;
};

namespace detail {

struct PackedGrid {
  std::int64_t products = 1, n_tiles = 0, k_tiles = 0;
};

inline std::int64_t packed_dim(const PackedStateShape& s, std::int64_t i, std::int64_t length) {
  return s.perm[i] == s.axis ? length : s.shape[s.perm[i]];
}

inline PackedGrid packed_grid(const PackedStateShape& s, std::int64_t length) {
  PackedGrid g;
  for (std::int64_t i = 0; i + 2 < s.rank; ++i) g.products *= packed_dim(s, i, length);
  g.n_tiles = (packed_dim(s, s.rank - 1, length) + s.rows - 1) / s.rows;
  g.k_tiles = (packed_dim(s, s.rank - 2, length) + s.cols - 1) / s.cols;
  return g;
}

// Moves the tiles of a layout for `from` positions to where a layout for `to` keeps them (the
// buffer holds both); the new tiles become zero.
inline void lay_out_packed(std::uint8_t* bytes, const PackedStateShape& s, std::int64_t from,
                           std::int64_t to) {
  const PackedGrid a = packed_grid(s, from), b = packed_grid(s, to);
  if (a.n_tiles == b.n_tiles && a.k_tiles == b.k_tiles) return;
  const std::int64_t tile = s.rows * s.cols * s.width;
  const auto old_at = [&](std::int64_t p, std::int64_t n, std::int64_t k) {
    return ((p * a.n_tiles + n) * a.k_tiles + k) * tile;
  };
  const auto new_at = [&](std::int64_t p, std::int64_t n, std::int64_t k) {
    return ((p * b.n_tiles + n) * b.k_tiles + k) * tile;
  };
  const std::int64_t n_kept = a.n_tiles < b.n_tiles ? a.n_tiles : b.n_tiles;
  const std::int64_t k_kept = a.k_tiles < b.k_tiles ? a.k_tiles : b.k_tiles;
  const auto move = [&](std::int64_t p, std::int64_t n, std::int64_t k) {
    if (old_at(p, n, k) != new_at(p, n, k))
      std::memmove(bytes + new_at(p, n, k), bytes + old_at(p, n, k),
                   static_cast<std::size_t>(tile));
  };
  if (b.n_tiles >= a.n_tiles && b.k_tiles >= a.k_tiles) {
    // growing: every tile moves to a place at or after its old one, so moving the last first
    // never overwrites one still to move. A row of k tiles moves as one block, and a product's
    // rows too when the k tiles stay (a KV cache's megabyte in 8 moves, not 4,096)
    const auto move_run = [&](std::int64_t p, std::int64_t n, std::int64_t tiles) {
      if (old_at(p, n, 0) != new_at(p, n, 0))
        std::memmove(bytes + new_at(p, n, 0), bytes + old_at(p, n, 0),
                     static_cast<std::size_t>(tiles * tile));
    };
    for (std::int64_t p = b.products; p-- > 0;) {
      if (a.k_tiles == b.k_tiles) {
        move_run(p, 0, n_kept * k_kept);
        continue;
      }
      for (std::int64_t n = n_kept; n-- > 0;) move_run(p, n, k_kept);
    }
    for (std::int64_t p = 0; p < b.products; ++p)
      for (std::int64_t n = 0; n < b.n_tiles; ++n)
        for (std::int64_t k = 0; k < b.k_tiles; ++k)
          if (n >= a.n_tiles || k >= a.k_tiles)
            std::memset(bytes + new_at(p, n, k), 0, static_cast<std::size_t>(tile));
  } else {
    // shrinking (after a run that failed): the first tile first, each to a place at or before
    // its old one
    for (std::int64_t p = 0; p < b.products; ++p)
      for (std::int64_t n = 0; n < n_kept; ++n)
        for (std::int64_t k = 0; k < k_kept; ++k) move(p, n, k);
  }
}

// Calls f(packed byte offset, n, stride) for every run of the state's positions [from, to)
// along its growing dim, in row-major order of those positions, in the layout for `laid`
// positions: n elements consecutive along the state's innermost dim that lie in one tile,
// `stride` bytes apart from the offset (the width where that dim runs along a tile's row: one
// block). A decode step's append of a KV cache is then a few dozen runs, not an element at a
// time.
template <class F>
void for_each_packed(const PackedStateShape& s, std::int64_t laid, std::int64_t from,
                     std::int64_t to, F&& f) {
  if (from >= to) return;
  std::int64_t extent[8] = {}, index[8] = {}, part[8] = {}, product_stride[8] = {};
  for (std::int64_t k = 0; k < s.rank; ++k) {
    extent[k] = k == s.axis ? to - from : s.shape[k];
    if (extent[k] == 0) return;
  }
  const PackedGrid g = packed_grid(s, laid);
  const std::int64_t tile = s.rows * s.cols * s.width;
  for (std::int64_t i = s.rank - 3, stride = g.n_tiles * g.k_tiles * tile; i >= 0; --i) {
    product_stride[s.perm[i]] = stride;
    stride *= s.shape[s.perm[i]];
  }
  // the offset separates by dim: a product's tiles, then the tile of row n and column k and
  // the place in it. Each dim keeps its index as (tile, place in the tile), stepped without a
  // division; its part of the offset is tile * tile_step[k] + place * place_step[k]. The
  // innermost dim steps a run at a time, to the end of its tile or of its extent.
  const std::int64_t n_dim = s.perm[s.rank - 1], k_dim = s.perm[s.rank - 2];
  std::int64_t span[8] = {}, tile_step[8] = {}, place_step[8] = {}, tile_at[8] = {}, place[8] = {};
  for (std::int64_t k = 0; k < s.rank; ++k) {
    span[k] = k == n_dim ? s.rows : k == k_dim ? s.cols : 1;
    tile_step[k] = k == n_dim ? g.k_tiles * tile : k == k_dim ? tile : product_stride[k];
    place_step[k] = k == n_dim ? s.cols * s.width : k == k_dim ? s.width : 0;
  }
  const auto start = [&](std::int64_t k) {
    const std::int64_t at = k == s.axis ? from : 0;
    tile_at[k] = at / span[k];
    place[k] = at % span[k];
    part[k] = tile_at[k] * tile_step[k] + place[k] * place_step[k];
  };
  std::int64_t offset = 0;
  for (std::int64_t k = 0; k < s.rank; ++k) {
    start(k);
    offset += part[k];
  }
  const std::int64_t last = s.rank - 1;
  for (;;) {
    for (;;) {  // the innermost dim's runs
      const std::int64_t left = extent[last] - index[last], room = span[last] - place[last];
      const std::int64_t n = left < room ? left : room;
      f(offset, n, place_step[last]);
      if (n == left) break;
      index[last] += n;
      offset -= part[last];
      place[last] = 0;
      part[last] = ++tile_at[last] * tile_step[last];
      offset += part[last];
    }
    offset -= part[last];
    index[last] = 0;
    start(last);
    offset += part[last];
    std::int64_t k = last;
    while (k-- > 0) {
      offset -= part[k];
      if (++index[k] == extent[k]) {
        index[k] = 0;
        start(k);
        offset += part[k];
        continue;
      }
      if (++place[k] == span[k]) {
        place[k] = 0;
        ++tile_at[k];
      }
      part[k] = tile_at[k] * tile_step[k] + place[k] * place_step[k];
      offset += part[k];
      break;
    }
    if (k < 0) return;
  }
}

}  // namespace detail

// The packed bytes of `length` positions.
inline std::int64_t packed_state_bytes(const PackedStateShape& s, std::int64_t length) {
  const detail::PackedGrid g = detail::packed_grid(s, length);
  return g.products * g.n_tiles * g.k_tiles * s.rows * s.cols * s.width;
}

// append_packed's default listener: nothing to follow.
struct NoWrites {
  constexpr void operator()(std::int64_t, std::int64_t, std::int64_t) const {}
};

// Writes `count` positions (`rows`: the state's shape with `count` along its growing dim,
// row-major, `width` bytes each) after the held[0] positions, the tiles laid out for held[0] +
// count first (the buffer must hold packed_state_bytes of that many); then held[1] and held[2]
// are held[0] + count, and the caller advances held[0] once the run has succeeded.
// `wrote(offset, n, stride)` hears of every run of elements written in place, n of `width`
// bytes, `stride` bytes apart from `offset` (a copy of the bytes kept elsewhere follows them
// with those); moving the held tiles, when the new positions need another tile, is not
// reported: the caller sees it in the size (packed_state_bytes of held[1] before and of the new
// length after).
template <class Wrote = NoWrites>
inline void append_packed(std::uint8_t* packed, const std::uint8_t* rows, std::int64_t count,
                          std::int64_t* held, const PackedStateShape& s, Wrote&& wrote = {}) {
  const std::int64_t length = held[0] + count;
  detail::lay_out_packed(packed, s, held[1], length);
  held[1] = length;
  // what a failed run wrote past the held positions that this one does not overwrite
  const std::int64_t extent =
      detail::packed_dim(s, s.perm[s.rank - 1] == s.axis ? s.rank - 1 : s.rank - 2, length);
  const std::int64_t tiles = s.perm[s.rank - 1] == s.axis ? s.rows : s.cols;
  const std::int64_t end = (extent + tiles - 1) / tiles * tiles;
  const auto width = static_cast<std::size_t>(s.width);
  detail::for_each_packed(s, length, length, held[2] < end ? held[2] : end,
                          [&](std::int64_t at, std::int64_t n, std::int64_t stride) {
                            for (std::int64_t j = 0; j < n; ++j)
                              std::memset(packed + at + j * stride, 0, width);
                            wrote(at, n, stride);
                          });
  held[2] = length;
  const std::uint8_t* from = rows;
  detail::for_each_packed(s, length, held[0], length,
                          [&](std::int64_t at, std::int64_t n, std::int64_t stride) {
                            if (stride == s.width) {
                              std::memcpy(packed + at, from, static_cast<std::size_t>(n) * width);
                            } else if (s.width == 1) {  // (int8: a store, not a call, a byte)
                              for (std::int64_t j = 0; j < n; ++j)
                                packed[at + j * stride] = from[j];
                            } else {
                              for (std::int64_t j = 0; j < n; ++j)
                                std::memcpy(packed + at + j * stride, from + j * s.width, width);
                            }
                            from += n * s.width;
                            wrote(at, n, stride);
                          });
}

namespace detail {

// A row-major walk over the indices of `shape` (rank at most 8) that keeps N offsets in step:
// offset j moves by stride[j][k] along dim k. The loop of transpose, of a broadcast and of
// a reduction.
template <int N>
struct Walk {
  std::int64_t rank = 0;
  std::int64_t shape[8] = {};
  std::int64_t stride[N][8] = {};
  std::int64_t index[8] = {};
  std::int64_t at[N] = {};

  // Appends a dim of extent n, with the offsets' strides along it.
  void push(std::int64_t n, const std::int64_t (&steps)[N]) {
    shape[rank] = n;
    for (int j = 0; j < N; ++j) stride[j][rank] = steps[j];
    ++rank;
  }
  // Moves to the next index, the offsets with it; false after the last (all back at 0).
  bool next() {
    for (std::int64_t k = rank; k-- > 0;) {
      for (int j = 0; j < N; ++j) at[j] += stride[j][k];
      if (++index[k] < shape[k]) return true;
      for (int j = 0; j < N; ++j) at[j] -= stride[j][k] * shape[k];
      index[k] = 0;
    }
    return false;
  }
};

// The row-major strides of `shape` into `stride`; returns the element count.
inline std::int64_t row_major_strides(const std::int64_t* shape, std::int64_t rank,
                                      std::int64_t* stride) {
  std::int64_t n = 1;
  for (std::int64_t k = rank; k-- > 0;) {
    stride[k] = n;
    n *= shape[k];
  }
  return n;
}

}  // namespace detail

// y = x with its dims permuted: y's dim i is x's dim perm[i] (rank at most 8).
template <class T>
void transpose(const T* x, T* y, const std::int64_t* shape, const std::int64_t* perm,
               std::int64_t rank) {
  std::int64_t stride[8] = {};
  const std::int64_t n = detail::row_major_strides(shape, rank, stride);
  if (n == 0) return;
  detail::Walk<1> w;  // over y's indices, the offset into x
  for (std::int64_t k = 0; k < rank; ++k) w.push(shape[perm[k]], {stride[perm[k]]});
  std::int64_t o = 0;
  do y[o++] = x[w.at[0]];
  while (w.next());
}

template <class T>
void pack_unfolded(const T* src, T* dst, std::int64_t n, std::int64_t c, std::int64_t h,
                   std::int64_t w, std::int64_t kw, std::int64_t stride, std::int64_t pad_left,
                   std::int64_t ow, std::int64_t rows, std::int64_t cols) {
  pack_tiled_with(dst, n, c * kw, h, ow, rows, cols,
                  [&](std::int64_t i, std::int64_t ch, std::int64_t y, std::int64_t j) {
                    const std::int64_t x = j * stride + ch % kw - pad_left;
                    return x < 0 || x >= w ? T(0) : src[((i * c + ch / kw) * h + y) * w + x];
                  });
}

// ---- pooling windows over [planes, h, w] -----------------------------------------------

struct PoolShape {
  std::int64_t planes, h, w, oh, ow, kh, kw, sh, sw, pt, pl;
};

// Sets every output to reduce(plane, y0, y1, x0, x1): the rows [y0, y1) and columns [x0, x1)
// of its window that lie inside the input plane.
template <class T, class U, class Reduce>
void for_each_window(const T* x, U* y, const PoolShape& d, Reduce&& reduce) {
  for (std::int64_t p = 0; p < d.planes; ++p) {
    const T* plane = x + p * d.h * d.w;
    U* out = y + p * d.oh * d.ow;
    for (std::int64_t oy = 0; oy < d.oh; ++oy) {
      const std::int64_t y0 = oy * d.sh - d.pt < 0 ? 0 : oy * d.sh - d.pt;
      const std::int64_t y1 = oy * d.sh - d.pt + d.kh < d.h ? oy * d.sh - d.pt + d.kh : d.h;
      for (std::int64_t ox = 0; ox < d.ow; ++ox) {
        const std::int64_t x0 = ox * d.sw - d.pl < 0 ? 0 : ox * d.sw - d.pl;
        const std::int64_t x1 = ox * d.sw - d.pl + d.kw < d.w ? ox * d.sw - d.pl + d.kw : d.w;
        out[oy * d.ow + ox] = static_cast<U>(reduce(plane, y0, y1, x0, x1));
      }
    }
  }
}

// The window's maximum; a NaN wins (float).
template <class T>
void pool_window_max(const T* x, T* y, const PoolShape& d) {
  for_each_window(
      x, y, d,
      [&](const T* plane, std::int64_t y0, std::int64_t y1, std::int64_t x0, std::int64_t x1) {
        T m = plane[y0 * d.w + x0];
        for (std::int64_t iy = y0; iy < y1; ++iy)
          for (std::int64_t ix = x0; ix < x1; ++ix) {
            const T v = plane[iy * d.w + ix];
            if constexpr (std::is_floating_point_v<T>) {
              if (v > m || std::isnan(v)) m = v;
              if (std::isnan(m)) return m;
            } else {
              m = v > m ? v : m;
            }
          }
        return m;
      });
}

constexpr std::int64_t floor_div_pos(std::int64_t a, std::int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// The window's average: integers summed in int64 and divided rounding down, floats summed in
// row-major order; divided by the window's size, or by its part inside the input.
template <class T>
void pool_window_avg(const T* x, T* y, const PoolShape& d, bool count_include_pad) {
  for_each_window(
      x, y, d,
      [&](const T* plane, std::int64_t y0, std::int64_t y1, std::int64_t x0, std::int64_t x1) {
        const std::int64_t n = count_include_pad ? d.kh * d.kw : (y1 - y0) * (x1 - x0);
        if constexpr (std::is_floating_point_v<T>) {
          float s = 0;
          for (std::int64_t iy = y0; iy < y1; ++iy)
            for (std::int64_t ix = x0; ix < x1; ++ix) s += plane[iy * d.w + ix];
          return static_cast<T>(s / static_cast<float>(n));
        } else {
          std::int64_t s = 0;
          for (std::int64_t iy = y0; iy < y1; ++iy)
            for (std::int64_t ix = x0; ix < x1; ++ix) s += plane[iy * d.w + ix];
          return static_cast<T>(floor_div_pos(s, n));
        }
      });
}

// ---- linear ------------------------------------------------------------------------------

// y[m, n] = sum_k x[m, k] * w[n, k]: integers as uint32 products and sums (wrapping, as an
// int32 accumulator does), floats in order.
template <class X, class W, class Y>
void dense(const X* x, const W* w, Y* y, std::int64_t rows, std::int64_t n_out, std::int64_t k_in) {
  using Acc = std::conditional_t<std::is_floating_point_v<Y>, float, std::uint32_t>;
  for (std::int64_t m = 0; m < rows; ++m) {
    const X* xr = x + m * k_in;
    for (std::int64_t n = 0; n < n_out; ++n) {
      const W* wr = w + n * k_in;
      Acc acc = 0;
      for (std::int64_t k = 0; k < k_in; ++k)
        acc += static_cast<Acc>(xr[k]) * static_cast<Acc>(wr[k]);
      y[m * n_out + n] = static_cast<Y>(acc);
    }
  }
}

// ---- elementwise ---------------------------------------------------------------------------

// Two's-complement wrap of v to `bits` bits (1..64), sign-extended.
constexpr std::int64_t wrap_bits(std::uint64_t v, int bits) {
  if (bits >= 64) return static_cast<std::int64_t>(v);
  const std::uint64_t m = (std::uint64_t{1} << bits) - 1, sign = std::uint64_t{1} << (bits - 1);
  v &= m;
  return (v & sign) != 0 ? static_cast<std::int64_t>(v | ~m) : static_cast<std::int64_t>(v);
}

// y = clamp((x + round) >> shift, lo, hi), the sum wrapped to the input's `in_bits`.
template <class In, class Out>
void requantize(const In* x, Out* y, std::int64_t n, int in_bits, int shift, std::uint64_t round,
                std::int64_t lo, std::int64_t hi) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t s =
        wrap_bits(static_cast<std::uint64_t>(static_cast<std::int64_t>(x[i])) + round, in_bits) >>
        shift;
    y[i] = static_cast<Out>(s < lo ? lo : (s > hi ? hi : s));
  }
}

template <class T>
void relu(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] < T(0) ? T(0) : x[i];
}

template <class T>
void clip(const T* x, T* y, std::int64_t n, T lo, T hi) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
}

// ---- element-wise math: the unary and binary functions of graph ops ----------------------
// Each kind is defined once, by its value (unary_value, binary_value); the kernels apply it
// over arrays, for the host kernels (host/unary.hpp, host/elementwise.hpp) and for firmware.
// float: float32 arithmetic and <cmath>'s float functions. Integers (for the kinds
// takes_integers allows): two's-complement results wrapped to T's width, computed in uint64 so
// that no signed type overflows.

enum class Unary : std::uint8_t {
  Sigmoid,      // 1 / (1 + exp(-x))
  Tanh,         // tanh(x)
  Exp,          // exp(x)
  Log,          // log(x): -inf at 0, NaN below
  Sqrt,         // sqrt(x): NaN below 0, sqrt(-0) = -0
  Erf,          // erf(x)
  Abs,          // |x|: float with its sign cleared; integers wrap (the minimum stays)
  Neg,          // -x: float with its sign flipped; integers 0 - x, wrapped
  HardSigmoid,  // max(0, min(1, alpha * x + beta)); NaN stays NaN
  HardSwish,    // x * hard_sigmoid(x) with alpha = 1/6 (as a float) and beta = 0.5
  LeakyRelu,    // x < 0 ? alpha * x : x
  Reciprocal,   // 1 / x
  Floor,        // floor(x)
  Ceil,         // ceil(x)
  Round,        // x rounded to the nearest integer, halves to even (rint)
  Sign,         // -1, 0 or 1 (float: NaN stays NaN, -0 and +0 give 0)
  Sin,          // the trigonometric and hyperbolic functions and their inverses: <cmath>'s,
  Cos,          // NaN outside their domains
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Softplus,         // log(1 + exp(x)) (log1p)
  Softsign,         // x / (1 + |x|)
  Mish,             // x * tanh(softplus(x))
  Elu,              // x < 0 ? alpha * (exp(x) - 1) : x
  Selu,             // x <= 0 ? beta * (alpha * exp(x) - alpha) : beta * x (beta: ONNX's gamma)
  Celu,             // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
  ThresholdedRelu,  // x > alpha ? x : 0 (NaN gives 0, as ONNX's definition)
};
inline constexpr int kUnaryCount = static_cast<int>(Unary::ThresholdedRelu) + 1;  // kinds 0, 1..
constexpr bool takes_integers(Unary k) {
  return k == Unary::Abs || k == Unary::Neg || k == Unary::Sign;
}

enum class Binary : std::uint8_t {
  Add,
  Sub,
  Mul,
  Div,      // float: IEEE (x / 0 is +-inf, 0 / 0 NaN); integers: the quotient truncated toward
            // zero, x / 0 = 0, the minimum / -1 = the minimum (wraps)
  Pow,      // std::pow of floats (powf: pow(x, 0) = 1 for any x, pow(1, y) = 1, a negative
            // base to a non-integer power NaN)
  Maximum,  // NaN when either operand is; of equal operands (-0 and +0) the first
  Minimum,  // likewise
  Prelu,    // a < 0 ? a * b : a (b the slope); integers wrap like Mul
};
inline constexpr int kBinaryCount = static_cast<int>(Binary::Prelu) + 1;
constexpr bool takes_integers(Binary k) { return k != Binary::Pow; }

namespace detail {

// f(std::integral_constant<Kind, k>{}) for k one of the kinds I .. N - 1.
template <class Kind, int I, int N, class F>
decltype(auto) with_kind_from(Kind k, F& f) {
  if constexpr (I + 1 < N)
    if (k != static_cast<Kind>(I)) return with_kind_from<Kind, I + 1, N>(k, f);
  return f(std::integral_constant<Kind, static_cast<Kind>(I)>{});
}

}  // namespace detail

// Calls f(std::integral_constant<Unary, k>{}): the kind as a template argument, for the host
// kernels that choose a kernel by it (likewise for Binary and Reduce, below).
template <class F>
decltype(auto) with_kind(Unary k, F&& f) {
  return detail::with_kind_from<Unary, 0, kUnaryCount>(k, f);
}
template <class F>
decltype(auto) with_kind(Binary k, F&& f) {
  return detail::with_kind_from<Binary, 0, kBinaryCount>(k, f);
}

namespace detail {

// log(1 + exp(x)): log1p keeps the small values' digits, and exp's overflow gives inf.
inline float softplus(float x) { return std::log1p(std::exp(x)); }

inline float hard_sigmoid(float x, float alpha, float beta) {
  const float v = alpha * x + beta;
  return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

template <Unary K>
float unary_float(float x, [[maybe_unused]] float alpha, [[maybe_unused]] float beta) {
  if constexpr (K == Unary::Sigmoid)
    return 1.0f / (1.0f + std::exp(-x));
  else if constexpr (K == Unary::Tanh)
    return std::tanh(x);
  else if constexpr (K == Unary::Exp)
    return std::exp(x);
  else if constexpr (K == Unary::Log)
    return std::log(x);
  else if constexpr (K == Unary::Sqrt)
    return std::sqrt(x);
  else if constexpr (K == Unary::Erf)
    return std::erf(x);
  else if constexpr (K == Unary::Abs)
    return std::fabs(x);
  else if constexpr (K == Unary::Neg)
    return -x;
  else if constexpr (K == Unary::HardSigmoid)
    return hard_sigmoid(x, alpha, beta);
  else if constexpr (K == Unary::HardSwish)
    return x * hard_sigmoid(x, 1.0f / 6.0f, 0.5f);
  else if constexpr (K == Unary::LeakyRelu)
    return x < 0.0f ? alpha * x : x;
  else if constexpr (K == Unary::Reciprocal)
    return 1.0f / x;
  else if constexpr (K == Unary::Floor)
    return std::floor(x);
  else if constexpr (K == Unary::Ceil)
    return std::ceil(x);
  else if constexpr (K == Unary::Round)
    return std::rint(x);
  else if constexpr (K == Unary::Sign)
    return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x));
  else if constexpr (K == Unary::Sin)
    return std::sin(x);
  else if constexpr (K == Unary::Cos)
    return std::cos(x);
  else if constexpr (K == Unary::Tan)
    return std::tan(x);
  else if constexpr (K == Unary::Asin)
    return std::asin(x);
  else if constexpr (K == Unary::Acos)
    return std::acos(x);
  else if constexpr (K == Unary::Atan)
    return std::atan(x);
  else if constexpr (K == Unary::Sinh)
    return std::sinh(x);
  else if constexpr (K == Unary::Cosh)
    return std::cosh(x);
  else if constexpr (K == Unary::Asinh)
    return std::asinh(x);
  else if constexpr (K == Unary::Acosh)
    return std::acosh(x);
  else if constexpr (K == Unary::Atanh)
    return std::atanh(x);
  else if constexpr (K == Unary::Softplus)
    return softplus(x);
  else if constexpr (K == Unary::Softsign)
    return x / (1.0f + std::fabs(x));
  else if constexpr (K == Unary::Mish)
    return x * std::tanh(softplus(x));
  else if constexpr (K == Unary::Elu)
    return x < 0.0f ? alpha * (std::exp(x) - 1.0f) : x;
  else if constexpr (K == Unary::Selu)
    return x <= 0.0f ? beta * (alpha * std::exp(x) - alpha) : beta * x;
  else if constexpr (K == Unary::Celu)
    return std::isnan(x)
               ? x  // fmax and fmin would drop it
               : std::fmax(0.0f, x) + std::fmin(0.0f, alpha * (std::exp(x / alpha) - 1.0f));
  else if constexpr (K == Unary::ThresholdedRelu)
    return x > alpha ? x : 0.0f;
}

template <Binary K>
float binary_float(float a, float b) {
  if constexpr (K == Binary::Add)
    return a + b;
  else if constexpr (K == Binary::Sub)
    return a - b;
  else if constexpr (K == Binary::Mul)
    return a * b;
  else if constexpr (K == Binary::Div)
    return a / b;
  else if constexpr (K == Binary::Pow)
    return std::pow(a, b);
  else if constexpr (K == Binary::Maximum)
    return (std::isnan(b) || b > a) ? b : a;
  else if constexpr (K == Binary::Minimum)
    return (std::isnan(b) || b < a) ? b : a;
  else if constexpr (K == Binary::Prelu)
    return a < 0.0f ? a * b : a;
}

template <Binary K, class T>
T binary_integer(T a, T b) {
  static_assert(takes_integers(K), "this binary function takes float only");
  const auto ua = static_cast<std::uint64_t>(a), ub = static_cast<std::uint64_t>(b);
  constexpr bool is_signed = std::is_signed_v<T>;
  if constexpr (K == Binary::Add) return static_cast<T>(ua + ub);
  if constexpr (K == Binary::Sub) return static_cast<T>(ua - ub);
  if constexpr (K == Binary::Mul) return static_cast<T>(ua * ub);
  if constexpr (K == Binary::Div) {
    if (b == T(0)) return T(0);
    if constexpr (is_signed)
      if (b == T(-1)) return static_cast<T>(0 - ua);  // the minimum / -1 overflows: wrap
    return static_cast<T>(a / b);
  }
  if constexpr (K == Binary::Maximum) return b > a ? b : a;
  if constexpr (K == Binary::Minimum) return b < a ? b : a;
  if constexpr (K == Binary::Prelu) {
    if constexpr (is_signed) return a < T(0) ? static_cast<T>(ua * ub) : a;
    return a;  // unsigned: never below 0
  }
  return T(0);  // not reached (Pow is float only)
}

}  // namespace detail

// The value of a unary kind at x: alpha and beta are HardSigmoid's and LeakyRelu's (the
// others ignore them).
template <Unary K, class T>
T unary_value(T x, [[maybe_unused]] float alpha = 0.0f, [[maybe_unused]] float beta = 0.0f) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(detail::unary_float<K>(static_cast<float>(x), alpha, beta));
  } else {
    static_assert(takes_integers(K), "this unary function takes float only");
    const auto negated = static_cast<T>(0 - static_cast<std::uint64_t>(x));
    if constexpr (K == Unary::Sign)
      return x > T(0) ? T(1) : (x == T(0) ? T(0) : static_cast<T>(-1));
    else if constexpr (K == Unary::Neg)
      return negated;
    else if constexpr (std::is_signed_v<T>)
      return x < T(0) ? negated : x;
    else
      return x;  // the absolute value of an unsigned x
  }
}

template <Binary K, class T>
T binary_value(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return static_cast<T>(detail::binary_float<K>(static_cast<float>(a), static_cast<float>(b)));
  else
    return detail::binary_integer<K>(a, b);
}

// y = f(x) over n elements.
template <Unary K, class T>
void unary(const T* x, T* y, std::int64_t n, float alpha = 0.0f, float beta = 0.0f) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = unary_value<K>(x[i], alpha, beta);
}

// y = f(a, b) of one shape (n elements).
template <Binary K, class T>
void binary(const T* a, const T* b, T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = binary_value<K>(a[i], b[i]);
}

namespace detail {

// Calls f(o, at) for each element of y (of `shape`, `rank` dims, at most 8) in row-major order:
// o its offset, at[j] the offset of the element operand j reads under numpy broadcasting, the
// operand of shapes[j] aligned to y's rank (leading 1s where it has fewer dims), each dim equal
// to y's or 1 (stretched). The loop of every broadcasting kernel.
template <int N, class F>
void for_each_broadcast(const std::int64_t* shape, const std::int64_t* const (&shapes)[N],
                        std::int64_t rank, F&& f) {
  std::int64_t strides[N][8] = {}, n = 1;
  for (int j = 0; j < N; ++j) row_major_strides(shapes[j], rank, strides[j]);
  Walk<N> w;  // over y's indices, the offsets into the operands
  for (std::int64_t k = 0; k < rank; ++k) {
    std::int64_t steps[N] = {};
    for (int j = 0; j < N; ++j) steps[j] = shapes[j][k] == 1 ? 0 : strides[j][k];
    w.push(shape[k], steps);
    n *= shape[k];
  }
  if (n == 0) return;
  std::int64_t o = 0;
  do f(o++, w.at);
  while (w.next());
}

}  // namespace detail

// y = f(a, b) under numpy broadcasting: y of `shape`, a and b of a_shape and b_shape aligned
// to its `rank` dims (at most 8; leading 1s where an operand has fewer), each dim equal to
// y's or 1 (stretched).
template <Binary K, class T>
void binary_broadcast(const T* a, const T* b, T* y, const std::int64_t* shape,
                      const std::int64_t* a_shape, const std::int64_t* b_shape, std::int64_t rank) {
  detail::for_each_broadcast<2>(
      shape, {a_shape, b_shape}, rank,
      [&](std::int64_t o, const std::int64_t* at) { y[o] = binary_value<K>(a[at[0]], b[at[1]]); });
}

// ---- booleans: comparisons, logic, where, float classes ----------------------------------
// dlavm has no bool dtype: a boolean is a uint8 holding 0 or 1 (ONNX's BOOL). A comparison or
// a float class gives 0 or 1 in its output type Out (uint8 in firmware; the host kernels store
// into their int64 elements); the logical kinds and where's condition read any nonzero as true
// and give 0 or 1.

enum class Compare : std::uint8_t {
  Equal,         // a == b
  NotEqual,      // a != b
  Greater,       // a > b
  GreaterEqual,  // a >= b
  Less,          // a < b
  LessEqual,     // a <= b
};
// float: IEEE's comparisons: a NaN compares false, also with itself (NotEqual: true), and -0
// equals +0. Integers of any width and signedness: their values (the operands' type T).
inline constexpr int kCompareCount = static_cast<int>(Compare::LessEqual) + 1;

enum class Logical : std::uint8_t {
  And,  // of two operands
  Or,
  Xor,
  Not,  // of one
};
inline constexpr int kLogicalCount = static_cast<int>(Logical::Not) + 1;
constexpr int arity(Logical k) { return k == Logical::Not ? 1 : 2; }

enum class FloatClass : std::uint8_t {
  Nan,  // x is a NaN
  Inf,  // x is +inf (when `positive`) or -inf (when `negative`)
};
inline constexpr int kFloatClassCount = static_cast<int>(FloatClass::Inf) + 1;

template <class F>
decltype(auto) with_kind(Compare k, F&& f) {
  return detail::with_kind_from<Compare, 0, kCompareCount>(k, f);
}
template <class F>
decltype(auto) with_kind(Logical k, F&& f) {
  return detail::with_kind_from<Logical, 0, kLogicalCount>(k, f);
}
template <class F>
decltype(auto) with_kind(FloatClass k, F&& f) {
  return detail::with_kind_from<FloatClass, 0, kFloatClassCount>(k, f);
}

template <Compare K, class T>
bool compare_value(T a, T b) {
  if constexpr (K == Compare::Equal)
    return a == b;
  else if constexpr (K == Compare::NotEqual)
    return a != b;
  else if constexpr (K == Compare::Greater)
    return a > b;
  else if constexpr (K == Compare::GreaterEqual)
    return a >= b;
  else if constexpr (K == Compare::Less)
    return a < b;
  else
    return a <= b;
}

// b is read by the kinds of two operands only.
template <Logical K, class T>
bool logical_value(T a, [[maybe_unused]] T b = T(0)) {
  const bool x = a != T(0);
  if constexpr (K == Logical::Not) {
    return !x;
  } else {
    const bool z = b != T(0);
    if constexpr (K == Logical::And) return x && z;
    if constexpr (K == Logical::Or) return x || z;
    return x != z;  // Xor
  }
}

// positive and negative are Inf's (Nan ignores them).
template <FloatClass K>
bool float_class_value(float x, [[maybe_unused]] bool positive = true,
                       [[maybe_unused]] bool negative = true) {
  if constexpr (K == FloatClass::Nan)
    return std::isnan(x);
  else
    return std::isinf(x) && (x > 0.0f ? positive : negative);
}

// y = a K b of one shape (n elements), 0 or 1.
template <Compare K, class T, class Out>
void compare(const T* a, const T* b, Out* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<Out>(compare_value<K>(a[i], b[i]));
}

// y = a K b under numpy broadcasting (as binary_broadcast).
template <Compare K, class T, class Out>
void compare_broadcast(const T* a, const T* b, Out* y, const std::int64_t* shape,
                       const std::int64_t* a_shape, const std::int64_t* b_shape,
                       std::int64_t rank) {
  detail::for_each_broadcast<2>(shape, {a_shape, b_shape}, rank,
                                [&](std::int64_t o, const std::int64_t* at) {
                                  y[o] = static_cast<Out>(compare_value<K>(a[at[0]], b[at[1]]));
                                });
}

// y = the logical kind of a and b (of one shape, n elements), or of x alone (Not), 0 or 1.
template <Logical K, class T>
void logical(const T* a, const T* b, T* y, std::int64_t n) {
  static_assert(arity(K) == 2, "this logical kind takes one operand");
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(logical_value<K>(a[i], b[i]));
}
template <Logical K, class T>
void logical(const T* x, T* y, std::int64_t n) {
  static_assert(arity(K) == 1, "this logical kind takes two operands");
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(logical_value<K>(x[i]));
}

// The logical kind of two operands under numpy broadcasting (as binary_broadcast).
template <Logical K, class T>
void logical_broadcast(const T* a, const T* b, T* y, const std::int64_t* shape,
                       const std::int64_t* a_shape, const std::int64_t* b_shape,
                       std::int64_t rank) {
  static_assert(arity(K) == 2, "this logical kind takes one operand");
  detail::for_each_broadcast<2>(shape, {a_shape, b_shape}, rank,
                                [&](std::int64_t o, const std::int64_t* at) {
                                  y[o] = static_cast<T>(logical_value<K>(a[at[0]], b[at[1]]));
                                });
}

// y = cond ? a : b (cond nonzero: true), all of one shape (n elements).
template <class C, class T>
void where(const C* cond, const T* a, const T* b, T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = cond[i] != C(0) ? a[i] : b[i];
}

// y = cond ? a : b, the three broadcast to y's `shape` (as binary_broadcast).
template <class C, class T>
void where_broadcast(const C* cond, const T* a, const T* b, T* y, const std::int64_t* shape,
                     const std::int64_t* c_shape, const std::int64_t* a_shape,
                     const std::int64_t* b_shape, std::int64_t rank) {
  detail::for_each_broadcast<3>(shape, {c_shape, a_shape, b_shape}, rank,
                                [&](std::int64_t o, const std::int64_t* at) {
                                  y[o] = cond[at[0]] != C(0) ? a[at[1]] : b[at[2]];
                                });
}

// y = whether x is of the class, 0 or 1, over n elements.
template <FloatClass K, class Out>
void float_class(const float* x, Out* y, std::int64_t n, bool positive = true,
                 bool negative = true) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<Out>(float_class_value<K>(x[i], positive, negative));
}

// y = x + b for a scalar b, wrapped to T's width.
template <class T>
void add_scalar(const T* x, T b, T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>)
      y[i] = x[i] + b;
    else
      y[i] = static_cast<T>(static_cast<std::uint64_t>(x[i]) + static_cast<std::uint64_t>(b));
  }
}

// y[o, c, i] = x[o, c, i] + b[c] over x seen as [outer, channels, inner].
template <class T>
void bias_add(const T* x, const T* b, T* y, std::int64_t outer, std::int64_t channels,
              std::int64_t inner) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < channels; ++c) {
      const std::int64_t base = (o * channels + c) * inner;
      add_scalar(x + base, b[c], y + base, inner);
    }
}
// x rounded to the nearest integer, half to even, whatever the rounding mode. The integer part
// by truncation and the fraction compared with a half, with no call to floor or fmod (a libm
// call each on x86-64's baseline): quantize_linear over it runs 2.8 times as fast.
inline double round_half_even(double x) {
  if (!(std::fabs(x) < 0x1p52)) return x;          // an integer already, or NaN or infinite
  const auto t = static_cast<std::int64_t>(x);     // toward zero
  const double frac = x - static_cast<double>(t);  // exact, in (-1, 1)
  if (frac == 0.0) return x;                       // (-0.0 stays -0.0)
  // (| and &, not || and &&: no branch on the fraction, unpredictable where fractions spread)
  const std::int64_t odd = t & 1;
  const std::int64_t up =
      static_cast<std::int64_t>(frac > 0.5) | (static_cast<std::int64_t>(frac == 0.5) & odd);
  const std::int64_t down =
      static_cast<std::int64_t>(frac < -0.5) | (static_cast<std::int64_t>(frac == -0.5) & odd);
  return static_cast<double>(t + up - down);
}
// A float rounded half to even and saturated to [lo, hi]; NaN is 0.
inline std::int64_t float_to_int(float v, std::int64_t lo, std::int64_t hi) {
  if (std::isnan(v)) return 0;
  const double r = round_half_even(v);
  if (r <= static_cast<double>(lo)) return lo;
  if (r >= static_cast<double>(hi)) return hi;
  return static_cast<std::int64_t>(r);
}

namespace detail {

// v rounded half to even and saturated to [-2^29, 2^29], NaN 0: float_to_int's value where
// that saturates nothing more (quantize_linear's narrow outputs), with no branch. A select of v
// or 0 would let the compiler branch around the conversion (0 converts to 0), which then does
// not vectorize; the mask of v's bits does not.
inline std::int32_t round_saturated_29(float v) {
  constexpr float kLimit = 0x1p29f;
  const std::int32_t inside =
      static_cast<std::int32_t>(v > -kLimit) & static_cast<std::int32_t>(v < kLimit);
  std::int32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= -inside;  // NaN and |v| >= 2^29: 0.0f
  float kept = 0.0f;
  std::memcpy(&kept, &bits, sizeof kept);
  const auto t = static_cast<std::int32_t>(kept);  // toward zero, exact: |kept| < 2^29
  const float frac = kept - static_cast<float>(t);
  const std::int32_t odd = t & 1;
  const std::int32_t up =
      static_cast<std::int32_t>(frac > 0.5f) | (static_cast<std::int32_t>(frac == 0.5f) & odd);
  const std::int32_t down =
      static_cast<std::int32_t>(frac < -0.5f) | (static_cast<std::int32_t>(frac == -0.5f) & odd);
  const std::int32_t above = -static_cast<std::int32_t>(v >= kLimit);
  const std::int32_t below = -static_cast<std::int32_t>(v <= -kLimit);
  return t + up - down + (above & (std::int32_t{1} << 29)) - (below & (std::int32_t{1} << 29));
}

// quantize_linear's narrow outputs over the first n / 16 * 16 elements, in int32 lanes of 16
// (each a vector of SSE2 or NEON, or four); returns how many it quantized.
template <class Out>
std::int64_t quantize_narrow(const float* x, Out* y, std::int64_t n, float scale, std::int32_t zero,
                             std::int32_t lo, std::int32_t hi) {
  constexpr std::int64_t kLanes = 16;
  const std::int64_t whole = n / kLanes * kLanes;
  for (std::int64_t k = 0; k < whole; k += kLanes)
    for (std::int64_t l = 0; l < kLanes; ++l) {
      std::int32_t r = round_saturated_29(x[k + l] / scale) + zero;
      r = r < lo ? lo : r;
      r = r > hi ? hi : r;
      y[k + l] = static_cast<Out>(r);
    }
  return whole;
}

}  // namespace detail

// y = x converted: integers wrap to Out's width, floats round half to even and saturate to
// [lo, hi] (Out's range).
template <class In, class Out>
void cast(const In* x, Out* y, std::int64_t n, std::int64_t lo, std::int64_t hi) {
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<In> && !std::is_floating_point_v<Out>)
      y[i] = static_cast<Out>(float_to_int(x[i], lo, hi));
    else if constexpr (std::is_floating_point_v<Out>)
      y[i] = static_cast<Out>(x[i]);
    else
      y[i] = static_cast<Out>(static_cast<std::uint64_t>(static_cast<std::int64_t>(x[i])));
  }
}

// Per channel c of x seen as [outer, channels, inner] (channels 1: one scale and zero point):
// quantize_linear y = clamp(round_half_even(x / scale[c]) + zero[c], lo, hi), the rounding in a
// wide range first so that the zero point moves the value before it saturates; dequantize_linear
// y = (x - zero[c]) * scale[c].
// Outputs within [-2^28, 2^28] (8- and 16-bit types, with a zero point there) are quantized
// in int32 lanes of 16, with no branch, which compilers vectorize (3.7 times as fast on
// x86-64's baseline, SSE2); the same values as the general path (tests/runtime).
template <class Out>
void quantize_linear(const float* x, const float* scale, const Out* zero, Out* y,
                     std::int64_t outer, std::int64_t channels, std::int64_t inner, std::int64_t lo,
                     std::int64_t hi) {
  constexpr std::int64_t kNarrow = std::int64_t{1} << 28;
  std::int64_t i = 0;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < channels; ++c) {
      const float s = scale[c];
      const auto z = static_cast<std::int64_t>(zero[c]);
      const std::int64_t end = i + inner;
      if (lo >= -kNarrow && hi <= kNarrow && z >= -kNarrow && z <= kNarrow)
        i += detail::quantize_narrow(x + i, y + i, inner, s, static_cast<std::int32_t>(z),
                                     static_cast<std::int32_t>(lo), static_cast<std::int32_t>(hi));
      for (; i < end; ++i) {
        const std::int64_t r =
            float_to_int(x[i] / s, -(std::int64_t{1} << 40), std::int64_t{1} << 40) + z;
        y[i] = static_cast<Out>(r < lo ? lo : r > hi ? hi : r);
      }
    }
}

// rescale y = clamp(round_half_even(acc * multiplier[c]) + zero[c], lo, hi): an int32 sum
// requantized as ONNX's QLinearConv does, the product in double as host::rescale computes it.
template <class Out>
void rescale(const std::int32_t* acc, const float* multiplier, const Out* zero, Out* y,
             std::int64_t outer, std::int64_t channels, std::int64_t inner, std::int64_t lo,
             std::int64_t hi) {
  for (std::int64_t o = 0, i = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < channels; ++c) {
      const double m = multiplier[c], z = static_cast<double>(zero[c]);
      for (std::int64_t end = i + inner; i < end; ++i) {
        const double r = round_half_even(static_cast<double>(acc[i]) * m) + z;
        y[i] = static_cast<Out>(r < static_cast<double>(lo)   ? lo
                                : r > static_cast<double>(hi) ? hi
                                                              : static_cast<std::int64_t>(r));
      }
    }
}

template <class In>
void dequantize_linear(const In* x, const float* scale, const In* zero, float* y,
                       std::int64_t outer, std::int64_t channels, std::int64_t inner) {
  std::int64_t i = 0;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t k = 0; k < inner; ++k, ++i)
        y[i] = (static_cast<float>(x[i]) - static_cast<float>(zero[c])) * scale[c];
}

// Layer normalization over the last `group` elements of each of `groups` rows: the mean, then
// the mean square deviation, summed in order in float; y = (x - mean) / sqrt(var + eps) *
// gamma + beta.
inline void layer_norm(const float* x, const float* gamma, const float* beta, float* y,
                       std::int64_t groups, std::int64_t group, float eps) {
  const float count = static_cast<float>(group);
  for (std::int64_t r = 0; r < groups; ++r) {
    const float* xr = x + r * group;
    float sum = 0.0f;
    for (std::int64_t j = 0; j < group; ++j) sum += xr[j];
    const float mean = sum / count;
    float sq = 0.0f;
    for (std::int64_t j = 0; j < group; ++j) sq += (xr[j] - mean) * (xr[j] - mean);
    const float inv = 1.0f / std::sqrt(sq / count + eps);
    float* yr = y + r * group;
    for (std::int64_t j = 0; j < group; ++j) yr[j] = (xr[j] - mean) * inv * gamma[j] + beta[j];
  }
}

// x [outer, channels, inner] normalized per channel with running statistics (inference):
// y = (x - mean[c]) * (gamma[c] / sqrt(var[c] + eps)) + beta[c].
inline void batch_norm(const float* x, const float* gamma, const float* beta, const float* mean,
                       const float* var, float* y, std::int64_t outer, std::int64_t channels,
                       std::int64_t inner, float eps) {
  for (std::int64_t c = 0; c < channels; ++c) {
    const float scale = gamma[c] / std::sqrt(var[c] + eps);
    for (std::int64_t o = 0; o < outer; ++o) {
      const std::int64_t base = (o * channels + c) * inner;
      for (std::int64_t i = base; i < base + inner; ++i) y[i] = (x[i] - mean[c]) * scale + beta[c];
    }
  }
}

// x [..., M, N] (`rows` rows of N, M queries that are the last M of N positions): query i sees
// the positions up to its own, N - M + i; the later ones become -infinity.
inline void causal_mask(const float* x, float* y, std::int64_t rows, std::int64_t m,
                        std::int64_t n) {
  if (x != y && rows * n > 0)
    std::memmove(y, x, static_cast<std::size_t>(rows * n) * sizeof(float));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = r % m + n - m + 1; j < n; ++j) y[r * n + j] = -HUGE_VALF;
}

namespace detail {

// The maximum of the `extent` elements x[0], x[inner], x[2 * inner], ...; a NaN wins (the
// first one), and of equal elements (-0 and +0) the first.
inline float row_max(const float* x, std::int64_t extent, std::int64_t inner) {
  // A contiguous row in lanes of 16, which compilers vectorize (a scan that stops at a NaN does
  // not vectorize): each lane's maximum and whether it saw a NaN. Their maximum is the row's
  // unless a NaN is in it (which one wins, the scan below says) or it is a zero (which of -0
  // and +0, likewise).
  constexpr std::int64_t kLanes = 16;
  if (inner == 1 && extent >= 2 * kLanes) {
    float lane[kLanes];
    int nan[kLanes];
    for (std::int64_t l = 0; l < kLanes; ++l) {
      lane[l] = x[l];
      nan[l] = static_cast<int>(x[l] != x[l]);
    }
    const std::int64_t whole = extent / kLanes * kLanes;
    for (std::int64_t j = kLanes; j < whole; j += kLanes)
      for (std::int64_t l = 0; l < kLanes; ++l) {
        const float v = x[j + l];
        lane[l] = v > lane[l] ? v : lane[l];
        nan[l] |= static_cast<int>(v != v);
      }
    for (std::int64_t j = whole; j < extent; ++j) {
      const std::int64_t l = j - whole;
      lane[l] = x[j] > lane[l] ? x[j] : lane[l];
      nan[l] |= static_cast<int>(x[j] != x[j]);
    }
    float m = lane[0];
    int any_nan = nan[0];
    for (std::int64_t l = 1; l < kLanes; ++l) {
      m = lane[l] > m ? lane[l] : m;
      any_nan |= nan[l];
    }
    if (any_nan == 0 && m != 0.0f) return m;
  }
  float m = x[0];
  for (std::int64_t j = 1; j < extent; ++j) {
    const float v = x[j * inner];
    if (v > m || std::isnan(v)) m = v;
    if (std::isnan(m)) break;
  }
  return m;
}

}  // namespace detail

namespace detail {

// Calls f(x, y, m) for each row along the axis of [outer, extent, inner]: x and y at the row's
// first element (the next ones `inner` apart), m the row's maximum (a NaN wins).
template <class F>
void for_each_row(const float* src, float* dst, std::int64_t outer, std::int64_t extent,
                  std::int64_t inner, F&& f) {
  if (extent == 0) return;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      const std::int64_t base = o * extent * inner + i;
      f(src + base, dst + base, row_max(src + base, extent, inner));
    }
}

// exp(d), with no call where d is -infinity (a masked key: half of a causal softmax's scores),
// whose exponential is +0.
inline float exp_or_zero(float d) { return d == -HUGE_VALF ? 0.0f : std::exp(d); }

}  // namespace detail

// Softmax along an axis of x seen as [outer, extent, inner]: the maximum subtracted (a NaN
// wins), exponentials summed in order, each divided by the sum.
inline void softmax(const float* src, float* dst, std::int64_t outer, std::int64_t extent,
                    std::int64_t inner) {
  detail::for_each_row(src, dst, outer, extent, inner, [&](const float* x, float* y, float m) {
    float s = 0.0f;
    for (std::int64_t j = 0; j < extent; ++j) {
      y[j * inner] = detail::exp_or_zero(x[j * inner] - m);
      s += y[j * inner];
    }
    for (std::int64_t j = 0; j < extent; ++j) y[j * inner] /= s;
  });
}

// Log-softmax along an axis of x seen as [outer, extent, inner]: with m the maximum (a NaN
// wins) and s the exponentials exp(x_j - m) summed in order, y_i = (x_i - m) - log(s).
inline void log_softmax(const float* src, float* dst, std::int64_t outer, std::int64_t extent,
                        std::int64_t inner) {
  detail::for_each_row(src, dst, outer, extent, inner, [&](const float* x, float* y, float m) {
    float s = 0.0f;
    for (std::int64_t j = 0; j < extent; ++j) s += detail::exp_or_zero(x[j * inner] - m);
    const float log_s = std::log(s);
    for (std::int64_t j = 0; j < extent; ++j) y[j * inner] = (x[j * inner] - m) - log_s;
  });
}

// ---- reductions ---------------------------------------------------------------------------
// Over the elements of each output in ascending index order (the order of x), starting from
// the first of them:
//   Sum      float: s = x0 + x1 + ...; integers: wrapped to T's width (as Add)
//   Mean     float: the sum divided by the count (as a float); integers: the exact sum (in
//            int64, so T of at most 32 bits) divided by the count truncating toward zero
//   Maximum  float: a NaN wins; of equal elements (-0 and +0) the first
//   Minimum  likewise
// A reduction over no element gives Sum 0, Mean NaN (float) or 0 (integers), Maximum -inf or
// T's minimum, Minimum +inf or T's maximum (ONNX's rule).
enum class Reduce : std::uint8_t { Sum, Mean, Maximum, Minimum };
inline constexpr int kReduceCount = static_cast<int>(Reduce::Minimum) + 1;

template <class F>
decltype(auto) with_kind(Reduce k, F&& f) {
  return detail::with_kind_from<Reduce, 0, kReduceCount>(k, f);
}

namespace detail {

template <Reduce K, class T>
T reduce_empty() {
  constexpr bool is_float = std::is_floating_point_v<T>;
  if constexpr (K == Reduce::Mean && is_float) return std::numeric_limits<T>::quiet_NaN();
  if constexpr (K == Reduce::Maximum)
    return is_float ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  if constexpr (K == Reduce::Minimum)
    return is_float ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  return T(0);
}

// The reduction of x[w.at[0]] over the `count` (> 0) indices of w, w at its first.
template <Reduce K, class T>
T reduce_run(const T* x, Walk<1>& w, std::int64_t count) {
  if constexpr (K == Reduce::Maximum || K == Reduce::Minimum) {
    constexpr Binary pick = K == Reduce::Maximum ? Binary::Maximum : Binary::Minimum;
    T m = x[0];
    while (w.next()) m = binary_value<pick>(m, x[w.at[0]]);
    return m;
  } else if constexpr (std::is_floating_point_v<T>) {
    T s = x[0];
    while (w.next()) s += x[w.at[0]];
    return K == Reduce::Mean ? s / static_cast<T>(count) : s;
  } else {
    std::uint64_t s = static_cast<std::uint64_t>(x[0]);
    while (w.next()) s += static_cast<std::uint64_t>(x[w.at[0]]);
    if constexpr (K == Reduce::Sum) return static_cast<T>(s);
    if constexpr (std::is_signed_v<T>) return static_cast<T>(static_cast<std::int64_t>(s) / count);
    return static_cast<T>(s / static_cast<std::uint64_t>(count));
  }
}

}  // namespace detail

// y = the reduction of x (of `shape`, rank at most 8) over the dims k with reduced[k], y
// holding the other dims in order (graph's firmware kernel merges neighbouring dims first).
template <Reduce K, class T>
void reduce(const T* x, T* y, const std::int64_t* shape, const bool* reduced, std::int64_t rank) {
  std::int64_t stride[8] = {}, outputs = 1, count = 1;
  detail::row_major_strides(shape, rank, stride);
  detail::Walk<1> kept, over;  // the outputs' indices, and the indices one output reduces
  for (std::int64_t k = 0; k < rank; ++k) {
    (reduced[k] ? over : kept).push(shape[k], {stride[k]});
    (reduced[k] ? count : outputs) *= shape[k];
  }
  for (std::int64_t o = 0; o < outputs; ++o, kept.next())
    y[o] = count == 0 ? detail::reduce_empty<K, T>()
                      : detail::reduce_run<K>(x + kept.at[0], over, count);
}

// ---- arg_reduce: the index of a maximum or minimum along an axis -------------------------
// Along the axis of x seen as [outer, extent, inner], each row's index (an int64 in firmware)
// of its Max (Min) element, the row walked from its first element (`select_last`: from its
// last): the first element met that no later one beats strictly, so of equal elements the
// first (the last); a NaN wins, the first NaN met (float: numpy's argmax and argmin, ONNX's
// reference). An extent of 0 leaves y's elements 0 (the host refuses it first).
enum class ArgReduce : std::uint8_t { Max, Min };
inline constexpr int kArgReduceCount = static_cast<int>(ArgReduce::Min) + 1;

template <class F>
decltype(auto) with_kind(ArgReduce k, F&& f) {
  return detail::with_kind_from<ArgReduce, 0, kArgReduceCount>(k, f);
}

template <ArgReduce K, class T, class I>
void arg_reduce(const T* x, I* y, std::int64_t outer, std::int64_t extent, std::int64_t inner,
                bool select_last) {
  const std::int64_t first = select_last ? extent - 1 : 0, step = select_last ? -1 : 1;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i, ++y) {
      *y = I(0);
      if (extent == 0) continue;
      const T* row = x + o * extent * inner + i;
      std::int64_t best = first;
      T m = row[first * inner];
      for (std::int64_t j = first + step, left = extent - 1; left > 0; j += step, --left) {
        if constexpr (std::is_floating_point_v<T>)
          if (std::isnan(m)) break;
        const T v = row[j * inner];
        bool wins = K == ArgReduce::Max ? v > m : v < m;
        if constexpr (std::is_floating_point_v<T>) wins = wins || std::isnan(v);
        if (wins) {
          m = v;
          best = j;
        }
      }
      *y = static_cast<I>(best);
    }
}

// ---- integer softmax: I-BERT's exponential by shifts and a polynomial ------------------
//
// Softmax of int8 scores s (real value s * scale) into int8 probabilities in units of 1/127,
// in 32-bit integers only. Every step is an operation VTA's ALU has (add, min, max, multiply by
// a factor of at most 8 bits, arithmetic shift by at most 15), so the device's bits are these:
//   x = s - max <= 0 (max over the row's visible keys)
//   t = -x * multiplier >= 0: -x * scale * log2(e) in units of 2^-frac_bits
//       (host::integer_exp_for)
//   u = t >> (frac_bits - 7), z = u >> 7, r = u - 128 z in [0, 127]:
//       2^(-t / 2^frac_bits) = 2^-z * 2^(-r / 128), the fraction truncated to 1/128
//   v = (45 r - 22120) r + 2^22: 2^(-r / 128) in units of 2^-22, the quadratic's integer
//       coefficients fitted to the mean over each 1/128 of the fraction, so that e is within
//       0.72% of 2^18 * 2^(-t / 2^frac_bits) wherever that is at least 2^8 (every multiplier
//       and frac_bits; the fit to the fraction's truncated value, 84 and 21864 for 2^(r / 128),
//       was within 0.96%)
//   e = v >> (z + 4), 0 when z + 4 >= 23 (v <= 2^22). The maximum's e is 2^18, every other e
//       is at most that.
//   S = the sum of the row's e (visible keys only; at most extent * 2^18 < 2^31)
//   R = floor(127 * 2^23 / S) <= 4064, y = (e * R + 2^22) >> 23 in [0, 127].
// Masked keys (a causal row) get y = 0 and take no part in max and S.
struct IntegerExp {
  std::int32_t multiplier = 92;  // round(scale * log2(e) * 2^frac_bits), in [32, 127]
  std::int32_t frac_bits = 9;    // in [7, 15]
};
inline constexpr std::int64_t kIntegerSoftmaxMaxExtent = 8191;  // S stays below 2^31

// The quadratics of integer_exp and integer_exp8: v = (c2 r - c1) r + top, 2^(-r / 128) in units
// of top, which the exponential shifts right by z + shift (a device folds `shift` into z).
struct IntegerExpQuadratic {
  std::int32_t c1, c2, top, shift;
};
inline constexpr IntegerExpQuadratic kIntegerExpQuadratic{22120, 45, std::int32_t{1} << 22, 4};
inline constexpr IntegerExpQuadratic kIntegerExp8Quadratic{22296, 48, std::int32_t{127} << 15, 1};

namespace detail {
// x = s - max (<= 0) as 2^-z * 2^(-r / 128): z and r, which integer_exp and integer_exp8 turn
// into their units.
struct IntegerExponent {
  std::int32_t z, r;
};
inline IntegerExponent integer_exponent(std::int32_t x, IntegerExp c) {
  const std::int32_t u = (-x * c.multiplier) >> (c.frac_bits - 7);
  const std::int32_t z = u >> 7;
  return {z, u - (z << 7)};
}

// f(base, visible) for every row of integer_softmax's layout: its first element's index (the
// row's elements `inner` apart) and the keys it sees (query row (o, i) of a causal softmax the
// first N - queries + 1 + its query index).
template <class F>
void for_each_softmax_row(std::int64_t outer, std::int64_t extent, std::int64_t inner,
                          std::int64_t queries, bool query_inner, F&& f) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i)
      f(o * extent * inner + i,
        queries > 0 ? extent - queries + 1 + (query_inner ? i : o % queries) : extent);
}

// The largest of a row's first `visible` elements (at least one), `inner` apart.
template <class In>
std::int32_t softmax_row_max(const In* row, std::int64_t inner, std::int64_t visible) {
  auto m = static_cast<std::int32_t>(row[0]);
  for (std::int64_t j = 1; j < visible; ++j)
    if (static_cast<std::int32_t>(row[j * inner]) > m)
      m = static_cast<std::int32_t>(row[j * inner]);
  return m;
}
}  // namespace detail

// e of one visible element, x = s - max (<= 0).
inline std::int32_t integer_exp(std::int32_t x, IntegerExp c) {
  constexpr auto q = kIntegerExpQuadratic;
  const auto [z, r] = detail::integer_exponent(x, c);
  const std::int32_t v = (q.c2 * r - q.c1) * r + q.top;
  return z + q.shift < 23 ? v >> (z + q.shift) : 0;
}

// R of a row of sum S (S >= 2^18), and the probability of an element of exponential e.
inline std::int32_t integer_reciprocal(std::int32_t sum) {
  return static_cast<std::int32_t>((std::int64_t{127} << 23) / sum);
}
inline std::int8_t integer_probability(std::int32_t e, std::int32_t reciprocal) {
  return static_cast<std::int8_t>((e * reciprocal + (std::int32_t{1} << 22)) >> 23);
}

// The softmax above along an axis of x seen as [outer, extent, inner] (extent at most
// kIntegerSoftmaxMaxExtent). `queries` > 0 makes it causal: the extent's keys are N positions
// of which the last `queries` are queries, the query index the inner index (`query_inner`: the
// queries the dim after the keys, the last) or the outer index modulo `queries` (the queries
// the dim before the keys); query q sees the keys up to N - queries + q.
template <class In, class Out>
void integer_softmax(const In* src, Out* dst, std::int64_t outer, std::int64_t extent,
                     std::int64_t inner, IntegerExp c, std::int64_t queries = 0,
                     bool query_inner = false) {
  if (extent == 0) return;
  detail::for_each_softmax_row(
      outer, extent, inner, queries, query_inner, [&](std::int64_t base, std::int64_t visible) {
        const auto at = [&](std::int64_t j) {
          return static_cast<std::int32_t>(src[base + j * inner]);
        };
        const std::int32_t m = detail::softmax_row_max(src + base, inner, visible);
        std::int32_t sum = 0;
        for (std::int64_t j = 0; j < visible; ++j) sum += integer_exp(at(j) - m, c);
        const std::int32_t r = integer_reciprocal(sum);
        for (std::int64_t j = 0; j < extent; ++j)
          dst[base + j * inner] =
              j < visible ? static_cast<Out>(integer_probability(integer_exp(at(j) - m, c), r))
                          : Out(0);
      });
}

// ---- the integer softmax in two halves: int8 exponentials, then their normalization ------
//
// The same softmax with each exponential rounded to int8 in between, so that an accelerator
// computes it once and keeps it in DRAM (VTA's accumulator holds no row of 2,048 keys):
//   t, z and r as above; v = (48 r - 22296) r + 127 * 2^15: 127 * 2^(-r / 128) in units of
//       2^-15 (fitted as above)
//   e8 = ((v >> min(z + 1, 15)) + 2^13) >> 14 in [0, 127]: 127 * 2^-z * 2^(-r / 128) rounded
//        once, within 1.15 units of 127 * 2^(-t / 2^frac_bits) (1.31 with the quadratic
//        above's), the exponential in units of 1/127 of the row's largest (whose e8 is 127;
//        where z >= 14 the exact value is below 2^-14 and e8 is 0 either way)
//   S = max(sum of the row's e8, 127); R = floor(127 * 2^11 / S) <= 2048;
//   y = (e8 * R + 2^10) >> 11 in [0, 127].
// The second rounding costs accuracy. Over rows of random scores (tests/host: scales 0.05, 1/8
// and 0.3) the probabilities lie within 1.3 units of the exact softmax's (one for
// integer_softmax). But each e8 is off by up to half a unit, and a row's n of them add up in S:
// a long row whose keys lie near half a unit of its largest (5 to 6 nats below it) moves S by
// up to n / 2 units, and at 2,048 keys a probability of 15 becomes 127 (tests/host).
// integer_softmax_normalize takes any int8 row: the sum is of the values as they are, at least
// 127.
inline std::int32_t integer_exp8(std::int32_t x, IntegerExp c) {
  constexpr auto q = kIntegerExp8Quadratic;
  const auto [z, r] = detail::integer_exponent(x, c);
  const std::int32_t v = (q.c2 * r - q.c1) * r + q.top;
  return ((v >> (z + q.shift < 15 ? z + q.shift : 15)) + (std::int32_t{1} << 13)) >> 14;
}
inline std::int32_t integer_reciprocal8(std::int32_t sum) {
  return (std::int32_t{127} << 11) / (sum > 127 ? sum : 127);
}
inline std::int32_t integer_probability8(std::int32_t e8, std::int32_t reciprocal) {
  return (e8 * reciprocal + (std::int32_t{1} << 10)) >> 11;
}

// The first half, in integer_softmax's layout and masking: e8 of every visible key, 0 for the
// others.
template <class In, class Out>
void integer_softmax_exp(const In* src, Out* dst, std::int64_t outer, std::int64_t extent,
                         std::int64_t inner, IntegerExp c, std::int64_t queries = 0,
                         bool query_inner = false) {
  if (extent == 0) return;
  detail::for_each_softmax_row(
      outer, extent, inner, queries, query_inner, [&](std::int64_t base, std::int64_t visible) {
        const auto at = [&](std::int64_t j) {
          return static_cast<std::int32_t>(src[base + j * inner]);
        };
        const std::int32_t m = detail::softmax_row_max(src + base, inner, visible);
        for (std::int64_t j = 0; j < extent; ++j)
          dst[base + j * inner] =
              j < visible ? static_cast<Out>(integer_exp8(at(j) - m, c)) : Out(0);
      });
}

// The second half: the probabilities of int8 exponentials x (integer_softmax_exp's), the keys
// a causal row does not see taking no part and getting 0.
template <class In, class Out>
void integer_softmax_normalize(const In* src, Out* dst, std::int64_t outer, std::int64_t extent,
                               std::int64_t inner, std::int64_t queries = 0,
                               bool query_inner = false) {
  detail::for_each_softmax_row(
      outer, extent, inner, queries, query_inner, [&](std::int64_t base, std::int64_t visible) {
        std::int32_t sum = 0;
        for (std::int64_t j = 0; j < visible; ++j)
          sum += static_cast<std::int32_t>(src[base + j * inner]);
        const std::int32_t r = integer_reciprocal8(sum);
        for (std::int64_t j = 0; j < extent; ++j)
          dst[base + j * inner] = j < visible
                                      ? static_cast<Out>(integer_probability8(
                                            static_cast<std::int32_t>(src[base + j * inner]), r))
                                      : Out(0);
      });
}

// ---- attention with the softmax's normalization deferred past probabilities . V -------
//
// The context of an attention whose int8 exponentials e8 (integer_softmax_exp's, a row of
// `keys` a query) multiplied V unnormalized: context = sum over keys of e8 * V (int32, the
// matmul's), and each of a row's `dims` values normalized once, by the row's reciprocal R =
// integer_reciprocal8(sum of its e8), then requantized by `shift` as the context of
// probabilities is:
//   y = clamp((context * R + 2^(10 + shift)) >> (11 + shift), -128, 127)   (64-bit product)
// where the probabilities' path computes (sum over keys of ((e8 * R + 2^10) >> 11) * V +
// 2^(shift - 1)) >> shift: the same scale, without a rounding of each probability to int8,
// whose errors add up over a long row (tests/host: over random rows of up to 2,048 keys within
// 1.08 of the exact softmax's context, where the probabilities' are off by up to 7.93). `rows`
// rows of `keys` exponentials and `dims` context values each, both row-major.
template <class Context, class Exp, class Out>
void integer_context_normalize(const Context* context, const Exp* exps, Out* dst, std::int64_t rows,
                               std::int64_t keys, std::int64_t dims, std::int32_t shift) {
  const std::int64_t half = std::int64_t{1} << (10 + shift);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int32_t sum = 0;
    for (std::int64_t k = 0; k < keys; ++k) sum += static_cast<std::int32_t>(exps[r * keys + k]);
    const std::int64_t reciprocal = integer_reciprocal8(sum);
    for (std::int64_t d = 0; d < dims; ++d) {
      const std::int64_t y =
          (static_cast<std::int64_t>(context[r * dims + d]) * reciprocal + half) >> (11 + shift);
      dst[r * dims + d] = static_cast<Out>(y < -128 ? -128 : y > 127 ? 127 : y);
    }
  }
}

// ---- data movement: slices, tiles and gathers -----------------------------------------

namespace detail {

// Walks y [out[0], ..., out[rank-1]] in row-major order from dim k on, copying into it the
// element of x [shape[0], ...] whose index along each dim j is from(j, i_j); returns the
// position in y after the walk. Recursion over the dims: any rank, no index arrays.
template <class T, class From>
T* copy_by_dims(const T* x, T* y, const std::int64_t* shape, const std::int64_t* out,
                std::int64_t rank, std::int64_t k, From&& from) {
  std::int64_t stride = 1;  // of dim k in x
  for (std::int64_t j = k + 1; j < rank; ++j) stride *= shape[j];
  for (std::int64_t i = 0; i < out[k]; ++i) {
    const T* at = x + from(k, i) * stride;
    if (k + 1 == rank)
      *y++ = *at;
    else
      y = copy_by_dims(at, y, shape, out, rank, k + 1, from);
  }
  return y;
}

// y's elements from x by `from`; a rank-0 y is x's one element, an empty y reads nothing.
template <class T, class From>
void copy_by_dims(const T* x, T* y, const std::int64_t* shape, const std::int64_t* out,
                  std::int64_t rank, From&& from) {
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  for (std::int64_t k = 0; k < rank; ++k)
    if (out[k] == 0) return;
  copy_by_dims(x, y, shape, out, rank, 0, from);
}

}  // namespace detail

// ONNX Slice with the bounds resolved (host::slice_axis): y [out] from x [shape], both of rank
// `rank`, y[i_0, ..., i_{r-1}] = x[start[0] + i_0 * step[0], ...]. Every index read lies in x
// (the caller resolved start, step and out so).
template <class T>
void strided_slice(const T* x, T* y, const std::int64_t* shape, const std::int64_t* start,
                   const std::int64_t* step, const std::int64_t* out, std::int64_t rank) {
  detail::copy_by_dims(x, y, shape, out, rank,
                       [&](std::int64_t k, std::int64_t i) { return start[k] + i * step[k]; });
}

// y [out] = x [shape] repeated: y[i_0, ..., i_{r-1}] = x[i_0 mod shape[0], ...], both of rank
// `rank` (x's shape padded with leading 1s to it). ONNX Tile (out = shape * repeats) and
// numpy broadcasting (ONNX Expand: each dim of x is 1 or out's). shape[k] >= 1 wherever
// out[k] >= 1 (a dim of x that is 0 leaves y empty, as the caller's out says).
template <class T>
void tile(const T* x, T* y, const std::int64_t* shape, const std::int64_t* out, std::int64_t rank) {
  detail::copy_by_dims(x, y, shape, out, rank,
                       [&](std::int64_t k, std::int64_t i) { return i % shape[k]; });
}

// ONNX Gather over x seen as [outer, extent, inner]: y[o, j, i] = x[o, index[j], i] for the
// `count` indices (of any integer type I); an index in [-extent, -1] counts from the end. An
// index outside [-extent, extent) is clamped to the nearest end (firmware has no exceptions;
// host::take raises before it gets here); with extent 0 nothing can be read and y is zeros.
// Returns how many of the indices were clamped.
template <class T, class I>
std::int64_t take(const T* x, const I* index, T* y, std::int64_t outer, std::int64_t extent,
                  std::int64_t inner, std::int64_t count) {
  if (extent == 0) {
    for (std::int64_t k = 0; k < outer * count * inner; ++k) y[k] = T(0);
    return count;
  }
  std::int64_t clamped = 0;
  for (std::int64_t j = 0; j < count; ++j) {
    std::int64_t at = static_cast<std::int64_t>(index[j]);
    if (at < 0 && at >= -extent) at += extent;
    if (at < 0 || at >= extent) {
      ++clamped;
      at = at < 0 ? 0 : extent - 1;
    }
    for (std::int64_t o = 0; o < outer; ++o) {
      T* dst = y + (o * count + j) * inner;
      const T* src = x + (o * extent + at) * inner;
      for (std::int64_t i = 0; i < inner; ++i) dst[i] = src[i];
    }
  }
  return clamped;
}

// ---- resize2d: ONNX Resize over the last two dims ---------------------------------------
//
// planes [h, w] -> [oh, ow]. Along each dim (in elements resized to out), output index i reads
// the source coordinate c(i) of the coordinate transformation, s the scale (given, or out / in
// when the sizes were given, computed in double) and L = s * in (ONNX's resized length, not
// rounded):
//   half_pixel          c = (i + 0.5) / s - 0.5
//   asymmetric          c = i / s
//   align_corners       c = i * (in - 1) / (L - 1), 0 when L == 1
//   pytorch_half_pixel  c = (i + 0.5) / s - 0.5, 0 when L == 1
// all in double. nearest: the element at c rounded by the nearest mode (an integral c is
// itself; round_prefer_floor takes floor(c) when the fraction is at most 0.5, round_prefer_ceil
// when it is below 0.5; floor; ceil), clamped to [0, in - 1]. linear: with f = floor(c) and
// r = c - f, (1 - r) * x[f] + r * x[f + 1] with both indices clamped to [0, in - 1] (the edge
// repeats), first along the rows and then along the columns, in double, rounded to float at
// the end (as ONNX's reference). h and w are >= 1.
struct ResizeShape {
  std::int64_t planes, h, w, oh, ow;
  float scale_h, scale_w;    // 0: out / in (the sizes were given)
  std::int32_t coordinates;  // 0 half_pixel, 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel
  std::int32_t nearest;      // 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil
};

inline double resize_source(std::int64_t i, std::int64_t in, std::int64_t out, float scale,
                            std::int32_t coordinates) {
  const double s =
      scale > 0 ? static_cast<double>(scale) : static_cast<double>(out) / static_cast<double>(in);
  const double length = s * static_cast<double>(in);
  const double x = static_cast<double>(i);
  switch (coordinates) {
    case 1:
      return x / s;
    case 2:
      return length == 1.0 ? 0.0 : x * static_cast<double>(in - 1) / (length - 1.0);
    case 3:
      return length == 1.0 ? 0.0 : (x + 0.5) / s - 0.5;
    default:
      return (x + 0.5) / s - 0.5;
  }
}

// An index in [0, in - 1]: v clamped (v may lie far outside, or be infinite).
inline std::int64_t resize_clamp(double v, std::int64_t in) {
  if (!(v > 0.0)) return 0;
  return v >= static_cast<double>(in - 1) ? in - 1 : static_cast<std::int64_t>(v);
}

inline std::int64_t resize_nearest_index(double c, std::int64_t in, std::int32_t nearest) {
  const double f = std::floor(c), r = c - f;
  if (r == 0.0) return resize_clamp(c, in);
  const bool up = nearest == 0 ? r > 0.5 : nearest == 1 ? r >= 0.5 : nearest == 3;
  return resize_clamp(up ? f + 1.0 : f, in);
}

// The columns go in blocks of kResizeBlock, each block's source columns (or taps) computed once
// for every row of every plane, on the stack: firmware has no heap.
inline constexpr std::int64_t kResizeBlock = 128;

template <class T>
void resize2d_nearest(const T* x, T* y, const ResizeShape& d) {
  std::int64_t cols[kResizeBlock];
  for (std::int64_t x0 = 0; x0 < d.ow; x0 += kResizeBlock) {
    const std::int64_t n = d.ow - x0 < kResizeBlock ? d.ow - x0 : kResizeBlock;
    for (std::int64_t j = 0; j < n; ++j)
      cols[j] = resize_nearest_index(resize_source(x0 + j, d.w, d.ow, d.scale_w, d.coordinates),
                                     d.w, d.nearest);
    for (std::int64_t oy = 0; oy < d.oh; ++oy) {
      const std::int64_t iy = resize_nearest_index(
          resize_source(oy, d.h, d.oh, d.scale_h, d.coordinates), d.h, d.nearest);
      for (std::int64_t p = 0; p < d.planes; ++p) {
        const T* row = x + (p * d.h + iy) * d.w;
        T* out = y + (p * d.oh + oy) * d.ow + x0;
        for (std::int64_t j = 0; j < n; ++j) out[j] = row[cols[j]];
      }
    }
  }
}

// The two neighbours of source coordinate c and the weight of the second.
struct ResizeTaps {
  std::int64_t lo, hi;
  double r;
};
inline ResizeTaps resize_linear_taps(double c, std::int64_t in) {
  const double f = std::floor(c);
  return {resize_clamp(f, in), resize_clamp(f + 1.0, in), c - f};
}

inline void resize2d_linear(const float* x, float* y, const ResizeShape& d) {
  ResizeTaps taps[kResizeBlock];
  for (std::int64_t x0 = 0; x0 < d.ow; x0 += kResizeBlock) {
    const std::int64_t n = d.ow - x0 < kResizeBlock ? d.ow - x0 : kResizeBlock;
    for (std::int64_t j = 0; j < n; ++j)
      taps[j] = resize_linear_taps(resize_source(x0 + j, d.w, d.ow, d.scale_w, d.coordinates), d.w);
    for (std::int64_t oy = 0; oy < d.oh; ++oy) {
      const ResizeTaps ty =
          resize_linear_taps(resize_source(oy, d.h, d.oh, d.scale_h, d.coordinates), d.h);
      for (std::int64_t p = 0; p < d.planes; ++p) {
        const float* r0 = x + (p * d.h + ty.lo) * d.w;
        const float* r1 = x + (p * d.h + ty.hi) * d.w;
        float* out = y + (p * d.oh + oy) * d.ow + x0;
        for (std::int64_t j = 0; j < n; ++j) {
          const ResizeTaps& tx = taps[j];
          // the rows first, then the columns
          const double c0 = (1.0 - ty.r) * r0[tx.lo] + ty.r * r1[tx.lo];
          const double c1 = (1.0 - ty.r) * r0[tx.hi] + ty.r * r1[tx.hi];
          out[j] = static_cast<float>((1.0 - tx.r) * c0 + tx.r * c1);
        }
      }
    }
  }
}

// y = x, for reshape and flatten (the same elements in row-major order).
template <class T>
void copy(const T* x, T* y, std::int64_t n) {
  if (n > 0 && x != y) std::memmove(y, x, static_cast<std::size_t>(n) * sizeof(T));
}

}  // namespace dlavm::runtime
