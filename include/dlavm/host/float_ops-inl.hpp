// Definitions for host/float_ops.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/float_ops.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace dlavm::host {

namespace detail {

// y = kernel(x, y, outer, extent, inner) along p.axis (softmax, log_softmax).
template <class Kernel>
te::NDArray along_axis(std::string_view who, const te::NDArray& x, const SoftmaxParams& p,
                       Kernel kernel) {
  require_float32(who, "x", x);
  const std::size_t axis = axis_or_raise(who, "axis", p.axis, x.ndim());
  const auto split = split_at(x.shape(), axis);
  te::NDArray y(x.dtype(), x.shape());
  if (split.extent == 0) return y;  // empty rows
  kernel(x.fdata().data(), y.fdata().data(), split.outer, split.extent, split.inner);
  return y;
}

}  // namespace detail

DLAVM_INLINE te::NDArray softmax(const te::NDArray& x, const SoftmaxParams& p) {
  return detail::along_axis("host::softmax", x, p, runtime::softmax);
}

DLAVM_INLINE te::NDArray log_softmax(const te::NDArray& x, const SoftmaxParams& p) {
  return detail::along_axis("host::log_softmax", x, p, runtime::log_softmax);
}

DLAVM_INLINE te::NDArray layer_norm(const te::NDArray& x, const te::NDArray& gamma,
                                    const te::NDArray& beta, const LayerNormParams& p) {
  constexpr std::string_view who = "host::layer_norm";
  detail::require_float32(who, "x", x);
  detail::require_float32(who, "gamma", gamma);
  detail::require_float32(who, "beta", beta);
  const std::size_t axis = detail::axis_or_raise(who, "axis", p.axis, x.ndim());
  const std::span<const std::int64_t> norm_dims = std::span(x.shape()).subspan(axis);
  for (const te::NDArray* a : {&gamma, &beta})
    if (!std::equal(a->shape().begin(), a->shape().end(), norm_dims.begin(), norm_dims.end()))
      raise<ShapeError>("{}: {} has shape {}, expected {} (the dims of x {} from axis {})", who,
                        a == &gamma ? "gamma" : "beta", detail::shape_str(a->shape()),
                        detail::shape_str(norm_dims), detail::shape_str(x.shape()), axis);
  const std::int64_t group = element_count(norm_dims);
  const std::int64_t groups = group == 0 ? 0 : static_cast<std::int64_t>(x.size()) / group;
  te::NDArray y(x.dtype(), x.shape());
  runtime::layer_norm(x.fdata().data(), gamma.fdata().data(), beta.fdata().data(), y.fdata().data(),
                      groups, group, static_cast<float>(p.epsilon));
  return y;
}

DLAVM_INLINE te::NDArray batch_norm(const te::NDArray& x, const te::NDArray& gamma,
                                    const te::NDArray& beta, const te::NDArray& mean,
                                    const te::NDArray& var, const BatchNormParams& p) {
  constexpr std::string_view who = "host::batch_norm";
  detail::require_float32(who, "x", x);
  const std::size_t axis = detail::axis_or_raise(who, "axis", p.axis, x.ndim());
  const auto split = split_at(std::span(x.shape()), axis);
  const std::pair<const char*, const te::NDArray*> params[] = {
      {"gamma", &gamma}, {"beta", &beta}, {"mean", &mean}, {"var", &var}};
  for (const auto& [name, a] : params) {
    detail::require_float32(who, name, *a);
    if (a->shape() != std::vector<std::int64_t>{split.extent})
      raise<ShapeError>("{}: {} has shape {}, expected [{}] (dim {} of x {})", who, name,
                        detail::shape_str(a->shape()), split.extent, axis,
                        detail::shape_str(x.shape()));
  }
  te::NDArray y(x.dtype(), x.shape());
  runtime::batch_norm(x.fdata().data(), gamma.fdata().data(), beta.fdata().data(),
                      mean.fdata().data(), var.fdata().data(), y.fdata().data(), split.outer,
                      split.extent, split.inner, static_cast<float>(p.epsilon));
  return y;
}

DLAVM_INLINE te::NDArray gelu(const te::NDArray& x) {
  detail::require_float32("host::gelu", "x", x);
  constexpr float inv_sqrt2 = 0.70710678118654752440f;
  te::NDArray y = x;
  for (float& v : y.fdata()) v = 0.5f * v * (1.0f + std::erf(v * inv_sqrt2));
  return y;
}

DLAVM_INLINE te::NDArray causal_mask(const te::NDArray& x) {
  constexpr std::string_view who = "host::causal_mask";
  detail::require_float32(who, "x", x);
  const auto& s = x.shape();
  if (s.size() < 2 || s[s.size() - 1] < s[s.size() - 2])
    raise<ShapeError>(
        "{}: x has shape {}; it needs [..., M, N] with N >= M (M queries, the "
        "last of N positions)",
        who, detail::shape_str(s));
  const std::int64_t m = s[s.size() - 2], n = s[s.size() - 1];
  te::NDArray y(x.dtype(), x.shape());
  const std::int64_t rows = m == 0 ? 0 : static_cast<std::int64_t>(x.size()) / n;
  runtime::causal_mask(x.fdata().data(), y.fdata().data(), rows, m, n);
  return y;
}

}  // namespace dlavm::host
