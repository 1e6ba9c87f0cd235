// Definitions for host/elementwise.hpp. Broadcasting walks the output row by row: the last
// dim is a contiguous loop whose operands advance by 1 or stay (a stretched dim).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/elementwise.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace dlavm::host {

namespace detail {

// out[i] = f(a[ia], b[ib]) over the broadcast of a's and b's shapes (`os`). Each kind of row
// has a loop of its own, so that the compiler vectorizes the common ones (same shapes, one
// operand stretched).
template <class T, class U, class F>
void broadcast_apply(const T* a, std::span<const std::int64_t> as, const T* b,
                     std::span<const std::int64_t> bs, U* out, std::span<const std::int64_t> os,
                     F f) {
  for_each_broadcast_row<2>(os, {as, bs},
                            [&](std::int64_t o, const auto& at, const auto& step, std::int64_t n) {
                              const T* __restrict pa = a + at[0];
                              const T* __restrict pb = b + at[1];
                              U* __restrict po = out + o;
                              if (step[0] == 1 && step[1] == 1) {
                                for (std::int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
                              } else if (step[0] == 1) {
                                const T bv = *pb;
                                for (std::int64_t i = 0; i < n; ++i) po[i] = f(pa[i], bv);
                              } else if (step[1] == 1) {
                                const T av = *pa;
                                for (std::int64_t i = 0; i < n; ++i) po[i] = f(av, pb[i]);
                              } else {
                                std::fill(po, po + n, f(*pa, *pb));
                              }
                            });
}

// f(a, b) of runtime::Binary K under broadcasting: float32 as it is, integers in 64 bits and
// then wrapped to the dtype (host/common.hpp's with_integer_type). `x_shape`: the result must
// keep a's shape (prelu's unidirectional broadcast).
template <runtime::Binary K>
te::NDArray binary_kernel(std::string_view who, const te::NDArray& a, const te::NDArray& b,
                          bool x_shape = false) {
  require_same_dtype(who, a, b);
  if (!runtime::takes_integers(K)) require_float32(who, "a", a);
  const auto shape = broadcast_shapes(a.shape(), b.shape());
  if (!shape)
    raise<ShapeError>("{}: shapes {} and {} do not broadcast (dims must match or be 1)", who,
                      shape_str(a.shape()), shape_str(b.shape()));
  if (x_shape && *shape != a.shape())
    raise<ShapeError>(
        "{}: the slope's shape {} would stretch x {} to {}; the slope broadcasts to x's shape", who,
        shape_str(b.shape()), shape_str(a.shape()), shape_str(*shape));
  te::NDArray y(a.dtype(), *shape);
  if (a.dtype().is_float()) {
    broadcast_apply(a.fdata().data(), a.shape(), b.fdata().data(), b.shape(), y.fdata().data(),
                    *shape, [](float u, float v) { return runtime::binary_value<K, float>(u, v); });
  } else if constexpr (runtime::takes_integers(K)) {
    with_integer_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      broadcast_apply(elements_as<T>(a), a.shape(), elements_as<T>(b), b.shape(), elements_as<T>(y),
                      *shape, [](T u, T v) { return runtime::binary_value<K, T>(u, v); });
    });
    wrap_elements(y);
  }
  return y;
}

}  // namespace detail

DLAVM_INLINE void validate(const ClipParams& p, std::string_view who) {
  if (!(p.lo <= p.hi))
    raise<ValueError>("{}: attribute 'lo' ({}) is greater than 'hi' ({})", who, p.lo, p.hi);
}

DLAVM_INLINE std::pair<std::int64_t, std::int64_t> clip_int_bounds(const ClipParams& p, DType t,
                                                                   std::string_view who) {
  validate(p, who);
  // bounds within the dtype's range (doubles beyond it saturate)
  const double lo_d = std::max(std::ceil(p.lo), static_cast<double>(t.min_value()));
  const double hi_d = std::min(std::floor(p.hi), static_cast<double>(t.max_value()));
  if (lo_d > hi_d)
    raise<ValueError>("{}: no {} value lies in [lo, hi] = [{}, {}]", who, t, p.lo, p.hi);
  const auto lo =
      lo_d <= static_cast<double>(t.min_value()) ? t.min_value() : static_cast<std::int64_t>(lo_d);
  const auto hi =
      hi_d >= static_cast<double>(t.max_value()) ? t.max_value() : static_cast<std::int64_t>(hi_d);
  return {lo, hi};
}

DLAVM_INLINE te::NDArray binary(runtime::Binary kind, const te::NDArray& a, const te::NDArray& b) {
  const std::string who = fmt::format("host::{}", binary_op(kind).name);
  return runtime::with_kind(kind, [&](auto tag) {
    constexpr runtime::Binary K = decltype(tag)::value;
    return detail::binary_kernel<K>(who, a, b, K == runtime::Binary::Prelu);
  });
}

DLAVM_INLINE te::NDArray add(const te::NDArray& a, const te::NDArray& b) {
  return binary(runtime::Binary::Add, a, b);
}

DLAVM_INLINE te::NDArray mul(const te::NDArray& a, const te::NDArray& b) {
  return binary(runtime::Binary::Mul, a, b);
}

DLAVM_INLINE te::NDArray bias_add(const te::NDArray& x, const te::NDArray& b,
                                  const BiasAddParams& p) {
  constexpr std::string_view who = "host::bias_add";
  detail::require_same_dtype(who, x, b);
  const std::size_t axis = detail::axis_or_raise(who, "axis", p.axis, x.ndim());
  if (b.ndim() != 1 || b.shape()[0] != x.shape()[axis])
    raise<ShapeError>("{}: b must have shape [{}] (dim {} of x {}), got {}", who, x.shape()[axis],
                      axis, detail::shape_str(x.shape()), detail::shape_str(b.shape()));
  // b as [C, 1, ..., 1] broadcasts along the axis
  std::vector<std::int64_t> b_shape(x.ndim() - axis, 1);
  b_shape[0] = b.shape()[0];
  te::NDArray b_view(b.dtype(), b_shape);
  if (b.dtype().is_float())
    std::copy(b.fdata().begin(), b.fdata().end(), b_view.fdata().begin());
  else
    std::copy(b.data().begin(), b.data().end(), b_view.data().begin());
  return detail::binary_kernel<runtime::Binary::Add>(who, x, b_view);
}

DLAVM_INLINE te::NDArray relu(const te::NDArray& x) {
  te::NDArray y = x;
  if (x.dtype().is_float()) {
    for (float& v : y.fdata()) v = v < 0.0f ? 0.0f : v;
  } else {
    for (std::int64_t& v : y.data()) v = v < 0 ? 0 : v;
  }
  return y;
}

DLAVM_INLINE te::NDArray clip(const te::NDArray& x, const ClipParams& p) {
  constexpr std::string_view who = "host::clip";
  validate(p, who);
  te::NDArray y = x;
  if (x.dtype().is_float()) {
    const float lo = static_cast<float>(p.lo), hi = static_cast<float>(p.hi);
    for (float& v : y.fdata()) v = v < lo ? lo : (v > hi ? hi : v);
    return y;
  }
  const auto [lo, hi] = clip_int_bounds(p, x.dtype(), who);
  for (std::int64_t& v : y.data()) v = std::clamp(v, lo, hi);
  return y;
}

}  // namespace dlavm::host
