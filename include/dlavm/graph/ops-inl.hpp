// Definitions for graph/ops.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/ops.hpp>

namespace dlavm::graph {

DLAVM_INLINE OpRegistry default_ops() {
  OpRegistry ops;
  add_linear_ops(ops);
  add_conv_ops(ops);
  add_pool_ops(ops);
  add_elementwise_ops(ops);
  add_unary_ops(ops);
  add_reduce_ops(ops);
  add_logic_ops(ops);
  add_quantize_ops(ops);
  add_transform_ops(ops);
  add_image_ops(ops);
  add_float_ops(ops);
  add_recurrent_ops(ops);
  add_integer_ops(ops);
  return ops;
}

}  // namespace dlavm::graph
