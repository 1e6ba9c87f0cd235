// The `fold_scale_shift` pass: a product with, or a sum or difference with, a float32 constant
// that follows a convolution with a constant weight (and possibly its bias_add of a constant),
// read by it alone, becomes that convolution with its weight and bias changed, as Paddle's
// "learnable affine" blocks and exporters' leftover scales are meant to run:
//
//   mul(bias_add(conv2d(x, %w), %b), %s)  ->  bias_add(conv2d(x, %w'), %b')
//     w'[o, ...] = w[o, ...] * s[o],  b' = b * s
//   add(bias_add(conv2d(x, %w), %b), %t)  ->  bias_add(conv2d(x, %w), %b'),  b' = b + t
//   sub(..., %t)                          ->  the same with b' = b - t
//
// in float32 (b = 0 without a bias_add; the constant on either side of mul and add). The
// constant holds one value, or one per output channel as [O, 1, 1] or [1, O, 1, 1]; anything
// that would broadcast the result to another shape stays. Chains fold one after another
// (scale, then shift). The pass needs no types; it runs after fold_batch_norm.
//
//   auto folded = graph::fold_scale_shift(fn, target);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function fold_scale_shift(const Function& fn, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/fold_scale_shift-inl.hpp>
#endif
