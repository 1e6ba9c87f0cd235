// Graph ops requantize and cast: typed builders, attribute conversion and op records.
// Semantics: host/quantize.hpp.
//
//   requantize(x (signed int), shift (required), lo = -128, hi = 127,
//              rounding = "floor" | "nearest", out_dtype = int8) -> out_dtype, x's shape
//   cast(x, dtype (required)) -> dtype, x's shape
//   quantize_linear(x float32, scale, zero_point, axis = 1) -> zero_point's dtype
//   dequantize_linear(x, scale, zero_point, axis = 1) -> float32
//   rescale(acc int32, multiplier, zero_point, axis = 1) -> zero_point's dtype
//       ONNX's linear quantization (host/quantize.hpp): scale / multiplier float32 and
//       zero_point integer, both of shape [] (per tensor) or [C] (C = x's dim at axis)
//
//   auto q = graph::requantize(graph::dense(x, w), {.shift = 8});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/quantize.hpp>

namespace dlavm::graph {

Expr requantize(Expr x, const host::RequantizeParams& p);
Expr cast(Expr x, DType dtype);
// The parameters in a requantize call's (normalized) attributes; a cast's target dtype.
host::RequantizeParams requantize_params(const Attrs& attrs);
Expr quantize_linear(Expr x, Expr scale, Expr zero_point, const host::LinearQuantParams& p = {});
Expr dequantize_linear(Expr x, Expr scale, Expr zero_point, const host::LinearQuantParams& p = {});
Expr rescale(Expr acc, Expr multiplier, Expr zero_point, const host::LinearQuantParams& p = {});
// The parameters in a quantize_linear, dequantize_linear or rescale call's attributes.
host::LinearQuantParams linear_quant_params(const Attrs& attrs);
DType cast_dtype(const Attrs& attrs);

void add_quantize_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/quantize-inl.hpp>
#endif
