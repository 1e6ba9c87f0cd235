// Definitions for graph/llm/attention.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/llm/attention.hpp>
#include <dlavm/graph/ops.hpp>

#include <cmath>
#include <string>
#include <utility>

namespace dlavm::graph::llm {

namespace detail {

inline Expr scalar(const std::string& name, float value) {
  return constant(name, te::NDArray::from_floats({}, {value}));
}
inline Expr int8_zero(const std::string& name) {
  return constant(name, te::NDArray(DType::int8(), {}));
}

inline void check_linear(const Linear& w, const std::string& name) {
  if (w.weight.dtype() != DType::int8() || w.weight.ndim() != 2)
    raise<TypeError>("projection '{}': the weight is {}[{}], expected int8 [d_out, d_in]", name,
                     w.weight.dtype(), fmt::join(w.weight.shape(), ", "));
  if (w.bias.dtype() != DType::int32() || w.bias.ndim() != 1)
    raise<TypeError>("projection '{}': the bias is {}[{}], expected int32 [d_out]", name,
                     w.bias.dtype(), fmt::join(w.bias.shape(), ", "));
  if (w.bias.shape()[0] != w.weight.shape()[0])
    raise<ShapeError>("projection '{}': the bias has {} elements, the weight {} output rows", name,
                      w.bias.shape()[0], w.weight.shape()[0]);
}

// The integer softmax's parameters for causal scores [1, token, positions, heads]: the keys
// along dim -2, the queries the dim before them.
inline host::IntegerSoftmaxParams causal_softmax_params(float score_scale) {
  return {.axis = -2, .scale = score_scale, .causal = true, .queries = host::CausalQueries::Before};
}

}  // namespace detail

DLAVM_INLINE float score_scale_for(std::int64_t head_size) {
  if (head_size <= 0) raise<ValueError>("score_scale_for: head size {} is not positive", head_size);
  return 1.0f / std::sqrt(static_cast<float>(head_size));
}

DLAVM_INLINE Expr projection(Expr x, const Linear& w, const std::string& name, std::int64_t shift,
                             Expr residual) {
  detail::check_linear(w, name);
  auto acc = bias_add(dense(std::move(x), constant(name + ".weight", w.weight)),
                      constant(name + ".bias", w.bias), {.axis = -1});
  if (residual.defined()) acc = add(acc, cast(residual, DType::int32()));
  return named(requantize(acc, {.shift = shift, .rounding = host::Rounding::Nearest}), name);
}

DLAVM_INLINE Expr split_heads(Expr x, std::int64_t heads) {
  return transpose(reshape(std::move(x), {.newshape = {0, 0, heads, -1}}), {.perm = {0, 2, 1, 3}});
}

DLAVM_INLINE Expr merge_heads(Expr x, std::int64_t d_model) {
  return reshape(transpose(std::move(x), {.perm = {0, 2, 1, 3}}), {.newshape = {0, 0, d_model}});
}

DLAVM_INLINE Expr integer_probabilities(Expr scores, float score_scale, Softmax how) {
  if (how == Softmax::Float)
    raise<ValueError>("llm::integer_probabilities: Softmax::Float is not an integer softmax");
  if (how == Softmax::IntegerDeferred)
    raise<ValueError>(
        "llm::integer_probabilities: Softmax::IntegerDeferred computes no probabilities (attend "
        "normalizes the context)");
  if (how != Softmax::Integer && how != Softmax::IntegerSplit)
    raise<ValueError>(
        "llm::integer_probabilities: Softmax {} is none of Float, Integer, IntegerSplit and "
        "IntegerDeferred",
        static_cast<int>(how));
  auto by_key = transpose(std::move(scores), {.perm = {0, 2, 3, 1}});
  const auto p = detail::causal_softmax_params(score_scale);
  // split, VTA computes each exponential once (the accumulator holds no row of the keys: a
  // single kernel computes them twice, for the sum and for the probabilities)
  auto probs = how == Softmax::IntegerSplit
                   ? integer_softmax_normalize(integer_softmax_exp(std::move(by_key), p), p)
                   : integer_softmax(std::move(by_key), p);
  return transpose(std::move(probs), {.perm = {0, 3, 1, 2}});
}

DLAVM_INLINE Expr attend(Expr q, Expr keys, Expr values, const AttendOptions& options) {
  const auto& quant = options.quantization;
  auto scores = named(requantize(matmul(std::move(q), transpose(keys, {.perm = {0, 1, 3, 2}})),
                                 {.shift = quant.score_shift, .rounding = host::Rounding::Nearest}),
                      "scores");
  if (options.softmax == Softmax::IntegerDeferred) {
    // the exponentials with the keys along dim -2 and the heads in the lanes (as
    // integer_probabilities), back to [1, heads, token, positions]; the int32 context
    auto exps =
        named(transpose(integer_softmax_exp(transpose(std::move(scores), {.perm = {0, 2, 3, 1}}),
                                            detail::causal_softmax_params(options.score_scale)),
                        {.perm = {0, 3, 1, 2}}),
              "exps");
    return integer_context_normalize(matmul(exps, std::move(values)), exps,
                                     {.shift = quant.context_shift});
  }
  auto probs =
      named(options.softmax != Softmax::Float
                ? integer_probabilities(scores, options.score_scale, options.softmax)
                : quantize_linear(softmax(causal_mask(dequantize_linear(
                                      scores, detail::scalar("score_scale", options.score_scale),
                                      detail::int8_zero("score_zero")))),
                                  detail::scalar("prob_scale", quant.prob_scale),
                                  detail::int8_zero("prob_zero")),
            "probs");
  return requantize(matmul(probs, std::move(values)),
                    {.shift = quant.context_shift, .rounding = host::Rounding::Nearest});
}

DLAVM_INLINE Expr int8_layer_norm(Expr x, const Norm& w, const std::string& name, float scale) {
  for (const auto* a : {&w.gamma, &w.beta})
    if (a->dtype() != DType::float32() || a->ndim() != 1)
      raise<TypeError>("layer norm '{}': its {} is {}[{}], expected float32 [d]", name,
                       a == &w.gamma ? "gamma" : "beta", a->dtype(), fmt::join(a->shape(), ", "));
  auto y = layer_norm(dequantize_linear(std::move(x), detail::scalar(name + ".in_scale", scale),
                                        detail::int8_zero(name + ".in_zero")),
                      constant(name + ".gamma", w.gamma), constant(name + ".beta", w.beta));
  return named(quantize_linear(y, detail::scalar(name + ".out_scale", scale),
                               detail::int8_zero(name + ".out_zero")),
               name);
}

}  // namespace dlavm::graph::llm
