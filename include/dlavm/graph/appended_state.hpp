// graph::AppendedState: a growing state (a KV cache) held as the DRAM bytes of the packed
// array VTA reads, so that a run appends its new positions in place rather than concatenating
// the whole state on the host and packing it again (graph::Module, Kind::Append steps).
//
// The packed array is the state with its dims permuted (`perm[i]`: the state's dim that is
// the array's dim i; a transpose between the cache and the matmul that reads it), in
// matmul_weight layout: [B..., K, N] -> [prod(B), N/R, K/T, R, T]. The growing dim must be K
// or N. When a run's positions need another tile along it, the held tiles move to their new
// places in the same buffer (once every R or T positions), and the new tiles start at zero:
// runtime::append_packed, the kernel firmware runs on the same bytes.
//
//   graph::AppendedState cache(DType::int8(), {1, 8, 0, 64}, /*axis=*/2, {0, 1, 3, 2},
//                              {graph::Layout::Kind::MatmulWeight, 16, 16});
//   cache.reserve(2048);     // the most it will hold: appends never reallocate
//   cache.append(keys);      // keys [1, 8, T, 64]: bytes() holds T positions
//   cache.commit();          // and length() is T
//   for (auto w : cache.take_written()) ...  // copy bytes()[w.offset, + w.size) to the device
//
// Errors: rows of another dtype or shape than the state's (ShapeError naming both).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dlavm::graph {

class AppendedState {
 public:
  // `shape`: the state's shape, the growing dim `axis` at its held length (which it starts
  // from); `name` for messages.
  AppendedState(DType dtype, std::vector<std::int64_t> shape, std::size_t axis,
                std::vector<std::int64_t> perm, Layout layout, std::string name = "state");

  // The positions the state holds.
  std::int64_t length() const { return held_[0]; }
  // Writes `rows` (the state's shape, any length along the growing dim) after the held
  // positions; bytes() then holds length() + that many, and commit() makes them the state.
  // Until then length() is unchanged: a run that fails after its append leaves the state as
  // it was (the next append overwrites what it wrote).
  void append(const te::NDArray& rows);
  // The same rows as their DRAM bytes (the dtype's width each, row-major) and shape: what a
  // relayout copy (graph/relayout.hpp) gives. ShapeError for bytes of another size.
  void append(std::span<const std::uint8_t> data, std::span<const std::int64_t> shape);
  void commit() { held_[0] = pending_; }
  // Room for the bytes of `length` positions, so that appends up to there never reallocate:
  // a run whose positions need another tile then moves the held tiles within the buffer
  // instead of copying them all to a new one first (graph::Executor reserves each state's
  // maximum). assign() keeps the room.
  void reserve(std::int64_t length);
  // The packed array's DRAM bytes at the pending length (the length after append).
  std::span<const std::uint8_t> bytes() const { return bytes_; }
  // The ranges of bytes() written since the last call, merged where they meet or lie at most
  // kMergeGap bytes apart (a V cache's position is a byte every 16; the bytes between are
  // unchanged); all of bytes() after assign(), or once an append moved the held tiles (its
  // positions needed another tile) or wrote more ranges than are worth listing. A copy of
  // bytes() kept elsewhere (the device's, graph::Executor) that copied every earlier call's
  // ranges matches bytes() once it copies these: a decode step's append writes a few bytes per
  // tile, not the whole state.
  static constexpr std::size_t kMergeGap = 64;
  struct ByteRange {
    std::size_t offset = 0, size = 0;
  };
  std::vector<ByteRange> take_written();
  // The state as an array, and a whole new one (its length along the growing dim, the
  // other dims the state's).
  te::NDArray logical() const;
  void assign(const te::NDArray& state);

 private:
  // Past this many ranges (a prefill's append, scattered over every tile), take_written gives
  // the whole: one copy costs less than that many small ones.
  static constexpr std::size_t kMaxWrittenRanges = 1024;

  void check_rows(DType dtype, std::span<const std::int64_t> shape, std::string_view what) const;

  DType dtype_;
  std::vector<std::int64_t> shape_;  // the growing dim's entry unused
  std::size_t axis_;
  std::string name_;
  runtime::PackedStateShape packed_;
  // {positions held, the length bytes_ is laid out for, positions written} (runtime kernel)
  std::int64_t held_[3] = {};
  std::int64_t pending_ = 0;
  std::vector<std::uint8_t> bytes_;
  bool written_all_ = true;  // nothing taken yet: all of it
  std::vector<ByteRange> written_;
};

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/appended_state-inl.hpp>
#endif
