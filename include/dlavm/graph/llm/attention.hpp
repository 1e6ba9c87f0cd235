// The int8 attention blocks of a decoder layer, as graph builders: projections, head reshapes,
// causal attention with a float32 or integer-only softmax, and the int8 layer norm. Each takes
// the user's arrays; graph::llm::Decoder (llm/decoder.hpp) puts them together, and a model of
// another shape can use them directly.
//
// Every dense and matmul is requantized by a shift (rounding to nearest); the int8 scores are
// dequantized by `score_scale` (1 / sqrt(head size) by default: attention's scaling of the
// dot products, with the scores' own quantization scale folded in by the user), the
// probabilities quantized by `prob_scale`.
//
//   namespace llm = dlavm::graph::llm;
//   auto q = llm::split_heads(llm::projection(x, {wq, bq}, "q"), heads);
//   auto k = llm::split_heads(llm::projection(x, {wk, bk}, "k"), heads);
//   auto v = llm::split_heads(llm::projection(x, {wv, bv}, "v"), heads);
//   auto context = llm::merge_heads(
//       llm::attend(q, k, v, {.score_scale = llm::score_scale_for(d_model / heads)}), d_model);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <string>

namespace dlavm::graph::llm {

// How attention's softmax computes: in float32 on the host (dequantized from the int8 scores,
// quantized back to int8 probabilities, each step exact), or in integers only on VTA's ALU
// (I-BERT's shift-and-polynomial exponential: the same int8 in and out, no float step).
// Integer: one kernel, graph::integer_softmax (within one unit of the exact softmax; VTA
// computes each exponential twice, for the sum and for the probabilities). IntegerSplit: two,
// graph::integer_softmax_exp then integer_softmax_normalize (each exponential computed once
// and kept in DRAM as int8: 0.53x the cycles; within 1.3 units of the exact softmax on random
// rows, but a long context of keys 5 to 6 nats below the largest loses them, host/integer_ops.hpp).
// IntegerDeferred: no probabilities: VTA computes the exponentials (integer_softmax_exp) and
// multiplies them by the values unnormalized (an int32 context), and the host normalizes each
// row of the context once (graph::integer_context_normalize: the sum of its exponentials, the
// reciprocal, a multiply and the requantization a context value), with no probability rounded
// to int8: the closest to the exact attention of the four, and the fewest VTA cycles of the
// integer ones (docs/performance.md), at a sum a key and a multiply a context value on the host
// (a decode step's host work about twice IntegerSplit's: the exponentials reach it unpacked).
enum class Softmax : std::uint8_t { Float, Integer, IntegerSplit, IntegerDeferred };

// The quantization steps the blocks share. The defaults are the gallery's.
struct Quantization {
  std::int64_t proj_shift = 8;     // dense + bias (+ residual) -> int8
  std::int64_t score_shift = 8;    // Q . K^T -> int8 scores
  std::int64_t context_shift = 7;  // probabilities . V -> int8
  float prob_scale = 1.0f / 127.0f;
  float norm_scale = 1.0f / 32.0f;  // a layer norm's int8 input and output scale
};

// A dense layer's weights: int8 [d_out, d_in] and int32 [d_out].
struct Linear {
  te::NDArray weight, bias;
};

// A layer norm's float32 [d] scale and shift.
struct Norm {
  te::NDArray gamma, beta;
};

// 1 / sqrt(head_size): the scale of attention's scores. ValueError unless head_size > 0.
float score_scale_for(std::int64_t head_size);

// requantize(dense(x, w.weight) + w.bias (+ residual, int8, added to the accumulator), shift):
// one VTA kernel; its result named `name`. The weights are checked (ShapeError, TypeError
// naming `name`).
Expr projection(Expr x, const Linear& w, const std::string& name, std::int64_t shift = 8,
                Expr residual = {});

// [1, token, d_model] -> [1, heads, token, d_model / heads], and back.
Expr split_heads(Expr x, std::int64_t heads);
Expr merge_heads(Expr x, std::int64_t d_model);

struct AttendOptions {
  float score_scale = 0.125f;  // score_scale_for(head size)
  Softmax softmax = Softmax::Float;
  Quantization quantization = {};
};

// Causal attention of q [1, heads, token, dh] over keys and values [1, heads, positions, dh]
// (the queries are the last `token` positions): the scores on VTA, requantized to int8; the
// softmax; the weighted sum of the values on VTA, requantized to int8 (IntegerDeferred: the
// sum of the values weighted by the exponentials, normalized and requantized on the host).
Expr attend(Expr q, Expr keys, Expr values, const AttendOptions& options = {});

// The integer softmax of causal scores [1, heads, token, positions] on VTA: VTA's ALU combines
// the lanes of a tile only one by one, so the keys go to dim -2 and the heads to the lanes,
// with the queries before the keys; then back. `how`: Integer (graph::integer_softmax) or
// IntegerSplit (its halves); ValueError for Float and IntegerDeferred (which computes no
// probabilities).
Expr integer_probabilities(Expr scores, float score_scale, Softmax how = Softmax::Integer);

// int8 -> float32 (x * scale) -> layer norm over the last dim -> int8 (/ scale), on the host;
// the result named `name`.
Expr int8_layer_norm(Expr x, const Norm& w, const std::string& name, float scale);

}  // namespace dlavm::graph::llm

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/llm/attention-inl.hpp>
#endif
