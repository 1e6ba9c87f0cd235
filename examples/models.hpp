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

// The pieces of the attention models below, in int8 with the quantization steps they share:
// every dense and matmul is requantized by a shift (rounding to nearest), the int8 scores
// dequantized by 1/8 (the 1/sqrt(64) of attention over 64-dim heads), the probabilities
// quantized by 1/127.
namespace attention {

inline constexpr std::int64_t kProjShift = 8, kScoreShift = 8, kContextShift = 7;
inline constexpr float kScoreScale = 0.125f, kProbScale = 1.0f / 127.0f;

inline graph::Expr scalar(const std::string& name, float value) {
  return graph::constant(name, te::NDArray::from_floats({}, {value}));
}
inline graph::Expr zero(const std::string& name) {
  return graph::constant(name, te::NDArray(DType::int8(), {}));
}

// dense(x, w[d_out, d_in]) + b, then `residual` (int8, added to the accumulator) if given,
// requantized by `shift`: one VTA kernel.
inline graph::Expr projection(graph::Expr x, const std::string& name, std::int64_t d_in,
                              std::int64_t d_out, std::uint64_t seed,
                              std::int64_t shift = kProjShift, graph::Expr residual = {}) {
  auto w =
      graph::constant("w" + name, te::NDArray::random(DType::int8(), {d_out, d_in}, seed, -16, 16));
  auto b = graph::constant("b" + name,
                           te::NDArray::random(DType::int32(), {d_out}, seed + 50, -512, 512));
  auto acc = graph::bias_add(graph::dense(std::move(x), w), b, {.axis = -1});
  if (residual.defined()) acc = graph::add(acc, graph::cast(residual, DType::int32()));
  return graph::named(
      graph::requantize(acc, {.shift = shift, .rounding = dlavm::host::Rounding::Nearest}), name);
}

// [1, token, d_model] -> [1, heads, token, d_model / heads], and back
inline graph::Expr split_heads(graph::Expr x, std::int64_t heads) {
  return graph::transpose(graph::reshape(std::move(x), {.newshape = {0, 0, heads, -1}}),
                          {.perm = {0, 2, 1, 3}});
}
inline graph::Expr merge_heads(graph::Expr x, std::int64_t d_model) {
  return graph::reshape(graph::transpose(std::move(x), {.perm = {0, 2, 1, 3}}),
                        {.newshape = {0, 0, d_model}});
}

// How attention's softmax computes: in float32 on the host (dequantized from the int8 scores,
// quantized back to int8 probabilities, each step exact), or in integers only on VTA's ALU
// (graph::integer_softmax, I-BERT's shift-and-polynomial exponential: the same int8 in and out,
// no float step).
enum class Softmax : std::uint8_t { Float, Integer };

// The integer softmax of causal scores [1, heads, token, positions] on VTA: VTA's ALU combines
// the lanes of a tile only one by one, so the keys go to dim -2 (the accumulator's rows) and the
// heads to the last dim (the lanes), with the queries before the keys, where a query's visible
// keys are a bound on the rows; then back.
inline graph::Expr integer_probabilities(graph::Expr scores) {
  auto by_key = graph::transpose(std::move(scores), {.perm = {0, 2, 3, 1}});
  auto p = graph::integer_softmax(by_key, {.axis = -2,
                                           .scale = kScoreScale,
                                           .causal = true,
                                           .queries = dlavm::host::CausalQueries::Before});
  return graph::transpose(p, {.perm = {0, 3, 1, 2}});
}

// Causal attention of q [1, heads, token, dh] over keys and values [1, heads, positions, dh]
// (the queries are the last `token` positions): the scores on VTA, requantized to int8; the
// softmax (`softmax`: in float32 on the host between exact dequantize and quantize steps, or in
// integers on VTA); the weighted sum of the values on VTA.
inline graph::Expr attend(graph::Expr q, graph::Expr keys, graph::Expr values,
                          Softmax softmax = Softmax::Float) {
  auto scores = graph::named(
      graph::requantize(graph::matmul(std::move(q), graph::transpose(keys, {.perm = {0, 1, 3, 2}})),
                        {.shift = kScoreShift, .rounding = dlavm::host::Rounding::Nearest}),
      "scores");
  auto probs =
      graph::named(softmax == Softmax::Integer
                       ? integer_probabilities(scores)
                       : graph::quantize_linear(
                             graph::softmax(graph::causal_mask(graph::dequantize_linear(
                                 scores, scalar("score_scale", kScoreScale), zero("score_zero")))),
                             scalar("prob_scale", kProbScale), zero("prob_zero")),
                   "probs");
  return graph::requantize(graph::matmul(probs, std::move(values)),
                           {.shift = kContextShift, .rounding = dlavm::host::Rounding::Nearest});
}

}  // namespace attention

// One causal self-attention block in int8 over a symbolic token count (1 to `max_tokens`):
// x [1, token, d_model] -> Q, K, V projections (dense + bias + requantize, on VTA) -> `heads`
// heads -> attention::attend (Q.K^T and probabilities.V as batched matmuls on VTA, the
// softmax on the host, or with Softmax::Integer on VTA) -> heads merged -> the output projection
// (on VTA). The host steps between the VTA ones reorder the heads (reshape, transpose) and pack the
// right operand of each matmul into VTA's weight layout.
class Attention {
 public:
  explicit Attention(std::int64_t d_model = 512, std::int64_t heads = 8,
                     std::int64_t max_tokens = 2048, std::uint64_t seed = 11,
                     attention::Softmax softmax = attention::Softmax::Float)
      : token_(ne::var("token", 1, max_tokens)) {
    using namespace attention;
    x_ = graph::input("x", {1, token_, d_model}, DType::int8());
    auto q = split_heads(projection(x_, "q", d_model, d_model, seed), heads);
    auto k = split_heads(projection(x_, "k", d_model, d_model, seed + 1), heads);
    auto v = split_heads(projection(x_, "v", d_model, d_model, seed + 2), heads);
    out_ =
        projection(merge_heads(attend(q, k, v, softmax), d_model), "o", d_model, d_model, seed + 3);
  }
  graph::Function function() const { return graph::function({x_}, {out_}); }
  const ne::Var& token() const { return token_; }

 private:
  ne::Var token_;
  graph::Expr x_, out_;
};

// One pre-norm decoder layer of an LLM in int8 with a KV cache:
//   h = x + attention(layer_norm(x)),  y = h + ffn(layer_norm(h)),  ffn = dense, ReLU, dense
// over `token` new positions (1 to max_tokens, at most max_context) after `last_token` cached
// ones (0 to max_context - 1). The cached keys and values are two states of the module
// (graph::State, [1, heads, last_token, dh] each): a run appends the new tokens' K and V and
// attends over last_token + token positions, so the same build serves a prefill and every decode
// step. The layer norms run on the host in float32 (dequantized by 1/32, quantized back by 1/32);
// the projections, the FFN and both attention matmuls run on VTA; the residual sums are added
// to the accumulators of the output projection and of the FFN's second dense (VTA's fused
// residual, as in ResNet). The softmax is float32 or integer-only (`softmax`, attention::attend).
class LlmLayer {
 public:
  static constexpr float kNormScale = 1.0f / 32.0f;

  // A run takes at most max_tokens positions: a longer prompt runs in chunks (a firmware's
  // memory plan holds the scores of max_tokens queries, not of a whole context's).
  explicit LlmLayer(std::int64_t d_model = 512, std::int64_t heads = 8, std::int64_t ffn = 2048,
                    std::int64_t max_context = 2048, std::int64_t max_tokens = 2048,
                    std::uint64_t seed = 21, attention::Softmax softmax = attention::Softmax::Float)
      : token_(ne::var("token", 1, std::min(max_tokens, max_context))),
        last_token_(ne::var("last_token", 0, max_context - 1)) {
    using namespace attention;
    const std::int64_t dh = d_model / heads;
    x_ = graph::input("x", {1, token_, d_model}, DType::int8());
    k_cache_ = graph::state_input("k_cache", {1, heads, last_token_, dh}, DType::int8());
    v_cache_ = graph::state_input("v_cache", {1, heads, last_token_, dh}, DType::int8());
    auto n1 = norm(x_, "ln1", d_model, seed);
    auto q = split_heads(projection(n1, "q", d_model, d_model, seed + 1), heads);
    keys_ = graph::concat(
        {k_cache_, split_heads(projection(n1, "k", d_model, d_model, seed + 2), heads)},
        {.axis = 2});
    values_ = graph::concat(
        {v_cache_, split_heads(projection(n1, "v", d_model, d_model, seed + 3), heads)},
        {.axis = 2});
    auto h = projection(merge_heads(attend(q, keys_, values_, softmax), d_model), "o", d_model,
                        d_model, seed + 4, kProjShift, x_);
    auto n2 = norm(h, "ln2", d_model, seed + 5);
    auto up = graph::relu(projection(n2, "up", d_model, ffn, seed + 6));
    out_ = projection(up, "down", ffn, d_model, seed + 7, kProjShift + 1, h);
  }
  graph::Function function() const {
    return graph::function({x_}, {out_}, {{k_cache_, keys_}, {v_cache_, values_}});
  }
  const ne::Var& token() const { return token_; }
  const ne::Var& last_token() const { return last_token_; }

 private:
  // int8 -> float32 -> layer norm (gamma near 1, beta near 0, from the seed) -> int8
  static graph::Expr norm(graph::Expr x, const std::string& name, std::int64_t d_model,
                          std::uint64_t seed) {
    using namespace attention;
    const auto gamma = te::NDArray::random_float({d_model}, seed, 0.5, 1.5);
    const auto beta = te::NDArray::random_float({d_model}, seed + 50, -0.5, 0.5);
    auto y = graph::layer_norm(
        graph::dequantize_linear(std::move(x), scalar(name + ".in_scale", kNormScale),
                                 zero(name + ".in_zero")),
        graph::constant(name + ".gamma", gamma), graph::constant(name + ".beta", beta));
    return graph::named(graph::quantize_linear(y, scalar(name + ".out_scale", kNormScale),
                                               zero(name + ".out_zero")),
                        name);
  }

  ne::Var token_, last_token_;
  graph::Expr x_, k_cache_, v_cache_, keys_, values_, out_;
};

}  // namespace models
