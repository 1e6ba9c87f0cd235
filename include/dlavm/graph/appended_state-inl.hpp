// Definitions for graph/appended_state.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/appended_state.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace dlavm::graph {

namespace detail {

// Steps a row-major multi-index over `shape` (an odometer); false after the last one.
inline bool next_index(std::vector<std::int64_t>& index, std::span<const std::int64_t> shape) {
  for (std::size_t k = index.size(); k-- > 0;) {
    if (++index[k] < shape[k]) return true;
    index[k] = 0;
  }
  return false;
}

inline std::int64_t element_count(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

}  // namespace detail

DLAVM_INLINE AppendedState::AppendedState(DType dtype, std::vector<std::int64_t> shape,
                                          std::size_t axis, std::vector<std::int64_t> perm,
                                          Layout layout, std::string name)
    : dtype_(dtype),
      shape_(std::move(shape)),
      axis_(axis),
      perm_(std::move(perm)),
      layout_(layout),
      name_(std::move(name)),
      width_(static_cast<std::size_t>(dtype.bytes())) {
  const std::size_t rank = shape_.size();
  bool valid = layout_.kind == Layout::Kind::MatmulWeight && layout_.planes == 1 && rank >= 2 &&
               axis_ < rank && perm_.size() == rank;
  std::vector<bool> seen(rank, false);
  for (std::size_t i = 0; valid && i < rank; ++i) {
    valid = perm_[i] >= 0 && static_cast<std::size_t>(perm_[i]) < rank && !seen[perm_[i]];
    if (valid) seen[perm_[i]] = true;
  }
  // the growing dim is the packed array's K or N, never one of its products
  valid = valid && (static_cast<std::size_t>(perm_[rank - 1]) == axis_ ||
                    static_cast<std::size_t>(perm_[rank - 2]) == axis_);
  if (!valid)
    raise<ValueError>(
        "internal: appended state '{}': dim {} of a rank-{} state permuted by [{}] into {} is not "
        "a matmul weight's K or N, please report",
        name_, axis_, rank, fmt::join(perm_, ", "), to_string(layout_));
  length_ = pending_ = written_ = shape_[axis_];
  lay_out(length_);  // from no tiles: all zero
}

DLAVM_INLINE AppendedState::Grid AppendedState::grid(std::int64_t length) const {
  const std::size_t rank = shape_.size();
  const auto dim = [&](std::size_t i) {
    const auto s = static_cast<std::size_t>(perm_[i]);
    return s == axis_ ? length : shape_[s];
  };
  Grid g;
  g.products = 1;
  for (std::size_t i = 0; i + 2 < rank; ++i) g.products *= dim(i);
  g.n_tiles = (dim(rank - 1) + layout_.rows - 1) / layout_.rows;
  g.k_tiles = (dim(rank - 2) + layout_.cols - 1) / layout_.cols;
  return g;
}

DLAVM_INLINE std::int64_t AppendedState::extent(std::int64_t length) const {
  const Grid g = grid(length);
  return static_cast<std::size_t>(perm_.back()) == axis_ ? g.n_tiles * layout_.rows
                                                         : g.k_tiles * layout_.cols;
}

DLAVM_INLINE std::size_t AppendedState::offset(const Grid& g,
                                               std::span<const std::int64_t> index) const {
  const std::size_t rank = shape_.size();
  std::int64_t product = 0;
  for (std::size_t i = 0; i + 2 < rank; ++i)
    product = product * shape_[static_cast<std::size_t>(perm_[i])] + index[perm_[i]];
  const std::int64_t k = index[perm_[rank - 2]], n = index[perm_[rank - 1]];
  const std::int64_t r = layout_.rows, t = layout_.cols;
  const std::int64_t tile = (product * g.n_tiles + n / r) * g.k_tiles + k / t;
  return static_cast<std::size_t>((tile * r + n % r) * t + k % t) * width_;
}

DLAVM_INLINE void AppendedState::lay_out(std::int64_t length) {
  const Grid from = grid(laid_), to = grid(length);
  laid_ = length;
  const std::size_t tile = static_cast<std::size_t>(layout_.rows * layout_.cols) * width_;
  const auto old_at = [&](std::int64_t p, std::int64_t n, std::int64_t k) {
    return static_cast<std::size_t>((p * from.n_tiles + n) * from.k_tiles + k) * tile;
  };
  const auto new_at = [&](std::int64_t p, std::int64_t n, std::int64_t k) {
    return static_cast<std::size_t>((p * to.n_tiles + n) * to.k_tiles + k) * tile;
  };
  const std::size_t size = static_cast<std::size_t>(to.products * to.n_tiles * to.k_tiles) * tile;
  if (from.n_tiles == to.n_tiles && from.k_tiles == to.k_tiles && bytes_.size() == size) return;
  const std::int64_t n_kept = std::min(from.n_tiles, to.n_tiles);
  const std::int64_t k_kept = std::min(from.k_tiles, to.k_tiles);
  if (to.n_tiles >= from.n_tiles && to.k_tiles >= from.k_tiles) {
    // growing: every tile moves to a place at or after its old one, so moving from the last
    // tile to the first never overwrites one still to move
    bytes_.resize(size);
    for (std::int64_t p = to.products; p-- > 0;)
      for (std::int64_t n = n_kept; n-- > 0;)
        for (std::int64_t k = k_kept; k-- > 0;)
          if (old_at(p, n, k) != new_at(p, n, k))
            std::memmove(bytes_.data() + new_at(p, n, k), bytes_.data() + old_at(p, n, k), tile);
    for (std::int64_t p = 0; p < to.products; ++p)
      for (std::int64_t n = 0; n < to.n_tiles; ++n)
        for (std::int64_t k = 0; k < to.k_tiles; ++k)
          if (n >= from.n_tiles || k >= from.k_tiles)
            std::memset(bytes_.data() + new_at(p, n, k), 0, tile);
  } else {
    // shrinking (after a run that failed): the first tile first, each to a place at or
    // before its old one
    for (std::int64_t p = 0; p < to.products; ++p)
      for (std::int64_t n = 0; n < n_kept; ++n)
        for (std::int64_t k = 0; k < k_kept; ++k)
          if (old_at(p, n, k) != new_at(p, n, k))
            std::memmove(bytes_.data() + new_at(p, n, k), bytes_.data() + old_at(p, n, k), tile);
    bytes_.resize(size);
  }
}

DLAVM_INLINE void AppendedState::clear(std::int64_t from, std::int64_t to) {
  if (from >= to) return;
  const Grid g = grid(laid_);
  std::vector<std::int64_t> shape = shape_, index(shape_.size(), 0);
  shape[axis_] = to - from;
  if (detail::element_count(shape) == 0) return;
  do {
    std::vector<std::int64_t> at = index;
    at[axis_] += from;
    std::memset(bytes_.data() + offset(g, at), 0, width_);
  } while (detail::next_index(index, shape));
}

DLAVM_INLINE void AppendedState::check_rows(const te::NDArray& rows, std::string_view what) const {
  bool same = rows.dtype() == dtype_ && rows.ndim() == shape_.size();
  for (std::size_t k = 0; same && k < shape_.size(); ++k)
    same = k == axis_ || rows.shape()[k] == shape_[k];
  if (same) return;
  std::vector<std::string> dims;
  for (std::size_t k = 0; k < shape_.size(); ++k)
    dims.push_back(k == axis_ ? std::string("*") : fmt::format("{}", shape_[k]));
  raise<ShapeError>("state '{}': {} {}[{}], the state is {}[{}] (any length along dim {})", name_,
                    what, rows.dtype(), fmt::join(rows.shape(), ", "), dtype_,
                    fmt::join(dims, ", "), axis_);
}

DLAVM_INLINE void AppendedState::append(const te::NDArray& rows) {
  check_rows(rows, "the appended rows are");
  const std::int64_t count = rows.shape()[axis_];
  pending_ = length_ + count;
  lay_out(pending_);
  // what a failed run wrote past the held positions, and this append does not overwrite
  clear(pending_, std::min(written_, extent(pending_)));
  written_ = pending_;
  if (rows.size() == 0) return;
  const Grid g = grid(pending_);
  const auto data = rows.data();
  std::vector<std::int64_t> index(shape_.size(), 0), at;
  std::size_t i = 0;
  do {
    at = index;
    at[axis_] += length_;
    auto v = static_cast<std::uint64_t>(data[i++]);
    std::uint8_t* out = bytes_.data() + offset(g, at);
    for (std::size_t b = 0; b < width_; ++b, v >>= 8) out[b] = static_cast<std::uint8_t>(v);
  } while (detail::next_index(index, rows.shape()));
}

DLAVM_INLINE te::NDArray AppendedState::logical() const {
  std::vector<std::int64_t> shape = shape_;
  shape[axis_] = length_;
  te::NDArray out(dtype_, shape);
  if (out.size() == 0) return out;
  const Grid g = grid(laid_);
  auto data = out.data();
  std::vector<std::int64_t> index(shape.size(), 0);
  std::size_t i = 0;
  do {
    const std::uint8_t* in = bytes_.data() + offset(g, index);
    std::uint64_t v = 0;
    for (std::size_t b = 0; b < width_; ++b) v |= std::uint64_t{in[b]} << (8 * b);
    data[i++] = dtype_.wrap(static_cast<std::int64_t>(v));
  } while (detail::next_index(index, shape));
  return out;
}

DLAVM_INLINE void AppendedState::assign(const te::NDArray& state) {
  check_rows(state, "the array is");
  length_ = pending_ = 0;
  laid_ = written_ = 0;
  bytes_.clear();
  lay_out(0);
  append(state);
  commit();
}

}  // namespace dlavm::graph
