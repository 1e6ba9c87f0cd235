// Definitions for host/unary.hpp: runtime::unary over the array, integers in 64 bits and then
// wrapped to the dtype (host/common.hpp's with_integer_type).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/unary.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace dlavm::host {

DLAVM_INLINE UnaryCoefficients default_coefficients(runtime::Unary kind) {
  if (kind == runtime::Unary::HardSigmoid) return coefficients(HardSigmoidParams{});
  if (kind == runtime::Unary::LeakyRelu) return coefficients(LeakyReluParams{});
  if (kind == runtime::Unary::Elu) return coefficients(EluParams{});
  if (kind == runtime::Unary::Selu) return coefficients(SeluParams{});
  if (kind == runtime::Unary::Celu) return coefficients(CeluParams{});
  if (kind == runtime::Unary::ThresholdedRelu) return coefficients(ThresholdedReluParams{});
  return {};
}

DLAVM_INLINE te::NDArray unary(runtime::Unary kind, const te::NDArray& x,
                               std::optional<UnaryCoefficients> c) {
  const std::string who = fmt::format("host::{}", unary_op(kind).name);
  if (!runtime::takes_integers(kind)) detail::require_float32(who, "x", x);
  const UnaryCoefficients k = c.value_or(default_coefficients(kind));
  const auto alpha = static_cast<float>(k.alpha), beta = static_cast<float>(k.beta);
  const auto n = static_cast<std::int64_t>(x.size());
  te::NDArray y(x.dtype(), x.shape());
  runtime::with_kind(kind, [&](auto tag) {
    constexpr runtime::Unary K = decltype(tag)::value;
    if (x.dtype().is_float()) {
      runtime::unary<K>(x.fdata().data(), y.fdata().data(), n, alpha, beta);
    } else if constexpr (runtime::takes_integers(K)) {
      detail::with_integer_type(x.dtype(), [&](auto t) {
        using T = decltype(t);
        runtime::unary<K>(detail::elements_as<T>(x), detail::elements_as<T>(y), n);
      });
      detail::wrap_elements(y);
    }
  });
  return y;
}

DLAVM_INLINE te::NDArray hard_sigmoid(const te::NDArray& x, const HardSigmoidParams& p) {
  return unary(runtime::Unary::HardSigmoid, x, coefficients(p));
}

DLAVM_INLINE te::NDArray leaky_relu(const te::NDArray& x, const LeakyReluParams& p) {
  return unary(runtime::Unary::LeakyRelu, x, coefficients(p));
}

DLAVM_INLINE te::NDArray elu(const te::NDArray& x, const EluParams& p) {
  return unary(runtime::Unary::Elu, x, coefficients(p));
}

DLAVM_INLINE te::NDArray selu(const te::NDArray& x, const SeluParams& p) {
  return unary(runtime::Unary::Selu, x, coefficients(p));
}

DLAVM_INLINE te::NDArray celu(const te::NDArray& x, const CeluParams& p) {
  return unary(runtime::Unary::Celu, x, coefficients(p));
}

DLAVM_INLINE te::NDArray thresholded_relu(const te::NDArray& x, const ThresholdedReluParams& p) {
  return unary(runtime::Unary::ThresholdedRelu, x, coefficients(p));
}

}  // namespace dlavm::host
