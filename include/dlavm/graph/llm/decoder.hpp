// One pre-norm decoder layer of an LLM in int8 with a KV cache, built from the user's weights:
//
//   h = x + attention(layer_norm(x)),  y = h + ffn(layer_norm(h)),  ffn = dense, ReLU, dense
//
// over `token` new positions (1 to max_tokens) after `last_token` cached ones (0 to
// max_context - 1). The cached keys and values are two states of the function (graph::State,
// [1, heads, last_token, dh] each): a run appends the new tokens' K and V and attends over
// last_token + token positions, so that one build serves a prefill and every decode step. The
// layer norms run on the host in float32; the projections, the FFN and both attention matmuls
// on VTA; the residual sums are added to the accumulators of the output projection and of the
// FFN's second dense (VTA's fused residual). The softmax is float32 on the host or integer-only
// on VTA (llm::Softmax).
//
// A host-only build of the same function (no VTA strategies: every step on the host kernels)
// is graph::build with a Target whose strategies are empty (docs/graph.md).
//
//   namespace llm = dlavm::graph::llm;
//   const llm::DecoderConfig config{.d_model = 256, .heads = 4, .ffn = 1024};
//   const auto weights = llm::read_decoder_weights("layer0/");  // layer0/q.weight.npy, ...
//   const llm::Decoder layer(config, weights);
//   auto mod = graph::build(layer.function(), graph::Target{});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/llm/attention.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dlavm::graph::llm {

struct DecoderConfig {
  std::int64_t d_model = 512;
  std::int64_t heads = 8;  // d_model a multiple of it; the head size is d_model / heads
  std::int64_t ffn = 2048;
  std::int64_t max_context = 2048;  // cached plus new positions
  std::int64_t max_tokens = 2048;   // new positions of one run (a longer prompt runs in chunks)
  Softmax softmax = Softmax::Float;
  std::optional<float> score_scale = std::nullopt;  // unset: score_scale_for(d_model / heads)
  Quantization quantization = {};
  std::int64_t down_shift = 9;  // the FFN's second dense (its d_in is ffn, not d_model)
};

// The weights of a layer. Their names, in maps and folders: ln1.gamma, ln1.beta, q.weight,
// q.bias (and k, v, o), ln2.gamma, ln2.beta, up.weight, up.bias, down.weight, down.bias.
struct DecoderWeights {
  Norm ln1;
  Linear q, k, v, o;
  Norm ln2;
  Linear up, down;
};

// The sixteen names above, in that order.
const std::vector<std::string>& decoder_weight_names();

// Weights drawn from `seed` (int8 in [-16, 16), int32 biases in [-512, 512), gamma in
// [0.5, 1.5), beta in [-0.5, 0.5)): the gallery's layer.
DecoderWeights random_decoder_weights(const DecoderConfig& config, std::uint64_t seed);

// The weights named `prefix` + name in `arrays` (an ONNX model's initializers:
// onnx::read_initializers, or a map of the user's own); ValueError naming a missing one.
DecoderWeights decoder_weights(const std::map<std::string, te::NDArray>& arrays,
                               const std::string& prefix = "");

// The weights as .npy files, dir / (prefix + name + ".npy") (te::read_npy).
DecoderWeights read_decoder_weights(const std::filesystem::path& dir,
                                    const std::string& prefix = "");

// The weights by name, as decoder_weights reads them (to write them out, e.g. as .npy).
std::map<std::string, te::NDArray> named_arrays(const DecoderWeights& weights);

class Decoder {
 public:
  // ShapeError or TypeError naming the weight whose shape or dtype does not fit the config.
  Decoder(const DecoderConfig& config, const DecoderWeights& weights);

  // x [1, token, d_model] int8 -> [1, token, d_model] int8, with the states k_cache and
  // v_cache [1, heads, last_token, d_model / heads].
  Function function() const;
  const ne::Var& token() const { return token_; }
  const ne::Var& last_token() const { return last_token_; }
  float score_scale() const { return score_scale_; }

 private:
  ne::Var token_, last_token_;
  float score_scale_;
  Expr x_, k_cache_, v_cache_, keys_, values_, out_;
};

}  // namespace dlavm::graph::llm

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/llm/decoder-inl.hpp>
#endif
