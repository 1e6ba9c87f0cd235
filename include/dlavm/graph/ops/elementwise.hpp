// Graph element-wise ops: typed builders and op records. Semantics: host/elementwise.hpp.
//
//   add(a, b), mul(a, b)         numpy broadcast (symbolic dims must be provably equal, or 1),
//                                one dtype, integers wrap around
//   bias_add(x, b[C], axis = 1)  b along axis of x
//   relu(x)
//   clip(x, lo, hi)              lo and hi required (floats; integers read as floats)
//
//   auto y = graph::relu(graph::bias_add(graph::conv2d(x, w), b));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/elementwise.hpp>

namespace dlavm::graph {

Expr add(Expr a, Expr b);
Expr mul(Expr a, Expr b);
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
