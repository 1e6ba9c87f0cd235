// The `widen_accumulator_loads` pass: on a VTA design without LOAD ACC_8BIT (the boards'
// designs: vta::Variant::load_acc8), a pooling of int8 values, which VTA would load into its
// accumulator through ACC_8BIT, pools their int32 cast instead and casts the result back:
//
//   max_pool2d(x: int8)  ->  cast(max_pool2d(cast(x, int32)), int8)
//
// (avg_pool2d and global_avg_pool2d alike, where the window's count is a power of two: other
// averages stay on the host anyway). The inner cast is a host step; VTA loads the int32
// copy with LOAD ACC and stores the outer cast, which joins the kernel. The values are the
// same: a pooling of int8 values lies in int8's range. Residual adds need no rewrite: their
// epilogue rule leaves the cast on the host on such a design (graph/strategy/fusion.hpp). On a
// design with ACC_8BIT the pass returns the function unchanged. It runs on typed functions,
// and types what it returns.
//
//   auto widened = graph::widen_accumulator_loads(typed, target);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>

namespace dlavm::graph {

struct Target;

Function widen_accumulator_loads(const Function& fn, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/widen_accumulator_loads-inl.hpp>
#endif
