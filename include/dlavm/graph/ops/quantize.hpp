// Graph ops requantize and cast: typed builders, attribute conversion and op records.
// Semantics: host/quantize.hpp.
//
//   requantize(x (signed int), shift (required), lo = -128, hi = 127,
//              rounding = "floor" | "nearest", out_dtype = int8) -> out_dtype, x's shape
//   cast(x, dtype (required)) -> dtype, x's shape
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
DType cast_dtype(const Attrs& attrs);

void add_quantize_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/quantize-inl.hpp>
#endif
