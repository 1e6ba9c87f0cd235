// Definitions for host/transform.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/transform.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace dlavm::host {

namespace detail {

// Copies `count` elements from one array to another at element offsets (either storage).
inline void copy_elements(const te::NDArray& src, std::int64_t from, te::NDArray& dst,
                          std::int64_t to, std::int64_t count) {
  if (src.dtype().is_float()) {
    const auto s = src.fdata().subspan(static_cast<std::size_t>(from));
    std::copy_n(s.begin(), count, dst.fdata().begin() + to);
  } else {
    const auto s = src.data().subspan(static_cast<std::size_t>(from));
    std::copy_n(s.begin(), count, dst.data().begin() + to);
  }
}

// An array of the same dtype and elements under another shape.
inline te::NDArray with_shape(const te::NDArray& x, Shape shape) {
  te::NDArray y(x.dtype(), std::move(shape));
  copy_elements(x, 0, y, 0, static_cast<std::int64_t>(x.size()));
  return y;
}

template <class T>
void transpose_loops(const T* x, T* y, std::span<const std::int64_t> in_shape,
                     std::span<const std::size_t> perm) {
  const std::size_t rank = in_shape.size();
  std::vector<std::int64_t> in_stride(rank, 1);
  for (std::size_t k = rank; k-- > 1;) in_stride[k - 1] = in_stride[k] * in_shape[k];
  // y's dims in order with the input stride of each, dims of extent 1 dropped and neighbours
  // that stay neighbours in x merged: [1, 8, 1, 2048] by (0, 2, 3, 1) is a 2048 x 8 transpose
  std::vector<std::int64_t> shape, stride;
  std::int64_t total = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t n = in_shape[perm[k]], s = in_stride[perm[k]];
    total *= n;
    if (n == 1) continue;
    if (!shape.empty() && stride.back() == s * n) {
      shape.back() *= n;
      stride.back() = s;
    } else {
      shape.push_back(n);
      stride.push_back(s);
    }
  }
  if (total == 0) return;
  if (shape.empty()) {
    y[0] = x[0];
    return;
  }
  // y's rows of the last dim, each a strided run of x; the input offset of a row moves by the
  // other dims' strides
  const std::size_t outer = shape.size() - 1;
  const std::int64_t n = shape.back(), step = stride.back();
  std::vector<std::int64_t> index(outer, 0);
  std::int64_t offset = 0;
  for (T* row = y; row != y + total; row += n) {
    const T* from = x + offset;
    if (step == 1)
      std::copy_n(from, n, row);
    else
      for (std::int64_t j = 0; j < n; ++j) row[j] = from[j * step];
    for (std::size_t d = outer; d-- > 0;) {
      offset += stride[d];
      if (++index[d] < shape[d]) break;
      offset -= stride[d] * shape[d];
      index[d] = 0;
    }
  }
}

// y [out] from x by runtime::strided_slice (`axes`: start and step per dim) or, without them,
// runtime::tile; x's shape padded with leading 1s to y's rank.
inline te::NDArray copy_dims(const te::NDArray& x, const Shape& out, const SliceAxis* axes) {
  te::NDArray y(x.dtype(), out);
  Shape shape(out.size() - x.ndim(), 1);
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  Shape start, step;
  if (axes != nullptr)
    for (std::size_t k = 0; k < out.size(); ++k) {
      start.push_back(axes[k].start);
      step.push_back(axes[k].step);
    }
  const auto rank = static_cast<std::int64_t>(out.size());
  const auto run = [&](const auto* from, auto* to) {
    if (axes != nullptr)
      runtime::strided_slice(from, to, shape.data(), start.data(), step.data(), out.data(), rank);
    else
      runtime::tile(from, to, shape.data(), out.data(), rank);
  };
  if (x.dtype().is_float())
    run(x.fdata().data(), y.fdata().data());
  else
    run(x.data().data(), y.data().data());
  return y;
}

}  // namespace detail

DLAVM_INLINE void check_newshape(std::span<const std::int64_t> newshape, std::size_t rank,
                                 std::string_view who) {
  bool infer = false;
  for (std::size_t k = 0; k < newshape.size(); ++k) {
    const std::int64_t d = newshape[k];
    if (d == -1 && infer)
      raise<ValueError>("{}: attribute 'newshape' [{}] has more than one -1", who,
                        fmt::join(newshape, ", "));
    infer = infer || d == -1;
    if (d == 0 && k >= rank)
      raise<ValueError>("{}: attribute 'newshape' [{}] copies dim {} (0) but x has {} dims", who,
                        fmt::join(newshape, ", "), k, rank);
    if (d < -1)
      raise<ValueError>("{}: attribute 'newshape' [{}] has {}; entries are >= 1, 0 or -1", who,
                        fmt::join(newshape, ", "), d);
  }
}

DLAVM_INLINE Shape reshape_shape(std::span<const std::int64_t> in,
                                 std::span<const std::int64_t> newshape, std::string_view who) {
  check_newshape(newshape, in.size(), who);
  Shape out(newshape.size());
  std::optional<std::size_t> infer;
  std::int64_t known = 1;
  for (std::size_t k = 0; k < newshape.size(); ++k) {
    if (newshape[k] == -1) {
      infer = k;
      continue;
    }
    out[k] = newshape[k] == 0 ? in[k] : newshape[k];
    known *= out[k];
  }
  const std::int64_t total = element_count(in);
  if (infer) {
    if (known == 0 || total % known != 0)
      raise<ShapeError>("{}: cannot reshape {} ({} elements) to [{}]: {} is not a multiple of {}",
                        who, detail::shape_str(in), total, fmt::join(newshape, ", "), total, known);
    out[*infer] = total / known;
  } else if (known != total) {
    raise<ShapeError>("{}: cannot reshape {} ({} elements) to {} ({} elements)", who,
                      detail::shape_str(in), total, detail::shape_str(out), known);
  }
  return out;
}

DLAVM_INLINE std::vector<std::size_t> transpose_perm(std::span<const std::int64_t> perm,
                                                     std::size_t rank, std::string_view who) {
  std::vector<std::size_t> out(rank);
  if (perm.empty()) {
    for (std::size_t k = 0; k < rank; ++k) out[k] = rank - 1 - k;
    return out;
  }
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (std::size_t k = 0; ok && k < rank; ++k) {
    const auto axis = normalize_axis(perm[k], rank);
    ok = axis && !seen[*axis];
    if (ok) {
      seen[*axis] = true;
      out[k] = *axis;
    }
  }
  if (!ok)
    raise<ValueError>("{}: attribute 'perm' [{}] is not a permutation of the {} dims", who,
                      fmt::join(perm, ", "), rank);
  return out;
}

DLAVM_INLINE void validate(const PadParams& p, std::size_t rank, std::string_view who) {
  if (p.pad_before.size() != rank || p.pad_after.size() != rank)
    raise<ValueError>(
        "{}: attributes 'pad_before' [{}] and 'pad_after' [{}] need one entry per dim ({})", who,
        fmt::join(p.pad_before, ", "), fmt::join(p.pad_after, ", "), rank);
  for (std::size_t k = 0; k < rank; ++k)
    if (p.pad_before[k] < 0 || p.pad_after[k] < 0)
      raise<ValueError>("{}: pads must be >= 0, got pad_before [{}], pad_after [{}]", who,
                        fmt::join(p.pad_before, ", "), fmt::join(p.pad_after, ", "));
}

DLAVM_INLINE void check_pad_extent(const PadParams& p,
                                   std::span<const std::optional<std::int64_t>> dims,
                                   std::string_view who) {
  if (p.mode == PadMode::Constant) return;
  for (std::size_t k = 0; k < dims.size() && k < p.pad_before.size(); ++k) {
    if (!dims[k]) continue;
    const std::int64_t most = p.mode == PadMode::Reflect ? *dims[k] - 1 : *dims[k] > 0 ? -1 : 0;
    if (p.mode == PadMode::Edge && *dims[k] < 1 && (p.pad_before[k] > 0 || p.pad_after[k] > 0))
      raise<ShapeError>("{}: edge padding of dim {}, which is empty", who, k);
    if (p.mode == PadMode::Reflect && (p.pad_before[k] > most || p.pad_after[k] > most))
      raise<ShapeError>(
          "{}: reflect padding of dim {} ({} elements) by {} and {}: each pad is at "
          "most the dim - 1",
          who, k, *dims[k], p.pad_before[k], p.pad_after[k]);
  }
}

DLAVM_INLINE std::size_t flatten_axis(std::int64_t axis, std::size_t rank, std::string_view who) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis > r)
    raise<ValueError>("{}: attribute 'axis' is {}, outside [{}, {}] for {} dims", who, axis, -r, r,
                      r);
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

DLAVM_INLINE void check_pad_value(double value, DType dtype, std::string_view who) {
  if (dtype.is_integral() &&
      (std::floor(value) != value || value < static_cast<double>(dtype.min_value()) ||
       value > static_cast<double>(dtype.max_value())))
    raise<ValueError>("{}: attribute 'value' {} is not a {} value", who, value, dtype);
}

DLAVM_INLINE te::NDArray reshape(const te::NDArray& x, const ReshapeParams& p) {
  return detail::with_shape(x, reshape_shape(x.shape(), p.newshape, "host::reshape"));
}

DLAVM_INLINE te::NDArray transpose(const te::NDArray& x, const TransposeParams& p) {
  const auto perm = transpose_perm(p.perm, x.ndim(), "host::transpose");
  Shape out_shape(x.ndim());
  for (std::size_t k = 0; k < x.ndim(); ++k) out_shape[k] = x.shape()[perm[k]];
  te::NDArray y(x.dtype(), out_shape);
  if (x.dtype().is_float())
    detail::transpose_loops(x.fdata().data(), y.fdata().data(), x.shape(), perm);
  else
    detail::transpose_loops(x.data().data(), y.data().data(), x.shape(), perm);
  return y;
}

DLAVM_INLINE te::NDArray flatten(const te::NDArray& x, const FlattenParams& p) {
  const std::size_t axis = flatten_axis(p.axis, x.ndim(), "host::flatten");
  const std::span<const std::int64_t> s = x.shape();
  return detail::with_shape(x, {element_count(s.first(axis)), element_count(s.subspan(axis))});
}

DLAVM_INLINE te::NDArray concat(std::span<const te::NDArray* const> xs, const ConcatParams& p) {
  constexpr std::string_view who = "host::concat";
  if (xs.empty()) raise<ValueError>("{}: needs at least one input", who);
  const te::NDArray& first = *xs[0];
  const std::size_t axis = detail::axis_or_raise(who, "axis", p.axis, first.ndim());
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const te::NDArray& x = *xs[i];
    detail::require_same_dtype(who, first, x);
    bool match = x.ndim() == first.ndim();
    for (std::size_t k = 0; match && k < x.ndim(); ++k)
      match = k == axis || x.shape()[k] == first.shape()[k];
    if (!match)
      raise<ShapeError>("{}: input {} has shape {}, input 0 has {}; only dim {} may differ", who, i,
                        detail::shape_str(x.shape()), detail::shape_str(first.shape()), axis);
    out_shape[axis] += x.shape()[axis];
  }
  te::NDArray y(first.dtype(), out_shape);
  const auto split = split_at(out_shape, axis);
  std::int64_t at = 0;  // offset within one outer slice of y
  for (const te::NDArray* x : xs) {
    const std::int64_t chunk = x->shape()[axis] * split.inner;
    for (std::int64_t o = 0; o < split.outer; ++o)
      detail::copy_elements(*x, o * chunk, y, o * split.extent * split.inner + at, chunk);
    at += chunk;
  }
  return y;
}

DLAVM_INLINE te::NDArray pad(const te::NDArray& x, const PadParams& p) {
  constexpr std::string_view who = "host::pad";
  validate(p, x.ndim(), who);
  const DType t = x.dtype();
  check_pad_value(p.value, t, who);
  Shape out_shape(x.ndim());
  for (std::size_t k = 0; k < x.ndim(); ++k)
    out_shape[k] = x.shape()[k] + p.pad_before[k] + p.pad_after[k];
  te::NDArray y(t, out_shape);
  if (p.mode != PadMode::Constant) {
    std::vector<std::optional<std::int64_t>> dims(x.shape().begin(), x.shape().end());
    check_pad_extent(p, dims, who);
    // each element of y from the element of x its index maps to, dim by dim
    const std::size_t rank = x.ndim();
    std::vector<std::int64_t> index(rank, 0), from(rank, 0);
    for (std::size_t i = 0; i < y.size(); ++i) {
      for (std::size_t k = 0; k < rank; ++k) {
        const std::int64_t n = x.shape()[k];
        std::int64_t v = index[k] - p.pad_before[k];
        if (p.mode == PadMode::Edge)
          v = std::clamp<std::int64_t>(v, 0, n - 1);
        else if (v < 0)
          v = -v;
        else if (v >= n)
          v = 2 * (n - 1) - v;
        from[k] = v;
      }
      const std::size_t src = x.offset(from, who);
      if (t.is_float())
        y.fdata()[i] = x.fdata()[src];
      else
        y.data()[i] = x.data()[src];
      for (std::size_t d = rank; d-- > 0;) {
        if (++index[d] < out_shape[d]) break;
        index[d] = 0;
      }
    }
    return y;
  }
  if (t.is_float())
    std::fill(y.fdata().begin(), y.fdata().end(), static_cast<float>(p.value));
  else
    std::fill(y.data().begin(), y.data().end(), static_cast<std::int64_t>(p.value));
  if (x.size() == 0) return y;
  // copy x row by row (its last dim) into the interior of y
  const std::size_t rank = x.ndim();
  if (rank == 0) {
    detail::copy_elements(x, 0, y, 0, 1);
    return y;
  }
  std::vector<std::int64_t> y_stride(rank, 1);
  for (std::size_t k = rank; k-- > 1;) y_stride[k - 1] = y_stride[k] * out_shape[k];
  const std::int64_t row = x.shape()[rank - 1];
  std::vector<std::int64_t> index(rank, 0);  // index of the current row of x (last dim 0)
  for (std::int64_t from = 0; from < static_cast<std::int64_t>(x.size()); from += row) {
    std::int64_t to = 0;
    for (std::size_t k = 0; k < rank; ++k) to += (index[k] + p.pad_before[k]) * y_stride[k];
    detail::copy_elements(x, from, y, to, row);
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < x.shape()[d]) break;
      index[d] = 0;
    }
  }
  return y;
}

DLAVM_INLINE std::vector<std::optional<std::size_t>> slice_entries(const StridedSliceParams& p,
                                                                   std::size_t rank,
                                                                   std::string_view who) {
  const std::size_t n = p.begin.size();
  if (p.end.size() != n || (!p.step.empty() && p.step.size() != n) ||
      (!p.axes.empty() && p.axes.size() != n))
    raise<ValueError>(
        "{}: attributes 'begin' [{}], 'end' [{}], 'step' [{}] and 'axes' [{}] need one entry "
        "per sliced dim ('step' and 'axes' may be empty)",
        who, fmt::join(p.begin, ", "), fmt::join(p.end, ", "), fmt::join(p.step, ", "),
        fmt::join(p.axes, ", "));
  std::vector<std::optional<std::size_t>> entry(rank);
  for (std::size_t k = 0; k < n; ++k) {
    if (slice_step(p, k) == 0)
      raise<ValueError>("{}: attribute 'step' [{}] has 0 at entry {}", who, fmt::join(p.step, ", "),
                        k);
    const std::int64_t a = p.axes.empty() ? static_cast<std::int64_t>(k) : p.axes[k];
    const auto axis = normalize_axis(a, rank);
    if (!axis)
      raise<ValueError>("{}: axis {} (entry {}) is outside [{}, {}) for x's {} dims", who, a, k,
                        -static_cast<std::int64_t>(rank), rank, rank);
    if (entry[*axis])
      raise<ValueError>("{}: attribute 'axes' [{}] slices dim {} twice", who,
                        fmt::join(p.axes, ", "), *axis);
    entry[*axis] = k;
  }
  return entry;
}

DLAVM_INLINE std::int64_t slice_step(const StridedSliceParams& p, std::size_t k) {
  return p.step.empty() ? 1 : p.step[k];
}

DLAVM_INLINE SliceAxis slice_axis(std::int64_t begin, std::int64_t end, std::int64_t step,
                                  std::int64_t dim) {
  // beyond -(dim + 1) and dim + 1, a bound clamps as those do; the sums below cannot overflow
  const auto from_end = [&](std::int64_t v) {
    v = std::clamp(v, -dim - 1, dim + 1);
    return v < 0 ? v + dim : v;
  };
  std::int64_t b = from_end(begin), e = from_end(end);
  SliceAxis s;
  if (step > 0) {
    b = std::clamp<std::int64_t>(b, 0, dim);
    e = std::clamp<std::int64_t>(e, 0, dim);
    const std::int64_t m = std::min(step, dim + 1);
    s.extent = e > b ? detail::ceil_div(e - b, m) : 0;
  } else if (dim > 0) {
    b = std::clamp<std::int64_t>(b, 0, dim - 1);
    e = std::clamp<std::int64_t>(e, -1, dim - 1);
    const std::int64_t m = step < -dim - 1 ? dim + 1 : -step;
    s.extent = b > e ? detail::ceil_div(b - e, m) : 0;
  }
  s.start = s.extent > 0 ? b : 0;
  s.step = s.extent > 1 ? step : 1;
  return s;
}

DLAVM_INLINE void check_take_indices(DType indices, std::string_view who, std::string_view what) {
  if (indices != DType::int32() && indices != DType::int64())
    raise<TypeError>("{}: {} is {}; indices are int32 or int64 (cast them first)", who, what,
                     indices);
}

DLAVM_INLINE void check_broadcast_shape(std::span<const std::int64_t> shape, std::string_view who) {
  for (const auto d : shape)
    if (d < 0)
      raise<ValueError>("{}: attribute 'shape' [{}] has {}; dims are >= 0", who,
                        fmt::join(shape, ", "), d);
}

DLAVM_INLINE void check_repeats(std::span<const std::int64_t> repeats, std::size_t rank,
                                std::string_view who) {
  if (repeats.size() != rank)
    raise<ValueError>("{}: attribute 'repeats' [{}] has {} entries; x has {} dims", who,
                      fmt::join(repeats, ", "), repeats.size(), rank);
  for (const auto r : repeats)
    if (r < 0)
      raise<ValueError>("{}: attribute 'repeats' [{}] has {}; repeats are >= 0", who,
                        fmt::join(repeats, ", "), r);
}

DLAVM_INLINE te::NDArray strided_slice(const te::NDArray& x, const StridedSliceParams& p) {
  const auto entry = slice_entries(p, x.ndim(), "host::strided_slice");
  std::vector<SliceAxis> axes(x.ndim());
  Shape out(x.ndim());
  for (std::size_t k = 0; k < x.ndim(); ++k) {
    const std::int64_t n = x.shape()[k];
    axes[k] = entry[k]
                  ? slice_axis(p.begin[*entry[k]], p.end[*entry[k]], slice_step(p, *entry[k]), n)
                  : SliceAxis{0, 1, n};
    out[k] = axes[k].extent;
  }
  return detail::copy_dims(x, out, axes.data());
}

DLAVM_INLINE te::NDArray take(const te::NDArray& x, const te::NDArray& indices,
                              const TakeParams& p) {
  constexpr std::string_view who = "host::take";
  check_take_indices(indices.dtype(), who, "indices");
  const std::size_t axis = detail::axis_or_raise(who, "axis", p.axis, x.ndim());
  const auto split = split_at(x.shape(), axis);
  const auto index = indices.data();
  for (std::size_t j = 0; j < index.size(); ++j)
    if (index[j] < -split.extent || index[j] >= split.extent)
      raise<ValueError>(
          "{}: index {} (element {} of the indices) is outside [{}, {}) for dim {} of x {}", who,
          index[j], j, -split.extent, split.extent, axis, detail::shape_str(x.shape()));
  Shape out(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), indices.shape().begin(), indices.shape().end());
  out.insert(out.end(), x.shape().begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.shape().end());
  te::NDArray y(x.dtype(), out);
  const auto count = static_cast<std::int64_t>(index.size());
  if (x.dtype().is_float())
    runtime::take(x.fdata().data(), index.data(), y.fdata().data(), split.outer, split.extent,
                  split.inner, count);
  else
    runtime::take(x.data().data(), index.data(), y.data().data(), split.outer, split.extent,
                  split.inner, count);
  return y;
}

DLAVM_INLINE te::NDArray broadcast_to(const te::NDArray& x, const BroadcastToParams& p) {
  constexpr std::string_view who = "host::broadcast_to";
  check_broadcast_shape(p.shape, who);
  const auto out = broadcast_shapes(x.shape(), p.shape);
  if (!out)
    raise<ShapeError>(
        "{}: x {} and shape {} do not broadcast (aligned at the last dims, each pair must be "
        "equal or one of them 1)",
        who, detail::shape_str(x.shape()), detail::shape_str(p.shape));
  return detail::copy_dims(x, *out, nullptr);
}

DLAVM_INLINE te::NDArray tile(const te::NDArray& x, const TileParams& p) {
  constexpr std::string_view who = "host::tile";
  check_repeats(p.repeats, x.ndim(), who);
  Shape out(x.ndim());
  for (std::size_t k = 0; k < x.ndim(); ++k) {
    if (p.repeats[k] > 0 && x.shape()[k] > std::numeric_limits<std::int64_t>::max() / p.repeats[k])
      raise<ValueError>("{}: dim {} of x ({}) repeated {} times overflows int64", who, k,
                        x.shape()[k], p.repeats[k]);
    out[k] = x.shape()[k] * p.repeats[k];
  }
  return detail::copy_dims(x, out, nullptr);
}

}  // namespace dlavm::host
