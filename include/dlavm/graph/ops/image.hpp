// Graph op resize2d: typed builder and op record. Semantics: host/image.hpp.
//
//   resize2d(x[N, C, H, W], scales = [] | sizes = [] (exactly one, [height, width]),
//            mode = "nearest" | "linear",
//            coordinate_transformation_mode = "half_pixel" | "asymmetric" | "align_corners" |
//                                             "pytorch_half_pixel",
//            nearest_mode = "round_prefer_floor" | "round_prefer_ceil" | "floor" | "ceil")
//       H and W provably >= 1; linear takes float32, nearest any dtype. A symbolic H (or W)
//       resized by sizes gives the constant size; by a scale, floor(H * scale) when that has an
//       exact form: H * k for an integral scale, floordiv(H * p, 2^k) for a scale p / 2^k (any
//       float32 scale is one, as long as H's maximum * p stays below 2^53)
//
//   // [1, 16, h, w] -> [1, 16, h * 2, w * 2]
//   auto up = graph::resize2d(x, {.scales = {2, 2}, .mode = host::ResizeMode::Linear});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/image.hpp>

namespace dlavm::graph {

Expr resize2d(Expr x, const host::Resize2dParams& p);
// The parameters in a resize2d call's attributes.
host::Resize2dParams resize2d_params(const Attrs& attrs);

void add_image_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/image-inl.hpp>
#endif
