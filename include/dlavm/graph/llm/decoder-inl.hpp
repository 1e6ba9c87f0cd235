// Definitions for graph/llm/decoder.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/llm/decoder.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/te/npy.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace dlavm::graph::llm {

namespace detail {

// Every weight of `w` with its name, in decoder_weight_names()'s order.
template <class W, class F>
void for_each_weight(W& w, F f) {
  f("ln1.gamma", w.ln1.gamma);
  f("ln1.beta", w.ln1.beta);
  const std::pair<const char*, decltype(&w.q)> linears[] = {
      {"q", &w.q}, {"k", &w.k}, {"v", &w.v}, {"o", &w.o}};
  for (const auto& [name, l] : linears) {
    f(std::string(name) + ".weight", l->weight);
    f(std::string(name) + ".bias", l->bias);
  }
  f("ln2.gamma", w.ln2.gamma);
  f("ln2.beta", w.ln2.beta);
  f("up.weight", w.up.weight);
  f("up.bias", w.up.bias);
  f("down.weight", w.down.weight);
  f("down.bias", w.down.bias);
}

inline void check_shape(const te::NDArray& a, const std::string& name, DType dtype,
                        const std::vector<std::int64_t>& shape) {
  if (a.dtype() != dtype)
    raise<TypeError>("decoder weight '{}' is {}[{}], expected {}[{}]", name, a.dtype(),
                     fmt::join(a.shape(), ", "), dtype, fmt::join(shape, ", "));
  if (a.shape() != shape)
    raise<ShapeError>("decoder weight '{}' is {}[{}], expected {}[{}]", name, a.dtype(),
                      fmt::join(a.shape(), ", "), dtype, fmt::join(shape, ", "));
}

}  // namespace detail

DLAVM_INLINE const std::vector<std::string>& decoder_weight_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    const DecoderWeights w;
    detail::for_each_weight(
        w, [&](const std::string& name, const te::NDArray&) { out.push_back(name); });
    return out;
  }();
  return names;
}

DLAVM_INLINE DecoderWeights random_decoder_weights(const DecoderConfig& c, std::uint64_t seed) {
  const auto linear = [](std::int64_t d_in, std::int64_t d_out, std::uint64_t s) {
    return Linear{te::NDArray::random(DType::int8(), {d_out, d_in}, s, -16, 16),
                  te::NDArray::random(DType::int32(), {d_out}, s + 50, -512, 512)};
  };
  const auto norm = [&](std::uint64_t s) {
    return Norm{te::NDArray::random_float({c.d_model}, s, 0.5, 1.5),
                te::NDArray::random_float({c.d_model}, s + 50, -0.5, 0.5)};
  };
  return {.ln1 = norm(seed),
          .q = linear(c.d_model, c.d_model, seed + 1),
          .k = linear(c.d_model, c.d_model, seed + 2),
          .v = linear(c.d_model, c.d_model, seed + 3),
          .o = linear(c.d_model, c.d_model, seed + 4),
          .ln2 = norm(seed + 5),
          .up = linear(c.d_model, c.ffn, seed + 6),
          .down = linear(c.ffn, c.d_model, seed + 7)};
}

DLAVM_INLINE DecoderWeights decoder_weights(const std::map<std::string, te::NDArray>& arrays,
                                            const std::string& prefix) {
  DecoderWeights w;
  detail::for_each_weight(w, [&](const std::string& name, te::NDArray& a) {
    const auto it = arrays.find(prefix + name);
    if (it == arrays.end())
      raise<ValueError>("decoder weights: no array named '{}{}' ({} arrays given)", prefix, name,
                        arrays.size());
    a = it->second;
  });
  return w;
}

DLAVM_INLINE DecoderWeights read_decoder_weights(const std::filesystem::path& dir,
                                                 const std::string& prefix) {
  DecoderWeights w;
  detail::for_each_weight(w, [&](const std::string& name, te::NDArray& a) {
    a = te::read_npy(dir / (prefix + name + ".npy"));
  });
  return w;
}

DLAVM_INLINE std::map<std::string, te::NDArray> named_arrays(const DecoderWeights& weights) {
  std::map<std::string, te::NDArray> out;
  detail::for_each_weight(weights,
                          [&](const std::string& name, const te::NDArray& a) { out[name] = a; });
  return out;
}

DLAVM_INLINE Decoder::Decoder(const DecoderConfig& c, const DecoderWeights& w)
    : token_(ne::var("token", 1, std::min(c.max_tokens, c.max_context))),
      last_token_(ne::var("last_token", 0, c.max_context - 1)),
      score_scale_(0.0f) {
  if (c.d_model <= 0 || c.heads <= 0 || c.ffn <= 0 || c.d_model % c.heads != 0)
    raise<ValueError>("decoder: d_model {} is no positive multiple of heads {} (ffn {})", c.d_model,
                      c.heads, c.ffn);
  if (c.max_context < 1 || c.max_tokens < 1)
    raise<ValueError>("decoder: max_context {} and max_tokens {} must be at least 1", c.max_context,
                      c.max_tokens);
  const std::int64_t dh = c.d_model / c.heads;
  score_scale_ = c.score_scale.value_or(score_scale_for(dh));
  // every weight's dtype and shape against the config, named
  const auto d = c.d_model;
  std::map<std::string, std::pair<DType, std::vector<std::int64_t>>> want = {
      {"ln1.gamma", {DType::float32(), {d}}},       {"ln1.beta", {DType::float32(), {d}}},
      {"ln2.gamma", {DType::float32(), {d}}},       {"ln2.beta", {DType::float32(), {d}}},
      {"up.weight", {DType::int8(), {c.ffn, d}}},   {"up.bias", {DType::int32(), {c.ffn}}},
      {"down.weight", {DType::int8(), {d, c.ffn}}}, {"down.bias", {DType::int32(), {d}}}};
  for (const char* p : {"q", "k", "v", "o"}) {
    want[std::string(p) + ".weight"] = {DType::int8(), {d, d}};
    want[std::string(p) + ".bias"] = {DType::int32(), {d}};
  }
  detail::for_each_weight(w, [&](const std::string& name, const te::NDArray& a) {
    detail::check_shape(a, name, want.at(name).first, want.at(name).second);
  });

  const auto& quant = c.quantization;
  x_ = input("x", {1, token_, d}, DType::int8());
  k_cache_ = state_input("k_cache", {1, c.heads, last_token_, dh}, DType::int8());
  v_cache_ = state_input("v_cache", {1, c.heads, last_token_, dh}, DType::int8());
  auto n1 = int8_layer_norm(x_, w.ln1, "ln1", quant.norm_scale);
  auto q = split_heads(projection(n1, w.q, "q", quant.proj_shift), c.heads);
  keys_ = concat({k_cache_, split_heads(projection(n1, w.k, "k", quant.proj_shift), c.heads)},
                 {.axis = 2});
  values_ = concat({v_cache_, split_heads(projection(n1, w.v, "v", quant.proj_shift), c.heads)},
                   {.axis = 2});
  auto context =
      attend(q, keys_, values_,
             {.score_scale = score_scale_, .softmax = c.softmax, .quantization = c.quantization});
  auto h = projection(merge_heads(context, d), w.o, "o", quant.proj_shift, x_);
  auto n2 = int8_layer_norm(h, w.ln2, "ln2", quant.norm_scale);
  auto up = relu(projection(n2, w.up, "up", quant.proj_shift));
  out_ = projection(up, w.down, "down", c.down_shift, h);
}

DLAVM_INLINE Function Decoder::function() const {
  return graph::function({x_}, {out_}, {{k_cache_, keys_}, {v_cache_, values_}});
}

}  // namespace dlavm::graph::llm
