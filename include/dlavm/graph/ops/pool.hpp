// Graph pooling ops: typed builders, attribute conversion and op records. Semantics:
// host/pool.hpp.
//
//   max_pool2d(x[N, C, H, W], pool_size (required), strides = [1, 1], padding = [0, 0, 0, 0])
//   avg_pool2d(x, pool_size, strides, padding, count_include_pad = 1)
//     -> [N, C, (H + pt + pb - kh) / sh + 1, (W + pl + pr - kw) / sw + 1]   (floor division)
//   global_avg_pool2d(x[N, C, H, W]) -> [N, C, 1, 1]
//
//   auto y = graph::max_pool2d(x, {.pool_size = {3, 3}, .strides = {2, 2},
//                                  .padding = {1, 1, 1, 1}});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/pool.hpp>

namespace dlavm::graph {

Expr max_pool2d(Expr x, const host::Pool2dParams& p);
Expr avg_pool2d(Expr x, const host::Pool2dParams& p);
Expr global_avg_pool2d(Expr x);
// The parameters in a pooling call's (normalized) attributes; count_include_pad is read when
// present (avg_pool2d).
host::Pool2dParams pool2d_params(const Attrs& attrs);

void add_pool_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/pool-inl.hpp>
#endif
