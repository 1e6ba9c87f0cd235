// Host kernels that move elements without computing on them: reshape, transpose, flatten,
// concat, pad, strided_slice, take, broadcast_to and tile. The semantics below are the
// definition the graph ops and every accelerator strategy must reproduce. Every dtype is
// accepted; values are copied bit for bit.
//
//   reshape(x, {newshape})     the same elements in row-major order under a new shape. In
//                              newshape, 0 copies the dim of x at the same position and one -1
//                              takes what the element count leaves; other entries >= 1.
//   transpose(x, {perm})       y[i_perm[0], ..., i_perm[r-1]] = x[i_0, ..., i_{r-1}], i.e.
//                              y.shape[k] = x.shape[perm[k]]; an empty perm reverses the dims.
//   flatten(x, {axis = 1})     [prod(dims before axis), prod(dims from axis)]; axis in
//                              [-rank, rank] (rank gives [all, 1]).
//   concat(xs, {axis})         joins >= 1 arrays of one dtype and rank along axis; the other
//                              dims must match.
//   pad(x, {pad_before, pad_after, value = 0, mode = constant})
//                              one entry per dim, each >= 0; new positions hold, by mode:
//                              constant: value (integers: it must be an integer inside the
//                              dtype's range; float32: it is rounded to float);
//                              edge: the nearest element of x along each padded dim (x's dims
//                              >= 1); reflect: x mirrored at its first and last element, which
//                              are not repeated (x[1], x[0], x[1], ...; each pad at most the
//                              dim - 1), as numpy's and ONNX's modes of those names.
//   strided_slice(x, {begin, end, step = all 1, axes = 0, 1, ...})
//                              ONNX Slice. Entry k of the lists slices dim axes[k] (negative:
//                              from the end; each dim at most once; the other dims stay whole)
//                              of n elements: begin and end, negative ones + n, are clamped
//                              to [0, n] when step > 0, and begin to [0, n - 1], end to
//                              [-1, n - 1] when step < 0 (so huge values mean "to the end");
//                              y takes x[begin + i * step] for i in [0, ceil((end - begin) /
//                              step)), none when that is <= 0. step != 0.
//   take(x, indices, {axis = 0})
//                              ONNX Gather: y[a..., j..., b...] = x[a..., indices[j...], b...],
//                              of shape x.shape[:axis] + indices.shape + x.shape[axis+1:];
//                              indices int32 or int64 (an array, any rank), a negative index
//                              counts from the end. An index outside [-n, n) is a ValueError
//                              naming it (runtime::take, which firmware runs, clamps it to the
//                              nearest end instead: firmware has no exceptions).
//   broadcast_to(x, {shape})   ONNX Expand: x and `shape` (entries >= 0) broadcast together as
//                              numpy does (aligned at their last dims, each pair equal or one
//                              of them 1); y has that broadcast shape, so a 1 in `shape` keeps
//                              x's dim and y may have more dims than `shape`.
//   tile(x, {repeats})         ONNX Tile: one repeat >= 0 per dim of x; y.shape[k] =
//                              x.shape[k] * repeats[k] and y[i...] = x[i_k mod x.shape[k]...].
//
//   auto y = host::reshape(x, {.newshape = {0, -1}});   // [2, 3, 4] -> [2, 12]
//   auto s = host::strided_slice(x, {.begin = {-1}, .end = {INT64_MIN}, .step = {-1}});
//                                                      // x reversed along dim 0
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace dlavm::host {

struct ReshapeParams {
  std::vector<std::int64_t> newshape;
};
struct TransposeParams {
  std::vector<std::int64_t> perm;  // empty: reverse
};
struct FlattenParams {
  std::int64_t axis = 1;
};
struct ConcatParams {
  std::int64_t axis = 0;
};
enum class PadMode : std::uint8_t { Constant, Edge, Reflect };
struct PadParams {
  std::vector<std::int64_t> pad_before;
  std::vector<std::int64_t> pad_after;
  double value = 0;
  PadMode mode = PadMode::Constant;
};
struct StridedSliceParams {
  std::vector<std::int64_t> begin;
  std::vector<std::int64_t> end;
  std::vector<std::int64_t> step{};  // empty: 1 for each entry
  std::vector<std::int64_t> axes{};  // empty: 0, 1, ..., begin.size() - 1
};
struct TakeParams {
  std::int64_t axis = 0;
};
struct BroadcastToParams {
  std::vector<std::int64_t> shape;
};
struct TileParams {
  std::vector<std::int64_t> repeats;
};

// One dim of a slice, its bounds resolved: y's index i reads x's start + i * step, for
// `extent` indices (step is 1 when extent <= 1, and start 0 when extent is 0).
struct SliceAxis {
  std::int64_t start = 0, step = 1, extent = 0;
};
// The lists checked against x's `rank` dims (ValueError naming `who`, the list and the
// numbers): begin and end of one length, step empty or of that length with no 0, axes empty
// or of that length, each in [-rank, rank) and naming a dim once. For each dim of x, the entry
// of the lists that slices it (nullopt: the dim stays whole).
std::vector<std::optional<std::size_t>> slice_entries(const StridedSliceParams& p, std::size_t rank,
                                                      std::string_view who);
// The step of entry k (1 when step is empty).
std::int64_t slice_step(const StridedSliceParams& p, std::size_t k);
// ONNX Slice's bounds along a dim of `dim` elements (the header comment).
SliceAxis slice_axis(std::int64_t begin, std::int64_t end, std::int64_t step, std::int64_t dim);
// TypeError naming `who` and the indices (`what`) unless they are int32 or int64.
void check_take_indices(DType indices, std::string_view who, std::string_view what);
// ValueError naming `who` unless every entry of broadcast_to's shape is >= 0.
void check_broadcast_shape(std::span<const std::int64_t> shape, std::string_view who);
// ValueError naming `who` unless tile has one repeat >= 0 per dim of x's `rank`.
void check_repeats(std::span<const std::int64_t> repeats, std::size_t rank, std::string_view who);

// The entries of newshape checked for an input of `rank` dims: at most one -1, a 0 only where
// x has a dim, nothing below -1 (ValueError naming `who`).
void check_newshape(std::span<const std::int64_t> newshape, std::size_t rank, std::string_view who);
// The shape reshape produces for an input of shape `in` (ShapeError/ValueError naming `who`).
Shape reshape_shape(std::span<const std::int64_t> in, std::span<const std::int64_t> newshape,
                    std::string_view who);
// perm checked against `rank` (a permutation of 0..rank-1), the empty perm expanded.
std::vector<std::size_t> transpose_perm(std::span<const std::int64_t> perm, std::size_t rank,
                                        std::string_view who);
// flatten's axis in [-rank, rank] as an index in [0, rank] (ValueError naming `who`).
std::size_t flatten_axis(std::int64_t axis, std::size_t rank, std::string_view who);
// The pad lists checked against `rank` (ValueError naming `who`).
void validate(const PadParams& p, std::size_t rank, std::string_view who);
// The pads checked against x's dims for the edge and reflect modes (ShapeError naming `who`,
// the dim and the pad); dims that are not constants (nullopt) are checked when run.
void check_pad_extent(const PadParams& p, std::span<const std::optional<std::int64_t>> dims,
                      std::string_view who);
// ValueError unless the pad value is a value of `dtype` (an integer in range for integers).
void check_pad_value(double value, DType dtype, std::string_view who);

te::NDArray reshape(const te::NDArray& x, const ReshapeParams& p);
te::NDArray transpose(const te::NDArray& x, const TransposeParams& p = {});
te::NDArray flatten(const te::NDArray& x, const FlattenParams& p = {});
te::NDArray concat(std::span<const te::NDArray* const> xs, const ConcatParams& p);
te::NDArray pad(const te::NDArray& x, const PadParams& p);
te::NDArray strided_slice(const te::NDArray& x, const StridedSliceParams& p);
te::NDArray take(const te::NDArray& x, const te::NDArray& indices, const TakeParams& p = {});
te::NDArray broadcast_to(const te::NDArray& x, const BroadcastToParams& p);
te::NDArray tile(const te::NDArray& x, const TileParams& p);

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/transform-inl.hpp>
#endif
