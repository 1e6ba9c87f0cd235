// Definitions for graph/pipeline.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/assign_layouts.hpp>
#include <dlavm/graph/channel_weights.hpp>
#include <dlavm/graph/fake_quantization_to_integer.hpp>
#include <dlavm/graph/fold_batch_norm.hpp>
#include <dlavm/graph/fold_rounding.hpp>
#include <dlavm/graph/fold_scale_shift.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/match_states.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/pipeline.hpp>
#include <dlavm/graph/recognize_gelu.hpp>
#include <dlavm/graph/recognize_hard_swish.hpp>
#include <dlavm/graph/recognize_layer_norm.hpp>
#include <dlavm/graph/target.hpp>
#include <dlavm/graph/widen_accumulator_loads.hpp>

namespace dlavm::graph {

DLAVM_INLINE std::vector<Pass> default_passes() {
  return {
      {"fold_batch_norm",
       "folds a batch_norm into the convolution or dense layer with constant weights before it",
       fold_batch_norm},
      {"fold_scale_shift",
       "folds a product or sum with a constant into the convolution with constant weights before "
       "it",
       fold_scale_shift},
      {"recognize_layer_norm",
       "replaces layer normalization written out in element-wise ops with one layer_norm",
       recognize_layer_norm},
      {"recognize_gelu", "replaces GELU written out in element-wise ops with one gelu",
       recognize_gelu},
      {"recognize_hard_swish",
       "replaces hard swish written out in element-wise ops with one hard_swish",
       recognize_hard_swish},
      {"fake_quantization_to_integer",
       "computes an add, sub or mul between dequantizations and a quantization in integers where "
       "that is exact",
       fake_quantization_to_integer},
      {"type",
       "types every call with its op's type rule; a call the host cannot run stays unplaced",
       [](const Function& fn, const Target& t) {
         return detail::infer_types(fn, t.ops, {}, detail::HostSupport::Defer);
       }},
      {"widen_accumulator_loads",
       "on a VTA design without LOAD ACC_8BIT, pools an int8 value's int32 cast and casts the "
       "result back",
       widen_accumulator_loads},
      {"partition",
       "fuses VTA kernels (an anchor and its epilogue) and places every call on VTA or the host",
       place},
      {"fold_rounding",
       "adds a requantize's rounding constant to the constant bias before it in a VTA kernel",
       fold_rounding},
      {"channel_weights",
       "adds a constant bias through the GEMM core (as int8 weights) in a VTA kernel whose "
       "strategy can, where its values allow",
       channel_weights},
      {"layout", "gives each VTA kernel's inputs and result the packed layouts of its strategy",
       assign_layouts},
      {"match_states",
       "holds a growing state packed where VTA kernels alone read it appended, as a weight",
       match_states},
  };
}

}  // namespace dlavm::graph
