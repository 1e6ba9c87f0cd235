// The integer softmax (host/integer_ops.hpp, runtime::integer_softmax) as te stages that VTA's
// ALU computes: a block of int32 scores in the accumulator with the keys along dim 0 and the
// rows being normalized along the lanes (dim 1, whole tiles), so that the max and the sum over
// keys combine accumulator tiles lane by lane. The arithmetic is runtime::integer_softmax's,
// stage for stage:
//   max over keys; t = (s - max) * multiplier; z = -(t >> frac_bits) and the fraction r;
//   p = (((84 r + 21864) r) >> 4) + 2^18; e = (p >> min(z, 15)) >> min(max(z - 15, 0), 15)
//   (the second shift clears what the first leaves when z >= 19: p < 2^19); sum over keys;
//   R = floor(127 * 2^23 / sum) by restoring division, 12 quotient bits (the ALU cannot
//   divide: compare, subtract, shift); y = (e * R + 2^22) >> 23 with R split in two 6-bit
//   halves.
// Every tile-by-tile multiply and shift reads its second operand from a tile whose lanes fit
// what the hardware takes from it (VTA's compute module uses the low 8 bits of a multiplier
// and the low LOG_ACC_WIDTH bits of a shift amount, the functional simulator the whole value):
// multipliers r in [0, 127], a quotient bit, R's halves in [0, 63]; shift amounts in [0, 15].
// The max and the sum over a constant number of keys halve the block level by level, one ALU
// instruction per level over the entries that remain (its micro-ops write distinct entries, so
// no micro-op reads an entry the one before it wrote); over a symbolic number they are window
// reductions, one instruction per key.
// No masking: every key of the block counts (a causal block leaves this to the caller).
//
//   auto st = graph::integer_softmax_stages(scores, host::integer_exp_for(0.125), "sm");
//   // a [blocks, keys, lanes] scores: s[t].compute_at(s[res], block_axis) for each stage
//   for (const auto& t : st.alu) { s[t].set_scope(env.acc_scope); s[t].pragma(...); }
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/te/tensor.hpp>

#include <string>
#include <vector>

namespace dlavm::graph {

struct IntegerSoftmaxStages {
  te::Tensor result;            // int32 [lead..., keys, lanes]: probabilities in units of 1/127
  std::vector<te::Tensor> alu;  // every stage, in order (the ALU computes each; result last)
};

// The stages over `scores` (int32 [lead..., keys, lanes], a stage in the accumulator): each
// block of the leading dims normalized on its own, every stage with the same leading dims (a
// kernel computes them at its block loop, so that one block's buffers are live at a time).
// Their tensors' names start with `name`. ShapeError for scores of rank below 2.
IntegerSoftmaxStages integer_softmax_stages(const te::Tensor& scores, runtime::IntegerExp fixed,
                                            const std::string& name);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy/integer_softmax-inl.hpp>
#endif
