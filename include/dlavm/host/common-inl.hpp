// Definitions for host/common.hpp (compiled once in compiled mode, inline otherwise).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dlavm::host {

DLAVM_INLINE std::optional<DType> accumulate_dtype(DType a, DType b) {
  if (a != b) return std::nullopt;
  if (a == DType::int8() || a == DType::int32()) return DType::int32();
  if (a == DType::float32()) return DType::float32();
  return std::nullopt;
}

DLAVM_INLINE DType product_dtype_or_raise(std::string_view who, std::string_view what_a, DType a,
                                          std::string_view what_b, DType b) {
  const auto t = accumulate_dtype(a, b);
  if (!t)
    raise<TypeError>(
        "{}: {} is {} and {} is {}; supported are int8 x int8 -> int32, int32 x int32 -> int32 "
        "and float32 x float32 -> float32",
        who, what_a, a, what_b, b);
  return *t;
}

DLAVM_INLINE std::optional<std::size_t> normalize_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

DLAVM_INLINE std::optional<Shape> broadcast_shapes(std::span<const std::int64_t> a,
                                                   std::span<const std::int64_t> b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    // dims counted from the end; a missing dim acts as 1
    const std::int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    const std::int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[rank - 1 - k] = da == 1 ? db : da;
  }
  return out;
}

DLAVM_INLINE std::int64_t element_count(std::span<const std::int64_t> shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

namespace detail {

DLAVM_INLINE std::string shape_str(std::span<const std::int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

DLAVM_INLINE void require_rank(std::string_view who, std::string_view what, const te::NDArray& a,
                               std::size_t rank) {
  if (a.ndim() != rank)
    raise<ShapeError>("{}: {} must have {} dims, got shape {}", who, what, rank,
                      shape_str(a.shape()));
}

DLAVM_INLINE void require_min_rank(std::string_view who, std::string_view what,
                                   const te::NDArray& a, std::size_t rank) {
  if (a.ndim() < rank)
    raise<ShapeError>("{}: {} must have at least {} dims, got shape {}", who, what, rank,
                      shape_str(a.shape()));
}

DLAVM_INLINE void require_float32(std::string_view who, std::string_view what,
                                  const te::NDArray& a) {
  if (a.dtype() != DType::float32())
    raise<TypeError>("{}: {} is {}; this op computes in float32 only (cast it first)", who, what,
                     a.dtype());
}

DLAVM_INLINE void require_integer(std::string_view who, std::string_view what,
                                  const te::NDArray& a) {
  if (!a.dtype().is_integral())
    raise<TypeError>("{}: {} is {}; this op takes integers only", who, what, a.dtype());
}

DLAVM_INLINE void require_same_dtype(std::string_view who, const te::NDArray& a,
                                     const te::NDArray& b) {
  if (a.dtype() != b.dtype())
    raise<TypeError>("{}: operands are {} and {}; they must have one dtype (cast one first)", who,
                     a.dtype(), b.dtype());
}

DLAVM_INLINE std::size_t axis_or_raise(std::string_view who, std::string_view name,
                                       std::int64_t axis, std::size_t rank) {
  const auto k = normalize_axis(axis, rank);
  if (!k)
    raise<ValueError>("{}: attribute '{}' is {}, outside [{}, {}) for {} dims", who, name, axis,
                      -static_cast<std::int64_t>(rank), rank, rank);
  return *k;
}

DLAVM_INLINE std::vector<std::uint32_t> to_u32(const te::NDArray& a) {
  const auto src = a.data();
  std::vector<std::uint32_t> out(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) out[i] = static_cast<std::uint32_t>(src[i]);
  return out;
}

DLAVM_INLINE void store_i32(std::span<const std::uint32_t> values, te::NDArray& out) {
  auto dst = out.data();
  for (std::size_t i = 0; i < values.size(); ++i) dst[i] = static_cast<std::int32_t>(values[i]);
}

DLAVM_INLINE std::vector<std::int64_t> broadcast_offsets(std::span<const std::int64_t> out,
                                                         std::span<const std::int64_t> in,
                                                         std::int64_t block) {
  // stride of each out dim in the operand (0 where it is stretched or missing)
  std::vector<std::int64_t> stride(out.size(), 0);
  std::int64_t s = block;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const std::size_t in_dim = in.size() - 1 - k, out_dim = out.size() - 1 - k;
    stride[out_dim] = in[in_dim] == 1 ? 0 : s;
    s *= in[in_dim];
  }
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(element_count(out)));
  std::vector<std::int64_t> index(out.size(), 0);
  std::int64_t offset = 0;
  for (auto& o : offsets) {
    o = offset;
    // odometer step over `out`, keeping `offset` in sync
    for (std::size_t d = out.size(); d-- > 0;) {
      offset += stride[d];
      if (++index[d] < out[d]) break;
      offset -= stride[d] * out[d];
      index[d] = 0;
    }
  }
  return offsets;
}

DLAVM_INLINE void wrap_elements(te::NDArray& a) {
  const DType t = a.dtype();
  for (std::int64_t& v : a.data()) v = t.wrap(v);
}

}  // namespace detail
}  // namespace dlavm::host
