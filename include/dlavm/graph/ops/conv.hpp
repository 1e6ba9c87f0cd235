// Graph op conv2d: typed builder, attribute conversion and op record. Semantics:
// host/conv.hpp.
//
//   conv2d(x[N, C, H, W], w[O, C, KH, KW], strides = [1, 1], padding = [0, 0, 0, 0], groups = 1)
//     -> [N, O, (H + pt + pb - KH) / sh + 1, (W + pl + pr - KW) / sw + 1]   (floor division)
//   KH and KW must be constants; H and W may be symbolic. groups = 1 only.
//
//   auto y = graph::conv2d(x, w, {.strides = {2, 2}, .padding = {1, 1, 1, 1}});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/conv.hpp>

namespace dlavm::graph {

Expr conv2d(Expr x, Expr w, const host::Conv2dParams& p = {});
// The parameters in a conv2d call's (normalized) attributes.
host::Conv2dParams conv2d_params(const Attrs& attrs);

void add_conv_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/conv-inl.hpp>
#endif
