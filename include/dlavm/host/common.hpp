// What the host kernels share: the element-type rule of product-sums, numpy broadcasting,
// axis normalization and the checks every kernel makes on its arguments. The graph layer's
// type rules call the same functions, so the host and the graph never disagree on a rule.
//
//   host::accumulate_dtype(DType::int8(), DType::int8())       == DType::int32()
//   host::broadcast_shapes({4, 1, 3}, {5, 1})                   == Shape{4, 5, 3}
//   host::normalize_axis(-1, 4)                                 == 3
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/te/ndarray.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::host {

using Shape = std::vector<std::int64_t>;

// The element type of a sum of products (dense, matmul, conv2d) of a and b:
//   int8 x int8 -> int32, int32 x int32 -> int32, float32 x float32 -> float32,
// nullopt for any other pair (mixed types need a cast first).
std::optional<DType> accumulate_dtype(DType a, DType b);
// accumulate_dtype, or TypeError naming `who` and the operands `what_a`, `what_b`.
DType product_dtype_or_raise(std::string_view who, std::string_view what_a, DType a,
                             std::string_view what_b, DType b);

namespace detail {
inline ne::Expr floor_div(const ne::Expr& a, std::int64_t b) { return ne::floordiv(a, b); }
constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b);
}  // namespace detail

// The output extent of a sliding window (convolution, pooling) over `extent` elements padded
// by `pads` in all: floor((extent + pads - window) / stride) + 1. The one definition, for the
// host kernels (int64) and for type rules and strategies (ne::Expr, where dims are symbolic).
template <class Extent>
Extent window_output(const Extent& extent, std::int64_t pads, std::int64_t window,
                     std::int64_t stride) {
  return detail::floor_div(extent + pads - window, stride) + 1;
}

// axis in [-rank, rank) (negative counts from the end) as an index in [0, rank); nullopt
// when outside.
std::optional<std::size_t> normalize_axis(std::int64_t axis, std::size_t rank);

// The numpy broadcast of two shapes: aligned at their last dims, each pair equal or one of
// them 1; nullopt when a pair is neither.
std::optional<Shape> broadcast_shapes(std::span<const std::int64_t> a,
                                      std::span<const std::int64_t> b);

// Product of the dims (1 for a scalar).
std::int64_t element_count(std::span<const std::int64_t> shape);

// An array viewed as [outer, extent, inner] around dim `axis`: the products of the dims before
// and after it, the view the runtime kernels take (runtime/kernels.hpp). The one split the host
// kernels (int64 dims) and the firmware calls (ne::Expr dims, graph::FirmwareKernel) share.
template <class Extent>
struct AxisSplit {
  Extent outer{1}, extent{1}, inner{1};
};
namespace detail {
template <class Extent>
AxisSplit<Extent> split_dims(std::span<const Extent> shape, std::size_t axis) {
  AxisSplit<Extent> s;
  for (std::size_t k = 0; k < axis; ++k) s.outer = s.outer * shape[k];
  s.extent = shape[axis];
  for (std::size_t k = axis + 1; k < shape.size(); ++k) s.inner = s.inner * shape[k];
  return s;
}
}  // namespace detail
inline AxisSplit<std::int64_t> split_at(std::span<const std::int64_t> shape, std::size_t axis) {
  return detail::split_dims(shape, axis);
}
inline AxisSplit<ne::Expr> split_at(std::span<const ne::Expr> shape, std::size_t axis) {
  return detail::split_dims(shape, axis);
}

namespace detail {

// "[1, 3, 224, 224]"
std::string shape_str(std::span<const std::int64_t> shape);

// Checks a kernel's arguments; `who` names the kernel ("host::dense"), `what` the argument.
void require_rank(std::string_view who, std::string_view what, const te::NDArray& a,
                  std::size_t rank);
void require_min_rank(std::string_view who, std::string_view what, const te::NDArray& a,
                      std::size_t rank);
void require_float32(std::string_view who, std::string_view what, const te::NDArray& a);
void require_integer(std::string_view who, std::string_view what, const te::NDArray& a);
void require_same_dtype(std::string_view who, const te::NDArray& a, const te::NDArray& b);
// The axis attribute `name` normalized for an array of `rank` dims, or ValueError.
std::size_t axis_or_raise(std::string_view who, std::string_view name, std::int64_t axis,
                          std::size_t rank);
// The elements of an integer array as uint32 (modulo 2^32), and their int32 reinterpretation
// stored into `out`: wrapping uint32 arithmetic gives int32 wrap-around without signed overflow.
std::vector<std::uint32_t> to_u32(const te::NDArray& a);
void store_i32(std::span<const std::uint32_t> values, te::NDArray& out);
// For each index of the batch shape `out` (row-major), the offset of the `block`-element block
// an operand with batch dims `in` reads under numpy broadcasting.
std::vector<std::int64_t> broadcast_offsets(std::span<const std::int64_t> out,
                                            std::span<const std::int64_t> in, std::int64_t block);
// The runtime kernels (runtime/kernels.hpp) on an integer array's int64 elements: with T
// std::int64_t for a signed dtype and std::uint64_t (the same bits) for an unsigned one, a
// kernel's wrapping arithmetic, then wrap_elements, gives what it gives on the dtype's own C++
// type. with_integer_type calls f(T{}).
template <class F>
void with_integer_type(DType t, F&& f) {
  if (t.is_uint())
    f(std::uint64_t{});
  else
    f(std::int64_t{});
}
template <class T>
const T* elements_as(const te::NDArray& a) {
  return reinterpret_cast<const T*>(a.data().data());
}
template <class T>
T* elements_as(te::NDArray& a) {
  return reinterpret_cast<T*>(a.data().data());
}
// For N operands of `shapes` broadcast (numpy) to `out`, the shape of the result: calls
// f(o, at, step, n) for each row of the result, o the row's first element, n its length,
// at[j] the offset of operand j's element for the row's first and step[j] 1 or 0 (the
// operand's elements run along the row, or one element is stretched over it). A row is as
// long as it can be: trailing dims where every operand runs (or every one is stretched) the
// same way are one row, so same-shape operands are a single row and a per-channel operand
// [C, 1, 1] stretches over rows of H * W.
template <std::size_t N, class F>
void for_each_broadcast_row(std::span<const std::int64_t> out,
                            const std::array<std::span<const std::int64_t>, N>& shapes, F&& f) {
  // the dims of out (1s dropped) and of each operand aligned to them, adjacent dims merged
  // where every operand has both full or both stretched
  std::vector<std::int64_t> merged;
  std::array<std::vector<std::int64_t>, N> merged_in;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k] == 1) continue;
    std::array<std::int64_t, N> in{};
    for (std::size_t j = 0; j < N; ++j) {
      const auto s = shapes[j];
      const std::size_t lead = out.size() - s.size();
      in[j] = k < lead ? 1 : s[k - lead];
    }
    bool joins = !merged.empty();
    for (std::size_t j = 0; j < N && joins; ++j) joins = (in[j] == 1) == (merged_in[j].back() == 1);
    if (joins) {
      merged.back() *= out[k];
      for (std::size_t j = 0; j < N; ++j) merged_in[j].back() *= in[j];
    } else {
      merged.push_back(out[k]);
      for (std::size_t j = 0; j < N; ++j) merged_in[j].push_back(in[j]);
    }
  }
  std::array<std::int64_t, N> at{}, step{};
  if (merged.empty()) {
    f(std::int64_t{0}, at, step, std::int64_t{1});
    return;
  }
  const std::int64_t last = merged.back();
  const std::span<const std::int64_t> outer(merged.data(), merged.size() - 1);
  // operands as [outer..., last]: the offset of each row, and the step within a row
  std::array<std::vector<std::int64_t>, N> rows;
  for (std::size_t j = 0; j < N; ++j) {
    const std::span<const std::int64_t> s = merged_in[j];
    rows[j] = broadcast_offsets(outer, s.first(s.size() - 1), s.back());
    step[j] = s.back() != 1 ? 1 : 0;
  }
  for (std::size_t r = 0; r < rows[0].size(); ++r) {
    for (std::size_t j = 0; j < N; ++j) at[j] = rows[j][r];
    f(static_cast<std::int64_t>(r) * last, at, step, last);
  }
}
// Every element of an integer array wrapped to its dtype (DType::wrap).
void wrap_elements(te::NDArray& a);
// DType::wrap on an int64 computed with wrapping uint64 arithmetic.
inline std::int64_t wrap_u64(DType t, std::uint64_t v) {
  return t.wrap(static_cast<std::int64_t>(v));
}
// floor(a / b) and ceil(a / b) for b > 0.
constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

}  // namespace detail
}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/common-inl.hpp>
#endif
