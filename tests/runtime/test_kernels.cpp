// runtime/kernels.hpp, each kernel against a naive reference written here from the semantics
// in its comment (not host/, whose kernels call these), on random shapes with fixed seeds, and
// hand-derived values where the rounding or the wrap-around is the point:
//   layouts: pack_tiled / unpack_tiled (zero padding, round trip), pack_unfolded,
//     pack_batched / unpack_batched / pack_matmul_weight, byte planes reassembled, transpose,
//     append_packed (a state appended in pieces, runs that fail among them, equals one packed at
//     once; tiles move as the layout grows and shrinks);
//   pooling: max (a NaN wins), avg (integer floor division, count with and without padding);
//   dense (int32 wrap-around against an exact 128-bit sum, float in ascending k);
//   elementwise: requantize, relu, clip, add_scalar, bias_add, cast / float_to_int,
//     quantize_linear / dequantize_linear, wrap_bits, floor_div_pos, copy;
//   math: every unary and binary kind on each C++ element type (integer wrap, division by
//     zero, NaN and -0 by hand), binary_broadcast against index arithmetic, reduce over random
//     dims (a reference that scatters each element to its output, in x's order);
//   booleans: compare, logical and where, same-shape and broadcast, against index arithmetic
//     on random shapes (NaN and -0 by hand), float_class, arg_reduce against a scan written
//     here (ties, NaN, select_last);
//   float ops: softmax, log_softmax, layer_norm (against double-precision references),
//     causal_mask;
//   integer_softmax: rows derived by hand (the exponential of -1 is 231753 / 2^18) and
//     cross-checked with a Python transcription of the comment's steps;
//   data movement: strided_slice, tile (a broadcast too) and take (indices clamped, counted)
//     on typed arrays, against offsets computed from the row-major index; resize2d_nearest
//     and resize2d_linear by hand.
#include <dlavm/runtime/kernels.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace runtime_kernels_test {

namespace rt = dlavm::runtime;
using i64 = std::int64_t;
__extension__ typedef __int128 i128;  // exact sums for the references (GCC and Clang)
__extension__ typedef unsigned __int128 u128;

i64 ceil_to(i64 v, i64 m) { return (v + m - 1) / m * m; }

// Tiles of x [A, B, H, W] as [A/R, B/C, H, W, R, C], written element by element from the
// source side, the padding left at zero.
template <class T>
std::vector<T> ref_tile(const std::vector<T>& x, i64 a, i64 b, i64 h, i64 w, i64 r, i64 c) {
  const i64 at = ceil_to(a, r) / r, bt = ceil_to(b, c) / c;
  std::vector<T> y(static_cast<std::size_t>(at * bt * h * w * r * c), T(0));
  for (i64 i = 0; i < a; ++i)
    for (i64 j = 0; j < b; ++j)
      for (i64 yy = 0; yy < h; ++yy)
        for (i64 xx = 0; xx < w; ++xx) {
          const i64 tile = ((i / r) * bt + j / c) * h * w + yy * w + xx;
          y[static_cast<std::size_t>(tile * r * c + (i % r) * c + j % c)] =
              x[static_cast<std::size_t>(((i * b + j) * h + yy) * w + xx)];
        }
  return y;
}

template <class T>
std::vector<T> random_vec(std::mt19937_64& rng, std::size_t n, int lo = -100, int hi = 100) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (auto& e : v) e = static_cast<T>(d(rng));
  return v;
}

i64 pick(std::mt19937_64& rng, i64 lo, i64 hi) {
  return lo + static_cast<i64>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

// ---- layouts ------------------------------------------------------------------------------

TEST_CASE(
    "round_half_even: ties to the even neighbour, as the default rounding mode, at every scale") {
  // halves of both parities and signs up to 2^52, random doubles, and values next to halves;
  // std::nearbyint rounds the same way in the default mode (ties to even)
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<std::int64_t> integer(-(std::int64_t{1} << 52),
                                                      std::int64_t{1} << 52);
  std::uniform_real_distribution<double> real(-1e6, 1e6);
  for (int i = 0; i < 20000; ++i) {
    const double half = static_cast<double>(integer(rng) % (std::int64_t{1} << (i % 53))) + 0.5;
    for (const double x : {half, -half, std::nextafter(half, 0.0), std::nextafter(half, 1e300),
                           real(rng), static_cast<double>(integer(rng))})
      CHECK(dlavm::runtime::round_half_even(x) == std::nearbyint(x));
  }
  CHECK(dlavm::runtime::round_half_even(2.5) == 2.0);
  CHECK(dlavm::runtime::round_half_even(3.5) == 4.0);
  CHECK(dlavm::runtime::round_half_even(-2.5) == -2.0);
  CHECK(dlavm::runtime::round_half_even(-0.5) == 0.0);
}

// round_half_even's definition by floor and fmod, as the function was written before it
// avoided both calls.
double round_half_even_by_floor(double x) {
  double r = std::floor(x);
  const double frac = x - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  return r;
}

TEST_CASE(
    "round_half_even: bit for bit its definition by floor, signed zeros, NaN, infinities "
    "and every 4,099th float") {
  const auto same = [](double x) {
    const double want = round_half_even_by_floor(x);
    const double got = dlavm::runtime::round_half_even(x);
    return std::isnan(want)
               ? std::isnan(got)
               : std::bit_cast<std::uint64_t>(got) == std::bit_cast<std::uint64_t>(want);
  };
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  constexpr double tiny = std::numeric_limits<double>::denorm_min();
  constexpr double cases[] = {0.0,
                              -0.0,
                              -0.25,
                              -0.5,
                              0.5,
                              1.5,
                              -1.5,
                              0x1p52,
                              -0x1p52,
                              0x1p52 - 0.5,
                              -(0x1p52 - 0.5),
                              0x1p52 + 1,
                              0x1p53 + 2,
                              0x1p63,
                              -0x1p63,
                              1e300,
                              -1e300,
                              inf,
                              -inf,
                              nan,
                              tiny,
                              -tiny};
  for (const double x : cases) CHECK_MESSAGE(same(x), x);
  // (-0.25 rounds to +0.0, where std::nearbyint gives -0.0: the same integer; -0.0 stays)
  CHECK(std::bit_cast<std::uint64_t>(dlavm::runtime::round_half_even(-0.25)) == 0);
  CHECK(std::bit_cast<std::uint64_t>(dlavm::runtime::round_half_even(-0.0)) ==
        std::bit_cast<std::uint64_t>(-0.0));
  int checked = 0;
  for (std::uint64_t pattern = 0; pattern < (std::uint64_t{1} << 32); pattern += 4099) {
    const float v = std::bit_cast<float>(static_cast<std::uint32_t>(pattern));
    if (!same(v)) CHECK_MESSAGE(same(v), v);
    ++checked;
  }
  CHECK(checked == 1047809);
}

TEST_CASE("runtime kernels: pack_tiled / unpack_tiled against element-wise tiling") {
  std::mt19937_64 rng(11);
  for (int n = 0; n < 60; ++n) {
    const i64 a = pick(rng, 1, 9), b = pick(rng, 1, 40), h = pick(rng, 1, 3), w = pick(rng, 1, 3);
    const i64 r = std::array<i64, 3>{1, 2, 4}[rng() % 3],
              c = std::array<i64, 3>{1, 4, 16}[rng() % 3];
    CAPTURE(a);
    CAPTURE(b);
    CAPTURE(r);
    CAPTURE(c);
    const auto x = random_vec<std::int8_t>(rng, static_cast<std::size_t>(a * b * h * w));
    const auto want = ref_tile(x, a, b, h, w, r, c);
    std::vector<std::int8_t> got(want.size(), 0x5A);  // the padding must be written as zeros
    rt::pack_tiled(x.data(), got.data(), a, b, h, w, r, c);
    CHECK(got == want);
    std::vector<std::int8_t> back(x.size(), 0x5A);
    rt::unpack_tiled(got.data(), back.data(), a, b, h, w, r, c);
    CHECK(back == x);
    // float and int32 the same way
    std::vector<float> xf(x.begin(), x.end());
    std::vector<float> gf(want.size(), 7.0f);
    rt::pack_tiled(xf.data(), gf.data(), a, b, h, w, r, c);
    CHECK(gf == std::vector<float>(want.begin(), want.end()));
    std::vector<std::int32_t> xi(x.begin(), x.end()), gi(want.size(), 7), bi(x.size());
    rt::pack_tiled(xi.data(), gi.data(), a, b, h, w, r, c);
    rt::unpack_tiled(gi.data(), bi.data(), a, b, h, w, r, c);
    CHECK(bi == xi);
  }
  // hand-derived: [1, 3, 1, 1] in tiles of 1 x 2: [x0 x1] [x2 0]
  const std::int8_t x[] = {1, 2, 3};
  std::int8_t y[4] = {9, 9, 9, 9};
  rt::pack_tiled(x, y, 1, 3, 1, 1, 1, 2);
  CHECK(std::vector<int>(y, y + 4) == std::vector<int>{1, 2, 3, 0});
}

TEST_CASE("runtime kernels: pack_unfolded folds the kernel width into the channels") {
  std::mt19937_64 rng(12);
  for (int n = 0; n < 40; ++n) {
    const i64 nn = pick(rng, 1, 3), c = pick(rng, 1, 5), h = pick(rng, 1, 3), w = pick(rng, 1, 9);
    const i64 kw = pick(rng, 1, 3), stride = pick(rng, 1, 2), pad = pick(rng, 0, kw - 1);
    const i64 ow = (w + 2 * pad - kw) / stride + 1;
    if (ow < 1) continue;
    const i64 r = pick(rng, 1, 2), cols = std::array<i64, 2>{4, 16}[rng() % 2];
    const auto x = random_vec<std::int8_t>(rng, static_cast<std::size_t>(nn * c * h * w));
    // x'[n, c*KW + dx, y, j] = x[n, c, y, j*stride + dx - pad] (0 outside)
    std::vector<std::int8_t> unfolded(static_cast<std::size_t>(nn * c * kw * h * ow), 0);
    for (i64 i = 0; i < nn; ++i)
      for (i64 ch = 0; ch < c; ++ch)
        for (i64 dx = 0; dx < kw; ++dx)
          for (i64 y = 0; y < h; ++y)
            for (i64 j = 0; j < ow; ++j) {
              const i64 xx = j * stride + dx - pad;
              if (xx >= 0 && xx < w)
                unfolded[static_cast<std::size_t>(((i * c * kw + ch * kw + dx) * h + y) * ow + j)] =
                    x[static_cast<std::size_t>(((i * c + ch) * h + y) * w + xx)];
            }
    const auto want = ref_tile(unfolded, nn, c * kw, h, ow, r, cols);
    std::vector<std::int8_t> got(want.size(), 0x5A);
    rt::pack_unfolded(x.data(), got.data(), nn, c, h, w, kw, stride, pad, ow, r, cols);
    CHECK(got == want);
  }
}

// Byte planes as VTA stores them: plane p of value v is (v >> 8p) & 0xff, the top plane the
// arithmetic shift itself (its sign), each plane a copy of the tiled layout with the plane dim
// after the channel tiles. The values span int32 (its extremes included) and, with fewer
// planes, the range those planes hold.
TEST_CASE("runtime kernels: unpack_tiled_planes / unpack_batched_planes reassemble int32") {
  std::mt19937_64 rng(29);
  for (int n = 0; n < 40; ++n) {
    const i64 planes = pick(rng, 1, 4), a = pick(rng, 1, 5), b = pick(rng, 1, 35);
    const i64 h = pick(rng, 1, 3), w = pick(rng, 1, 3), r = pick(rng, 1, 2), c = 16;
    const i64 count = a * b * h * w, bits = 8 * planes;
    std::vector<std::int32_t> x(static_cast<std::size_t>(count));
    std::uniform_int_distribution<i64> d(-(i64{1} << (bits - 1)), (i64{1} << (bits - 1)) - 1);
    for (auto& v : x) v = static_cast<std::int32_t>(d(rng));
    if (planes == 4) x[0] = std::numeric_limits<std::int32_t>::min(), x.back() = -1;
    const i64 at = ceil_to(a, r) / r, bt = ceil_to(b, c) / c, tile = h * w * r * c;
    std::vector<std::int8_t> packed(static_cast<std::size_t>(at * bt * planes * tile), 0x5A);
    for (i64 p = 0; p < planes; ++p) {
      std::vector<std::int8_t> plane(x.size());
      for (std::size_t k = 0; k < x.size(); ++k)
        plane[k] = static_cast<std::int8_t>(static_cast<std::uint8_t>((x[k] >> (8 * p)) & 0xff));
      const auto t = ref_tile(plane, a, b, h, w, r, c);
      for (i64 blk = 0; blk < at * bt; ++blk)
        std::copy_n(t.begin() + blk * tile, tile, packed.begin() + (blk * planes + p) * tile);
    }
    std::vector<std::int32_t> back(x.size(), 7);
    rt::unpack_tiled_planes(packed.data(), back.data(), a, b, h, w, planes, r, c);
    CHECK(back == x);
    // as `a` products of [b, h * w] matrices
    if (h == 1) {
      const i64 products = a, m = b, k = w;
      const i64 per = ceil_to(m, r) * ceil_to(k, c) * planes;
      std::vector<std::int8_t> batched(static_cast<std::size_t>(products * per), 0x5A);
      for (i64 q = 0; q < products; ++q)
        for (i64 p = 0; p < planes; ++p) {
          std::vector<std::int8_t> plane(static_cast<std::size_t>(m * k));
          for (i64 e = 0; e < m * k; ++e)
            plane[static_cast<std::size_t>(e)] = static_cast<std::int8_t>(static_cast<std::uint8_t>(
                (x[static_cast<std::size_t>(q * m * k + e)] >> (8 * p)) & 0xff));
          const auto t = ref_tile(plane, m, k, 1, 1, r, c);
          const i64 mt = ceil_to(m, r) / r, kt = ceil_to(k, c) / c;
          for (i64 blk = 0; blk < mt * kt; ++blk)
            std::copy_n(t.begin() + blk * r * c, r * c,
                        batched.begin() + q * per + (blk * planes + p) * r * c);
        }
      std::vector<std::int32_t> bback(x.size(), 7);
      rt::unpack_batched_planes(batched.data(), bback.data(), products, m, k, planes, r, c);
      CHECK(bback == x);
    }
  }
}

TEST_CASE("runtime kernels: batched matrices and matmul weights, product by product") {
  std::mt19937_64 rng(13);
  for (int n = 0; n < 40; ++n) {
    const i64 p = pick(rng, 1, 4), m = pick(rng, 1, 7), k = pick(rng, 1, 20);
    const i64 r = pick(rng, 1, 3), c = std::array<i64, 2>{4, 16}[rng() % 2];
    const auto x = random_vec<std::int8_t>(rng, static_cast<std::size_t>(p * m * k));
    std::vector<std::int8_t> want;
    for (i64 q = 0; q < p; ++q) {
      const std::vector<std::int8_t> one(x.begin() + q * m * k, x.begin() + (q + 1) * m * k);
      const auto t = ref_tile(one, m, k, 1, 1, r, c);
      want.insert(want.end(), t.begin(), t.end());
    }
    std::vector<std::int8_t> got(want.size(), 0x5A), back(x.size());
    rt::pack_batched(x.data(), got.data(), p, m, k, r, c);
    CHECK(got == want);
    rt::unpack_batched(got.data(), back.data(), p, m, k, r, c);
    CHECK(back == x);
    // x as p weights [K = m, N = k]: each packed as the dense weight [N, K] (transposed)
    std::vector<std::int8_t> wwant;
    for (i64 q = 0; q < p; ++q) {
      std::vector<std::int8_t> t(static_cast<std::size_t>(m * k));
      for (i64 kk = 0; kk < m; ++kk)
        for (i64 nn = 0; nn < k; ++nn)
          t[static_cast<std::size_t>(nn * m + kk)] =
              x[static_cast<std::size_t>(q * m * k + kk * k + nn)];
      const auto tt = ref_tile(t, k, m, 1, 1, r, c);
      wwant.insert(wwant.end(), tt.begin(), tt.end());
    }
    std::vector<std::int8_t> wgot(wwant.size(), 0x5A);
    rt::pack_matmul_weight(x.data(), wgot.data(), p, m, k, r, c);
    CHECK(wgot == wwant);
  }
}

TEST_CASE("runtime kernels: transpose against index arithmetic, every permutation") {
  std::mt19937_64 rng(14);
  for (i64 rank = 1; rank <= 5; ++rank) {
    std::vector<i64> perm(static_cast<std::size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    do {
      std::vector<i64> shape;
      i64 n = 1;
      for (i64 k = 0; k < rank; ++k) {
        shape.push_back(pick(rng, 1, rank <= 3 ? 5 : 3));
        n *= shape.back();
      }
      std::vector<std::int32_t> x(static_cast<std::size_t>(n));
      std::iota(x.begin(), x.end(), 1000);
      std::vector<std::int32_t> y(x.size(), -1), want(x.size(), -2);
      // want[i_0, ..., i_r-1] over y's shape = x[index with x's dim perm[k] = i_k]
      std::vector<i64> idx(static_cast<std::size_t>(rank), 0);
      for (i64 o = 0; o < n; ++o) {
        i64 rem = o;
        for (i64 k = rank; k-- > 0;) {
          const i64 ext = shape[static_cast<std::size_t>(perm[static_cast<std::size_t>(k)])];
          idx[static_cast<std::size_t>(perm[static_cast<std::size_t>(k)])] = rem % ext;
          rem /= ext;
        }
        i64 from = 0;
        for (i64 k = 0; k < rank; ++k)
          from = from * shape[static_cast<std::size_t>(k)] + idx[static_cast<std::size_t>(k)];
        want[static_cast<std::size_t>(o)] = x[static_cast<std::size_t>(from)];
      }
      rt::transpose(x.data(), y.data(), shape.data(), perm.data(), rank);
      CHECK(y == want);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // an empty tensor writes nothing
  const i64 shape[] = {2, 0, 3}, perm[] = {2, 0, 1};
  std::int32_t none = 7;
  rt::transpose(&none, &none, shape, perm, 3);
  CHECK(none == 7);
}

// ---- a state held packed -----------------------------------------------------------------

// The element of the state at index `at` (its bytes): unique per index and byte.
std::uint8_t state_byte(const i64* at, i64 rank, i64 byte) {
  std::uint64_t h = 0x9E3779B97F4A7C15ULL;
  for (i64 k = 0; k < rank; ++k) h = (h ^ static_cast<std::uint64_t>(at[k] + 1)) * 0x100000001B3ULL;
  return static_cast<std::uint8_t>((h >> (8 * (byte % 8))) + static_cast<std::uint64_t>(byte));
}

// The state of `length` positions packed at once: permuted (packed dim i = state dim perm[i])
// into the matmul weight [B..., K, N], each [K, N] stored as VTA's [N/rows, K/cols, rows,
// cols] tiles, zeros elsewhere.
std::vector<std::uint8_t> ref_packed(const rt::PackedStateShape& s, i64 length) {
  i64 dims[8], products = 1;
  for (i64 i = 0; i < s.rank; ++i) dims[i] = s.perm[i] == s.axis ? length : s.shape[s.perm[i]];
  for (i64 i = 0; i + 2 < s.rank; ++i) products *= dims[i];
  const i64 K = dims[s.rank - 2], N = dims[s.rank - 1];
  const i64 nt = ceil_to(N, s.rows) / s.rows, kt = ceil_to(K, s.cols) / s.cols;
  std::vector<std::uint8_t> out(
      static_cast<std::size_t>(products * nt * kt * s.rows * s.cols * s.width), 0);
  i64 state_shape[8];
  for (i64 k = 0; k < s.rank; ++k) state_shape[k] = k == s.axis ? length : s.shape[k];
  i64 total = 1;
  for (i64 k = 0; k < s.rank; ++k) total *= state_shape[k];
  for (i64 e = 0; e < total; ++e) {
    i64 at[8], rem = e;
    for (i64 k = s.rank; k-- > 0;) {
      at[k] = rem % state_shape[k];
      rem /= state_shape[k];
    }
    i64 p = 0;
    for (i64 i = 0; i + 2 < s.rank; ++i) p = p * dims[i] + at[s.perm[i]];
    const i64 k = at[s.perm[s.rank - 2]], n = at[s.perm[s.rank - 1]];
    const i64 tile = (p * nt + n / s.rows) * kt + k / s.cols;
    const i64 off = ((tile * s.rows + n % s.rows) * s.cols + k % s.cols) * s.width;
    for (i64 b = 0; b < s.width; ++b)
      out[static_cast<std::size_t>(off + b)] = state_byte(at, s.rank, b);
  }
  return out;
}

// The rows an append of positions [from, from + count) passes: row-major, width bytes each.
std::vector<std::uint8_t> new_rows(const rt::PackedStateShape& s, i64 from, i64 count) {
  i64 shape[8], total = 1;
  for (i64 k = 0; k < s.rank; ++k) {
    shape[k] = k == s.axis ? count : s.shape[k];
    total *= shape[k];
  }
  std::vector<std::uint8_t> rows;
  for (i64 e = 0; e < total; ++e) {
    i64 at[8], rem = e;
    for (i64 k = s.rank; k-- > 0;) {
      at[k] = rem % shape[k];
      rem /= shape[k];
    }
    at[s.axis] += from;
    for (i64 b = 0; b < s.width; ++b) rows.push_back(state_byte(at, s.rank, b));
  }
  return rows;
}

TEST_CASE("runtime kernels: a state appended in pieces equals the state packed at once") {
  std::mt19937_64 rng(15);
  int appends = 0, failed = 0;
  for (int n = 0; n < 80; ++n) {
    rt::PackedStateShape s;
    s.rank = pick(rng, 2, 4);
    for (i64 k = 0; k < s.rank; ++k) s.shape[k] = pick(rng, 1, 4);
    s.axis = pick(rng, 0, s.rank - 1);
    s.shape[s.axis] = 0;  // not read
    // a permutation that puts the growing dim last or second last (it is K or N)
    std::vector<i64> others;
    for (i64 k = 0; k < s.rank; ++k)
      if (k != s.axis) others.push_back(k);
    std::shuffle(others.begin(), others.end(), rng);
    const bool grows_n = rng() % 2 == 0;
    std::vector<i64> perm(others.begin(), others.end());
    perm.insert(grows_n ? perm.end() : perm.end() - 1, s.axis);
    for (i64 i = 0; i < s.rank; ++i) s.perm[i] = perm[static_cast<std::size_t>(i)];
    s.rows = pick(rng, 1, 3);
    s.cols = std::array<i64, 3>{1, 2, 4}[rng() % 3];
    s.width = std::array<i64, 3>{1, 2, 4}[rng() % 3];
    const i64 max_length = 14;
    std::vector<std::uint8_t> buffer(
        static_cast<std::size_t>(rt::packed_state_bytes(s, max_length + 6)), 0);
    i64 held[3] = {0, 0, 0};
    CAPTURE(n);
    while (held[0] < max_length) {
      const i64 count = pick(rng, 1, std::min<i64>(5, max_length - held[0]));
      const auto rows = new_rows(s, held[0], count);
      rt::append_packed(buffer.data(), rows.data(), count, held, s);
      CHECK(held[1] == held[0] + count);
      CHECK(held[2] == held[0] + count);
      if (rng() % 4 == 0) {  // the run failed: held[0] stays, the next append redoes it
        ++failed;
        continue;
      }
      held[0] += count;
      ++appends;
      const auto want = ref_packed(s, held[0]);
      REQUIRE(static_cast<i64>(want.size()) == rt::packed_state_bytes(s, held[0]));
      CHECK(std::equal(want.begin(), want.end(), buffer.begin()));
    }
  }
  CHECK(failed > 10);
  MESSAGE(appends, " appends (", failed, " failed runs among them) equal the state packed at once");
}

TEST_CASE("runtime kernels: a failed longer append, then a shorter one, leaves no stale bytes") {
  // hand-derived: state [L, 2] growing along dim 0 = N, perm {1, 0} (K = 2, N = L), tiles of
  // rows 2 x cols 2, one byte each. After 1 position, a failed append of 3 (positions 1..3,
  // two N tiles), then an append of 1: the layout shrinks back to one tile and position 1
  // (written by the failed run, now the new one) holds the new values; nothing is left of
  // positions 2 and 3.
  rt::PackedStateShape s;
  s.rank = 2;
  s.shape[1] = 2;
  s.perm[0] = 1;
  s.perm[1] = 0;
  s.axis = 0;
  s.rows = 2;
  s.cols = 2;
  s.width = 1;
  std::uint8_t buf[16] = {};
  i64 held[3] = {0, 0, 0};
  const std::uint8_t first[] = {1, 2};
  rt::append_packed(buf, first, 1, held, s);
  held[0] = 1;
  CHECK(std::vector<int>(buf, buf + 4) == std::vector<int>{1, 2, 0, 0});  // tile [n][k]
  const std::uint8_t three[] = {10, 11, 20, 21, 30, 31};
  rt::append_packed(buf, three, 3, held, s);  // fails afterwards: held[0] stays 1
  CHECK(std::vector<int>(buf, buf + 8) == std::vector<int>{1, 2, 10, 11, 20, 21, 30, 31});
  const std::uint8_t again[] = {40, 41};
  rt::append_packed(buf, again, 1, held, s);
  held[0] = 2;
  CHECK(std::vector<int>(buf, buf + 4) == std::vector<int>{1, 2, 40, 41});
  CHECK(rt::packed_state_bytes(s, 2) == 4);
  // and growing again: the stale bytes of the failed run are zero before the new ones land
  const std::uint8_t one[] = {50, 51};
  rt::append_packed(buf, one, 1, held, s);
  held[0] = 3;
  CHECK(std::vector<int>(buf, buf + 8) == std::vector<int>{1, 2, 40, 41, 50, 51, 0, 0});
}

// ---- pooling ----------------------------------------------------------------------------

struct PoolCase {
  rt::PoolShape d;
  i64 pb, pr;
};

PoolCase random_pool(std::mt19937_64& rng) {
  PoolCase c{};
  auto& d = c.d;
  d.planes = pick(rng, 1, 3);
  d.h = pick(rng, 1, 7);
  d.w = pick(rng, 1, 7);
  d.kh = pick(rng, 1, 3);
  d.kw = pick(rng, 1, 3);
  d.sh = pick(rng, 1, 2);
  d.sw = pick(rng, 1, 2);
  d.pt = pick(rng, 0, d.kh - 1);
  d.pl = pick(rng, 0, d.kw - 1);
  c.pb = pick(rng, 0, d.kh - 1);
  c.pr = pick(rng, 0, d.kw - 1);
  d.oh = (d.h + d.pt + c.pb - d.kh) / d.sh + 1;
  d.ow = (d.w + d.pl + c.pr - d.kw) / d.sw + 1;
  return c;
}

// Calls f(value) for the elements of x inside output (p, oy, ox)'s window, row by row.
template <class T, class F>
void window(const std::vector<T>& x, const rt::PoolShape& d, i64 p, i64 oy, i64 ox, F&& f) {
  for (i64 ky = 0; ky < d.kh; ++ky)
    for (i64 kx = 0; kx < d.kw; ++kx) {
      const i64 iy = oy * d.sh - d.pt + ky, ix = ox * d.sw - d.pl + kx;
      if (iy >= 0 && iy < d.h && ix >= 0 && ix < d.w)
        f(x[static_cast<std::size_t>((p * d.h + iy) * d.w + ix)]);
    }
}

TEST_CASE("runtime kernels: max pooling over the window's elements inside the input") {
  std::mt19937_64 rng(16);
  int nans = 0;
  for (int n = 0; n < 150; ++n) {
    const auto c = random_pool(rng);
    const auto& d = c.d;
    if (d.oh < 1 || d.ow < 1) continue;
    const auto size = static_cast<std::size_t>(d.planes * d.h * d.w);
    auto xi = random_vec<std::int8_t>(rng, size, -128, 127);
    std::vector<float> xf(size);
    for (auto& v : xf) {
      const auto r = rng() % 20;
      v = r == 0   ? std::numeric_limits<float>::quiet_NaN()
          : r == 1 ? -HUGE_VALF
                   : static_cast<float>(static_cast<int>(rng() % 200) - 100);
    }
    const auto out = static_cast<std::size_t>(d.planes * d.oh * d.ow);
    std::vector<std::int8_t> yi(out);
    std::vector<float> yf(out);
    rt::pool_window_max(xi.data(), yi.data(), d);
    rt::pool_window_max(xf.data(), yf.data(), d);
    for (i64 p = 0; p < d.planes; ++p)
      for (i64 oy = 0; oy < d.oh; ++oy)
        for (i64 ox = 0; ox < d.ow; ++ox) {
          const auto o = static_cast<std::size_t>((p * d.oh + oy) * d.ow + ox);
          int mi = -1000;
          window(xi, d, p, oy, ox, [&](std::int8_t v) { mi = std::max<int>(mi, v); });
          CHECK(yi[o] == mi);
          bool nan = false;
          float mf = -HUGE_VALF;
          window(xf, d, p, oy, ox, [&](float v) {
            nan = nan || std::isnan(v);
            mf = std::max(mf, v);
          });
          if (nan) {
            ++nans;
            CHECK(std::isnan(yf[o]));
          } else {
            CHECK(yf[o] == mf);
          }
        }
  }
  CHECK(nans > 10);
  // hand-derived: a NaN after the maximum, and before it, wins either way
  const float a[] = {1, 5, NAN, 2}, b[] = {NAN, 5, 1, 2};
  float y = 0;
  const rt::PoolShape whole{1, 2, 2, 1, 1, 2, 2, 1, 1, 0, 0};
  rt::pool_window_max(a, &y, whole);
  CHECK(std::isnan(y));
  rt::pool_window_max(b, &y, whole);
  CHECK(std::isnan(y));
}

TEST_CASE("runtime kernels: average pooling, integers floor-divided, with and without padding") {
  std::mt19937_64 rng(17);
  for (int n = 0; n < 150; ++n) {
    const auto c = random_pool(rng);
    const auto& d = c.d;
    if (d.oh < 1 || d.ow < 1) continue;
    const auto size = static_cast<std::size_t>(d.planes * d.h * d.w);
    // int32 values near the limits: their sum needs 64 bits
    std::vector<std::int32_t> xi(size);
    for (auto& v : xi)
      v = rng() % 2 ? static_cast<std::int32_t>(rng()) : static_cast<std::int32_t>(rng() % 21) - 10;
    std::vector<float> xf(size);
    for (auto& v : xf) v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 8.0f;
    for (bool include : {true, false}) {
      const auto out = static_cast<std::size_t>(d.planes * d.oh * d.ow);
      std::vector<std::int32_t> yi(out);
      std::vector<float> yf(out);
      rt::pool_window_avg(xi.data(), yi.data(), d, include);
      rt::pool_window_avg(xf.data(), yf.data(), d, include);
      for (i64 p = 0; p < d.planes; ++p)
        for (i64 oy = 0; oy < d.oh; ++oy)
          for (i64 ox = 0; ox < d.ow; ++ox) {
            const auto o = static_cast<std::size_t>((p * d.oh + oy) * d.ow + ox);
            i64 sum = 0, inside = 0;
            float fsum = 0;
            window(xi, d, p, oy, ox, [&](std::int32_t v) {
              sum += v;
              ++inside;
            });
            window(xf, d, p, oy, ox, [&](float v) { fsum += v; });
            const i64 count = include ? d.kh * d.kw : inside;
            // floor division: the quotient rounded towards minus infinity
            const i64 q = sum / count - (sum % count != 0 && sum < 0 ? 1 : 0);
            CHECK(yi[o] == static_cast<std::int32_t>(q));
            CHECK(yf[o] == fsum / static_cast<float>(count));
          }
    }
  }
  // hand-derived: -7 / 2 = -4 (not -3); a padded corner of a 3x3 window counts 9 or 4
  const std::int32_t x[] = {-3, -4};
  std::int32_t y = 0;
  rt::pool_window_avg(x, &y, {1, 1, 2, 1, 1, 1, 2, 1, 1, 0, 0}, true);
  CHECK(y == -4);
  const std::int8_t plane[] = {8, 8, 8, 8};  // 2x2, window 3x3 padded by 1 on top and left
  std::int8_t corner = 0;
  rt::pool_window_avg(plane, &corner, {1, 2, 2, 1, 1, 3, 3, 1, 1, 1, 1}, true);
  CHECK(corner == 3);  // 32 / 9 = 3.55: 3
  rt::pool_window_avg(plane, &corner, {1, 2, 2, 1, 1, 3, 3, 1, 1, 1, 1}, false);
  CHECK(corner == 8);  // 32 / 4
  CHECK(rt::floor_div_pos(-7, 2) == -4);
  CHECK(rt::floor_div_pos(-8, 2) == -4);
  CHECK(rt::floor_div_pos(7, 2) == 3);
  CHECK(rt::floor_div_pos(0, 5) == 0);
  CHECK(rt::floor_div_pos(-1, 9) == -1);
}

// ---- linear -------------------------------------------------------------------------------

TEST_CASE("runtime kernels: dense wraps integer sums modulo 2^32 and adds floats in order") {
  std::mt19937_64 rng(18);
  for (int n = 0; n < 30; ++n) {
    const i64 rows = pick(rng, 1, 4), nout = pick(rng, 1, 6), k = pick(rng, 1, 70);
    // int8 x int8 -> int32: no wrap possible; int32 x int32 -> int32: wraps
    const auto x8 = random_vec<std::int8_t>(rng, static_cast<std::size_t>(rows * k), -128, 127);
    const auto w8 = random_vec<std::int8_t>(rng, static_cast<std::size_t>(nout * k), -128, 127);
    std::vector<std::int32_t> x32(x8.size()), w32(w8.size());
    for (auto& v : x32) v = static_cast<std::int32_t>(rng());
    for (auto& v : w32) v = static_cast<std::int32_t>(rng());
    std::vector<std::int32_t> y8(static_cast<std::size_t>(rows * nout)), y32(y8.size());
    rt::dense(x8.data(), w8.data(), y8.data(), rows, nout, k);
    rt::dense(x32.data(), w32.data(), y32.data(), rows, nout, k);
    for (i64 m = 0; m < rows; ++m)
      for (i64 o = 0; o < nout; ++o) {
        i128 s8 = 0, s32 = 0;  // exact sums
        for (i64 j = 0; j < k; ++j) {
          s8 += static_cast<i128>(x8[static_cast<std::size_t>(m * k + j)]) *
                w8[static_cast<std::size_t>(o * k + j)];
          s32 += static_cast<i128>(x32[static_cast<std::size_t>(m * k + j)]) *
                 w32[static_cast<std::size_t>(o * k + j)];
        }
        const auto wrap = [](i128 v) {
          return static_cast<std::int32_t>(static_cast<std::uint32_t>(
              static_cast<std::uint64_t>(static_cast<u128>(v) & 0xFFFFFFFFu)));
        };
        CHECK(y8[static_cast<std::size_t>(m * nout + o)] == static_cast<std::int32_t>(s8));
        CHECK(y32[static_cast<std::size_t>(m * nout + o)] == wrap(s32));
      }
  }
  // hand-derived wrap: 65536 * 65536 = 2^32 -> 0; 2^31 - 1 + 1 -> -2^31
  const std::int32_t a[] = {65536, 1}, b[] = {65536, 0}, c[] = {2147483647, 1}, e[] = {1, 1};
  std::int32_t y = -1;
  rt::dense(a, b, &y, 1, 1, 2);
  CHECK(y == 0);
  rt::dense(c, e, &y, 1, 1, 2);
  CHECK(y == std::numeric_limits<std::int32_t>::min());
  // ascending k: 1 + 1e8 loses the 1 before -1e8 cancels (another order would give 1)
  const float xf[] = {1.0f, 1e8f, -1e8f}, wf[] = {1.0f, 1.0f, 1.0f};
  float yf = -1;
  rt::dense(xf, wf, &yf, 1, 1, 3);
  CHECK(yf == 0.0f);
  // float against a double reference
  std::vector<float> xs(64), ws(64 * 3);
  for (auto& v : xs) v = static_cast<float>(static_cast<int>(rng() % 200) - 100) / 16.0f;
  for (auto& v : ws) v = static_cast<float>(static_cast<int>(rng() % 200) - 100) / 32.0f;
  float ys[3];
  rt::dense(xs.data(), ws.data(), ys, 1, 3, 64);
  for (std::size_t o = 0; o < 3; ++o) {
    double s = 0;
    for (std::size_t j = 0; j < 64; ++j) s += double{xs[j]} * ws[o * 64 + j];
    CHECK(ys[o] == doctest::Approx(s).epsilon(1e-6));
  }
}

// ---- elementwise --------------------------------------------------------------------------

// Two's-complement wrap of v to `bits` bits, by arithmetic on the integers.
i64 ref_wrap(i128 v, int bits) {
  const i128 m = static_cast<i128>(1) << bits;
  i128 r = v % m;
  if (r < 0) r += m;
  if (r >= m / 2) r -= m;
  return static_cast<i64>(r);
}

TEST_CASE("runtime kernels: wrap_bits and requantize (rounding, wrap of the input, clamp)") {
  CHECK(rt::wrap_bits(0xFF, 8) == -1);
  CHECK(rt::wrap_bits(0x80, 8) == -128);
  CHECK(rt::wrap_bits(0x7F, 8) == 127);
  CHECK(rt::wrap_bits(0x1FF, 8) == -1);
  CHECK(rt::wrap_bits(0x12345, 1) == -1);
  CHECK(rt::wrap_bits(~std::uint64_t{0}, 64) == -1);
  CHECK(rt::wrap_bits(std::uint64_t{1} << 63, 64) == std::numeric_limits<i64>::min());
  std::mt19937_64 rng(19);
  for (int n = 0; n < 2000; ++n) {
    const std::uint64_t raw = rng();
    const int bits = static_cast<int>(1 + rng() % 63);
    CHECK(rt::wrap_bits(raw, bits) == ref_wrap(static_cast<i128>(raw), bits));
  }
  // random: int32 accumulators to int8, and int16 to uint8, shift 0..20, round to nearest
  for (int n = 0; n < 300; ++n) {
    const int shift = static_cast<int>(rng() % 21);
    const std::uint64_t round = shift > 0 && rng() % 2 ? std::uint64_t{1} << (shift - 1) : 0;
    const auto x = static_cast<std::int32_t>(rng());
    std::int8_t y8 = 0;
    rt::requantize(&x, &y8, 1, 32, shift, round, -128, 127);
    // the sum wraps in 32 bits, >> floors, then the clamp
    const i64 s = ref_wrap(static_cast<i128>(x) + static_cast<i128>(round), 32);
    const i64 q =
        static_cast<i64>(std::floor(static_cast<long double>(s) / std::ldexp(1.0L, shift)));
    CHECK(y8 == std::clamp<i64>(q, -128, 127));
    const auto x16 = static_cast<std::int16_t>(rng());
    std::uint8_t yu = 0;
    rt::requantize(&x16, &yu, 1, 16, shift % 8, 0, 0, 255);
    const i64 q16 = static_cast<i64>(std::floor(x16 / std::ldexp(1.0, shift % 8)));
    CHECK(yu == std::clamp<i64>(q16, 0, 255));
  }
  // hand-derived: ties round up; the wrap of 2^31 - 1 + 1; a clamp at both ends
  const std::int32_t x[] = {383, 384, -385, -384, 2147483647, 40000, -40000};
  std::int8_t y[7];
  rt::requantize(x, y, 7, 32, 8, 128, -128, 127);
  // (383 + 128) >> 8 = 1; (384 + 128) >> 8 = 2; (-385 + 128) >> 8 = -257 >> 8 = -2;
  // (-384 + 128) >> 8 = -1; 2^31 - 1 + 128 wraps to -2^31 + 127: -2^23 -> -128;
  // 40128 >> 8 = 156 -> 127; -39872 >> 8 = -156 -> -128
  CHECK(std::vector<int>(y, y + 7) == std::vector<int>{1, 2, -2, -1, -128, 127, -128});
  // the wrap is to the input's width, not 64 bits: 16-bit input 32767 + 1 = -32768
  const std::int16_t h = 32767;
  std::int32_t out = 0;
  rt::requantize(&h, &out, 1, 16, 0, 1, std::numeric_limits<std::int32_t>::min(),
                 std::numeric_limits<std::int32_t>::max());
  CHECK(out == -32768);
}

TEST_CASE("runtime kernels: relu, clip, binary Add and Mul, add_scalar, bias_add") {
  std::mt19937_64 rng(20);
  const auto x = random_vec<std::int8_t>(rng, 500, -128, 127);
  const auto b = random_vec<std::int8_t>(rng, 500, -128, 127);
  std::vector<std::int8_t> y(500);
  rt::relu(x.data(), y.data(), 500);
  for (std::size_t i = 0; i < 500; ++i) CHECK(y[i] == std::max<int>(x[i], 0));
  rt::clip(x.data(), y.data(), 500, std::int8_t{-20}, std::int8_t{33});
  for (std::size_t i = 0; i < 500; ++i) CHECK(y[i] == std::clamp<int>(x[i], -20, 33));
  rt::binary<rt::Binary::Add>(x.data(), b.data(), y.data(), 500);
  for (std::size_t i = 0; i < 500; ++i) CHECK(y[i] == ref_wrap(x[i] + b[i], 8));
  rt::binary<rt::Binary::Mul>(x.data(), b.data(), y.data(), 500);
  for (std::size_t i = 0; i < 500; ++i) CHECK(y[i] == ref_wrap(x[i] * b[i], 8));
  rt::add_scalar(x.data(), std::int8_t{-100}, y.data(), 500);
  for (std::size_t i = 0; i < 500; ++i) CHECK(y[i] == ref_wrap(x[i] - 100, 8));
  // int16 and int32 wrap at their own widths; uint8 too
  const std::int16_t h[] = {300, -32768}, hb[] = {300, -1};
  std::int16_t hy[2];
  rt::binary<rt::Binary::Mul>(h, hb, hy, 2);
  CHECK(hy[0] == 24464);   // 90000 - 65536
  CHECK(hy[1] == -32768);  // 32768 wraps
  const std::int32_t big[] = {2147483647}, one[] = {1};
  std::int32_t by = 0;
  rt::binary<rt::Binary::Add>(big, one, &by, 1);
  CHECK(by == std::numeric_limits<std::int32_t>::min());
  const std::uint8_t u[] = {250}, u2[] = {10};
  std::uint8_t uy = 0;
  rt::binary<rt::Binary::Add>(u, u2, &uy, 1);
  CHECK(uy == 4);
  // floats: IEEE, a NaN passes through relu and clip
  const float f[] = {-1.5f, 2.0f, NAN, -0.0f};
  float fy[4];
  rt::relu(f, fy, 4);
  CHECK(fy[0] == 0.0f);
  CHECK(fy[1] == 2.0f);
  CHECK(std::isnan(fy[2]));
  rt::clip(f, fy, 4, -1.0f, 1.0f);
  CHECK(fy[0] == -1.0f);
  CHECK(fy[1] == 1.0f);
  CHECK(std::isnan(fy[2]));
  const float g[] = {0.25f, 3.0f, 1.0f, 2.0f};
  rt::binary<rt::Binary::Mul>(f, g, fy, 4);
  CHECK(fy[0] == -0.375f);
  CHECK(fy[1] == 6.0f);
  rt::add_scalar(g, 0.5f, fy, 4);
  CHECK(fy[3] == 2.5f);
  // bias_add over [outer, channels, inner]
  const i64 outer = 3, ch = 4, inner = 5;
  const auto bx = random_vec<std::int8_t>(rng, outer * ch * inner, -128, 127);
  const auto bias = random_vec<std::int8_t>(rng, ch, -128, 127);
  std::vector<std::int8_t> by8(bx.size());
  rt::bias_add(bx.data(), bias.data(), by8.data(), outer, ch, inner);
  for (i64 o = 0; o < outer; ++o)
    for (i64 c = 0; c < ch; ++c)
      for (i64 i = 0; i < inner; ++i) {
        const auto at = static_cast<std::size_t>((o * ch + c) * inner + i);
        CHECK(by8[at] == ref_wrap(bx[at] + bias[static_cast<std::size_t>(c)], 8));
      }
}

// ---- math: unary and binary kinds, broadcasting, reductions ---------------------------------

TEST_CASE("runtime kernels: unary kinds against <cmath> in double, edge values by hand") {
  const float inf = HUGE_VALF;
  const std::vector<float> x = {-3.5f, -1.0f, -0.25f, -0.0f, 0.0f, 0.5f, 1.0f, 2.75f, 40.0f};
  std::vector<float> y(x.size());
  const auto n = static_cast<i64>(x.size());
  // each kind against its formula evaluated in double, then rounded to float
  const auto check = [&](auto kind, auto formula, float alpha = 0.0f, float beta = 0.0f) {
    rt::unary<decltype(kind)::value>(x.data(), y.data(), n, alpha, beta);
    for (std::size_t i = 0; i < x.size(); ++i) {
      CAPTURE(x[i]);
      const double want = formula(double{x[i]});
      if (std::isnan(want))
        CHECK(std::isnan(y[i]));
      else if (std::isinf(want))
        CHECK(y[i] == want);
      else
        CHECK(y[i] == doctest::Approx(want).epsilon(1e-6));
    }
  };
  using U = rt::Unary;
  check(std::integral_constant<U, U::Sigmoid>{}, [](double v) { return 1 / (1 + std::exp(-v)); });
  check(std::integral_constant<U, U::Tanh>{}, [](double v) { return std::tanh(v); });
  check(std::integral_constant<U, U::Exp>{}, [](double v) { return std::exp(v); });
  check(std::integral_constant<U, U::Log>{}, [](double v) { return std::log(v); });
  check(std::integral_constant<U, U::Sqrt>{}, [](double v) { return std::sqrt(v); });
  check(std::integral_constant<U, U::Erf>{}, [](double v) { return std::erf(v); });
  check(std::integral_constant<U, U::Abs>{}, [](double v) { return v < 0 ? -v : v; });
  check(std::integral_constant<U, U::Neg>{}, [](double v) { return -v; });
  check(
      std::integral_constant<U, U::HardSigmoid>{},
      [](double v) { return std::min(1.0, std::max(0.0, 0.25 * v + 0.75)); }, 0.25f, 0.75f);
  check(std::integral_constant<U, U::HardSwish>{},
        [](double v) { return v * std::min(1.0, std::max(0.0, v / 6 + 0.5)); });
  check(
      std::integral_constant<U, U::LeakyRelu>{}, [](double v) { return v < 0 ? 0.125 * v : v; },
      0.125f);
  // signs, infinities and NaN
  CHECK(std::signbit(rt::unary_value<U::Abs>(-0.0f)) == false);
  CHECK(std::signbit(rt::unary_value<U::Neg>(0.0f)));
  CHECK(std::signbit(rt::unary_value<U::Sqrt>(-0.0f)));
  CHECK(rt::unary_value<U::Log>(0.0f) == -inf);
  CHECK(std::isnan(rt::unary_value<U::Log>(-1.0f)));
  CHECK(rt::unary_value<U::Sigmoid>(-inf) == 0.0f);
  CHECK(rt::unary_value<U::Sigmoid>(inf) == 1.0f);
  CHECK(rt::unary_value<U::Sigmoid>(-200.0f) == 0.0f);  // exp(200) is inf: 1 / inf
  CHECK(rt::unary_value<U::Exp>(100.0f) == inf);
  CHECK(std::isnan(rt::unary_value<U::HardSigmoid>(NAN, 0.2f, 0.5f)));
  CHECK(std::signbit(rt::unary_value<U::LeakyRelu>(-0.0f, 0.5f)));
  CHECK(rt::unary_value<U::LeakyRelu>(-inf, 0.5f) == -inf);
  CHECK(rt::unary_value<U::HardSwish>(-3.0f) == 0.0f);
  CHECK(rt::unary_value<U::HardSwish>(3.0f) == 3.0f);
  for (U k : {U::Sigmoid, U::Tanh, U::Exp, U::Log, U::Sqrt, U::Erf, U::Abs, U::Neg, U::HardSigmoid,
              U::HardSwish, U::LeakyRelu})
    rt::with_kind(k, [](auto kind) {
      CHECK(std::isnan(rt::unary_value<decltype(kind)::value>(NAN, 0.5f, 0.5f)));
    });
  // integers at their own width: the minimum's magnitude wraps, unsigned values negate mod 2^n
  const std::int8_t i8[] = {-128, -5, 0, 7, 127};
  std::int8_t y8[5];
  rt::unary<U::Abs>(i8, y8, 5);
  CHECK(std::vector<int>(y8, y8 + 5) == std::vector<int>{-128, 5, 0, 7, 127});
  rt::unary<U::Neg>(i8, y8, 5);
  CHECK(std::vector<int>(y8, y8 + 5) == std::vector<int>{-128, 5, 0, -7, -127});
  const std::uint8_t u8[] = {0, 1, 200};
  std::uint8_t yu[3];
  rt::unary<U::Neg>(u8, yu, 3);
  CHECK(std::vector<int>(yu, yu + 3) == std::vector<int>{0, 255, 56});
  rt::unary<U::Abs>(u8, yu, 3);
  CHECK(std::vector<int>(yu, yu + 3) == std::vector<int>{0, 1, 200});
  CHECK(rt::unary_value<U::Abs>(std::numeric_limits<i64>::min()) ==
        std::numeric_limits<i64>::min());
  CHECK(rt::unary_value<U::Neg>(std::int16_t{-32768}) == -32768);
}

TEST_CASE("runtime kernels: binary kinds, integer division and the NaN rules by hand") {
  using B = rt::Binary;
  // integers at their own width, against an exact reference wrapped here
  std::mt19937_64 rng(31);
  const auto a = random_vec<std::int8_t>(rng, 400, -128, 127);
  const auto b = random_vec<std::int8_t>(rng, 400, -128, 127);
  std::vector<std::int8_t> y(400);
  rt::binary<B::Sub>(a.data(), b.data(), y.data(), 400);
  for (std::size_t i = 0; i < 400; ++i) CHECK(y[i] == ref_wrap(a[i] - b[i], 8));
  rt::binary<B::Div>(a.data(), b.data(), y.data(), 400);
  for (std::size_t i = 0; i < 400; ++i)
    CHECK(y[i] == (b[i] == 0 ? 0 : ref_wrap(static_cast<int>(std::trunc(double(a[i]) / b[i])), 8)));
  rt::binary<B::Maximum>(a.data(), b.data(), y.data(), 400);
  for (std::size_t i = 0; i < 400; ++i) CHECK(y[i] == std::max(a[i], b[i]));
  rt::binary<B::Minimum>(a.data(), b.data(), y.data(), 400);
  for (std::size_t i = 0; i < 400; ++i) CHECK(y[i] == std::min(a[i], b[i]));
  rt::binary<B::Prelu>(a.data(), b.data(), y.data(), 400);
  for (std::size_t i = 0; i < 400; ++i) CHECK(y[i] == (a[i] < 0 ? ref_wrap(a[i] * b[i], 8) : a[i]));
  // division: toward zero, by zero 0, the minimum by -1 wraps (at every width, no trap)
  CHECK(rt::binary_value<B::Div>(std::int8_t{-7}, std::int8_t{2}) == -3);
  CHECK(rt::binary_value<B::Div>(std::int8_t{7}, std::int8_t{-2}) == -3);
  CHECK(rt::binary_value<B::Div>(std::int8_t{-128}, std::int8_t{-1}) == -128);
  CHECK(rt::binary_value<B::Div>(std::int32_t{5}, std::int32_t{0}) == 0);
  const i64 lo = std::numeric_limits<i64>::min();
  CHECK(rt::binary_value<B::Div>(lo, i64{-1}) == lo);
  CHECK(rt::binary_value<B::Div>(std::int32_t{INT32_MIN}, std::int32_t{-1}) == INT32_MIN);
  CHECK(rt::binary_value<B::Div>(std::uint32_t{4000000000u}, std::uint32_t{0xFFFFFFFFu}) == 0);
  CHECK(rt::binary_value<B::Div>(std::uint8_t{250}, std::uint8_t{7}) == 35);
  CHECK(rt::binary_value<B::Sub>(std::uint8_t{1}, std::uint8_t{2}) == 255);
  CHECK(rt::binary_value<B::Prelu>(std::uint8_t{200}, std::uint8_t{3}) == 200);
  CHECK(rt::binary_value<B::Maximum>(std::uint8_t{200}, std::uint8_t{3}) == 200);
  // floats: IEEE division, powf, NaN from either side, -0 and +0 keep the first
  const float inf = HUGE_VALF;
  CHECK(rt::binary_value<B::Div>(1.0f, 0.0f) == inf);
  CHECK(rt::binary_value<B::Div>(-1.0f, 0.0f) == -inf);
  CHECK(std::isnan(rt::binary_value<B::Div>(0.0f, 0.0f)));
  CHECK(rt::binary_value<B::Pow>(2.0f, 10.0f) == 1024.0f);
  CHECK(rt::binary_value<B::Pow>(NAN, 0.0f) == 1.0f);
  CHECK(std::isnan(rt::binary_value<B::Pow>(-8.0f, 1.0f / 3)));
  CHECK(rt::binary_value<B::Pow>(-2.0f, 3.0f) == -8.0f);
  for (B k : {B::Maximum, B::Minimum})
    rt::with_kind(k, [](auto kind) {
      constexpr B K = decltype(kind)::value;
      CHECK(std::isnan(rt::binary_value<K>(NAN, 1.0f)));
      CHECK(std::isnan(rt::binary_value<K>(1.0f, NAN)));
      CHECK(std::signbit(rt::binary_value<K>(-0.0f, 0.0f)));
      CHECK_FALSE(std::signbit(rt::binary_value<K>(0.0f, -0.0f)));
    });
  CHECK(rt::binary_value<B::Maximum>(-inf, 3.0f) == 3.0f);
  CHECK(rt::binary_value<B::Minimum>(-inf, 3.0f) == -inf);
  CHECK(rt::binary_value<B::Prelu>(-2.0f, 0.25f) == -0.5f);
  CHECK(std::signbit(rt::binary_value<B::Prelu>(-0.0f, 3.0f)));
}

TEST_CASE("runtime kernels: binary_broadcast against index arithmetic, random shapes") {
  std::mt19937_64 rng(32);
  for (int round = 0; round < 200; ++round) {
    const i64 rank = pick(rng, 1, 5);
    std::vector<i64> shape, as, bs;
    for (i64 k = 0; k < rank; ++k) {
      shape.push_back(pick(rng, 0, 3) == 0 ? 1 : pick(rng, 2, 4));
      as.push_back(pick(rng, 0, 2) == 0 ? 1 : shape.back());
      bs.push_back(pick(rng, 0, 2) == 0 ? 1 : shape.back());
    }
    const auto count = [](const std::vector<i64>& s) {
      return static_cast<std::size_t>(
          std::accumulate(s.begin(), s.end(), i64{1}, std::multiplies<>()));
    };
    const auto a = random_vec<std::int32_t>(rng, count(as), -1000, 1000);
    const auto b = random_vec<std::int32_t>(rng, count(bs), -1000, 1000);
    std::vector<std::int32_t> y(count(shape), 7), want(count(shape));
    // the operand offset of output index o: its digits, 0 along a stretched dim
    const auto offset = [&](i64 o, const std::vector<i64>& s) {
      i64 off = 0, scale = 1;
      for (i64 k = rank; k-- > 0;) {
        const i64 digit = o % shape[static_cast<std::size_t>(k)];
        o /= shape[static_cast<std::size_t>(k)];
        if (s[static_cast<std::size_t>(k)] != 1) off += digit * scale;
        scale *= s[static_cast<std::size_t>(k)];
      }
      return static_cast<std::size_t>(off);
    };
    for (std::size_t o = 0; o < want.size(); ++o)
      want[o] = a[offset(static_cast<i64>(o), as)] - b[offset(static_cast<i64>(o), bs)];
    rt::binary_broadcast<rt::Binary::Sub>(a.data(), b.data(), y.data(), shape.data(), as.data(),
                                          bs.data(), rank);
    CAPTURE(round);
    CHECK(y == want);
  }
  // a dim of 0 writes nothing
  const i64 shape[] = {2, 0}, one[] = {1, 1};
  const float a[] = {1.0f};
  float y = 5.0f;
  rt::binary_broadcast<rt::Binary::Pow>(a, a, &y, shape, one, shape, 2);
  CHECK(y == 5.0f);
}

TEST_CASE("runtime kernels: reduce over random dims against a scattering reference") {
  std::mt19937_64 rng(33);
  for (int round = 0; round < 150; ++round) {
    const i64 rank = pick(rng, 1, 5);
    std::vector<i64> shape;
    bool reduced[8] = {};
    for (i64 k = 0; k < rank; ++k) {
      shape.push_back(pick(rng, 1, 4));
      reduced[k] = pick(rng, 0, 1) == 1;
    }
    const auto n = static_cast<std::size_t>(
        std::accumulate(shape.begin(), shape.end(), i64{1}, std::multiplies<>()));
    const auto xi = random_vec<std::int8_t>(rng, n, -128, 127);
    std::vector<float> xf(n);
    for (std::size_t i = 0; i < n; ++i) xf[i] = static_cast<float>(xi[i]) / 8;
    // each element's output index: its digits with the reduced ones dropped
    std::vector<std::size_t> out_of(n);
    std::size_t outputs = 1;
    for (i64 k = 0; k < rank; ++k)
      if (!reduced[k]) outputs *= static_cast<std::size_t>(shape[static_cast<std::size_t>(k)]);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t rest = i, o = 0, scale = 1;
      for (i64 k = rank; k-- > 0;) {
        const auto ext = static_cast<std::size_t>(shape[static_cast<std::size_t>(k)]);
        if (!reduced[k]) {
          o += rest % ext * scale;
          scale *= ext;
        }
        rest /= ext;
      }
      out_of[i] = o;
    }
    // the reference: every element added to its output in x's order
    std::vector<i64> sum(outputs, 0), count(outputs, 0), mx(outputs, -1000), mn(outputs, 1000);
    std::vector<float> fsum(outputs, 0.0f);
    std::vector<bool> first(outputs, true);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t o = out_of[i];
      sum[o] += xi[i];
      ++count[o];
      mx[o] = std::max<i64>(mx[o], xi[i]);
      mn[o] = std::min<i64>(mn[o], xi[i]);
      fsum[o] = first[o] ? xf[i] : fsum[o] + xf[i];
      first[o] = false;
    }
    std::vector<std::int8_t> y8(outputs);
    std::vector<float> yf(outputs);
    CAPTURE(round);
    rt::reduce<rt::Reduce::Sum>(xi.data(), y8.data(), shape.data(), reduced, rank);
    for (std::size_t o = 0; o < outputs; ++o) CHECK(y8[o] == ref_wrap(sum[o], 8));
    rt::reduce<rt::Reduce::Mean>(xi.data(), y8.data(), shape.data(), reduced, rank);
    for (std::size_t o = 0; o < outputs; ++o) CHECK(y8[o] == sum[o] / count[o]);  // toward 0
    rt::reduce<rt::Reduce::Maximum>(xi.data(), y8.data(), shape.data(), reduced, rank);
    for (std::size_t o = 0; o < outputs; ++o) CHECK(y8[o] == mx[o]);
    rt::reduce<rt::Reduce::Minimum>(xi.data(), y8.data(), shape.data(), reduced, rank);
    for (std::size_t o = 0; o < outputs; ++o) CHECK(y8[o] == mn[o]);
    rt::reduce<rt::Reduce::Sum>(xf.data(), yf.data(), shape.data(), reduced, rank);
    for (std::size_t o = 0; o < outputs; ++o) CHECK(yf[o] == fsum[o]);  // the same order
    rt::reduce<rt::Reduce::Mean>(xf.data(), yf.data(), shape.data(), reduced, rank);
    for (std::size_t o = 0; o < outputs; ++o)
      CHECK(yf[o] == fsum[o] / static_cast<float>(count[o]));
  }
  // over no element: ONNX's identities; NaN wins a maximum, -0 the first of equals
  const i64 empty[] = {3, 0};
  const bool last[] = {false, true};
  const std::int16_t none16[1] = {};
  std::int16_t y16[3];
  rt::reduce<rt::Reduce::Maximum>(none16, y16, empty, last, 2);
  CHECK(std::vector<int>(y16, y16 + 3) == std::vector<int>(3, -32768));
  rt::reduce<rt::Reduce::Minimum>(none16, y16, empty, last, 2);
  CHECK(y16[2] == 32767);
  rt::reduce<rt::Reduce::Mean>(none16, y16, empty, last, 2);
  CHECK(y16[0] == 0);
  const float nonef[1] = {};
  float yf[3];
  rt::reduce<rt::Reduce::Sum>(nonef, yf, empty, last, 2);
  CHECK(yf[1] == 0.0f);
  rt::reduce<rt::Reduce::Mean>(nonef, yf, empty, last, 2);
  CHECK(std::isnan(yf[1]));
  rt::reduce<rt::Reduce::Maximum>(nonef, yf, empty, last, 2);
  CHECK(yf[0] == -HUGE_VALF);
  rt::reduce<rt::Reduce::Minimum>(nonef, yf, empty, last, 2);
  CHECK(yf[0] == HUGE_VALF);
  const i64 row[] = {4};
  const bool all[] = {true};
  const float with_nan[] = {1.0f, NAN, 5.0f, -1.0f}, zeros[] = {-0.0f, 0.0f, -0.0f, 0.0f};
  float out = 0;
  rt::reduce<rt::Reduce::Maximum>(with_nan, &out, row, all, 1);
  CHECK(std::isnan(out));
  rt::reduce<rt::Reduce::Minimum>(with_nan, &out, row, all, 1);
  CHECK(std::isnan(out));
  rt::reduce<rt::Reduce::Maximum>(zeros, &out, row, all, 1);
  CHECK(std::signbit(out));
  rt::reduce<rt::Reduce::Sum>(zeros, &out, row, all, 1);
  CHECK_FALSE(std::signbit(out));  // -0 + 0
  const float neg_zeros[] = {-0.0f, -0.0f, -0.0f, -0.0f};
  rt::reduce<rt::Reduce::Sum>(neg_zeros, &out, row, all, 1);
  CHECK(std::signbit(out));  // starts from the first element, not from +0
  // the sum of int32 wraps; its mean does not (the sum is exact in int64)
  const std::int32_t big[] = {INT32_MAX, INT32_MAX, 2, -1};
  std::int32_t s32 = 0;
  rt::reduce<rt::Reduce::Sum>(big, &s32, row, all, 1);
  CHECK(s32 == -1);  // 2 * (2^31 - 1) + 2 - 1 = 2^32 - 1, modulo 2^32
  rt::reduce<rt::Reduce::Mean>(big, &s32, row, all, 1);
  CHECK(s32 == static_cast<std::int32_t>((i64{INT32_MAX} * 2 + 1) / 4));
}

// The offset into an operand of shape `s` (aligned to `shape`'s rank) that output index o
// reads under broadcasting: o's digits, 0 along a stretched dim.
i64 broadcast_offset(i64 o, const std::vector<i64>& shape, const std::vector<i64>& s) {
  i64 off = 0, scale = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    const i64 digit = o % shape[k];
    o /= shape[k];
    if (s[k] != 1) off += digit * scale;
    scale *= s[k];
  }
  return off;
}

std::size_t count_of(const std::vector<i64>& s) {
  return static_cast<std::size_t>(std::accumulate(s.begin(), s.end(), i64{1}, std::multiplies<>()));
}

TEST_CASE("runtime kernels: compare, logical and where broadcast against index arithmetic") {
  std::mt19937_64 rng(34);
  int checked = 0;
  for (int round = 0; round < 150; ++round) {
    const i64 rank = pick(rng, 1, 5);
    std::vector<i64> shape, cs, as, bs;
    for (i64 k = 0; k < rank; ++k) {
      shape.push_back(pick(rng, 0, 3) == 0 ? 1 : pick(rng, 2, 4));
      for (auto* s : {&cs, &as, &bs}) s->push_back(pick(rng, 0, 2) == 0 ? 1 : shape.back());
    }
    // small ranges, so that equal operands are common
    const auto a = random_vec<std::int16_t>(rng, count_of(as), -3, 3);
    const auto b = random_vec<std::int16_t>(rng, count_of(bs), -3, 3);
    const auto c = random_vec<std::uint8_t>(rng, count_of(cs), 0, 3);
    const auto ua = random_vec<std::uint8_t>(rng, count_of(as), 0, 2);
    const auto ub = random_vec<std::uint8_t>(rng, count_of(bs), 0, 2);
    const std::size_t n = count_of(shape);
    std::vector<std::uint8_t> ge(n, 9), ne(n, 9), lx(n, 9), lo(n, 9);
    std::vector<std::int16_t> w(n, 9);
    rt::compare_broadcast<rt::Compare::GreaterEqual>(a.data(), b.data(), ge.data(), shape.data(),
                                                     as.data(), bs.data(), rank);
    rt::compare_broadcast<rt::Compare::NotEqual>(a.data(), b.data(), ne.data(), shape.data(),
                                                 as.data(), bs.data(), rank);
    rt::logical_broadcast<rt::Logical::Xor>(ua.data(), ub.data(), lx.data(), shape.data(),
                                            as.data(), bs.data(), rank);
    rt::logical_broadcast<rt::Logical::Or>(ua.data(), ub.data(), lo.data(), shape.data(), as.data(),
                                           bs.data(), rank);
    rt::where_broadcast(c.data(), a.data(), b.data(), w.data(), shape.data(), cs.data(), as.data(),
                        bs.data(), rank);
    CAPTURE(round);
    for (std::size_t o = 0; o < n; ++o) {
      const auto io = static_cast<i64>(o);
      const auto ia = static_cast<std::size_t>(broadcast_offset(io, shape, as));
      const auto ib = static_cast<std::size_t>(broadcast_offset(io, shape, bs));
      const auto ic = static_cast<std::size_t>(broadcast_offset(io, shape, cs));
      CHECK(ge[o] == (a[ia] >= b[ib] ? 1 : 0));
      CHECK(ne[o] == (a[ia] != b[ib] ? 1 : 0));
      CHECK(lx[o] == ((ua[ia] != 0) != (ub[ib] != 0) ? 1 : 0));
      CHECK(lo[o] == (ua[ia] != 0 || ub[ib] != 0 ? 1 : 0));
      CHECK(w[o] == (c[ic] != 0 ? a[ia] : b[ib]));
      ++checked;
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("runtime kernels: every comparison and logical kind by hand, NaN and -0 included") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float a[] = {1.0f, 2.0f, nan, nan, -0.0f, -HUGE_VALF};
  const float b[] = {2.0f, 2.0f, 1.0f, nan, 0.0f, -HUGE_VALF};
  const auto run = [&](auto tag) {
    std::uint8_t y[6];
    rt::compare<decltype(tag)::value>(a, b, y, 6);
    return std::vector<int>(y, y + 6);
  };
  using C = rt::Compare;
  CHECK(run(std::integral_constant<C, C::Equal>{}) == std::vector<int>{0, 1, 0, 0, 1, 1});
  CHECK(run(std::integral_constant<C, C::NotEqual>{}) == std::vector<int>{1, 0, 1, 1, 0, 0});
  CHECK(run(std::integral_constant<C, C::Greater>{}) == std::vector<int>{0, 0, 0, 0, 0, 0});
  CHECK(run(std::integral_constant<C, C::GreaterEqual>{}) == std::vector<int>{0, 1, 0, 0, 1, 1});
  CHECK(run(std::integral_constant<C, C::Less>{}) == std::vector<int>{1, 0, 0, 0, 0, 0});
  CHECK(run(std::integral_constant<C, C::LessEqual>{}) == std::vector<int>{1, 1, 0, 0, 1, 1});
  // unsigned and signed 64-bit values compare as their types say
  const std::uint64_t big[] = {~std::uint64_t{0}}, one[] = {1};
  std::uint8_t g = 0;
  rt::compare<C::Greater>(big, one, &g, 1);
  CHECK(g == 1);
  const std::int64_t neg[] = {-1}, pos[] = {1};
  rt::compare<C::Less>(neg, pos, &g, 1);
  CHECK(g == 1);
  // logical kinds read any nonzero as true and write 0 or 1
  const std::uint8_t p[] = {0, 0, 7, 1}, q[] = {0, 200, 0, 1};
  std::uint8_t y[4];
  rt::logical<rt::Logical::And>(p, q, y, 4);
  CHECK(std::vector<int>(y, y + 4) == std::vector<int>{0, 0, 0, 1});
  rt::logical<rt::Logical::Or>(p, q, y, 4);
  CHECK(std::vector<int>(y, y + 4) == std::vector<int>{0, 1, 1, 1});
  rt::logical<rt::Logical::Xor>(p, q, y, 4);
  CHECK(std::vector<int>(y, y + 4) == std::vector<int>{0, 1, 1, 0});
  rt::logical<rt::Logical::Not>(q, y, 4);
  CHECK(std::vector<int>(y, y + 4) == std::vector<int>{1, 0, 1, 0});
  // where of one shape; the condition any nonzero
  const float t[] = {1, 2, 3, 4}, f[] = {-1, -2, -3, -4};
  float w[4];
  rt::where(q, t, f, w, 4);
  CHECK(std::vector<float>(w, w + 4) == std::vector<float>{-1, 2, -3, 4});
  // float classes
  const float x[] = {nan, HUGE_VALF, -HUGE_VALF, 0.0f, -nan, 3.0f};
  std::uint8_t c[6];
  rt::float_class<rt::FloatClass::Nan>(x, c, 6);
  CHECK(std::vector<int>(c, c + 6) == std::vector<int>{1, 0, 0, 0, 1, 0});
  rt::float_class<rt::FloatClass::Inf>(x, c, 6);
  CHECK(std::vector<int>(c, c + 6) == std::vector<int>{0, 1, 1, 0, 0, 0});
  rt::float_class<rt::FloatClass::Inf>(x, c, 6, true, false);
  CHECK(std::vector<int>(c, c + 6) == std::vector<int>{0, 1, 0, 0, 0, 0});
  rt::float_class<rt::FloatClass::Inf>(x, c, 6, false, true);
  CHECK(std::vector<int>(c, c + 6) == std::vector<int>{0, 0, 1, 0, 0, 0});
}

// The index arg_reduce picks in a row: a scan written from its comment (the first strict
// winner from the row's start or end; a NaN wins, the first met).
template <rt::ArgReduce K, class T>
i64 ref_arg(const std::vector<T>& row, bool last) {
  std::vector<i64> order(row.size());
  std::iota(order.begin(), order.end(), i64{0});
  if (last) std::reverse(order.begin(), order.end());
  i64 best = order[0];
  for (const i64 j : order) {
    const T v = row[static_cast<std::size_t>(j)], m = row[static_cast<std::size_t>(best)];
    if constexpr (std::is_floating_point_v<T>) {
      if (m != m) break;  // NaN
      if (v != v) return j;
    }
    if (K == rt::ArgReduce::Max ? v > m : v < m) best = j;
  }
  return best;
}

TEST_CASE("runtime kernels: arg_reduce over random rows, ties and NaN, from either end") {
  std::mt19937_64 rng(35);
  for (int round = 0; round < 100; ++round) {
    const i64 outer = pick(rng, 1, 3), extent = pick(rng, 1, 6), inner = pick(rng, 1, 3);
    const auto n = static_cast<std::size_t>(outer * extent * inner);
    const auto xi = random_vec<std::int8_t>(rng, n, -2, 2);  // ties are common
    std::vector<float> xf(n);
    for (std::size_t i = 0; i < n; ++i)
      xf[i] = pick(rng, 0, 6) == 0 ? std::numeric_limits<float>::quiet_NaN()
                                   : static_cast<float>(xi[i]);
    for (const bool last : {false, true}) {
      std::vector<i64> mx(static_cast<std::size_t>(outer * inner)), mn(mx.size()), fx(mx.size());
      rt::arg_reduce<rt::ArgReduce::Max>(xi.data(), mx.data(), outer, extent, inner, last);
      rt::arg_reduce<rt::ArgReduce::Min>(xi.data(), mn.data(), outer, extent, inner, last);
      rt::arg_reduce<rt::ArgReduce::Max>(xf.data(), fx.data(), outer, extent, inner, last);
      CAPTURE(round);
      CAPTURE(last);
      for (i64 o = 0; o < outer; ++o)
        for (i64 i = 0; i < inner; ++i) {
          std::vector<std::int8_t> ri;
          std::vector<float> rf;
          for (i64 j = 0; j < extent; ++j) {
            ri.push_back(xi[static_cast<std::size_t>((o * extent + j) * inner + i)]);
            rf.push_back(xf[static_cast<std::size_t>((o * extent + j) * inner + i)]);
          }
          const auto at = static_cast<std::size_t>(o * inner + i);
          CHECK(mx[at] == ref_arg<rt::ArgReduce::Max>(ri, last));
          CHECK(mn[at] == ref_arg<rt::ArgReduce::Min>(ri, last));
          CHECK(fx[at] == ref_arg<rt::ArgReduce::Max>(rf, last));
        }
    }
  }
  // by hand: ties, NaN, -0 and +0 (equal: a tie)
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float row[] = {1.0f, 3.0f, nan, 3.0f, nan, -0.0f, 0.0f};
  i64 y = -1;
  rt::arg_reduce<rt::ArgReduce::Max>(row, &y, 1, 7, 1, false);
  CHECK(y == 2);
  rt::arg_reduce<rt::ArgReduce::Min>(row, &y, 1, 7, 1, true);
  CHECK(y == 4);
  rt::arg_reduce<rt::ArgReduce::Max>(row, &y, 1, 2, 1, true);
  CHECK(y == 1);
  rt::arg_reduce<rt::ArgReduce::Max>(row + 5, &y, 1, 2, 1, false);
  CHECK(y == 0);
  rt::arg_reduce<rt::ArgReduce::Max>(row + 5, &y, 1, 2, 1, true);
  CHECK(y == 1);
  const std::int32_t ints[] = {5, -7, 5, -7};
  std::int32_t yi = -1;
  rt::arg_reduce<rt::ArgReduce::Min>(ints, &yi, 1, 4, 1, false);
  CHECK(yi == 1);
  rt::arg_reduce<rt::ArgReduce::Max>(ints, &yi, 1, 4, 1, true);
  CHECK(yi == 2);
  // along a middle axis: x [2, 3, 2], rows strided by 2
  const std::int16_t m[] = {0, 9, 4, 1, 4, 8, 2, 2, 7, 3, 1, 3};
  i64 out[4];
  rt::arg_reduce<rt::ArgReduce::Max>(m, out, 2, 3, 2, false);
  CHECK(std::vector<i64>(out, out + 4) == std::vector<i64>{1, 0, 1, 1});
  rt::arg_reduce<rt::ArgReduce::Max>(m, out, 2, 3, 2, true);
  CHECK(std::vector<i64>(out, out + 4) == std::vector<i64>{2, 0, 1, 2});
}

TEST_CASE("runtime kernels: cast wraps integers, rounds floats half to even and saturates") {
  // int -> int: two's-complement wrap
  const std::int32_t xi[] = {300, -1, 128, -129, 255};
  std::int8_t y8[5];
  rt::cast(xi, y8, 5, -128, 127);
  CHECK(std::vector<int>(y8, y8 + 5) == std::vector<int>{44, -1, -128, 127, -1});
  std::uint8_t yu[5];
  rt::cast(xi, yu, 5, 0, 255);
  CHECK(std::vector<int>(yu, yu + 5) == std::vector<int>{44, 255, 128, 127, 255});
  // float -> int: half to even, saturation, NaN -> 0, infinities saturate
  const float xf[] = {2.5f,    -1.5f, 0.5f,   -0.5f, 1.5f,      3.49999976f, 127.5f,
                      -128.5f, 1e10f, -1e10f, NAN,   HUGE_VALF, -HUGE_VALF,  -2.5f};
  std::int8_t yf[14];
  rt::cast(xf, yf, 14, -128, 127);
  CHECK(std::vector<int>(yf, yf + 14) ==
        std::vector<int>{2, -2, 0, 0, 2, 3, 127, -128, 127, -128, 0, 127, -128, -2});
  std::int32_t y32[2];
  const float big[] = {1e10f, 2147483520.0f};  // the largest float below 2^31
  rt::cast(big, y32, 2, std::numeric_limits<std::int32_t>::min(),
           std::numeric_limits<std::int32_t>::max());
  CHECK(y32[0] == std::numeric_limits<std::int32_t>::max());
  CHECK(y32[1] == 2147483520);
  // int -> float: the nearest float, ties to even (2^24 + 1 -> 2^24, 2^24 + 3 -> 2^24 + 4)
  const std::int32_t xl[] = {16777217, 16777219, -7};
  float fl[3];
  rt::cast(xl, fl, 3, 0, 0);
  CHECK(fl[0] == 16777216.0f);
  CHECK(fl[1] == 16777220.0f);
  CHECK(fl[2] == -7.0f);
  // random floats against nearbyint (the default rounding mode is to nearest, ties to even)
  std::mt19937_64 rng(21);
  for (int n = 0; n < 3000; ++n) {
    const float v = static_cast<float>(static_cast<int>(rng() % 4001) - 2000) / 8.0f;
    const i64 want = std::clamp<i64>(static_cast<i64>(std::nearbyint(v)), -300, 300);
    CHECK(rt::float_to_int(v, -300, 300) == want);
  }
}

TEST_CASE("runtime kernels: quantize_linear and dequantize_linear, per tensor and per channel") {
  // hand-derived, per tensor, scale 0.5, zero 3: x / 0.5 = 2x rounded half to even
  const float x[] = {0.25f, 0.75f, -0.25f, 1.0f, 100.0f, -65.0f, NAN};
  const float scale[] = {0.5f};
  const std::int8_t zero[] = {3};
  std::int8_t y[7];
  rt::quantize_linear(x, scale, zero, y, 1, 1, 7, -128, 127);
  // 0.5 -> 0 (+3), 1.5 -> 2 (+3), -0.5 -> 0 (+3), 2 (+3), 200 -> 127, -130 + 3 = -127 (the
  // zero point moves the value before it saturates), NaN -> 0 + 3
  CHECK(std::vector<int>(y, y + 7) == std::vector<int>{3, 5, 3, 5, 127, -127, 3});
  // uint8 with a zero point of 128
  const std::uint8_t zu[] = {128};
  std::uint8_t yu[7];
  rt::quantize_linear(x, scale, zu, yu, 1, 1, 7, 0, 255);
  CHECK(std::vector<int>(yu, yu + 7) == std::vector<int>{128, 130, 128, 130, 255, 0, 128});
  // per channel over [outer 2, channels 3, inner 4], random, against nearbyint
  std::mt19937_64 rng(22);
  std::vector<float> xs(24);
  for (auto& v : xs) v = static_cast<float>(static_cast<int>(rng() % 1001) - 500) / 16.0f;
  const float sc[] = {0.25f, 0.5f, 2.0f};
  const std::int8_t zp[] = {-5, 0, 7};
  std::vector<std::int8_t> q(24);
  rt::quantize_linear(xs.data(), sc, zp, q.data(), 2, 3, 4, -128, 127);
  std::vector<float> back(24);
  rt::dequantize_linear(q.data(), sc, zp, back.data(), 2, 3, 4);
  for (i64 o = 0; o < 2; ++o)
    for (i64 c = 0; c < 3; ++c)
      for (i64 i = 0; i < 4; ++i) {
        const auto at = static_cast<std::size_t>((o * 3 + c) * 4 + i);
        const i64 want =
            std::clamp<i64>(static_cast<i64>(std::nearbyint(xs[at] / sc[c])) + zp[c], -128, 127);
        CHECK(q[at] == want);
        CHECK(back[at] == (static_cast<float>(q[at]) - static_cast<float>(zp[c])) * sc[c]);
      }
  // each step in float: (float(x) - float(zero)) * scale, not x * scale - zero * scale
  std::vector<std::int8_t> xq(200), zq(4);
  for (auto& v : xq) v = static_cast<std::int8_t>(rng());
  for (auto& v : zq) v = static_cast<std::int8_t>(rng());
  const float sq[] = {0.1f, 0.37f, 1.3f, 0.0123f};
  std::vector<float> dq(200);
  rt::dequantize_linear(xq.data(), sq, zq.data(), dq.data(), 10, 4, 5);
  for (std::size_t i = 0; i < 200; ++i) {
    const std::size_t c = i / 5 % 4;
    const float d = static_cast<float>(xq[i]) - static_cast<float>(zq[c]);
    CHECK(dq[i] == d * sq[c]);
  }
  // dequantize of int32 with a zero point
  const std::int32_t acc[] = {1000, -7};
  const std::int32_t az[] = {10};
  const float as[] = {0.125f};
  float out[2];
  rt::dequantize_linear(acc, as, az, out, 1, 1, 2);
  CHECK(out[0] == 123.75f);
  CHECK(out[1] == -2.125f);
}

// quantize_linear's definition, element by element, as the kernel computed every output before
// its narrow outputs took int32 lanes: rounded in a wide range, the zero point added, clamped.
template <class Out>
Out quantized_by_definition(float x, float scale, Out zero, i64 lo, i64 hi) {
  const i64 r = rt::float_to_int(x / scale, -(i64{1} << 40), i64{1} << 40) + static_cast<i64>(zero);
  return static_cast<Out>(std::clamp(r, lo, hi));
}

// Rows of n elements drawn from halves, values next to 2^28 and 2^29 (where the lanes saturate),
// NaN, infinities, signed zeros, denormals and random values of every scale.
std::vector<float> quantize_inputs(std::mt19937_64& rng, i64 n) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const float edges[] = {0.5f,
                         -0.5f,
                         1.5f,
                         -1.5f,
                         2.5f,
                         -2.5f,
                         0.0f,
                         -0.0f,
                         NAN,
                         inf,
                         -inf,
                         0x1p29f,
                         -0x1p29f,
                         0x1p28f,
                         -0x1p28f,
                         0x1p31f,
                         -0x1p31f,
                         std::nextafter(0x1p29f, 0.0f),
                         std::nextafter(-0x1p29f, 0.0f),
                         0x1p23f + 1,
                         0x1p23f - 0.5f,
                         1e30f,
                         -1e30f,
                         1e-40f,
                         -1e-40f};
  std::vector<float> x(static_cast<std::size_t>(n));
  for (auto& v : x) {
    switch (rng() % 4) {
      case 0:
        v = edges[rng() % std::size(edges)];
        break;
      case 1:
        v = static_cast<float>(static_cast<int>(rng() % 1201) - 600) / 4.0f;
        break;
      case 2:
        v = std::ldexp(static_cast<float>(rng() % 2000) / 1000.0f - 1.0f,
                       static_cast<int>(rng() % 70) - 20);
        break;
      default:
        v = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
        break;
    }
  }
  return x;
}

template <class Out>
void check_quantize_against_definition(std::mt19937_64& rng, i64 lo, i64 hi, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    const i64 outer = pick(rng, 1, 2), channels = pick(rng, 1, 3), inner = pick(rng, 0, 70);
    const auto x = quantize_inputs(rng, outer * channels * inner);
    std::vector<float> scale(static_cast<std::size_t>(channels));
    std::vector<Out> zero(static_cast<std::size_t>(channels));
    for (std::size_t c = 0; c < scale.size(); ++c) {
      const float scales[] = {1.0f, 0.5f, 0.1f, 3.0f, 1.0f / 127};
      scale[c] = scales[rng() % std::size(scales)];
      // the range's ends and values between, and for int64 storage one far outside it
      const i64 zeros[] = {lo, hi, pick(rng, lo, hi), i64{1} << 40};
      const i64 z = zeros[rng() % (std::is_same_v<Out, i64> ? 4 : 3)];
      zero[c] = static_cast<Out>(z);
    }
    std::vector<Out> y(x.size());
    rt::quantize_linear(x.data(), scale.data(), zero.data(), y.data(), outer, channels, inner, lo,
                        hi);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const auto c = static_cast<std::size_t>(static_cast<i64>(i) / inner % channels);
      const Out want = quantized_by_definition(x[i], scale[c], zero[c], lo, hi);
      if (y[i] != want)
        CHECK_MESSAGE(y[i] == want, "x ", x[i], " scale ", scale[c], " zero ", i64(zero[c]),
                      " range [", lo, ", ", hi, "] element ", i);
    }
  }
}

TEST_CASE(
    "runtime kernels: quantize_linear's int32 lanes give its definition's values, for every "
    "output range, tails of 0 to 15 and values that saturate") {
  std::mt19937_64 rng(44);
  check_quantize_against_definition<std::int8_t>(rng, -128, 127, 300);
  check_quantize_against_definition<std::uint8_t>(rng, 0, 255, 300);
  check_quantize_against_definition<std::int16_t>(rng, -32768, 32767, 300);
  check_quantize_against_definition<std::uint16_t>(rng, 0, 65535, 200);
  // the host's int64 storage: 8-bit ranges, the widest narrow one, and int32 (the general path)
  check_quantize_against_definition<i64>(rng, -128, 127, 300);
  check_quantize_against_definition<i64>(rng, -(i64{1} << 28), i64{1} << 28, 300);
  check_quantize_against_definition<i64>(rng, -(i64{1} << 31), (i64{1} << 31) - 1, 200);
  // by hand, 16 elements (one lane group): halves to even, saturation past 2^29, NaN to 0
  const float x[16] = {0.5f,    1.5f,     2.5f,  -0.5f,  -1.5f, -2.5f, 126.5f,  127.5f,
                       0x1p29f, -0x1p29f, 1e30f, -1e30f, NAN,   -0.0f, 0x1p28f, 3.75f};
  const float one[] = {1.0f};
  const i64 zero[] = {0};
  i64 y[16], w[16];
  rt::quantize_linear(x, one, zero, y, 1, 1, 16, -128, 127);
  CHECK(std::vector<i64>(y, y + 16) ==
        std::vector<i64>{0, 2, 2, 0, -2, -2, 126, 127, 127, -128, 127, -128, 0, 0, 127, 4});
  rt::quantize_linear(x, one, zero, w, 1, 1, 16, -(i64{1} << 28), i64{1} << 28);
  CHECK(std::vector<i64>(w, w + 16) == std::vector<i64>{0, 2, 2, 0, -2, -2, 126, 128, i64{1} << 28,
                                                        -(i64{1} << 28), i64{1} << 28,
                                                        -(i64{1} << 28), 0, 0, i64{1} << 28, 4});
}

// ---- float ops ------------------------------------------------------------------------------

// Runs `kernel` (softmax, log_softmax) on `rounds` random arrays [outer, extent, inner] and
// calls check(x, y) with each row along the axis, x in double.
template <class Kernel, class Check>
void random_rows(std::uint64_t seed, int rounds, Kernel kernel, Check check) {
  std::mt19937_64 rng(seed);
  for (int n = 0; n < rounds; ++n) {
    const i64 outer = pick(rng, 1, 3), extent = pick(rng, 1, 9), inner = pick(rng, 1, 4);
    std::vector<float> x(static_cast<std::size_t>(outer * extent * inner));
    for (auto& v : x) v = static_cast<float>(static_cast<int>(rng() % 400) - 200) / 10.0f;
    std::vector<float> y(x.size());
    kernel(x.data(), y.data(), outer, extent, inner);
    for (i64 o = 0; o < outer; ++o)
      for (i64 i = 0; i < inner; ++i) {
        std::vector<double> xr;
        std::vector<float> yr;
        for (i64 j = 0; j < extent; ++j) {
          xr.push_back(x[static_cast<std::size_t>((o * extent + j) * inner + i)]);
          yr.push_back(y[static_cast<std::size_t>((o * extent + j) * inner + i)]);
        }
        check(xr, yr);
      }
  }
}

TEST_CASE("runtime kernels: softmax along an axis, against double precision") {
  random_rows(23, 40, rt::softmax, [](const std::vector<double>& x, const std::vector<float>& y) {
    const double m = *std::max_element(x.begin(), x.end());
    double s = 0;
    for (double v : x) s += std::exp(v - m);
    for (std::size_t j = 0; j < x.size(); ++j)
      CHECK(y[j] == doctest::Approx(std::exp(x[j] - m) / s).epsilon(1e-5));
  });
  // hand-derived: [0, ln 3] -> [1/4, 3/4]; large values do not overflow (the max is
  // subtracted); -inf gets 0; a NaN makes the row NaN
  const float a[] = {0.0f, std::log(3.0f)}, big[] = {1000.0f, 1000.0f},
              masked[] = {1.0f, -HUGE_VALF, 1.0f}, nan[] = {1.0f, NAN, 2.0f};
  float y[3];
  rt::softmax(a, y, 1, 2, 1);
  CHECK(y[0] == doctest::Approx(0.25));
  CHECK(y[1] == doctest::Approx(0.75));
  rt::softmax(big, y, 1, 2, 1);
  CHECK(y[0] == 0.5f);
  CHECK(y[1] == 0.5f);
  rt::softmax(masked, y, 1, 3, 1);
  CHECK(y[0] == 0.5f);
  CHECK(y[1] == 0.0f);
  CHECK(y[2] == 0.5f);
  rt::softmax(nan, y, 1, 3, 1);
  CHECK((std::isnan(y[0]) && std::isnan(y[1]) && std::isnan(y[2])));
  float none = 9.0f;
  rt::softmax(&none, &none, 1, 0, 1);
  CHECK(none == 9.0f);
}

// softmax and log_softmax as they were defined before their contiguous rows took lanes: the
// maximum by a scan that stops at the first NaN and keeps the first of equal elements, then
// every exponential by std::exp.
float row_max_by_scan(const float* x, i64 extent, i64 inner) {
  float m = x[0];
  for (i64 j = 1; j < extent; ++j) {
    const float v = x[j * inner];
    if (v > m || std::isnan(v)) m = v;
    if (std::isnan(m)) break;
  }
  return m;
}
void softmax_by_definition(const float* src, float* dst, i64 outer, i64 extent, i64 inner,
                           bool log) {
  for (i64 o = 0; o < outer; ++o)
    for (i64 i = 0; i < inner; ++i) {
      const float* x = src + o * extent * inner + i;
      float* y = dst + o * extent * inner + i;
      const float m = row_max_by_scan(x, extent, inner);
      float s = 0.0f;
      for (i64 j = 0; j < extent; ++j) {
        const float e = std::exp(x[j * inner] - m);
        if (!log) y[j * inner] = e;
        s += e;
      }
      const float log_s = std::log(s);
      for (i64 j = 0; j < extent; ++j)
        y[j * inner] = log ? (x[j * inner] - m) - log_s : y[j * inner] / s;
    }
}

// Rows whose elements are drawn from a palette that a row mostly keeps to: random scores,
// zeros of both signs, -infinity (masked keys), +infinity, NaNs with distinct payloads and
// values whose exponentials are denormal.
std::vector<float> softmax_inputs(std::mt19937_64& rng, std::size_t n) {
  const int flavour = static_cast<int>(rng() % 6);
  std::vector<float> x(n);
  for (auto& v : x) {
    const auto draw = rng() % 64;
    if (flavour == 0 || draw >= 12)
      v = static_cast<float>(static_cast<int>(rng() % 4001) - 2000) / 100.0f;
    else if (draw < 4)
      v = (rng() % 2) != 0 ? 0.0f : -0.0f;
    else if (draw < 7)
      v = -HUGE_VALF;
    else if (draw < 8 && flavour >= 3)
      v = HUGE_VALF;
    else if (draw < 9 && flavour >= 4)
      v = std::bit_cast<float>(0x7fc00000U | static_cast<std::uint32_t>(rng() % 0x3fffff));
    else
      v = -85.0f - static_cast<float>(rng() % 1000) / 100.0f;
  }
  // rows whose maximum is a zero: every element at most 0
  if (flavour == 1)
    for (auto& v : x) v = v > 0.0f ? -v : v;
  return x;
}

TEST_CASE(
    "runtime kernels: softmax and log_softmax bit for bit their scan definitions, rows of 1 to "
    "100 with NaNs, zeros of both signs and infinities, contiguous or strided") {
  std::mt19937_64 rng(45);
  const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (int round = 0; round < 1500; ++round) {
    const i64 outer = pick(rng, 1, 3), extent = pick(rng, 1, 100), inner = pick(rng, 1, 3) % 3;
    const i64 in = inner == 0 ? 1 : inner;  // (a third of the rows strided)
    const auto x = softmax_inputs(rng, static_cast<std::size_t>(outer * extent * in));
    for (const bool log : {false, true}) {
      std::vector<float> got(x.size()), want(x.size());
      (log ? rt::log_softmax : rt::softmax)(x.data(), got.data(), outer, extent, in);
      softmax_by_definition(x.data(), want.data(), outer, extent, in, log);
      if (!same_bits(got, want))
        CHECK_MESSAGE(same_bits(got, want), (log ? "log_softmax" : "softmax"), " round ", round,
                      " [", outer, ", ", extent, ", ", in, "]");
    }
    // the row maximum itself: which NaN wins, and which of -0 and +0
    for (i64 o = 0; o < outer; ++o) {
      const float* row = x.data() + o * extent * in;
      const float got = rt::detail::row_max(row, extent, in);
      const float want = row_max_by_scan(row, extent, in);
      CHECK(std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want));
    }
  }
  // by hand: 40 keys whose maximum is +0 after -0 keeps -0; the first of two NaNs wins
  std::vector<float> z(40, -1.0f);
  z[3] = -0.0f;
  z[37] = 0.0f;
  CHECK(std::bit_cast<std::uint32_t>(rt::detail::row_max(z.data(), 40, 1)) == 0x80000000U);
  z[20] = std::bit_cast<float>(0x7fc00001U);
  z[21] = std::bit_cast<float>(0x7fc00002U);
  CHECK(std::bit_cast<std::uint32_t>(rt::detail::row_max(z.data(), 40, 1)) == 0x7fc00001U);
}

TEST_CASE("runtime kernels: log_softmax along an axis, against double precision") {
  random_rows(34, 30, rt::log_softmax,
              [](const std::vector<double>& x, const std::vector<float>& y) {
                double s = 0;
                for (double v : x) s += std::exp(v);
                for (std::size_t j = 0; j < x.size(); ++j)
                  CHECK(y[j] == doctest::Approx(x[j] - std::log(s)).epsilon(1e-5));
              });
  // [0, ln 3] -> [ln 1/4, ln 3/4]; large values stay finite; -inf stays -inf; NaN spreads
  const float a[] = {0.0f, std::log(3.0f)}, big[] = {1000.0f, 1000.0f},
              masked[] = {1.0f, -HUGE_VALF}, nan[] = {1.0f, NAN};
  float y[2];
  rt::log_softmax(a, y, 1, 2, 1);
  CHECK(y[0] == doctest::Approx(std::log(0.25)));
  CHECK(y[1] == doctest::Approx(std::log(0.75)));
  rt::log_softmax(big, y, 1, 2, 1);
  CHECK(y[0] == doctest::Approx(-std::log(2.0)));
  rt::log_softmax(masked, y, 1, 2, 1);
  CHECK(y[0] == 0.0f);
  CHECK(y[1] == -HUGE_VALF);
  rt::log_softmax(nan, y, 1, 2, 1);
  CHECK((std::isnan(y[0]) && std::isnan(y[1])));
}

TEST_CASE("runtime kernels: layer_norm, against double precision and by hand") {
  // hand-derived: [1, 2, 3, 4]: mean 2.5, variance 1.25, y = (x - 2.5) / sqrt(1.25)
  const float x[] = {1, 2, 3, 4}, ones[] = {1, 1, 1, 1}, zeros[] = {0, 0, 0, 0};
  float y[4];
  rt::layer_norm(x, ones, zeros, y, 1, 4, 0.0f);
  CHECK(y[0] == doctest::Approx(-1.5 / std::sqrt(1.25)));
  CHECK(y[1] == doctest::Approx(-0.5 / std::sqrt(1.25)));
  CHECK(y[3] == doctest::Approx(1.5 / std::sqrt(1.25)));
  // a constant row: the deviation is 0, y = beta
  const float c[] = {7, 7, 7, 7}, beta[] = {1, 2, 3, 4};
  rt::layer_norm(c, ones, beta, y, 1, 4, 1e-5f);
  CHECK(std::vector<float>(y, y + 4) == std::vector<float>{1, 2, 3, 4});
  std::mt19937_64 rng(24);
  const i64 groups = 5, group = 12;
  std::vector<float> xs(groups * group), g(group), b(group), ys(xs.size());
  for (auto& v : xs) v = static_cast<float>(static_cast<int>(rng() % 200) - 100) / 10.0f;
  for (auto& v : g) v = static_cast<float>(static_cast<int>(rng() % 20) + 1) / 10.0f;
  for (auto& v : b) v = static_cast<float>(static_cast<int>(rng() % 20) - 10) / 10.0f;
  rt::layer_norm(xs.data(), g.data(), b.data(), ys.data(), groups, group, 1e-5f);
  for (i64 r = 0; r < groups; ++r) {
    double mean = 0, var = 0;
    for (i64 j = 0; j < group; ++j) mean += xs[static_cast<std::size_t>(r * group + j)];
    mean /= group;
    for (i64 j = 0; j < group; ++j) {
      const double d = xs[static_cast<std::size_t>(r * group + j)] - mean;
      var += d * d;
    }
    var /= group;
    for (i64 j = 0; j < group; ++j) {
      const auto at = static_cast<std::size_t>(r * group + j);
      const double want = (xs[at] - mean) / std::sqrt(var + 1e-5) * g[static_cast<std::size_t>(j)] +
                          b[static_cast<std::size_t>(j)];
      CHECK(ys[at] == doctest::Approx(want).epsilon(1e-5));
    }
  }
}

TEST_CASE("runtime kernels: causal_mask hides the keys after each query") {
  std::mt19937_64 rng(25);
  for (int n = 0; n < 30; ++n) {
    const i64 outer = pick(rng, 1, 3), m = pick(rng, 1, 5), nn = m + pick(rng, 0, 4);
    std::vector<float> x(static_cast<std::size_t>(outer * m * nn));
    for (auto& v : x) v = static_cast<float>(rng() % 100);
    std::vector<float> y(x.size(), -1.0f), inplace = x;
    rt::causal_mask(x.data(), y.data(), outer * m, m, nn);
    rt::causal_mask(inplace.data(), inplace.data(), outer * m, m, nn);
    for (i64 o = 0; o < outer; ++o)
      for (i64 i = 0; i < m; ++i)
        for (i64 j = 0; j < nn; ++j) {
          const auto at = static_cast<std::size_t>((o * m + i) * nn + j);
          // query i is position nn - m + i: it sees the keys up to its own
          if (j > i + nn - m) {
            CHECK(y[at] == -HUGE_VALF);
          } else {
            CHECK(y[at] == x[at]);
          }
        }
    CHECK(inplace == y);
  }
}

// ---- integer softmax ---------------------------------------------------------------------

TEST_CASE("runtime kernels: integer_softmax, rows derived by hand") {
  const rt::IntegerExp c{92, 9};
  // e(0) = 2^22 >> 4 = 2^18. e(-1): t = 92, u = 92 >> 2 = 23, z = 0, r = 23,
  // v = (45 * 23 - 22120) * 23 + 2^22 = 3709349, e = v >> 4 = 231834 (2^18 * 2^(-92 / 512) =
  // 231445.4)
  CHECK(rt::integer_exp(0, c) == 262144);
  CHECK(rt::integer_exp(-1, c) == 231834);
  // e(-120): t = 11040, u = 2760, z = 21, z + 4 >= 23: 0
  CHECK(rt::integer_exp(-120, c) == 0);
  // a row [5, 4]: S = 493978, R = floor(127 * 2^23 / S) = 2156,
  // y = (e * 2156 + 2^22) >> 23 = [67, 60]
  CHECK(rt::integer_reciprocal(493978) == 2156);
  CHECK(rt::integer_probability(262144, 2156) == 67);
  const std::int8_t s[] = {5, 4};
  std::int8_t y[2];
  rt::integer_softmax(s, y, 1, 2, 1, c);
  CHECK(std::vector<int>(y, y + 2) == std::vector<int>{67, 60});
  // four equal scores: S = 2^20, R = 1016, y = (2^18 * 1016 + 2^22) >> 23 = 32
  const std::int8_t eq[] = {-3, -3, -3, -3};
  std::int8_t ye[4];
  rt::integer_softmax(eq, ye, 1, 4, 1, c);
  CHECK(std::vector<int>(ye, ye + 4) == std::vector<int>{32, 32, 32, 32});
  // [-128, 127]: the small one's e is 0, the other gets all 127
  const std::int8_t far[] = {-128, 127};
  rt::integer_softmax(far, y, 1, 2, 1, c);
  CHECK(std::vector<int>(y, y + 2) == std::vector<int>{0, 127});
  // along an axis with inner 2: columns [5, 4] and [4, 5], interleaved
  const std::int8_t cols[] = {5, 4, 4, 5};
  std::int8_t yc[4];
  rt::integer_softmax(cols, yc, 1, 2, 2, c);
  CHECK(std::vector<int>(yc, yc + 4) == std::vector<int>{67, 60, 60, 67});
  // causal, queries before the keys (outer index mod queries): 2 queries over 3 keys; query
  // 0 sees keys 0..1, query 1 keys 0..2. Row [1, 2, 3] for query 0: [4 vs 5] -> [60, 67, 0]
  // (hidden key 3 takes no part in the max); for query 1: e = [204749, 231753, 262144],
  // S = 698646, R = 1524 -> [37, 42, 48]
  const std::int8_t rows[] = {1, 2, 3, 1, 2, 3};
  std::int8_t yr[6];
  rt::integer_softmax(rows, yr, 2, 3, 1, c, 2, false);
  CHECK(std::vector<int>(yr, yr + 6) == std::vector<int>{60, 67, 0, 37, 42, 48});
  // the same with the queries the inner index: x [keys 3, queries 2]
  const std::int8_t t[] = {1, 1, 2, 2, 3, 3};
  rt::integer_softmax(t, yr, 1, 3, 2, c, 2, true);
  CHECK(std::vector<int>(yr, yr + 6) == std::vector<int>{60, 37, 67, 42, 0, 48});
  // another fixed point: multiplier 64, 7 fraction bits, row [100, 100, 99]
  // (cross-checked with a Python transcription of the steps): [47, 47, 33]
  const std::int8_t r3[] = {100, 100, 99};
  std::int8_t y3[3];
  rt::integer_softmax(r3, y3, 1, 3, 1, rt::IntegerExp{64, 7});
  CHECK(std::vector<int>(y3, y3 + 3) == std::vector<int>{47, 47, 33});
}

TEST_CASE("runtime kernels: copy moves overlapping elements") {
  std::int16_t v[] = {1, 2, 3, 4, 5};
  rt::copy(v, v + 1, 4);
  CHECK(std::vector<int>(v, v + 5) == std::vector<int>{1, 1, 2, 3, 4});
  rt::copy(v + 1, v, 0);
  CHECK(v[0] == 1);
}

// The row-major index of element o of `shape` (rank 3).
std::array<i64, 3> index3(i64 o, const i64* shape) {
  return {o / (shape[1] * shape[2]), o / shape[2] % shape[1], o % shape[2]};
}

TEST_CASE("runtime kernels: strided_slice and tile read the elements their index maps to") {
  std::mt19937_64 rng(61);
  const i64 shape[] = {3, 4, 5};
  auto x = random_vec<std::int8_t>(rng, 60);
  // dim 0 backwards from 2 by 2, dim 1 from 1 by 1, dim 2 from 4 backwards by 3
  const i64 start[] = {2, 1, 4}, step[] = {-2, 1, -3}, out[] = {2, 3, 2};
  std::vector<std::int8_t> y(12, 0x55);
  rt::strided_slice(x.data(), y.data(), shape, start, step, out, 3);
  for (i64 o = 0; o < 12; ++o) {
    const auto i = index3(o, out);
    const i64 from = ((start[0] + i[0] * step[0]) * 4 + start[1] + i[1] * step[1]) * 5 + start[2] +
                     i[2] * step[2];
    CHECK(y[std::size_t(o)] == x[std::size_t(from)]);
  }
  // tile [3, 4, 5] -> [6, 4, 10], and a broadcast [1, 4, 1] -> [3, 4, 2]
  const i64 tiled[] = {6, 4, 10};
  std::vector<std::int8_t> t(240);
  rt::tile(x.data(), t.data(), shape, tiled, 3);
  for (i64 o = 0; o < 240; ++o) {
    const auto i = index3(o, tiled);
    CHECK(t[std::size_t(o)] == x[std::size_t(((i[0] % 3) * 4 + i[1]) * 5 + i[2] % 5)]);
  }
  const std::uint16_t col[] = {7, 8, 9, 65535};
  const i64 one[] = {1, 4, 1}, wide[] = {3, 4, 2};
  std::uint16_t b[24];
  rt::tile(col, b, one, wide, 3);
  for (i64 o = 0; o < 24; ++o) CHECK(b[o] == col[index3(o, wide)[1]]);
  // rank 0 copies the element; an empty result writes nothing
  const float s = 2.5f;
  float r = 0;
  rt::tile(&s, &r, nullptr, nullptr, 0);
  CHECK(r == 2.5f);
  const i64 empty[] = {3, 0, 5};
  std::int8_t untouched = 9;
  rt::strided_slice(x.data(), &untouched, shape, start, step, empty, 3);
  CHECK(untouched == 9);
}

TEST_CASE("runtime kernels: take clamps indices outside the dim and counts them") {
  // x [2, 3, 2]: along dim 1, indices [2, -1, 3, -4, 0]: 3 and -4 lie outside [-3, 3)
  const std::int32_t x[] = {0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121};
  const std::int64_t idx[] = {2, -1, 3, -4, 0};
  std::int32_t y[20];
  CHECK(rt::take(x, idx, y, 2, 3, 2, 5) == 2);
  const std::int32_t want[] = {20,  21,  20,  21,  20,  21,  0,   1,   0,   1,
                               120, 121, 120, 121, 120, 121, 100, 101, 100, 101};
  CHECK(std::equal(y, y + 20, want));
  // int8 indices, uint8 elements; INT8_MIN clamps to 0
  const std::uint8_t v[] = {5, 6, 7};
  const std::int8_t i8[] = {-128, 127, -3};
  std::uint8_t w[3];
  CHECK(rt::take(v, i8, w, 1, 3, 1, 3) == 2);
  CHECK(std::vector<int>(w, w + 3) == std::vector<int>{5, 7, 5});
  // an empty dim: every index is outside, the result zeros
  float z[4] = {1, 1, 1, 1};
  const std::int32_t zi[] = {0, 1};
  CHECK(rt::take(static_cast<const float*>(nullptr), zi, z, 1, 0, 2, 2) == 2);
  CHECK(std::all_of(z, z + 4, [](float e) { return e == 0.0f; }));
}

TEST_CASE("runtime kernels: resize2d, nearest and linear, by hand") {
  // [[1, 2], [3, 4]] to 3x3 by sizes, align_corners: c = 0, 0.5, 1 along both dims
  const float x[] = {1, 2, 3, 4};
  float y[9];
  rt::resize2d_linear(x, y, {1, 2, 2, 3, 3, 0.0f, 0.0f, 2, 0});
  const float lin[] = {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4};
  CHECK(std::equal(y, y + 9, lin));
  // nearest, round_prefer_floor keeps c = 0.5 at 0, round_prefer_ceil moves it to 1
  const std::int8_t q[] = {-1, 2, -3, 4};
  std::int8_t n[9];
  rt::resize2d_nearest(q, n, {1, 2, 2, 3, 3, 0.0f, 0.0f, 2, 0});
  CHECK(std::vector<int>(n, n + 9) == std::vector<int>{-1, -1, 2, -1, -1, 2, -3, -3, 4});
  rt::resize2d_nearest(q, n, {1, 2, 2, 3, 3, 0.0f, 0.0f, 2, 1});
  CHECK(std::vector<int>(n, n + 9) == std::vector<int>{-1, 2, 2, -3, 4, 4, -3, 4, 4});
  // a given scale of 0.5, asymmetric: c = 2i; two planes
  const std::int64_t big[] = {1,  2,  3,  4,   5,   6,   7,   8,   9,   10, 11,
                              12, 13, 14, 15,  16,  -1,  -2,  -3,  -4,  -5, -6,
                              -7, -8, -9, -10, -11, -12, -13, -14, -15, -16};
  std::int64_t s[8];
  rt::resize2d_nearest(big, s, {2, 4, 4, 2, 2, 0.5f, 0.5f, 1, 0});
  CHECK(std::vector<i64>(s, s + 8) == std::vector<i64>{1, 3, 9, 11, -1, -3, -9, -11});
  // the source coordinates themselves
  CHECK(rt::resize_source(3, 4, 8, 0.0f, 0) == 1.25);  // half_pixel, scale 2 from the sizes
  CHECK(rt::resize_source(3, 4, 8, 0.0f, 1) == 1.5);   // asymmetric
  CHECK(rt::resize_source(0, 4, 1, 0.0f, 3) == 0.0);   // pytorch_half_pixel, one output
  CHECK(rt::resize_source(1, 5, 2, 0.4f, 2) == 4.0 / (double(0.4f) * 5 - 1));  // align_corners
}

TEST_CASE("runtime kernels: resize2d over more columns than one block, element by element") {
  // 2 planes of 3 x 150 to 5 x 301 (half_pixel): the column blocks of kResizeBlock must give
  // what each output's own source coordinate gives
  const std::int64_t planes = 2, h = 3, w = 150, oh = 5, ow = 301;
  std::vector<float> x(static_cast<std::size_t>(planes * h * w));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101) - 50.0f;
  const rt::ResizeShape d{planes, h, w, oh, ow, 0.0f, 0.0f, 0, 0};
  std::vector<float> near(static_cast<std::size_t>(planes * oh * ow)), lin(near.size());
  rt::resize2d_nearest(x.data(), near.data(), d);
  rt::resize2d_linear(x.data(), lin.data(), d);
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox) {
        const double cy = rt::resize_source(oy, h, oh, 0.0f, 0);
        const double cx = rt::resize_source(ox, w, ow, 0.0f, 0);
        const auto at = [&](std::int64_t iy, std::int64_t ix) {
          return static_cast<double>(x[static_cast<std::size_t>((p * h + iy) * w + ix)]);
        };
        const auto i = static_cast<std::size_t>((p * oh + oy) * ow + ox);
        CHECK(near[i] ==
              at(rt::resize_nearest_index(cy, h, 0), rt::resize_nearest_index(cx, w, 0)));
        const auto ty = rt::resize_linear_taps(cy, h), tx = rt::resize_linear_taps(cx, w);
        const double c0 = (1.0 - ty.r) * at(ty.lo, tx.lo) + ty.r * at(ty.hi, tx.lo);
        const double c1 = (1.0 - ty.r) * at(ty.lo, tx.hi) + ty.r * at(ty.hi, tx.hi);
        CHECK(lin[i] == static_cast<float>((1.0 - tx.r) * c0 + tx.r * c1));
      }
}

}  // namespace runtime_kernels_test
