// The `fake_quantization_to_integer` pass (TVM's name for it): an element-wise op between a
// dequantization of each operand and a quantization of its result, as ONNX Runtime's quantizer
// writes Add and Mul (QDQ) and as its QLinearAdd / QLinearMul are defined, becomes integer
// arithmetic on the quantized values where that gives the float path's result exactly:
//
//   quantize_linear(add(dequantize_linear(a, sa, za), dequantize_linear(b, sb, zb)), sy, zy)
//     -> cast(clip((a - za) * 2^ka + (b - zb) * 2^kb + zy, qmin, qmax), T)   (int32 between)
//
// when sa = sy * 2^ka and sb = sy * 2^kb exactly, ka and kb in [0, 8] (equal scales: ka = kb =
// 0), and `sub` the same. `mul` needs sa * sb = sy * 2^k exactly, k in [0, 4]: the product
// (a - za)(b - zb) 2^k. The float path computes these sums and products in float32 with
// relative errors of a few 2^-24, so its value lies within far less than half a level of the
// integer, which quantize_linear's rounding returns: the two agree on every input. A relu or
// clip between the op and the quantization is a clamp of the levels (quantization is
// monotonic: Q(relu(v)) = max(Q(v), zy)). Scales are float32 scalar constants, zero points
// int8 or uint8 scalar constants; T is the quantization's zero point type.
//
// Anything else stays: scales whose ratio is not such a power of two (the integer form would
// round where the float path rounds differently), average pooling and Sigmoid (a division
// or an exponential between the levels; ONNX Runtime's own kernels approximate them), and
// an op or activation read outside the pattern. Those run in float on the host. (Ops that only
// move or select values, such as MaxPool, Concat and Reshape, the ONNX importer's QDQ folding
// already moves past the dequantization.) The pass needs no types.
//
//   auto integer = graph::fake_quantization_to_integer(fn, target);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

Function fake_quantization_to_integer(const Function& fn, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/fake_quantization_to_integer-inl.hpp>
#endif
