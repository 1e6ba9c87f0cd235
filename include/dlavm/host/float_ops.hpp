// Host kernels for the float32-only ops of transformer layers and exported CNNs: softmax,
// log_softmax, layer_norm, gelu, causal_mask and batch_norm.
// The semantics below are the definition the graph ops must reproduce. All arithmetic is in
// float32 (std::exp, std::sqrt, std::erf on float), sums in ascending index order.
//
//   softmax(x, {axis = -1})   along axis: m = max of the row, e_i = exp(x_i - m),
//                             s = e_0 + e_1 + ..., y_i = e_i / s. A NaN in a row makes the row
//                             NaN.
//   log_softmax(x, {axis = -1})
//                             along axis: m and s as softmax's, y_i = (x_i - m) - log(s) (a
//                             NaN in a row makes the row NaN).
//   layer_norm(x, gamma, beta, {axis = -1, epsilon = 1e-5})
//                             normalizes over the dims from axis to the last (D elements per
//                             group); gamma and beta have exactly those dims:
//                             mean = (sum x) / D, var = (sum (x - mean)^2) / D,
//                             y = (x - mean) * (1 / sqrt(var + epsilon)) * gamma + beta
//                             (epsilon rounded to float32).
//   gelu(x)                   0.5 * x * (1 + erf(x * (1 / sqrt(2)))), the erf form, with
//                             1 / sqrt(2) rounded to float32.
//   batch_norm(x, gamma, beta, mean, var, {axis = 1, epsilon = 1e-5})
//                             inference with running statistics, per index c along axis (the
//                             channel; gamma, beta, mean and var have one value per channel):
//                             y = (x - mean[c]) * (gamma[c] / sqrt(var[c] + epsilon)) + beta[c]
//                             (epsilon rounded to float32). graph's fold_batch_norm pass folds
//                             it into the convolution or dense layer before it.
//   causal_mask(x)            x [..., M, N] with N >= M: the scores of M queries (the last M of
//                             the N positions) over N keys; y = -infinity where key j lies after
//                             query i (j > i + N - M), else x. Every row keeps its own key, so a
//                             softmax after it has no empty row.
//
//   auto p = host::softmax(scores);                  // float32 [heads, token, token]
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>

namespace dlavm::host {

struct SoftmaxParams {
  std::int64_t axis = -1;
};
struct LayerNormParams {
  std::int64_t axis = -1;
  double epsilon = 1e-5;
};
struct BatchNormParams {
  std::int64_t axis = 1;
  double epsilon = 1e-5;
};

te::NDArray softmax(const te::NDArray& x, const SoftmaxParams& p = {});
te::NDArray log_softmax(const te::NDArray& x, const SoftmaxParams& p = {});
te::NDArray layer_norm(const te::NDArray& x, const te::NDArray& gamma, const te::NDArray& beta,
                       const LayerNormParams& p = {});
te::NDArray gelu(const te::NDArray& x);
te::NDArray causal_mask(const te::NDArray& x);
te::NDArray batch_norm(const te::NDArray& x, const te::NDArray& gamma, const te::NDArray& beta,
                       const te::NDArray& mean, const te::NDArray& var,
                       const BatchNormParams& p = {});

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/float_ops-inl.hpp>
#endif
