// Host kernels that move elements without computing on them: reshape, transpose, flatten,
// concat and pad. The semantics below are the definition the graph ops and every accelerator
// strategy must reproduce. Every dtype is accepted; values are copied bit for bit.
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
//
//   auto y = host::reshape(x, {.newshape = {0, -1}});   // [2, 3, 4] -> [2, 12]
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

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/transform-inl.hpp>
#endif
