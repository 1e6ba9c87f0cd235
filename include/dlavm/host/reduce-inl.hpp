// Definitions for host/reduce.hpp: runtime::reduce over the merged dims, integers in 64 bits
// and then wrapped to the dtype (host/common.hpp's with_integer_type).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/reduce.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace dlavm::host {

DLAVM_INLINE std::vector<bool> reduced_dims(std::span<const std::int64_t> axes, std::size_t rank,
                                            std::string_view who, std::string_view what) {
  std::vector<bool> reduced(rank, axes.empty());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto k = normalize_axis(axes[i], rank);
    if (!k)
      raise<ValueError>(
          "{}: attribute 'axes' is [{}]: axis {} is outside [-{}, {}) for {}, of {} dims", who,
          fmt::join(axes, ", "), axes[i], rank, rank, what, rank);
    if (reduced[*k])
      raise<ValueError>("{}: attribute 'axes' is [{}]: dim {} of {} is named twice", who,
                        fmt::join(axes, ", "), *k, what);
    reduced[*k] = true;
  }
  return reduced;
}

namespace detail {

// The identity of a reduction over no element for signed integers narrower than 64 bits: the
// kernel, run on int64, gives int64's extreme, not the dtype's.
inline void fill_empty_extremes(runtime::Reduce kind, te::NDArray& y) {
  const DType t = y.dtype();
  if (kind == runtime::Reduce::Maximum) std::fill(y.data().begin(), y.data().end(), t.min_value());
  if (kind == runtime::Reduce::Minimum) std::fill(y.data().begin(), y.data().end(), t.max_value());
}

}  // namespace detail

DLAVM_INLINE te::NDArray reduce(runtime::Reduce kind, const te::NDArray& x, const ReduceParams& p) {
  const std::string who = fmt::format("host::{}", reduce_op(kind).name);
  if (kind == runtime::Reduce::Mean && x.dtype().is_integral() && x.dtype().bits() > 32)
    raise<TypeError>("{}: x is {}; a mean takes integers of at most 32 bits, or float32", who,
                     x.dtype());
  const auto reduced =
      reduced_dims(p.axes, x.ndim(), who, fmt::format("x {}", detail::shape_str(x.shape())));
  const auto m = merge_reduction(std::span(x.shape()), reduced);
  if (m.shape.size() > kMaxReduceGroups)
    raise<ShapeError>(
        "{}: x {} with axes [{}] makes {} groups of dims kept and reduced in turn; at most {}", who,
        detail::shape_str(x.shape()), fmt::join(p.axes, ", "), m.shape.size(), kMaxReduceGroups);
  bool flags[kMaxReduceGroups] = {};
  std::copy(m.reduced.begin(), m.reduced.end(), flags);
  const auto rank = static_cast<std::int64_t>(m.shape.size());
  te::NDArray y(x.dtype(), reduced_shape(std::span(x.shape()), reduced, p.keepdims));
  runtime::with_kind(kind, [&](auto tag) {
    constexpr runtime::Reduce K = decltype(tag)::value;
    if (x.dtype().is_float()) {
      runtime::reduce<K>(x.fdata().data(), y.fdata().data(), m.shape.data(), flags, rank);
      return;
    }
    detail::with_integer_type(x.dtype(), [&](auto t) {
      using T = decltype(t);
      runtime::reduce<K>(detail::elements_as<T>(x), detail::elements_as<T>(y), m.shape.data(),
                         flags, rank);
    });
  });
  if (x.dtype().is_integral()) {
    std::int64_t count = 1;
    for (std::size_t k = 0; k < reduced.size(); ++k)
      if (reduced[k]) count *= x.shape()[k];
    if (count == 0 && x.dtype().is_int()) detail::fill_empty_extremes(kind, y);
    detail::wrap_elements(y);
  }
  return y;
}

DLAVM_INLINE te::NDArray arg_reduce(runtime::ArgReduce kind, const te::NDArray& x,
                                    const ArgReduceParams& p) {
  const std::string who = fmt::format("host::{}", arg_reduce_op(kind).name);
  const std::size_t axis = detail::axis_or_raise(who, "axis", p.axis, x.ndim());
  if (x.shape()[axis] == 0)
    raise<ShapeError>("{}: dim {} of x {} (the axis) has no element to pick", who, axis,
                      detail::shape_str(x.shape()));
  const auto s = split_at(std::span(x.shape()), axis);
  te::NDArray y(DType::int64(), arg_reduced_shape(std::span(x.shape()), axis, p.keepdims));
  runtime::with_kind(kind, [&](auto tag) {
    constexpr runtime::ArgReduce K = decltype(tag)::value;
    std::int64_t* out = y.data().data();
    if (x.dtype().is_float()) {
      runtime::arg_reduce<K>(x.fdata().data(), out, s.outer, s.extent, s.inner,
                             p.select_last_index);
      return;
    }
    detail::with_integer_type(x.dtype(), [&](auto t) {
      using T = decltype(t);
      runtime::arg_reduce<K>(detail::elements_as<T>(x), out, s.outer, s.extent, s.inner,
                             p.select_last_index);
    });
  });
  return y;
}

}  // namespace dlavm::host
