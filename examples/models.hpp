// The gallery's models, declared once as graphs: the example programs build and run them, the
// benchmarks time their build and run, the tests check them. Weights are int8 from fixed
// seeds; every layer is requantized back to int8 (shift, round to nearest, clip), as a
// quantized network is.
#pragma once

#include <dlavm/dlavm.hpp>

#include <fmt/format.h>

#include <cstdint>

namespace models {

namespace graph = dlavm::graph;
namespace te = dlavm::te;
namespace ne = dlavm::ne;
using dlavm::DType;

// ImageNet ResNet-18 (He et al. 2016) in int8, NCHW, batch 1: a 7x7 stride-2 convolution,
// 3x3 max pooling, four stages of two basic blocks (64, 128, 256, 512 channels; the first
// block of stages 2-4 halves the size and projects its shortcut with a 1x1 stride-2
// convolution), global average pooling and a 1000-way dense layer with int32 logits.
// Each convolution is conv2d + bias_add (int32) + requantize; a block's residual sum is taken
// in int32 (its second convolution's accumulator plus the int8 shortcut), then requantized and
// rectified, which lets VTA fuse the sum into that convolution.
class ResNet18 {
 public:
  explicit ResNet18(std::int64_t image = 224, std::uint64_t seed = 2024) : seed_(seed) {
    data_ = graph::input("data", {1, 3, image, image}, DType::int8());
    auto y = conv(data_, 3, 64, 7, 2, /*relu=*/true);
    y = graph::max_pool2d(y, {.pool_size = {3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}});
    std::int64_t channels = 64;
    for (std::int64_t out : {64, 128, 256, 512}) {
      y = block(y, channels, out, out == 64 ? 1 : 2);
      y = block(y, out, out, 1);
      channels = out;
    }
    y = graph::flatten(graph::global_avg_pool2d(y));
    auto fc = graph::constant("fc.weight", te::NDArray::random(DType::int8(), {1000, 512}, seed_));
    logits_ = graph::dense(y, fc);
  }
  graph::Function function() const { return graph::function({data_}, {logits_}); }
  int convolutions() const { return layer_; }

 private:
  // conv2d + bias_add: the int32 accumulator of a layer.
  graph::Expr conv_acc(graph::Expr x, std::int64_t in, std::int64_t out, std::int64_t k,
                       std::int64_t stride) {
    const auto id = static_cast<std::uint64_t>(layer_);
    auto w =
        graph::constant(fmt::format("conv{}.weight", layer_),
                        te::NDArray::random(DType::int8(), {out, in, k, k}, seed_ + id, -8, 8));
    auto b =
        graph::constant(fmt::format("conv{}.bias", layer_),
                        te::NDArray::random(DType::int32(), {out}, seed_ + 100 + id, -256, 256));
    ++layer_;
    const std::int64_t p = k / 2;
    return graph::bias_add(
        graph::conv2d(std::move(x), w, {.strides = {stride, stride}, .padding = {p, p, p, p}}), b);
  }
  graph::Expr conv(graph::Expr x, std::int64_t in, std::int64_t out, std::int64_t k,
                   std::int64_t stride, bool relu) {
    // the shift keeps the int8 activations spread: k*k*in products of about 8 x 64
    const std::int64_t shift = k * k * in >= 576 ? 7 : 6;
    auto y = graph::requantize(conv_acc(std::move(x), in, out, k, stride),
                               {.shift = shift, .rounding = dlavm::host::Rounding::Nearest});
    return relu ? graph::relu(y) : y;
  }
  graph::Expr block(const graph::Expr& x, std::int64_t in, std::int64_t out, std::int64_t stride) {
    auto y = conv_acc(conv(x, in, out, 3, stride, true), out, out, 3, 1);
    auto shortcut = stride != 1 || in != out ? conv(x, in, out, 1, stride, false) : x;
    auto sum = graph::add(y, graph::cast(shortcut, DType::int32()));
    return graph::relu(
        graph::requantize(sum, {.shift = 7, .rounding = dlavm::host::Rounding::Nearest}));
  }

  std::uint64_t seed_;
  int layer_ = 0;
  graph::Expr data_, logits_;
};

// A multilayer perceptron over a symbolic batch (1 to 256 rows): three dense layers with bias,
// requantize and ReLU on VTA, then the int8 logits cast to float32 and a softmax, which run on
// the host.
class Mlp {
 public:
  explicit Mlp(std::uint64_t seed = 7) : batch_(ne::var("batch", 1, 256)) {
    x_ = graph::input("x", {batch_, 64}, DType::int8());
    auto y = layer(x_, 64, 128, seed, true);
    y = layer(y, 128, 128, seed + 1, true);
    y = layer(y, 128, 10, seed + 2, false);
    probs_ = graph::softmax(graph::cast(y, DType::float32()), {.axis = -1});
  }
  graph::Function function() const { return graph::function({x_}, {probs_}); }
  const ne::Var& batch() const { return batch_; }

 private:
  static graph::Expr layer(graph::Expr x, std::int64_t in, std::int64_t out, std::uint64_t seed,
                           bool relu) {
    auto w = graph::constant(fmt::format("fc{}.weight", seed),
                             te::NDArray::random(DType::int8(), {out, in}, seed, -16, 16));
    auto b = graph::constant(fmt::format("fc{}.bias", seed),
                             te::NDArray::random(DType::int32(), {out}, seed + 50, -512, 512));
    auto y = graph::requantize(graph::bias_add(graph::dense(std::move(x), w), b, {.axis = -1}),
                               {.shift = 7, .rounding = dlavm::host::Rounding::Nearest});
    return relu ? graph::relu(y) : y;
  }

  ne::Var batch_;
  graph::Expr x_, probs_;
};

// The attention models below are made of the library's LLM blocks (dlavm/graph/llm): int8
// projections, causal attention whose softmax is float32 on the host or integer-only on VTA,
// and the decoder layer with a KV cache. Their weights are drawn from fixed seeds.
namespace llm = dlavm::graph::llm;

// One causal self-attention block in int8 over a symbolic token count (1 to `max_tokens`):
// x [1, token, d_model] -> Q, K, V projections (dense + bias + requantize, on VTA) -> `heads`
// heads -> llm::attend (Q.K^T and probabilities.V as batched matmuls on VTA, the softmax on
// the host, or with Softmax::Integer on VTA) -> heads merged -> the output projection (on
// VTA). The host steps between the VTA ones reorder the heads (reshape, transpose) and pack the
// right operand of each matmul into VTA's weight layout.
class Attention {
 public:
  explicit Attention(std::int64_t d_model = 512, std::int64_t heads = 8,
                     std::int64_t max_tokens = 2048, std::uint64_t seed = 11,
                     llm::Softmax softmax = llm::Softmax::Float)
      : token_(ne::var("token", 1, max_tokens)) {
    const auto weights = [&](std::uint64_t s) {
      return llm::Linear{te::NDArray::random(DType::int8(), {d_model, d_model}, s, -16, 16),
                         te::NDArray::random(DType::int32(), {d_model}, s + 50, -512, 512)};
    };
    x_ = graph::input("x", {1, token_, d_model}, DType::int8());
    auto q = llm::split_heads(llm::projection(x_, weights(seed), "q"), heads);
    auto k = llm::split_heads(llm::projection(x_, weights(seed + 1), "k"), heads);
    auto v = llm::split_heads(llm::projection(x_, weights(seed + 2), "v"), heads);
    const llm::AttendOptions options{.score_scale = llm::score_scale_for(d_model / heads),
                                     .softmax = softmax};
    out_ = llm::projection(llm::merge_heads(llm::attend(q, k, v, options), d_model),
                           weights(seed + 3), "o");
  }
  graph::Function function() const { return graph::function({x_}, {out_}); }
  const ne::Var& token() const { return token_; }

 private:
  ne::Var token_;
  graph::Expr x_, out_;
};

// The gallery's LLM decoder layer: llm::Decoder (a pre-norm layer with a KV cache, layer norms
// on the host, the projections, the FFN and both attention matmuls on VTA, the residual sums
// fused into VTA's accumulators) with weights drawn from `seed`.
class LlmLayer {
 public:
  // A run takes at most max_tokens positions: a longer prompt runs in chunks (a firmware's
  // memory plan holds the scores of max_tokens queries, not of a whole context's).
  explicit LlmLayer(std::int64_t d_model = 512, std::int64_t heads = 8, std::int64_t ffn = 2048,
                    std::int64_t max_context = 2048, std::int64_t max_tokens = 2048,
                    std::uint64_t seed = 21, llm::Softmax softmax = llm::Softmax::Float)
      : layer_(config(d_model, heads, ffn, max_context, max_tokens, softmax),
               llm::random_decoder_weights(
                   config(d_model, heads, ffn, max_context, max_tokens, softmax), seed)) {}
  graph::Function function() const { return layer_.function(); }
  const ne::Var& token() const { return layer_.token(); }
  const ne::Var& last_token() const { return layer_.last_token(); }
  const llm::Decoder& decoder() const { return layer_; }

 private:
  static llm::DecoderConfig config(std::int64_t d_model, std::int64_t heads, std::int64_t ffn,
                                   std::int64_t max_context, std::int64_t max_tokens,
                                   llm::Softmax softmax) {
    return {.d_model = d_model,
            .heads = heads,
            .ffn = ffn,
            .max_context = max_context,
            .max_tokens = max_tokens,
            .softmax = softmax};
  }
  llm::Decoder layer_;
};

}  // namespace models
