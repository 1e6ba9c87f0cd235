// Graph ops for unary element-wise math (ONNX's Sigmoid, Tanh, Exp, Log, Sqrt, Erf, Abs, Neg,
// HardSigmoid, HardSwish, LeakyRelu, Reciprocal, Floor, Ceil, Round, Sign, the trigonometric
// and hyperbolic functions, Softplus, Softsign, Mish, Elu, Selu, Celu, ThresholdedRelu): typed
// builders and op records. Semantics:
// host/unary.hpp. One record per entry of host::kUnaryOps: the result has x's type; the host
// runs float32, and integers for abs, neg and sign (its support rule names any other dtype);
// the firmware kernel is runtime::unary<kind>.
//
//   sigmoid(x), tanh(x), exp(x), log(x), sqrt(x), erf(x), abs(x), neg(x), hard_swish(x),
//   reciprocal(x), floor(x), ceil(x), round(x), sign(x), softplus(x), softsign(x)
//   unary(kind, x): any kind, its attributes left to their defaults (sin, cos, ..., mish)
//   hard_sigmoid(x, alpha = 0.2, beta = 0.5)
//   leaky_relu(x, alpha = 0.01)
//   elu(x, alpha = 1), celu(x, alpha = 1), thresholded_relu(x, alpha = 1)
//   selu(x, alpha = 1.67326..., gamma = 1.05070...)
//
//   auto silu = graph::mul(x, graph::sigmoid(x));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/unary.hpp>

namespace dlavm::graph {

// The call of the op of `kind` (host::unary_op(kind).name), its attributes left to their
// defaults.
Expr unary(runtime::Unary kind, Expr x);
Expr sigmoid(Expr x);
Expr tanh(Expr x);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr erf(Expr x);
Expr abs(Expr x);
Expr neg(Expr x);
Expr hard_sigmoid(Expr x, const host::HardSigmoidParams& p = {});
Expr hard_swish(Expr x);
Expr leaky_relu(Expr x, const host::LeakyReluParams& p = {});
Expr reciprocal(Expr x);
Expr floor(Expr x);
Expr ceil(Expr x);
Expr round(Expr x);
Expr sign(Expr x);
Expr softplus(Expr x);
Expr softsign(Expr x);
Expr elu(Expr x, const host::EluParams& p = {});
Expr selu(Expr x, const host::SeluParams& p = {});
Expr celu(Expr x, const host::CeluParams& p = {});
Expr thresholded_relu(Expr x, const host::ThresholdedReluParams& p = {});

void add_unary_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/unary-inl.hpp>
#endif
