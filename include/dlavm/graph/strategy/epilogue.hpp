// The element-wise tail of a VTA kernel: what fused graph ops (bias_add, a residual add,
// requantize, relu, clip) become once they run in the accumulator after a convolution or a
// dense layer, and the te stages that compute them. Invariants of an Epilogue:
//   - it works on the anchor's int32 accumulator block, in order, one ALU pass per step;
//   - an AddChannel operand is a per-output-channel vector of the accumulator's dtype (a bias),
//     packed as [C/BO, BATCH, BLOCK_OUT] and loaded once; an AddTensor operand has the output's
//     packed shape and is int32, or int8 loaded through the ACC_8BIT path (sign-extended);
//   - a ChannelWeights operand is such a vector the GEMM core adds instead of the ALU: int8
//     weights against a constant input tile (graph/layout.hpp's ChannelWeights layout), one
//     GEMM micro-op per output tile into a block of its own, which vta::gemm_into_acc then
//     retargets into the accumulator (so the ALU's ADD, two cycles a tile, becomes one GEMM
//     cycle);
//   - the kernel stores the int8 cast of the last step (VTA's store keeps the low 8 bits, the
//     two's-complement wrap that graph::cast defines), or, with `int32_result`, the int32
//     value itself as four byte planes: plane p = value >> 8p, one ALU copy and shift per
//     plane into a block of its own, stored with the plane dim after the channel tiles
//     (graph/layout.hpp's byte planes), so that a value VTA cannot requantize exactly (an
//     ONNX rescale, scores for a float softmax) still leaves VTA whole.
// Immediates are checked by the VTA passes against the hardware's argument widths.
//
//   graph::Epilogue ep;
//   ep.add_channel(DType::int32());        // + bias[c]
//   ep.imm(graph::EpilogueStep::Kind::Shr, 8, env.config);
//   ep.imm(graph::EpilogueStep::Kind::Max, 0, env.config);
//   ep.imm(graph::EpilogueStep::Kind::Min, 127, env.config);
//   auto st = graph::make_epilogue(env, acc, ep);    // st.res: the int8 result
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/te/tensor.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace dlavm::graph {

struct EpilogueStep {
  enum class Kind : std::uint8_t { Add, Shr, Max, Min, AddChannel, AddTensor };
  Kind kind = Kind::Add;
  std::int64_t imm = 0;   // Add, Shr, Max, Min: the immediate operand
  std::size_t input = 0;  // AddChannel, AddTensor: index into Epilogue::inputs
  friend bool operator==(const EpilogueStep&, const EpilogueStep&) = default;
};

// An operand the epilogue reads from DRAM.
struct EpilogueInput {
  enum class Kind : std::uint8_t { Channel, Tensor, ChannelWeights };
  Kind kind = Kind::Channel;
  DType dtype = DType::int32();  // Channel, ChannelWeights: int32; Tensor: int32 or int8
  friend bool operator==(const EpilogueInput&, const EpilogueInput&) = default;
};

struct Epilogue {
  std::vector<EpilogueStep> steps;
  std::vector<EpilogueInput> inputs;
  bool int32_result = false;  // the result is the int32 value as byte planes, not its int8 cast
  static constexpr std::int64_t kPlanes = 4;

  // Appends an immediate step, merging it into an earlier step where that is exact:
  // max(max(x, a), b) = max(x, max(a, b)), likewise min; x + a + b when the sum fits the ADD
  // immediate of `config` (vta::alu_imm_range);
  // a bound after a clamp moves into it (max(min(max(x, a), b), c) = min(max(x, max(a, c)), b)
  // for c <= b), so requantize's clip and a following relu cost two passes, not three.
  void imm(EpilogueStep::Kind kind, std::int64_t value, const vta::Config& config);
  // Appends `+ operand` for a new input; returns the input's index.
  std::size_t add_channel(DType dtype = DType::int32());
  std::size_t add_tensor(DType dtype);
  // The step whose Tensor operand a GEMM anchor's kernel may load into its accumulator in
  // place of the reset: the first AddTensor, when only additions come before it (adding
  // commutes with the GEMMs' sums); nullopt otherwise. Whether it does is the lowering's
  // decision (vta::load_acc_init, which also checks the blocks' entries): this says where it
  // can, for footprints and tests that allow for it.
  std::optional<std::size_t> init_tensor() const;
  // How many ALU passes the epilogue costs per output tile: one per step but the
  // ChannelWeights operands' additions (GEMM micro-ops once vta::gemm_into_acc runs); the byte
  // planes' copies (a reset and an ADD each) and shifts (8, then 15 + 1, then 15 + 9) add 13.
  std::size_t alu_passes() const { return steps.size() - gemm_passes() + (int32_result ? 13 : 0); }
  // The GEMM micro-ops the epilogue adds per output tile: one per ChannelWeights operand.
  std::size_t gemm_passes() const;
  // The stored bytes per element of the result.
  std::int64_t result_bytes() const { return int32_result ? kPlanes : 1; }
  friend bool operator==(const Epilogue&, const Epilogue&) = default;
};

// "+bias, >>8, max 0, min 127": the steps in order, for summaries and messages; "int32
// planes" last for an int32 result.
std::string to_string(const Epilogue& e);

// The te stages of an epilogue over an accumulator tensor `acc` in a packed layout whose dim
// `channel_dim` counts channel tiles (1; 2 for a batched matmul's leading dim of products) and
// whose last two dims are the tile (BATCH, BLOCK_OUT).
struct EpilogueStages {
  std::vector<te::Tensor> inputs;  // placeholders, one per Epilogue::inputs, in order
  // the Channel operands' copies into the accumulator; for a ChannelWeights operand, its
  // GEMM stage (the operand at every entry of the accumulator's block)
  std::vector<te::Tensor> channels;
  std::vector<te::Tensor> units;    // ChannelWeights: the constant input tile's copy (INP)
  std::vector<te::Tensor> weights;  // ChannelWeights: the weights' copy (WGT)
  std::vector<te::Tensor> tensors;  // the Tensor operands' copies into the accumulator
  std::vector<te::Tensor> alu;      // one stage per step
  te::Tensor planes;  // int32_result: the shifted copies, [.., P, ..] after the channel dim
  te::Tensor res;     // the int8 result (the stored stage)
  std::size_t channel_dim = 1;

  // The result's axes a strategy's schedule orders besides its own: the plane axis (the dim
  // after the channel tiles) for an int32 result, to be placed inside the loop the stages
  // attach to; none else.
  std::vector<te::IterVar> plane_axes(te::Schedule& s) const;
  // The dim of res that holds the planes.
  std::size_t plane_dim() const { return channel_dim + 1; }
  // The res axis that is dim `d` of the value without planes.
  std::size_t res_dim(std::size_t d) const {
    return planes.defined() && d >= plane_dim() ? d + 1 : d;
  }

  // A kernel's parameters: the anchor's arguments, then the epilogue's inputs in order, then
  // the result (what vta::build takes, and what graph::build hands the program).
  std::vector<te::Tensor> kernel_args(std::initializer_list<te::Tensor> anchor_args) const;

  // The accumulator stages are computed at loop `attach` of res (the stage that stores) and
  // run on the ALU; Tensor copies load per block at `attach`, Channel copies once at the root,
  // ChannelWeights' GEMM stages per block at `attach` (tensorized, their copies loaded there);
  // the planes per plane, at the (unrolled) plane axis, which must be inside `attach`.
  void schedule(te::Schedule& s, const vta::Env& env, const te::IterVar& attach) const;
  // Accumulator entries (tiles) the operands' copies need besides the anchor's block of
  // `block_tiles`: a block per virtual thread for each Tensor and ChannelWeights operand and
  // for the planes, `channel_tiles` once for each Channel operand. An upper bound: where
  // vta::load_acc_init loads a GEMM anchor's init_tensor() operand into the anchor's block, or
  // vta::gemm_into_acc moves a ChannelWeights GEMM into it, that operand needs none.
  static std::int64_t acc_entries(const Epilogue& e, std::int64_t block_tiles,
                                  std::int64_t channel_tiles, int vthreads);
};

// x op imm for an immediate step (add, shift right, max, min): the element-wise operation the
// ALU applies; ValueError for a step that reads an operand.
te::Expr apply_immediate(const te::Expr& x, const EpilogueStep& step);

// A stage that copies tensor t element by element, cast to `dtype` when that differs from t's
// (the copies strategies stage into SRAM: a DMA load, or ACC_8BIT's widening one).
te::Tensor copy_stage(const te::Tensor& t, DType dtype, std::string name);
inline te::Tensor copy_stage(const te::Tensor& t, std::string name) {
  return copy_stage(t, t.dtype(), std::move(name));
}

// The schedule of a tensorized GEMM stage `acc` and its operands, as conv2d and dense share it:
// the input and weight copies staged in their SRAMs and loaded (dma_copy) at each step
// `reduce_step` of the reduction, acc in the accumulator and tensorized from `gemm_at` inward.
void schedule_gemm(te::Schedule& s, const vta::Env& env, const te::Tensor& inp_buf,
                   const te::Tensor& wgt_buf, const te::Tensor& acc, const te::IterVar& reduce_step,
                   const te::IterVar& gemm_at);

// Why a kernel under `env` cannot take the epilogue's operands, or nullopt: a ChannelWeights
// operand's input row is read from one weight tile, so BATCH must not exceed BLOCK_OUT.
std::optional<std::string> check_epilogue(const vta::Env& env, const Epilogue& e);

// Input and weight entries the ChannelWeights operands' copies need per virtual thread, with
// `channel_tiles` output channel tiles in a block.
struct EpilogueSram {
  std::int64_t inp = 0, wgt = 0;
};
EpilogueSram epilogue_sram(const Epilogue& e, std::int64_t channel_tiles);

// Declares the stages; `name` prefixes their names. The packed shape of a Channel input is
// [acc dim `channel_dim`, BATCH, BLOCK_OUT]; of a ChannelWeights input, graph/layout.hpp's
// ChannelWeights layout with rows BLOCK_OUT and columns BLOCK_IN; a Tensor input has acc's
// shape.
EpilogueStages make_epilogue(const vta::Env& env, const te::Tensor& acc, const Epilogue& e,
                             const std::string& name, std::size_t channel_dim = 1);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy/epilogue-inl.hpp>
#endif
