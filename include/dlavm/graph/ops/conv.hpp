// Graph ops conv2d and conv2d_transpose: typed builders, attribute conversion and op records.
// Semantics: host/conv.hpp.
//
//   conv2d(x[N, C, H, W], w[O, C / G, KH, KW], strides = [1, 1], padding = [0, 0, 0, 0],
//          groups = G = 1, dilations = [1, 1])
//     -> [N, O, (H + pt + pb - KH') / sh + 1, (W + pl + pr - KW') / sw + 1]   (floor division;
//        KH' = (KH - 1) * dh + 1, the dilated kernel)
//   KH and KW must be constants; H and W may be symbolic. VTA runs groups = 1 without
//   dilation; other convolutions run on the host.
//   conv2d_transpose(x[N, C, H, W], w[C, O / G, KH, KW], strides, padding, output_padding,
//                    groups, dilations) -> [N, O, sh * (H - 1) + oph + KH' - pt - pb, ...]
//   float32, on the host.
//
//   auto y = graph::conv2d(x, w, {.strides = {2, 2}, .padding = {1, 1, 1, 1}});
//   auto depthwise = graph::conv2d(x, w3x3, {.padding = {1, 1, 1, 1}, .groups = 32});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/conv.hpp>

namespace dlavm::graph {

Expr conv2d(Expr x, Expr w, const host::Conv2dParams& p = {});
// The parameters in a conv2d call's (normalized) attributes.
host::Conv2dParams conv2d_params(const Attrs& attrs);
Expr conv2d_transpose(Expr x, Expr w, const host::ConvTranspose2dParams& p = {});
host::ConvTranspose2dParams conv2d_transpose_params(const Attrs& attrs);

void add_conv_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/conv-inl.hpp>
#endif
