// A VTA result moved into another VTA operand as one copy of packed bytes, where the module
// unpacks it, only moves its elements on the host (permutations, reshapes) and packs it again:
// an LLM's scores between the Q.K^T matmul and the integer softmax, for instance, unpacked,
// transposed and packed again in every decode step, three passes over int64 elements.
//
// An ElementMap says where each element of a logical array lives in a buffer: element
// (i0, ..., ik) at offsets[0][i0] + ... + offsets[k][ik]. Packed layouts whose tiles separate
// by dim have one (packed_offsets); a permutation reorders its dims, and a reshape merges and
// splits them, checked element by element where a split might not separate. copy_elements
// then moves every element from one map's buffer to the other's.
//
//   auto from = graph::packed_offsets(scores_layout, {1, 8, 1, 2047});   // std::optional
//   from->permute({0, 2, 3, 1});                                         // [1, 1, 2047, 8]
//   auto to = graph::packed_offsets(softmax_layout, from->shape());
//   graph::copy_elements(src.data(), *from, dst.data(), *to);  // dst zeroed: the padding
//
// A packed layout's dims are tiled (TiledDim: index i at (i / tile) * outer + (i % tile) *
// inner); a map built from them (packed_tiling) follows new dims with retile, which redoes only
// the dims whose tiling changed and extends or cuts the others: a decode step's scores gain a
// key a step, their tiles move every 16.
//
// relayout_chains finds the steps of a module that one copy can replace (graph::Executor runs
// them so, except under RunOptions::keep_values, which wants every value on the host).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/layout.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dlavm::graph {

class Module;

// A dim of a packed layout: index i < extent at (i / tile) * outer + (i % tile) * inner (a
// row-major dim is a tile of one, `outer` apart).
struct TiledDim {
  std::int64_t extent = 0, tile = 1, outer = 0, inner = 0;
  friend bool operator==(const TiledDim&, const TiledDim&) = default;
};

class ElementMap {
 public:
  ElementMap() = default;
  // offsets[d]: the offset of index i along dim d (offsets[d][0] is 0 for every d).
  explicit ElementMap(std::vector<std::vector<std::int64_t>> offsets)
      : offsets_(std::move(offsets)) {
    find_strides();
  }
  // The map of tiled dims (a packed layout's: packed_tiling), which retile can follow.
  // ValueError for a dim of tile below 1 or of negative extent.
  static ElementMap tiled(std::vector<TiledDim> dims);

  std::size_t ndim() const { return offsets_.size(); }
  std::vector<std::int64_t> shape() const;
  const std::vector<std::vector<std::int64_t>>& offsets() const { return offsets_; }
  // offsets[d][i] = i * stride(d) for every i: the step along dim d, or nullopt where the
  // offsets do not step evenly (a tiled dim); 0 for a dim of extent 0 or 1.
  std::optional<std::int64_t> stride(std::size_t d) const {
    return strides_[d] < 0 ? std::nullopt : std::optional(strides_[d]);
  }

  // The map of the array transposed: result dim j is dim perm[j] (ValueError for a perm that
  // is not a permutation of the dims).
  void permute(std::span<const std::int64_t> perm);
  // The map of the array reshaped to `shape` (row-major order kept): groups of dims merged,
  // then split. False, leaving the map as it was, where a split dim's offsets do not separate
  // (an element would not be at the sum of its new indices' offsets); ShapeError for a shape
  // of another size.
  bool reshape(std::span<const std::int64_t> shape);
  // The map of tiled dims `dims` (of this map's rank), from a map of tiled dims (built from
  // them, then permuted): a dim whose tile, outer and inner are the same keeps its offsets, cut
  // or extended to its extent; the others are computed again. False, leaving the map as it
  // was, for a map not of tiled dims (built from offsets, or reshaped) or of another rank;
  // ValueError, leaving it so, for a dim of tile below 1 or of negative extent.
  bool retile(std::span<const TiledDim> dims);

 private:
  void find_strides();
  // dim d's offsets and stride for tiling t, its first `kept` offsets already t's
  void set_dim(std::size_t d, const TiledDim& t, std::size_t kept);

  std::vector<std::vector<std::int64_t>> offsets_;
  std::vector<std::int64_t> strides_;  // -1: not strided (offsets are never negative)
  std::vector<TiledDim> tiling_;       // per dim, when the offsets are a tiling's (else empty)
};

// The tiling of each dim of a logical array of `shape` in layout l packed (in elements), or
// nullopt where the layout's offsets do not separate by dim (as packed_offsets). ShapeError
// for a rank the layout does not take.
std::optional<std::vector<TiledDim>> packed_tiling(const Layout& l,
                                                   std::span<const std::int64_t> shape);

// The offsets of a logical array of `shape` in layout l packed (in elements), or nullopt where
// the layout's offsets do not separate by dim: a Matrix whose row tiles straddle its leading
// dims (rows R > 1, last row dim not a multiple of R), Channel (each element copied R times),
// byte planes, the unfolded and grouped layouts. ShapeError for a rank the layout does not
// take.
std::optional<ElementMap> packed_offsets(const Layout& l, std::span<const std::int64_t> shape);

// dst[to(i)] = src[from(i)] for every index i of the maps' common shape (ShapeError where the
// shapes differ): one byte per element. The largest dim is the inner loop, strided where both
// offsets along it are.
void copy_elements(const std::uint8_t* src, const ElementMap& from, std::uint8_t* dst,
                   const ElementMap& to);

// An Unpack step, the host steps that only move its elements (ops whose records give a
// permutation or keep the row-major order), and the Pack step after them, or the Append that
// writes them into a packed state (graph::AppendedState, a KV cache); each value between read
// by the next step alone, and none a result or a state (but for a packed state's next value,
// the positions its Append writes); one byte per element.
struct RelayoutChain {
  std::size_t unpack = 0, pack = 0;  // pack: the Pack or Append step
  bool append = false;
  std::vector<std::size_t> moves;  // step indices, in order
  // per move: its permutation, or nullopt for a reshape (to the move's output shape)
  std::vector<std::optional<std::vector<std::int64_t>>> perms;
};
std::vector<RelayoutChain> relayout_chains(const Module& m);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/relayout-inl.hpp>
#endif
