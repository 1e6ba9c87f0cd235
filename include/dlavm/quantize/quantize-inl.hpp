// Definitions for quantize/quantize.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/fold_batch_norm.hpp>
#include <dlavm/graph/fold_scale_shift.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/quantize/quantize.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace dlavm::quantization {

namespace detail {

// A layer the rewrite may quantize: anchor (conv2d or dense) -> [bias_add] -> [relu | clip].
struct Layer {
  std::string name, op;
  graph::Expr anchor, x, weight, end;
  std::optional<graph::Expr> bias;  // the bias_add's constant
  enum class Act : std::uint8_t { None, Relu, Clip } act = Act::None;
  double lo = 0, hi = 0;  // Clip's bounds
  double macs = 0;
  std::string refusal;  // why it cannot be quantized (empty: it can)
};

inline const te::NDArray* constant_value(const graph::Expr& e) {
  const auto* c = e.as<graph::ConstantNode>();
  return c != nullptr ? c->value.get() : nullptr;
}

inline double at_max(const ne::Expr& d) { return static_cast<double>(ne::bounds(d).max); }

// The layers of a typed function, in post-order.
inline std::vector<Layer> find_layers(const graph::Function& typed) {
  std::unordered_map<const graph::Node*, int> users;
  for (const auto& e : graph::post_order(typed.results()))
    if (const auto* c = e.as<graph::CallNode>())
      for (const auto& a : c->args) ++users[a.get()];
  for (const auto& r : typed.results()) users[r.get()] += 1;  // a result is used by the caller
  std::unordered_map<const graph::Node*, graph::Expr> only_user;
  for (const auto& e : graph::post_order(typed.results()))
    if (const auto* c = e.as<graph::CallNode>())
      for (const auto& a : c->args)
        if (users[a.get()] == 1) only_user[a.get()] = e;
  const auto next = [&](const graph::Expr& e) -> std::optional<graph::Expr> {
    const auto it = only_user.find(e.get());
    if (it == only_user.end()) return std::nullopt;
    return it->second;
  };
  std::vector<Layer> layers;
  std::map<std::string, int> counts;
  for (const auto& e : graph::post_order(typed.results())) {
    const auto* c = e.as<graph::CallNode>();
    if (c == nullptr || (c->op() != "conv2d" && c->op() != "dense")) continue;
    Layer l;
    l.op = c->op();
    l.name = !c->result_name.empty() ? c->result_name : fmt::format("{}#{}", l.op, counts[l.op]);
    ++counts[l.op];
    l.anchor = e;
    l.x = c->args[0];
    l.weight = c->args[1];
    l.end = e;
    const auto& w = l.weight.type().shape;
    l.macs = 1;
    for (const auto& d : e.type().shape) l.macs *= at_max(d);
    if (l.op == "conv2d")
      for (std::size_t k = 1; k < w.size(); ++k) l.macs *= at_max(w[k]);
    else
      l.macs *= at_max(w.back());
    const auto* wv = constant_value(l.weight);
    if (!l.x.type().dtype.is_float() || wv == nullptr || !wv->dtype().is_float()) {
      l.refusal = "not a float layer with a constant weight";
      layers.push_back(std::move(l));
      continue;
    }
    if (auto b = next(l.end); b && b->as<graph::CallNode>()->op() == "bias_add") {
      const auto* bc = b->as<graph::CallNode>();
      const auto axis = graph::bias_add_params(bc->attrs).axis;
      const auto rank = static_cast<std::int64_t>(l.end.type().shape.size());
      const auto* bv = constant_value(bc->args[1]);
      if (bc->args[0].same_as(l.end) && bv != nullptr && bv->dtype().is_float() &&
          (axis < 0 ? axis + rank : axis) == (l.op == "conv2d" ? 1 : rank - 1)) {
        l.bias = bc->args[1];
        l.end = *b;
      }
    }
    if (auto a = next(l.end)) {
      const auto* ac = a->as<graph::CallNode>();
      if (ac->op() == "relu") {
        l.act = Layer::Act::Relu;
        l.end = *a;
      } else if (ac->op() == "clip") {
        const auto p = graph::clip_params(ac->attrs);
        l.act = Layer::Act::Clip;
        l.lo = p.lo;
        l.hi = p.hi;
        l.end = *a;
      }
    }
    layers.push_back(std::move(l));
  }
  return layers;
}

// The samples' arrays checked: every param given once, float32 ones finite.
inline void check_sample(const graph::Function& fn, const Sample& s, std::size_t k) {
  for (const auto& p : fn.params()) {
    const auto it =
        std::ranges::find_if(s.inputs, [&](const auto& in) { return in.first == p.name(); });
    if (it == s.inputs.end())
      raise<ValueError>("calibration sample {}: input '{}' is missing", k, p.name());
    if (it->second.dtype() != p.type().dtype)
      raise<TypeError>("calibration sample {}: input '{}' is {}; the model takes {}", k, p.name(),
                       it->second.dtype(), p.type().dtype);
    if (it->second.dtype().is_float()) {
      const auto v = it->second.fdata();
      for (std::size_t i = 0; i < v.size(); ++i)
        if (!std::isfinite(v[i]))
          raise<ValueError>("calibration sample {}: input '{}' holds {} at element {}", k, p.name(),
                            v[i], i);
    }
  }
  for (const auto& in : s.inputs)
    if (std::ranges::none_of(fn.params(), [&](const auto& p) { return p.name() == in.first; }))
      raise<ValueError>("calibration sample {}: the model has no input '{}'", k, in.first);
}

// The float function's values under one sample; errors name the sample.
inline graph::EvaluationTrace trace_of(const graph::Function& fn, const Sample& s, std::size_t k,
                                       const graph::OpRegistry& ops) {
  std::vector<graph::NamedArray> inputs;
  for (const auto& [name, a] : s.inputs) inputs.push_back({name, a});
  std::vector<ne::Binding> dims;
  for (const auto& [name, v] : s.dims) dims.push_back({name, v});
  try {
    return graph::evaluate_trace(fn, inputs, dims, ops);
  } catch (const Error& e) {
    rethrow_with_context(e, fmt::format("calibration sample {}", k));
  }
}

inline float scale_of(float threshold) { return threshold > 0 ? threshold / 127.0f : 1.0f; }
// The smallest power of two at least v (> 0).
inline float pow2_at_least(float v) { return std::exp2(std::ceil(std::log2(v))); }
inline std::int64_t quantize_value(double v, float scale, std::int64_t zero = 0) {
  const double r = std::nearbyint(v / static_cast<double>(scale)) + static_cast<double>(zero);
  return static_cast<std::int64_t>(std::clamp(r, -128.0, 127.0));
}

// An activation's int8 quantization: value = (level - zero) * scale.
struct ActivationParams {
  float scale = 1;
  std::int64_t zero = 0;
};

inline ActivationParams activation_params(const Observer& o, const QuantizeOptions& options) {
  const float t = o.threshold(options.calibration);
  const bool shift = options.requantize == Requantize::Shift;
  if (options.activations == Activations::Symmetric) {
    const float s = scale_of(t);
    return {shift ? pow2_at_least(s) : s, 0};
  }
  // [lo, hi] holds 0 (a zero point is a level) and is clipped where the method clips
  const float lo = std::max(std::min(o.min(), 0.0f), -t);
  const float hi = std::min(std::max(o.max(), 0.0f), t);
  if (!(hi > lo)) return {1.0f, 0};
  float s = (hi - lo) / 255.0f;
  if (shift) s = pow2_at_least(s);
  const auto z = std::clamp<std::int64_t>(
      std::llround(-128.0 - static_cast<double>(lo) / static_cast<double>(s)), -128, 127);
  return {s, z};
}

// The quantized value of a layer's end: its int8 value, scale and zero point.
struct Quantized {
  graph::Expr value;
  float scale;
  std::int64_t zero = 0;
};

class Rewriter : public graph::ExprMutator<Rewriter> {
 public:
  Rewriter(const std::vector<Layer>& layers, const std::vector<bool>& quantize,
           const std::unordered_map<const graph::Node*, ActivationParams>& params,
           Requantize requantize)
      : params_(params), shift_(requantize == Requantize::Shift) {
    for (std::size_t k = 0; k < layers.size(); ++k)
      if (quantize[k]) by_end_.emplace(layers[k].end.get(), &layers[k]);
  }

  graph::Expr visit_call(const graph::CallNode& call, const graph::Expr& e,
                         graph::ArgResults<graph::Expr> args) {
    const auto it = by_end_.find(e.get());
    if (it == by_end_.end()) return ExprMutator<Rewriter>::visit_call(call, e, args);
    return rewrite(*it->second);
  }

  // The node of the rewritten function that holds layer end `e`'s value: the float value of
  // a layer left float; for a quantized one, its int8 value and scale (quantized_of: its
  // dequantization may have no user).
  graph::Expr value_of(const graph::Expr& e) const { return result_of(e); }
  std::optional<Quantized> quantized_of(const graph::Expr& end) const {
    const auto it = by_end_.find(end.get());
    if (it == by_end_.end()) return std::nullopt;
    return quantized_.at(result_of(end).get());
  }
  // The quantization a quantized layer's input was given.
  ActivationParams input_of(const graph::Expr& end) const { return inputs_used_.at(end.get()); }

 private:
  // x as int8 at (scale, zero point) p: a quantized layer's own int8 result, or one
  // quantize_linear that every layer reading x shares.
  graph::Expr int8_input(const graph::Expr& x_float, ActivationParams p) {
    if (const auto q = quantized_.find(x_float.get());
        q != quantized_.end() && q->second.scale == p.scale && q->second.zero == p.zero)
      return q->second.value;
    const auto key = std::tuple{x_float.get(), p.scale, p.zero};
    if (const auto it = inputs_.find(key); it != inputs_.end()) return it->second;
    auto q = graph::quantize_linear(
        x_float, graph::constant(fresh("scale"), te::NDArray::from_floats({}, {p.scale})),
        graph::constant(fresh("zero"), te::NDArray::from_ints(DType::int8(), {}, {p.zero})));
    kept_.push_back(x_float);
    inputs_.emplace(key, q);
    return q;
  }

  // Ops that only move or select values: on int8 levels they give the levels of their float
  // result at the same scale and zero point (a max pool pads with the lowest level, which no
  // window's maximum is below).
  static bool moves_values(std::string_view op) {
    return op == "max_pool2d" || op == "reshape" || op == "flatten" || op == "transpose";
  }

  // x (rewritten) as a quantized layer's int8 result through ops that move values, applied to
  // the levels: the next layer reads them at that layer's scale and zero point, and the ops
  // run on int8 (a max pool on VTA).
  std::optional<Quantized> moved_levels(const graph::Expr& x) const {
    std::vector<const graph::CallNode*> chain;
    graph::Expr e = x;
    for (;;) {
      if (const auto q = quantized_.find(e.get()); q != quantized_.end()) {
        Quantized moved = q->second;
        for (auto it = chain.rbegin(); it != chain.rend(); ++it)
          moved.value = graph::call((*it)->op(), {moved.value}, (*it)->attrs);
        return moved;
      }
      const auto* c = e.as<graph::CallNode>();
      if (c == nullptr || c->args.size() != 1 || !moves_values(c->op())) return std::nullopt;
      chain.push_back(c);
      e = c->args[0];
    }
  }

  graph::Expr rewrite(const Layer& l) {
    const auto moved = chain_input(l);
    const ActivationParams px =
        moved ? ActivationParams{moved->scale, moved->zero} : params_.at(l.x.get());
    const ActivationParams py = params_.at(l.end.get());
    inputs_used_[l.end.get()] = px;
    const float sx = px.scale, sy = py.scale;
    const te::NDArray& w = *constant_value(l.weight);
    const std::int64_t channels = w.shape()[0];
    const auto per = static_cast<std::size_t>(w.size() / static_cast<std::size_t>(channels));
    std::vector<float> sw(static_cast<std::size_t>(channels));
    for (std::int64_t c = 0; c < channels; ++c) {
      float top = 0;
      for (std::size_t i = 0; i < per; ++i)
        top = std::max(top, std::abs(w.fdata()[static_cast<std::size_t>(c) * per + i]));
      sw[static_cast<std::size_t>(c)] = scale_of(top);
    }
    // shifts: one power-of-two scale for the whole weight, so that the requantization is one
    // shift for every channel
    if (shift_) std::ranges::fill(sw, pow2_at_least(std::ranges::max(sw)));
    // the bias at scale sx * sw[c]; a channel whose bias would leave int32 gets a coarser
    // weight scale (shifts: the whole weight, by powers of two)
    std::vector<std::int64_t> bq(static_cast<std::size_t>(channels), 0);
    if (l.bias) {
      const auto bv = constant_value(*l.bias)->fdata();
      constexpr double limit = 2147483647.0;
      const auto fits = [&](double b, float s) {
        return std::abs(b) / (static_cast<double>(sx) * s) <= limit;
      };
      for (std::int64_t c = 0; c < channels; ++c) {
        auto& s = sw[static_cast<std::size_t>(c)];
        const double b = bv[static_cast<std::size_t>(c)];
        if (shift_) {
          while (!fits(b, s)) std::ranges::for_each(sw, [](float& v) { v *= 2; });
        } else if (!fits(b, s)) {
          s = static_cast<float>(std::abs(b) / (static_cast<double>(sx) * limit) * 1.0001);
        }
      }
      for (std::int64_t c = 0; c < channels; ++c)
        bq[static_cast<std::size_t>(c)] = static_cast<std::int64_t>(
            std::nearbyint(bv[static_cast<std::size_t>(c)] /
                           static_cast<double>(sx * sw[static_cast<std::size_t>(c)])));
    }
    te::NDArray wq(DType::int8(), w.shape());
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::size_t i = 0; i < per; ++i) {
        const std::size_t at = static_cast<std::size_t>(c) * per + i;
        wq.set_flat(at, quantize_value(w.fdata()[at], sw[static_cast<std::size_t>(c)]));
      }
    // an input zero point zx: sum of (x - zx) w = sum of x w - zx * (the channel's weight sum),
    // the second term a constant of the bias
    if (px.zero != 0)
      for (std::int64_t c = 0; c < channels; ++c) {
        std::int64_t sum = 0;
        for (std::size_t i = 0; i < per; ++i)
          sum += wq.data()[static_cast<std::size_t>(c) * per + i];
        bq[static_cast<std::size_t>(c)] -= px.zero * sum;
      }
    graph::Expr x8 = moved ? moved->value : int8_input(result_of(l.x), px);
    const auto* anchor = l.anchor.as<graph::CallNode>();
    auto conv = l.op == "conv2d" ? graph::conv2d_params(anchor->attrs) : host::Conv2dParams{};
    if (const auto& p = conv.padding;
        px.zero != 0 && std::ranges::any_of(p, [](auto v) { return v != 0; })) {
      // the padding holds the value 0, level zx; VTA's loads pad with level 0
      x8 = graph::pad(x8, {.pad_before = {0, 0, p[0], p[1]},
                           .pad_after = {0, 0, p[2], p[3]},
                           .value = static_cast<double>(px.zero)});
      conv.padding = {0, 0, 0, 0};
    }
    const auto weight = graph::constant(fresh(l.name + ".weight"), std::move(wq));
    graph::Expr acc = l.op == "conv2d" ? graph::conv2d(x8, weight, conv) : graph::dense(x8, weight);
    acc = graph::named(acc, l.name);
    const std::int64_t axis = l.op == "conv2d" ? 1 : -1;
    graph::Expr y;
    float so = sy;              // the scale the int8 result has
    std::int64_t zo = py.zero;  // and its zero point
    const auto with_bias = [&](graph::Expr sum) {
      if (!l.bias && std::ranges::all_of(bq, [](auto b) { return b == 0; })) return sum;
      for (std::int64_t c = 0; c < channels; ++c)
        if (const auto b = bq[static_cast<std::size_t>(c)];
            b < std::numeric_limits<std::int32_t>::min() ||
            b > std::numeric_limits<std::int32_t>::max())
          raise<ValueError>(
              "dlavm::quantize: layer '{}': channel {}'s int32 bias would be {} with the input's "
              "zero point {}; quantize with Activations::Symmetric",
              l.name, c, b, px.zero);
      return graph::bias_add(
          sum,
          graph::constant(fresh(l.name + ".bias"),
                          te::NDArray::from_ints(DType::int32(), {channels}, bq)),
          {.axis = axis});
    };
    if (shift_) {
      // sy / (sx * sw) = 2^s: a rounding right shift, on VTA's ALU with the clamp; a product
      // scale already coarser than sy (s < 0) is kept as the result's scale
      const auto s = std::max<std::int64_t>(
          0, std::llround(std::log2(static_cast<double>(sy) / (static_cast<double>(sx) * sw[0]))));
      so = sx * sw[0] * std::exp2(static_cast<float>(s));
      if (so != sy)  // the same real range, [-128, 127] at the coarser scale
        zo = std::clamp<std::int64_t>(
            std::llround(-128.0 + static_cast<double>(py.zero + 128) * sy / so), -128, 127);
      // the output zero point: (sum + zo * 2^s) >> s = (sum >> s) + zo, a bias term
      for (auto& b : bq) b += zo << s;
      acc = with_bias(acc);
      std::int64_t lo = -128, hi = 127;
      if (l.act == Layer::Act::Relu) lo = zo;
      if (l.act == Layer::Act::Clip)
        lo = quantize_value(l.lo, so, zo), hi = quantize_value(l.hi, so, zo);
      y = graph::requantize(acc, {.shift = s,
                                  .lo = lo,
                                  .hi = hi,
                                  .rounding = host::Rounding::Nearest,
                                  .out_dtype = DType::int8()});
    } else {
      acc = with_bias(acc);
      std::vector<float> mult;
      for (const float s : sw) mult.push_back(static_cast<float>(sx * s) / sy);
      y = graph::rescale(
          acc,
          graph::constant(fresh(l.name + ".multiplier"),
                          te::NDArray::from_floats({channels}, mult)),
          graph::constant(fresh(l.name + ".zero"),
                          te::NDArray::from_ints(
                              DType::int8(), {channels},
                              std::vector<std::int64_t>(static_cast<std::size_t>(channels), zo))),
          {.axis = axis});
      if (l.act == Layer::Act::Relu)
        y = graph::clip(y, {.lo = static_cast<double>(zo), .hi = 127});
      else if (l.act == Layer::Act::Clip)
        y = graph::clip(y, {.lo = static_cast<double>(quantize_value(l.lo, sy, zo)),
                            .hi = static_cast<double>(quantize_value(l.hi, sy, zo))});
    }
    const auto out = graph::dequantize_linear(
        y, graph::constant(fresh("scale"), te::NDArray::from_floats({}, {so})),
        graph::constant(fresh("zero"), te::NDArray::from_ints(DType::int8(), {}, {zo})));
    quantized_.emplace(out.get(), Quantized{y, so, zo});
    kept_.push_back(out);
    return out;
  }

  std::string fresh(const std::string& stem) { return fmt::format("{}.q{}", stem, counter_++); }

  // The layer's input as moved levels (not a quantized layer's own result: that is
  // int8_input's), or nullopt.
  std::optional<Quantized> chain_input(const Layer& l) {
    const graph::Expr x = result_of(l.x);
    if (quantized_.contains(x.get())) return std::nullopt;
    auto moved = moved_levels(x);
    if (moved) kept_.push_back(moved->value);
    return moved;
  }

  std::unordered_map<const graph::Node*, const Layer*> by_end_;
  const std::unordered_map<const graph::Node*, ActivationParams>& params_;
  bool shift_;
  std::unordered_map<const graph::Node*, Quantized> quantized_;
  std::unordered_map<const graph::Node*, ActivationParams> inputs_used_;  // by layer end
  std::map<std::tuple<const graph::Node*, float, std::int64_t>, graph::Expr>
      inputs_;                     // quantized inputs
  std::vector<graph::Expr> kept_;  // (the keys of quantized_ and inputs_ stay alive)
  int counter_ = 0;
};

inline double sqnr_db(double signal, double noise) {
  if (noise == 0) return std::numeric_limits<double>::infinity();
  if (signal == 0) return -std::numeric_limits<double>::infinity();
  return 10 * std::log10(signal / noise);
}

}  // namespace detail

DLAVM_INLINE QuantizeResult quantize(const graph::Function& fn, const SampleSource& samples,
                                     const QuantizeOptions& options, const graph::Target& target) {
  if (samples.count == 0 || !samples.sample)
    raise<ValueError>("dlavm::quantize: no calibration samples (at least one is needed)");
  // BatchNormalization and per-channel affine steps first: they fold into the weights
  const auto prepared = graph::fold_scale_shift(
      graph::infer_type(graph::fold_batch_norm(fn, target), target.ops), target);
  const auto typed = graph::infer_type(prepared, target.ops);
  auto layers = detail::find_layers(typed);

  // calibration: every quantizable layer's input and end, streamed over the samples
  std::unordered_map<const graph::Node*, Observer> observers;
  for (const auto& l : layers)
    if (l.refusal.empty()) observers[l.x.get()], observers[l.end.get()];
  const bool histogram = options.calibration.method != Calibration::MinMax;
  const int passes = histogram ? 2 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    if (pass == 1)
      for (auto& [node, o] : observers) o.start_histogram(options.calibration.bins);
    for (std::size_t k = 0; k < samples.count; ++k) {
      if (options.progress)
        fmt::print(stderr, "\rdlavm::quantize: calibrating ({}), pass {} of {}, sample {} of {}",
                   to_string(options.calibration.method), pass + 1, passes, k + 1, samples.count);
      const Sample s = samples.sample(k);
      detail::check_sample(typed, s, k);
      const auto trace = detail::trace_of(typed, s, k, target.ops);
      for (std::size_t i = 0; i < trace.nodes.size(); ++i) {
        const auto it = observers.find(trace.nodes[i].get());
        if (it == observers.end()) continue;
        const auto values = trace.values[i]->fdata();
        if (pass == 0)
          it->second.observe_range(values);
        else
          it->second.observe_histogram(values);
      }
    }
  }
  if (options.progress) fmt::print(stderr, "\n");
  std::unordered_map<const graph::Node*, detail::ActivationParams> params;
  for (const auto& [node, o] : observers) params[node] = detail::activation_params(o, options);

  std::vector<bool> chosen(layers.size());
  std::vector<std::string> notes(layers.size());
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const auto& l = layers[k];
    const bool skipped = std::ranges::any_of(options.skip, [&](const std::string& s) {
      return s == l.name || s == fmt::format("{}#{}", l.op, k);
    });
    chosen[k] = l.refusal.empty() && !skipped;
    notes[k] = !l.refusal.empty() ? l.refusal : skipped ? "skipped (QuantizeOptions::skip)" : "";
  }
  std::optional<graph::Function> quantized;
  std::vector<LayerReport> reports;
  const std::size_t measured =
      std::min(samples.count, std::max<std::size_t>(options.report_samples, 1));
  for (int round = 0;; ++round) {
    detail::Rewriter rw(layers, chosen, params, options.requantize);
    const auto mutated = rw.mutate(typed);
    quantized = graph::infer_type(mutated, target.ops);
    // each layer's end in the typed result: infer_type keeps the graph's shape, so it sits at
    // the same post-order position as in the rewritten function
    const auto before = graph::post_order(mutated.roots());
    const auto after = graph::post_order(quantized->roots());
    if (before.size() != after.size())
      raise<ValueError>("internal: dlavm::quantize: typing changed the graph, please report");
    std::unordered_map<const graph::Node*, std::size_t> position;
    for (std::size_t i = 0; i < before.size(); ++i) position[before[i].get()] = i;
    std::vector<graph::Expr> ends;
    // a quantized layer's value: (its int8 level - zero) * scale
    std::vector<float> end_scales;
    std::vector<std::int64_t> end_zeros;
    for (const auto& l : layers) {
      const auto q = rw.quantized_of(l.end);
      ends.push_back(after.at(position.at(q ? q->value.get() : rw.value_of(l.end).get())));
      end_scales.push_back(q ? q->scale : 0.0f);
      end_zeros.push_back(q ? q->zero : 0);
    }
    // the report: each layer's output against the float model's, on the first samples
    std::vector<double> signal(layers.size()), noise(layers.size()), max_err(layers.size());
    for (std::size_t k = 0; k < measured; ++k) {
      const Sample s = samples.sample(k);
      const auto want = detail::trace_of(typed, s, k, target.ops);
      const auto got = detail::trace_of(*quantized, s, k, target.ops);
      for (std::size_t i = 0; i < layers.size(); ++i) {
        const auto a = want.value_of(layers[i].end).fdata();
        const auto& b = got.value_of(ends[i]);
        for (std::size_t e = 0; e < a.size(); ++e) {
          const double v = end_scales[i] != 0
                               ? static_cast<double>(b.data()[e] - end_zeros[i]) * end_scales[i]
                               : static_cast<double>(b.fdata()[e]);
          const double d = static_cast<double>(a[e]) - v;
          signal[i] += static_cast<double>(a[e]) * a[e];
          noise[i] += d * d;
          max_err[i] = std::max(max_err[i], std::abs(d));
        }
      }
    }
    // where each quantized product runs
    const auto placed = graph::infer_type(*quantized, target);
    std::map<std::string, graph::Device, std::less<>> device;
    for (const auto& e : graph::post_order(placed.results()))
      if (const auto* c = e.as<graph::CallNode>(); c != nullptr &&
                                                   (c->op() == "conv2d" || c->op() == "dense") &&
                                                   !c->args[0].type().dtype.is_float())
        device[c->result_name] = e.device();
    reports.clear();
    bool dropped = false;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      LayerReport r;
      r.name = layers[i].name;
      r.op = layers[i].op;
      r.quantized = chosen[i];
      r.macs = layers[i].macs;
      r.sqnr_db = detail::sqnr_db(signal[i], noise[i]);
      r.max_abs_error = max_err[i];
      r.note = notes[i];
      r.device = "host";
      if (chosen[i]) {
        r.input_scale = rw.input_of(layers[i].end).scale;
        r.input_zero_point = rw.input_of(layers[i].end).zero;
        r.output_scale = end_scales[i];
        r.output_zero_point = end_zeros[i];
        const auto d = device.find(layers[i].name);
        if (d != device.end() && d->second == graph::Device::Vta) r.device = "vta";
        if (round == 0 && options.min_sqnr_db > 0 && r.sqnr_db < options.min_sqnr_db) {
          chosen[i] = false;
          notes[i] =
              fmt::format("SQNR {:.1f} dB, below min_sqnr_db = {}", r.sqnr_db, options.min_sqnr_db);
          dropped = true;
        }
      }
      reports.push_back(std::move(r));
    }
    if (!dropped) break;
  }
  return QuantizeResult{std::move(*quantized), std::move(reports)};
}

DLAVM_INLINE std::string to_string(Requantize r) {
  return r == Requantize::Shift ? "shift" : "multiplier";
}

DLAVM_INLINE std::string to_string(Activations a) {
  return a == Activations::Asymmetric ? "asymmetric" : "symmetric";
}

DLAVM_INLINE double QuantizeResult::vta_mac_share() const {
  double all = 0, vta = 0;
  for (const auto& l : layers) {
    all += l.macs;
    if (l.quantized && l.device == "vta") vta += l.macs;
  }
  return all > 0 ? vta / all : 0;
}

DLAVM_INLINE std::string QuantizeResult::table() const {
  std::string out = fmt::format("{:<24} {:<7} {:>10} {:<6} {:<7} {:>9} {:>11} {:>10} {:>10}  {}\n",
                                "layer", "op", "MMACs", "int8", "device", "SQNR dB", "max error",
                                "in scale", "out scale", "note");
  for (const auto& l : layers)
    out += fmt::format(
        "{:<24} {:<7} {:>10.2f} {:<6} {:<7} {:>9.1f} {:>11.4g} {:>10.4g} {:>10.4g}  {}\n", l.name,
        l.op, l.macs / 1e6, l.quantized ? "yes" : "no", l.device, l.sqnr_db, l.max_abs_error,
        l.input_scale, l.output_scale, l.note);
  out += fmt::format("{:.1f}% of the layers' multiply-accumulates on VTA\n", 100 * vta_mac_share());
  return out;
}

DLAVM_INLINE std::string QuantizeResult::svg() const {
  // one bar per layer, its height the SQNR (0 to the largest finite one, at least 40 dB)
  double top = 40;
  for (const auto& l : layers)
    if (std::isfinite(l.sqnr_db)) top = std::max(top, l.sqnr_db);
  const int bar = 18, gap = 6, height = 240, left = 50, bottom = 120;
  const int width = left + static_cast<int>(layers.size()) * (bar + gap) + 20;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"10\">\n"
      "<text x=\"4\" y=\"12\">SQNR (dB) per layer against the float model; blue: int8 on "
      "VTA, orange: int8 on the host, grey: float</text>\n"
      "<line x1=\"{}\" y1=\"20\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n",
      width, height + bottom, left - 2, left - 2, height);
  for (int t = 0; t <= 4; ++t) {
    const double v = top * t / 4;
    const double y = height - (height - 20) * (v / top);
    out += fmt::format("<text x=\"4\" y=\"{:.0f}\">{:.0f}</text>\n", y + 3, v);
  }
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const auto& l = layers[k];
    const double v = std::isfinite(l.sqnr_db) ? std::clamp(l.sqnr_db, 0.0, top) : top;
    const double h = (height - 20) * (v / top);
    const int x = left + static_cast<int>(k) * (bar + gap);
    const char* colour = !l.quantized ? "#999999" : l.device == "vta" ? "#3366cc" : "#ff9933";
    out += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\">"
        "<title>{}: {:.1f} dB, max error {:.4g}</title></rect>\n"
        "<text transform=\"translate({},{}) rotate(60)\">{}</text>\n",
        x, height - h, bar, h, colour, l.name, l.sqnr_db, l.max_abs_error, x + 4, height + 8,
        l.name);
  }
  return out + "</svg>\n";
}

DLAVM_INLINE QuantizeResult quantize(const graph::Function& fn, std::span<const Sample> samples,
                                     const QuantizeOptions& options, const graph::Target& target) {
  return quantize(fn, SampleSource{samples.size(), [&](std::size_t k) { return samples[k]; }},
                  options, target);
}

}  // namespace dlavm::quantization
