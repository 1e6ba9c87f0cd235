// Host kernels for the unary element-wise math ops ONNX models use. The semantics below are the
// definition the graph ops and their firmware kernel reproduce: each op is one kind of
// runtime::Unary, whose value runtime/kernels.hpp computes (unary_value) for the host kernel
// and for firmware alike. float32 arithmetic throughout, <cmath>'s float functions.
//
//   sigmoid(x)      1 / (1 + exp(-x))
//   tanh(x), exp(x), log(x), sqrt(x), erf(x)
//                   std::tanh, exp, log, sqrt, erf on float: log(0) = -inf, log and sqrt of
//                   x < 0 are NaN, sqrt(-0) = -0
//   abs(x)          float: x with its sign cleared (abs(-0) = +0, abs(-NaN) = NaN); integers:
//                   -x where x < 0, wrapping (abs(-128) = -128 in int8); unsigned: x
//   neg(x)          float: x with its sign flipped (neg(0) = -0); integers: 0 - x wrapped
//                   (neg(-128) = -128 in int8, neg(1) = 255 in uint8)
//   hard_sigmoid(x, {alpha = 0.2, beta = 0.5})
//                   max(0, min(1, alpha * x + beta)), alpha and beta rounded to float; NaN
//                   stays NaN
//   hard_swish(x)   x * hard_sigmoid(x) with alpha = 1/6 (rounded to float) and beta = 0.5
//                   (hard_swish(-inf) = -inf * 0 = NaN, as the formula has it)
//   leaky_relu(x, {alpha = 0.01})
//                   x < 0 ? alpha * x : x (-0 and NaN stay)
//   reciprocal(x)   1 / x
//   floor(x), ceil(x), round(x)
//                   std::floor, ceil, rint (halves to even)
//   sign(x)         -1, 0 or 1; float: NaN stays NaN
//   sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh
//                   <cmath>'s on float, NaN outside the domain
//   softplus(x)     log1p(exp(x)) (inf where exp overflows)
//   softsign(x)     x / (1 + |x|)
//   mish(x)         x * tanh(softplus(x))
//   elu(x, {alpha = 1})          x < 0 ? alpha * (exp(x) - 1) : x
//   selu(x, {alpha = 1.67326..., gamma = 1.05070...})
//                   x <= 0 ? gamma * (alpha * exp(x) - alpha) : gamma * x
//   celu(x, {alpha = 1})         max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); NaN stays
//   thresholded_relu(x, {alpha = 1})
//                   x > alpha ? x : 0 (NaN gives 0, as ONNX defines it)
// Every op takes float32; abs, neg and sign also take every integer dtype
// (runtime::takes_integers).
// kUnaryOps lists them, in runtime::Unary's order: the graph records, the builders and the
// firmware calls are made from it.
//
//   auto y = host::unary(runtime::Unary::Sigmoid, x);
//   auto z = host::hard_sigmoid(x, {.alpha = 1.0 / 6});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>

namespace dlavm::host {

struct UnaryOp {
  runtime::Unary kind;
  std::string_view name;        // the graph op: "hard_sigmoid"
  std::string_view enumerator;  // runtime::Unary's, as a firmware call spells it: "HardSigmoid"
};

inline constexpr UnaryOp kUnaryOps[] = {
    {runtime::Unary::Sigmoid, "sigmoid", "Sigmoid"},
    {runtime::Unary::Tanh, "tanh", "Tanh"},
    {runtime::Unary::Exp, "exp", "Exp"},
    {runtime::Unary::Log, "log", "Log"},
    {runtime::Unary::Sqrt, "sqrt", "Sqrt"},
    {runtime::Unary::Erf, "erf", "Erf"},
    {runtime::Unary::Abs, "abs", "Abs"},
    {runtime::Unary::Neg, "neg", "Neg"},
    {runtime::Unary::HardSigmoid, "hard_sigmoid", "HardSigmoid"},
    {runtime::Unary::HardSwish, "hard_swish", "HardSwish"},
    {runtime::Unary::LeakyRelu, "leaky_relu", "LeakyRelu"},
    {runtime::Unary::Reciprocal, "reciprocal", "Reciprocal"},
    {runtime::Unary::Floor, "floor", "Floor"},
    {runtime::Unary::Ceil, "ceil", "Ceil"},
    {runtime::Unary::Round, "round", "Round"},
    {runtime::Unary::Sign, "sign", "Sign"},
    {runtime::Unary::Sin, "sin", "Sin"},
    {runtime::Unary::Cos, "cos", "Cos"},
    {runtime::Unary::Tan, "tan", "Tan"},
    {runtime::Unary::Asin, "asin", "Asin"},
    {runtime::Unary::Acos, "acos", "Acos"},
    {runtime::Unary::Atan, "atan", "Atan"},
    {runtime::Unary::Sinh, "sinh", "Sinh"},
    {runtime::Unary::Cosh, "cosh", "Cosh"},
    {runtime::Unary::Asinh, "asinh", "Asinh"},
    {runtime::Unary::Acosh, "acosh", "Acosh"},
    {runtime::Unary::Atanh, "atanh", "Atanh"},
    {runtime::Unary::Softplus, "softplus", "Softplus"},
    {runtime::Unary::Softsign, "softsign", "Softsign"},
    {runtime::Unary::Mish, "mish", "Mish"},
    {runtime::Unary::Elu, "elu", "Elu"},
    {runtime::Unary::Selu, "selu", "Selu"},
    {runtime::Unary::Celu, "celu", "Celu"},
    {runtime::Unary::ThresholdedRelu, "thresholded_relu", "ThresholdedRelu"},
};
static_assert(std::size(kUnaryOps) == runtime::kUnaryCount);

// The entry of a kind.
constexpr const UnaryOp& unary_op(runtime::Unary kind) {
  return kUnaryOps[static_cast<std::size_t>(kind)];
}

// ONNX's attributes and defaults.
struct HardSigmoidParams {
  double alpha = 0.2;
  double beta = 0.5;
};
struct LeakyReluParams {
  double alpha = 0.01;
};
struct EluParams {
  double alpha = 1.0;
};
struct SeluParams {  // float32's nearest to SELU's constants, as ONNX gives them
  double alpha = 1.67326319217681884765625;
  double gamma = 1.05070102214813232421875;
};
struct CeluParams {
  double alpha = 1.0;
};
struct ThresholdedReluParams {
  double alpha = 1.0;
};

// runtime::unary's alpha and beta: what hard_sigmoid and leaky_relu read (the others none).
struct UnaryCoefficients {
  double alpha = 0;
  double beta = 0;
};
constexpr UnaryCoefficients coefficients(const HardSigmoidParams& p) { return {p.alpha, p.beta}; }
constexpr UnaryCoefficients coefficients(const LeakyReluParams& p) { return {p.alpha, 0}; }
constexpr UnaryCoefficients coefficients(const EluParams& p) { return {p.alpha, 0}; }
constexpr UnaryCoefficients coefficients(const SeluParams& p) { return {p.alpha, p.gamma}; }
constexpr UnaryCoefficients coefficients(const CeluParams& p) { return {p.alpha, 0}; }
constexpr UnaryCoefficients coefficients(const ThresholdedReluParams& p) { return {p.alpha, 0}; }
// The coefficients of a kind's default attributes.
UnaryCoefficients default_coefficients(runtime::Unary kind);

// y = f(x) for the op of `kind`, with `c` (default: the op's defaults); TypeError naming the op
// for a dtype it does not take.
te::NDArray unary(runtime::Unary kind, const te::NDArray& x,
                  std::optional<UnaryCoefficients> c = std::nullopt);
te::NDArray hard_sigmoid(const te::NDArray& x, const HardSigmoidParams& p = {});
te::NDArray leaky_relu(const te::NDArray& x, const LeakyReluParams& p = {});
te::NDArray elu(const te::NDArray& x, const EluParams& p = {});
te::NDArray selu(const te::NDArray& x, const SeluParams& p = {});
te::NDArray celu(const te::NDArray& x, const CeluParams& p = {});
te::NDArray thresholded_relu(const te::NDArray& x, const ThresholdedReluParams& p = {});

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/unary-inl.hpp>
#endif
