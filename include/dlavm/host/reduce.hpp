// Host kernels for reductions over a set of axes: reduce_sum, reduce_mean, reduce_max and
// reduce_min (ONNX's ReduceSum, ReduceMean, ReduceMax, ReduceMin). The semantics below are the
// definition the graph ops and their firmware kernel reproduce: each op is one kind of
// runtime::Reduce, computed by runtime::reduce for the host and firmware alike.
//
//   reduce_*(x, {axes = [], keepdims = true})
//     axes       dims of x (negative counts from the end), each at most once; empty: every dim
//     keepdims   the reduced dims stay, as 1s; else they are dropped (all of them: a scalar)
//   Each output reduces its elements in ascending index order (x's row-major order), starting
//   from the first of them:
//     sum        float32: x0 + x1 + ... in float; integers wrap like add (the dtype's width)
//     mean       float32: the sum divided by the count (as a float). Integers of at most 32
//                bits: the exact sum divided by the count, truncated toward zero (ONNX's
//                reference: the mean cast to the integer type); wider ones are refused, as
//                avg_pool2d refuses them
//     max, min   float32: a NaN wins; of equal elements (-0 and +0) the first
//   Over no element (a reduced dim of 0): sum 0, mean NaN (integers 0), max -inf or the
//   dtype's minimum, min +inf or the dtype's maximum (ONNX's rule).
// Neighbouring dims that are both kept or both reduced are merged first, and dims of 1
// dropped (merge_reduction): the kernel walks at most 8 groups of dims (kMaxReduceGroups; only
// a rank above 8 whose axes alternate exceeds them, and is refused naming the groups).
//
//   argmax(x, {axis = 0, keepdims = true, select_last_index = false}), argmin
//     axis       a dim of x (negative counts from the end), of at least one element
//     keepdims   the axis stays, as a 1; else it is dropped
//   -> int64: along the axis, the index of the maximum (minimum) element; of equal elements the
//   first (select_last_index: the last); float32: a NaN wins, the first NaN (the last), as
//   numpy's argmax and ONNX's reference. Each is a kind of runtime::ArgReduce
//   (runtime::arg_reduce), listed in kArgReduceOps.
//
//   auto m = host::reduce(runtime::Reduce::Mean, x, {.axes = {2, 3}});  // [N, C, H, W] -> [N, C,
//   1, 1]
//   auto i = host::arg_reduce(runtime::ArgReduce::Max, x, {.axis = -1});  // int64 [N, C, H, 1]
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string_view>
#include <vector>

namespace dlavm::host {

struct ReduceParams {
  std::vector<std::int64_t> axes{};
  bool keepdims = true;
};

struct ReduceOp {
  runtime::Reduce kind;
  std::string_view name;        // the graph op: "reduce_max"
  std::string_view enumerator;  // runtime::Reduce's, as a firmware call spells it: "Maximum"
};

inline constexpr ReduceOp kReduceOps[] = {
    {runtime::Reduce::Sum, "reduce_sum", "Sum"},
    {runtime::Reduce::Mean, "reduce_mean", "Mean"},
    {runtime::Reduce::Maximum, "reduce_max", "Maximum"},
    {runtime::Reduce::Minimum, "reduce_min", "Minimum"},
};
static_assert(std::size(kReduceOps) == runtime::kReduceCount);

constexpr const ReduceOp& reduce_op(runtime::Reduce kind) {
  return kReduceOps[static_cast<std::size_t>(kind)];
}

inline constexpr std::size_t kMaxReduceGroups = 8;

// Which of `rank` dims the axes reduce (every dim for no axes). ValueError starting with `who`,
// naming `what` (the array) with its rank, for an axis outside [-rank, rank) or a dim named
// twice.
std::vector<bool> reduced_dims(std::span<const std::int64_t> axes, std::size_t rank,
                               std::string_view who, std::string_view what);

// The result's shape: the reduced dims 1 (keepdims) or dropped.
template <class Extent>
std::vector<Extent> reduced_shape(std::span<const Extent> shape, const std::vector<bool>& reduced,
                                  bool keepdims) {
  std::vector<Extent> out;
  for (std::size_t k = 0; k < shape.size(); ++k)
    if (!reduced[k])
      out.push_back(shape[k]);
    else if (keepdims)
      out.push_back(Extent(1));
  return out;
}

// x's dims as runtime::reduce walks them: dims of the constant 1 dropped, neighbours that are
// both kept or both reduced multiplied into one; at least one dim (a kept 1 for none).
template <class Extent>
struct MergedReduction {
  std::vector<Extent> shape;
  std::vector<bool> reduced;
};
namespace detail {
inline bool is_one(std::int64_t d) { return d == 1; }
inline bool is_one(const ne::Expr& d) { return d.as_int() == 1; }
}  // namespace detail
template <class Extent>
MergedReduction<Extent> merge_reduction(std::span<const Extent> shape,
                                        const std::vector<bool>& reduced) {
  MergedReduction<Extent> m;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (detail::is_one(shape[k])) continue;
    if (!m.shape.empty() && m.reduced.back() == reduced[k]) {
      m.shape.back() = m.shape.back() * shape[k];
    } else {
      m.shape.push_back(shape[k]);
      m.reduced.push_back(reduced[k]);
    }
  }
  if (m.shape.empty()) {
    m.shape.push_back(Extent(1));
    m.reduced.push_back(false);
  }
  return m;
}

struct ArgReduceParams {
  std::int64_t axis = 0;
  bool keepdims = true;
  bool select_last_index = false;
};

struct ArgReduceOp {
  runtime::ArgReduce kind;
  std::string_view name;        // the graph op: "argmax"
  std::string_view enumerator;  // runtime::ArgReduce's: "Max"
};

inline constexpr ArgReduceOp kArgReduceOps[] = {
    {runtime::ArgReduce::Max, "argmax", "Max"},
    {runtime::ArgReduce::Min, "argmin", "Min"},
};
static_assert(std::size(kArgReduceOps) == runtime::kArgReduceCount);

constexpr const ArgReduceOp& arg_reduce_op(runtime::ArgReduce kind) {
  return kArgReduceOps[static_cast<std::size_t>(kind)];
}

// The result's shape: x's with the axis (normalized) 1 (keepdims) or dropped.
template <class Extent>
std::vector<Extent> arg_reduced_shape(std::span<const Extent> shape, std::size_t axis,
                                      bool keepdims) {
  std::vector<Extent> out;
  for (std::size_t k = 0; k < shape.size(); ++k)
    if (k != axis)
      out.push_back(shape[k]);
    else if (keepdims)
      out.push_back(Extent(1));
  return out;
}

// The index of each row's maximum (minimum) along p.axis, int64; ValueError for an axis
// outside x's dims, ShapeError for an axis of 0 elements.
te::NDArray arg_reduce(runtime::ArgReduce kind, const te::NDArray& x,
                       const ArgReduceParams& p = {});

// The reduction of `kind` over p.axes; TypeError for a mean of integers wider than 32 bits,
// ValueError for bad axes, ShapeError for more than kMaxReduceGroups groups.
te::NDArray reduce(runtime::Reduce kind, const te::NDArray& x, const ReduceParams& p = {});

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/reduce-inl.hpp>
#endif
