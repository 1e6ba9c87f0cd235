// Graph element-wise ops: typed builders and op records. Semantics: host/elementwise.hpp.
//
//   add(a, b), sub(a, b), mul(a, b), div(a, b), pow(a, b), maximum(a, b), minimum(a, b)
//                                numpy broadcast (symbolic dims must be provably equal, or 1),
//                                one dtype; float32 or integers (integers wrap around; pow is
//                                float32 only)
//   prelu(x, slope)              slope broadcast to x (its dims 1 or x's): x's type
//   bias_add(x, b[C], axis = 1)  b along axis of x
//   relu(x)
//   clip(x, lo, hi)              lo and hi required (floats; integers read as floats)
// The binary ops are one record each of host::kBinaryOps; their firmware kernel is
// runtime::binary<kind> for operands of one shape and runtime::binary_broadcast<kind> (up to 8
// dims) otherwise.
//
//   auto y = graph::relu(graph::bias_add(graph::conv2d(x, w), b));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/elementwise.hpp>

namespace dlavm::graph {

// The call of the binary op of `kind` (host::binary_op(kind).name).
Expr binary(runtime::Binary kind, Expr a, Expr b);
Expr add(Expr a, Expr b);
Expr sub(Expr a, Expr b);
Expr mul(Expr a, Expr b);
Expr div(Expr a, Expr b);
Expr pow(Expr a, Expr b);
Expr maximum(Expr a, Expr b);
Expr minimum(Expr a, Expr b);
Expr prelu(Expr x, Expr slope);
Expr bias_add(Expr x, Expr b, const host::BiasAddParams& p = {});
Expr relu(Expr x);
Expr clip(Expr x, const host::ClipParams& p);
// The parameters in a bias_add / clip call's (normalized) attributes.
host::BiasAddParams bias_add_params(const Attrs& attrs);
host::ClipParams clip_params(const Attrs& attrs);

void add_elementwise_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/elementwise-inl.hpp>
#endif
