// Definitions for graph/relayout.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/graph/relayout.hpp>
#include <dlavm/ne/int_math.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <numeric>
#include <utility>

namespace dlavm::graph {

namespace detail {

// Offsets [from, t.extent) of tiled dim t in o (resized to its extent): (i / tile) * outer + (i
// % tile) * inner.
inline void fill_tiled(std::vector<std::int64_t>& o, std::size_t from, const TiledDim& t) {
  const auto n = static_cast<std::size_t>(t.extent);
  o.resize(n);
  // one tile, tiles that follow on, or tiles of one: evenly strided (a decode step's 2,048
  // keys, in the lanes or one a row)
  if (t.tile == 1 || t.tile >= t.extent || t.outer == t.tile * t.inner) {
    const std::int64_t step = t.tile == 1 ? t.outer : t.inner;
    for (std::size_t i = from; i < n; ++i) o[i] = static_cast<std::int64_t>(i) * step;
    return;
  }
  const auto first = static_cast<std::int64_t>(from);
  std::int64_t r = first % t.tile, at = first / t.tile * t.outer;
  for (std::size_t i = from; i < n; at += t.outer, r = 0)
    for (; r < t.tile && i < n; ++r, ++i) o[i] = at + r * t.inner;
}

// Whether tiled dim t's offsets step evenly, and by how much (0 for an extent of 0 or 1, -1:
// not strided): as `strided` finds from the offsets.
inline std::int64_t tiled_stride(const TiledDim& t) {
  if (t.extent <= 1) return 0;
  if (t.tile == 1) return t.outer;
  return t.tile >= t.extent || t.outer == t.tile * t.inner ? t.inner : -1;
}

// Row-major dims [first, last) of `shape`, the last of them `stride` apart.
inline void row_major_tiling(std::span<const std::int64_t> shape, std::size_t first,
                             std::size_t last, std::int64_t stride, std::vector<TiledDim>& out) {
  for (std::size_t d = last; d-- > first;) {
    out[d] = {shape[d], 1, stride, 0};
    stride *= shape[d];
  }
}

// Whether t[i] = i * t[1] for every i (the offsets of a strided dim).
inline bool strided(const std::vector<std::int64_t>& t) {
  // no early exit: the loop vectorizes, and most dims are strided
  const std::int64_t step = t.size() > 1 ? t[1] : 0;
  std::int64_t off = 0, at = 0;
  for (const auto o : t) {
    off |= o ^ at;
    at += step;
  }
  return off == 0;
}

// d[x * dx + y] = s[x + y * sy] for x < nx, y < ny: a transpose of bytes, contiguous along x in
// the source and along y in the destination (a decode step's scores, [heads, keys] to [keys,
// lanes]). Blocks of 8 x 8 go through eight 64-bit words, transposed by swapping halves,
// quarters and bytes: three rounds of masks and shifts instead of 64 byte moves.
inline void transpose_bytes(const std::uint8_t* s, std::int64_t sy, std::uint8_t* d,
                            std::int64_t dx, std::int64_t nx, std::int64_t ny) {
  const auto scalar = [&](std::int64_t x0, std::int64_t x1, std::int64_t y0, std::int64_t y1) {
    for (std::int64_t y = y0; y < y1; ++y)
      for (std::int64_t x = x0; x < x1; ++x) d[x * dx + y] = s[x + y * sy];
  };
  if constexpr (std::endian::native != std::endian::little) {
    scalar(0, nx, 0, ny);
    return;
  }
  // word j of a block: row y0 + j, byte k of it element x0 + k; each round swaps the
  // off-diagonal blocks of a pair of words (halves, then quarters, then bytes)
  constexpr std::uint64_t k32 = 0x00000000FFFFFFFFull, k16 = 0x0000FFFF0000FFFFull,
                          k8 = 0x00FF00FF00FF00FFull;
  const auto swap = [](std::uint64_t& a, std::uint64_t& b, int shift, std::uint64_t low) {
    const std::uint64_t na = (a & low) | ((b << shift) & ~low);
    b = ((a >> shift) & low) | (b & ~low);
    a = na;
  };
  const auto load = [](const std::uint8_t* p) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  };
  const std::int64_t bx = nx / 8 * 8, by = ny / 8 * 8;
  for (std::int64_t y0 = 0; y0 < by; y0 += 8) {
    const std::uint8_t* row = s + y0 * sy;
    for (std::int64_t x0 = 0; x0 < bx; x0 += 8) {
      std::uint64_t w0 = load(row + x0), w1 = load(row + sy + x0), w2 = load(row + 2 * sy + x0),
                    w3 = load(row + 3 * sy + x0), w4 = load(row + 4 * sy + x0),
                    w5 = load(row + 5 * sy + x0), w6 = load(row + 6 * sy + x0),
                    w7 = load(row + 7 * sy + x0);
      swap(w0, w4, 32, k32);
      swap(w1, w5, 32, k32);
      swap(w2, w6, 32, k32);
      swap(w3, w7, 32, k32);
      swap(w0, w2, 16, k16);
      swap(w1, w3, 16, k16);
      swap(w4, w6, 16, k16);
      swap(w5, w7, 16, k16);
      swap(w0, w1, 8, k8);
      swap(w2, w3, 8, k8);
      swap(w4, w5, 8, k8);
      swap(w6, w7, 8, k8);
      std::uint8_t* out = d + x0 * dx + y0;
      for (const std::uint64_t w : {w0, w1, w2, w3, w4, w5, w6, w7}) {
        std::memcpy(out, &w, 8);
        out += dx;
      }
    }
    scalar(bx, nx, y0, y0 + 8);
  }
  scalar(0, nx, by, ny);
}

// Every dim of a tiling a tile of at least 1 and an extent of at least 0 (a ValueError naming
// the dim).
inline void require_tiling(std::span<const TiledDim> dims) {
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (dims[d].tile < 1 || dims[d].extent < 0)
      raise<ValueError>(
          "element map: dim {} is tiled by {} over {} indices; a tile is at least 1, an extent "
          "at least 0",
          d, dims[d].tile, dims[d].extent);
}

}  // namespace detail

DLAVM_INLINE ElementMap ElementMap::tiled(std::vector<TiledDim> dims) {
  detail::require_tiling(dims);
  ElementMap map;
  map.offsets_.resize(dims.size());
  map.strides_.resize(dims.size());
  map.tiling_ = std::move(dims);
  for (std::size_t d = 0; d < map.tiling_.size(); ++d) map.set_dim(d, map.tiling_[d], 0);
  return map;
}

DLAVM_INLINE void ElementMap::set_dim(std::size_t d, const TiledDim& t, std::size_t kept) {
  detail::fill_tiled(offsets_[d], kept, t);
  strides_[d] = detail::tiled_stride(t);
}

DLAVM_INLINE bool ElementMap::retile(std::span<const TiledDim> dims) {
  if (tiling_.empty() || dims.size() != tiling_.size()) return false;
  detail::require_tiling(dims);
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const TiledDim& was = tiling_[d];
    const TiledDim& t = dims[d];
    // the same tiling: the same offsets, the first min(extents) kept and the rest computed
    const bool same = t.tile == was.tile && t.outer == was.outer && t.inner == was.inner;
    set_dim(d, t, same ? static_cast<std::size_t>(std::min(was.extent, t.extent)) : 0);
    tiling_[d] = t;
  }
  return true;
}

DLAVM_INLINE void ElementMap::find_strides() {
  strides_.clear();
  for (const auto& t : offsets_)
    strides_.push_back(detail::strided(t) ? (t.size() > 1 ? t[1] : 0) : -1);
}

DLAVM_INLINE std::vector<std::int64_t> ElementMap::shape() const {
  std::vector<std::int64_t> s;
  for (const auto& t : offsets_) s.push_back(static_cast<std::int64_t>(t.size()));
  return s;
}

DLAVM_INLINE void ElementMap::permute(std::span<const std::int64_t> perm) {
  std::vector<bool> seen(offsets_.size());
  bool ok = perm.size() == offsets_.size();
  for (const auto p : perm) {
    ok = ok && p >= 0 && p < static_cast<std::int64_t>(offsets_.size()) &&
         !seen[static_cast<std::size_t>(p)];
    if (ok) seen[static_cast<std::size_t>(p)] = true;
  }
  if (!ok)
    raise<ValueError>("element map of rank {}: [{}] is not a permutation of its dims",
                      offsets_.size(), fmt::join(perm, ", "));
  std::vector<std::vector<std::int64_t>> out;
  std::vector<std::int64_t> strides;
  std::vector<TiledDim> tiling;
  for (const auto p : perm) {
    const auto d = static_cast<std::size_t>(p);
    out.push_back(std::move(offsets_[d]));
    strides.push_back(strides_[d]);
    if (!tiling_.empty()) tiling.push_back(tiling_[d]);
  }
  offsets_ = std::move(out);
  strides_ = std::move(strides);
  tiling_ = std::move(tiling);
}

DLAVM_INLINE bool ElementMap::reshape(std::span<const std::int64_t> shape) {
  const auto old = this->shape();
  const auto size = [](auto&& s) {
    return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>{});
  };
  if (size(old) != size(shape))
    raise<ShapeError>("element map [{}]: cannot reshape to [{}] ({} elements, not {})",
                      fmt::join(old, ", "), fmt::join(shape, ", "), size(shape), size(old));
  std::vector<std::vector<std::int64_t>> out(shape.size());
  if (size(shape) == 0) {
    for (std::size_t k = 0; k < shape.size(); ++k)
      out[k].assign(static_cast<std::size_t>(shape[k]), 0);
    offsets_ = std::move(out);
    find_strides();
    tiling_.clear();
    return true;
  }
  // dims of extent 1 add nothing (offset 0); the others group where the products meet
  std::vector<std::size_t> from, to;
  for (std::size_t d = 0; d < old.size(); ++d)
    if (old[d] != 1) from.push_back(d);
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] != 1) to.push_back(k);
    out[k] = {0};
  }
  std::size_t i = 0, j = 0;
  while (i < from.size()) {
    // the group: from[i0, i) and to[j0, j), of equal products
    const std::size_t i0 = i, j0 = j;
    std::int64_t a = old[from[i++]], b = shape[to[j++]];
    while (a != b) {
      if (a < b)
        a *= old[from[i++]];
      else
        b *= shape[to[j++]];
    }
    // merged: offsets of the group's flat index
    std::vector<std::int64_t> merged = offsets_[from[i0]];
    for (std::size_t d = i0 + 1; d < i; ++d) {
      const auto& t = offsets_[from[d]];
      std::vector<std::int64_t> next;
      next.reserve(merged.size() * t.size());
      for (const auto m : merged)
        for (const auto x : t) next.push_back(m + x);
      merged = std::move(next);
    }
    // split: new dim k's offsets those of its index alone, checked against every element
    std::int64_t stride = a;
    for (std::size_t k = j0; k < j; ++k) {
      stride /= shape[to[k]];
      auto& t = out[to[k]];
      t.resize(static_cast<std::size_t>(shape[to[k]]));
      for (std::int64_t x = 0; x < shape[to[k]]; ++x)
        t[static_cast<std::size_t>(x)] = merged[static_cast<std::size_t>(x * stride)];
    }
    if (j - j0 > 1) {
      std::vector<std::int64_t> index(j - j0, 0);
      for (std::size_t flat = 0; flat < merged.size(); ++flat) {
        std::int64_t sum = 0;
        for (std::size_t k = 0; k < index.size(); ++k)
          sum += out[to[j0 + k]][static_cast<std::size_t>(index[k])];
        if (sum != merged[flat]) return false;
        for (std::size_t k = index.size(); k-- > 0;) {
          if (++index[k] < shape[to[j0 + k]]) break;
          index[k] = 0;
        }
      }
    }
  }
  offsets_ = std::move(out);
  find_strides();
  tiling_.clear();
  return true;
}

DLAVM_INLINE std::optional<std::vector<TiledDim>> packed_tiling(
    const Layout& l, std::span<const std::int64_t> shape) {
  const std::size_t rank = shape.size();
  std::vector<TiledDim> out(rank);
  if (l.kind == Layout::Kind::Plain) {
    detail::row_major_tiling(shape, 0, rank, 1, out);
    return out;
  }
  detail::require_layout_rank(l, rank);
  if (l.planes != 1) return std::nullopt;
  const std::int64_t r = l.rows, t = l.cols, tile = r * t;
  switch (l.kind) {
    case Layout::Kind::Activation:
    case Layout::Kind::ConvWeight: {
      // [A, B, H, W] -> [A/R, B/T, H, W, R, T]
      const std::int64_t hw = shape[2] * shape[3];
      out[0] = {shape[0], r, ne::ceil_div(shape[1], t) * hw * tile, t};
      out[1] = {shape[1], t, hw * tile, 1};
      detail::row_major_tiling(shape, 2, 4, tile, out);
      break;
    }
    case Layout::Kind::DenseWeight:
    case Layout::Kind::Matrix: {
      // [d0, ..., dk, C] -> [M/R, C/T, R, T], M = d0 x ... x dk: separable when the row tiles
      // do not straddle the leading dims
      const std::int64_t row_tile = ne::ceil_div(shape[rank - 1], t) * tile;
      if (rank > 2 && shape[rank - 2] % r != 0) return std::nullopt;
      out[rank - 2] = {shape[rank - 2], r, row_tile, t};
      detail::row_major_tiling(shape, 0, rank - 2, shape[rank - 2] / r * row_tile, out);
      out[rank - 1] = {shape[rank - 1], t, tile, 1};
      break;
    }
    case Layout::Kind::BatchedMatrix:
      if (l.groups > 1) {
        // [B..., Q, M, C] -> [prod(B) * ceil(Q/G), M/R, 1, R, T]: query q in product q / G,
        // its columns from (q % G) * C, all in the first column tile
        detail::require_lane_groups(l, shape[rank - 1]);
        const std::int64_t row_tile = tile, product = ne::ceil_div(shape[rank - 2], r) * row_tile;
        out[rank - 2] = {shape[rank - 2], r, row_tile, t};
        out[rank - 1] = {shape[rank - 1], t, tile, 1};
        out[rank - 3] = {shape[rank - 3], l.groups, product, shape[rank - 1]};
        detail::row_major_tiling(shape, 0, rank - 3,
                                 ne::ceil_div(shape[rank - 3], l.groups) * product, out);
        break;
      }
      [[fallthrough]];
    case Layout::Kind::MatmulWeight: {
      // [B..., M, C] -> [prod(B), M/R, C/T, R, T]; [B..., K, N] -> [prod(B), N/R, K/T, R, T]
      const bool weight = l.kind == Layout::Kind::MatmulWeight;
      const std::size_t row = weight ? rank - 1 : rank - 2, col = weight ? rank - 2 : rank - 1;
      const std::int64_t row_tile = ne::ceil_div(shape[col], t) * tile;
      out[row] = {shape[row], r, row_tile, t};
      out[col] = {shape[col], t, tile, 1};
      detail::row_major_tiling(shape, 0, rank - 2, ne::ceil_div(shape[row], r) * row_tile, out);
      break;
    }
    default:
      return std::nullopt;
  }
  return out;
}

DLAVM_INLINE std::optional<ElementMap> packed_offsets(const Layout& l,
                                                      std::span<const std::int64_t> shape) {
  auto tiling = packed_tiling(l, shape);
  if (!tiling) return std::nullopt;
  return ElementMap::tiled(std::move(*tiling));
}

DLAVM_INLINE void copy_elements(const std::uint8_t* src, const ElementMap& from, std::uint8_t* dst,
                                const ElementMap& to) {
  const auto same_shape = [&] {
    if (from.ndim() != to.ndim()) return false;
    for (std::size_t d = 0; d < from.ndim(); ++d)
      if (from.offsets()[d].size() != to.offsets()[d].size()) return false;
    return true;
  };
  if (!same_shape())
    raise<ShapeError>("copy_elements: the source map is [{}], the destination's [{}]",
                      fmt::join(from.shape(), ", "), fmt::join(to.shape(), ", "));
  // the dims that count (extent > 1), the largest innermost
  std::vector<std::size_t> dims;
  for (std::size_t d = 0; d < from.ndim(); ++d) {
    const auto n = from.offsets()[d].size();
    if (n == 0) return;
    if (n > 1) dims.push_back(d);
  }
  if (dims.empty()) {
    dst[0] = src[0];
    return;
  }
  // a transpose: a dim contiguous in the source and another in the destination, both strided
  // in both maps and at least a block of 8 long
  std::size_t x = dims.size(), y = dims.size();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const auto f = from.stride(dims[k]), t = to.stride(dims[k]);
    if (from.offsets()[dims[k]].size() < 8 || !f || !t) continue;
    if (*f == 1 && x == dims.size()) x = k;
    if (*t == 1 && y == dims.size()) y = k;
  }
  if (x < dims.size() && y < dims.size() && x != y) {
    const auto nx = static_cast<std::int64_t>(from.offsets()[dims[x]].size());
    const auto ny = static_cast<std::int64_t>(from.offsets()[dims[y]].size());
    const std::int64_t sy = *from.stride(dims[y]), dx = *to.stride(dims[x]);
    std::vector<std::size_t> rest;
    for (std::size_t k = 0; k < dims.size(); ++k)
      if (k != x && k != y) rest.push_back(dims[k]);
    std::vector<std::size_t> at(rest.size(), 0);
    for (;;) {
      std::int64_t f = 0, t = 0;
      for (std::size_t k = 0; k < rest.size(); ++k) {
        f += from.offsets()[rest[k]][at[k]];
        t += to.offsets()[rest[k]][at[k]];
      }
      detail::transpose_bytes(src + f, sy, dst + t, dx, nx, ny);
      std::size_t k = rest.size();
      for (; k > 0; --k) {
        if (++at[k - 1] < from.offsets()[rest[k - 1]].size()) break;
        at[k - 1] = 0;
      }
      if (k == 0) return;
    }
  }
  const auto inner = std::max_element(dims.begin(), dims.end(), [&](auto a, auto b) {
    return from.offsets()[a].size() < from.offsets()[b].size();
  });
  std::rotate(inner, inner + 1, dims.end());
  const auto& fi = from.offsets()[dims.back()];
  const auto& ti = to.offsets()[dims.back()];
  const std::size_t n = fi.size();
  const bool strided = from.stride(dims.back()) && to.stride(dims.back());
  const std::int64_t fs = n > 1 ? fi[1] : 0, ts = n > 1 ? ti[1] : 0;
  const auto row = [&](std::int64_t f, std::int64_t t) {
    const std::uint8_t* s = src + f;
    std::uint8_t* d = dst + t;
    if (strided) {
      if (fs == 1 && ts == 1) {
        std::copy_n(s, n, d);
        return;
      }
      for (std::size_t i = 0; i < n; ++i, s += fs, d += ts) *d = *s;
      return;
    }
    for (std::size_t i = 0; i < n; ++i) d[ti[i]] = s[fi[i]];
  };
  // an odometer over the outer dims
  const std::size_t outer = dims.size() - 1;
  std::vector<std::size_t> index(outer, 0);
  for (;;) {
    std::int64_t f = 0, t = 0;
    for (std::size_t k = 0; k < outer; ++k) {
      f += from.offsets()[dims[k]][index[k]];
      t += to.offsets()[dims[k]][index[k]];
    }
    row(f, t);
    std::size_t k = outer;
    for (; k > 0; --k) {
      if (++index[k - 1] < from.offsets()[dims[k - 1]].size()) break;
      index[k - 1] = 0;
    }
    if (k == 0) return;
  }
}

DLAVM_INLINE std::vector<RelayoutChain> relayout_chains(const Module& m) {
  const auto& values = m.values();
  const auto& steps = m.steps();
  std::vector<std::size_t> readers(values.size(), 0), reader(values.size(), 0);
  for (std::size_t i = 0; i < steps.size(); ++i)
    for (const auto v : steps[i].inputs) {
      ++readers[v];
      reader[v] = i;
    }
  // values a run hands out or keeps (a packed state's next value is the positions its Append
  // writes, which nothing keeps)
  std::vector<bool> kept(values.size(), false);
  for (const auto r : m.signature().results) kept[r] = true;
  for (const auto& st : m.signature().state) {
    kept[st.value] = true;
    if (st.packed)
      kept[*st.packed] = true;
    else
      kept[st.next] = true;
  }
  std::vector<RelayoutChain> chains;
  for (std::size_t u = 0; u < steps.size(); ++u) {
    const ModuleStep& unpack = steps[u];
    if (unpack.kind != ModuleStep::Kind::Unpack) continue;
    const ModuleValue& in = values[unpack.inputs[0]];
    if (!in.storage.vta || in.dtype.bytes() != 1) continue;
    RelayoutChain chain{.unpack = u, .pack = 0, .append = false, .moves = {}, .perms = {}};
    std::size_t cur = unpack.output;
    bool found = false;
    while (readers[cur] == 1 && !kept[cur] && values[cur].dtype == in.dtype) {
      const ModuleStep& next = steps[reader[cur]];
      if (next.kind == ModuleStep::Kind::Pack || next.kind == ModuleStep::Kind::Append) {
        found = next.kind == ModuleStep::Kind::Append || values[next.output].storage.vta;
        chain.pack = reader[cur];
        chain.append = next.kind == ModuleStep::Kind::Append;
        break;
      }
      if (next.kind != ModuleStep::Kind::Host || next.inputs.size() != 1) break;
      const OpRecord* op = m.ops().find(next.op);
      if (op == nullptr) break;
      const ModuleValue& v = values[cur];
      std::optional<std::vector<std::int64_t>> perm;
      if (op->permutation)
        perm = op->permutation(
            TypeCall{next.label, {v.name}, {TensorType{v.logical, v.dtype}}, next.attrs});
      if (!perm && !op->keeps_order) break;
      chain.moves.push_back(reader[cur]);
      chain.perms.push_back(std::move(perm));
      cur = next.output;
    }
    if (found) chains.push_back(std::move(chain));
  }
  return chains;
}

}  // namespace dlavm::graph
