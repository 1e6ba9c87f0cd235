// The graph's op set: the typed builder functions of every family, and default_ops(), the
// registry holding their records. Each family header lists its ops with their shapes and
// attributes; host/ defines their exact semantics.
//
//   linear       dense, matmul                              graph/ops/linear.hpp
//   conv         conv2d, conv2d_transpose                   graph/ops/conv.hpp
//   pool         max_pool2d, avg_pool2d, global_avg_pool2d  graph/ops/pool.hpp
//   elementwise  add, sub, mul, div, pow, maximum, minimum,  graph/ops/elementwise.hpp
//                prelu, bias_add, relu, clip
//   unary        sigmoid, tanh, exp, log, sqrt, erf, abs,   graph/ops/unary.hpp
//                neg, hard_sigmoid, hard_swish, leaky_relu,
//                and 23 more (graph/ops/unary.hpp)
//   reduce       reduce_sum, reduce_mean, reduce_max,       graph/ops/reduce.hpp
//                reduce_min, argmax, argmin
//   logic        equal, not_equal, greater, greater_equal,  graph/ops/logic.hpp
//                less, less_equal, logical_and, logical_or,
//                logical_xor, logical_not, where, is_nan,
//                is_inf
//   quantize     requantize, cast                           graph/ops/quantize.hpp
//   transform    reshape, transpose, flatten, concat, pad,  graph/ops/transform.hpp
//                strided_slice, take, broadcast_to, tile
//   image        resize2d                                   graph/ops/image.hpp
//   float_ops    softmax, log_softmax, layer_norm, gelu,    graph/ops/float_ops.hpp
//                causal_mask, batch_norm
//   recurrent    recurrent (LSTM, GRU, RNN)                 graph/ops/recurrent.hpp
//   integer_ops  integer_softmax                            graph/ops/integer_ops.hpp
//
//   auto y = graph::requantize(graph::dense(x, w), {.shift = 8});
//   graph::OpRegistry ops = graph::default_ops();    // then ops.add(...) for custom ops
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/ops/conv.hpp>
#include <dlavm/graph/ops/elementwise.hpp>
#include <dlavm/graph/ops/float_ops.hpp>
#include <dlavm/graph/ops/image.hpp>
#include <dlavm/graph/ops/integer_ops.hpp>
#include <dlavm/graph/ops/linear.hpp>
#include <dlavm/graph/ops/logic.hpp>
#include <dlavm/graph/ops/pool.hpp>
#include <dlavm/graph/ops/quantize.hpp>
#include <dlavm/graph/ops/recurrent.hpp>
#include <dlavm/graph/ops/reduce.hpp>
#include <dlavm/graph/ops/transform.hpp>
#include <dlavm/graph/ops/unary.hpp>

namespace dlavm::graph {

// A registry with every op above; built afresh on each call (no global state).
OpRegistry default_ops();

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops-inl.hpp>
#endif
