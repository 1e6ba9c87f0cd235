// Definitions for graph/recognize_layer_norm.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/ops/float_ops.hpp>
#include <dlavm/graph/ops/reduce.hpp>
#include <dlavm/graph/pattern.hpp>
#include <dlavm/graph/recognize_layer_norm.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::graph {

namespace detail {

class LayerNormRecognizer : public ExprMutator<LayerNormRecognizer> {
 public:
  explicit LayerNormRecognizer(const Function& fn) : users_(fn) {}

  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    if (call.op() == "add" || call.op() == "mul" || call.op() == "div")
      if (auto y = match(e)) return call.result_name.empty() ? *y : named(*y, call.result_name);
    return ExprMutator<LayerNormRecognizer>::visit_call(call, e, args);
  }

 private:
  struct Normalized {  // d / sqrt(v + epsilon), d = x - mean(x)
    Expr x;
    std::int64_t dims = 0;  // k: the trailing dims normalized
    double epsilon = 0;
  };

  // The layer_norm e computes, or nullopt: n * gamma + beta, n * gamma, or n alone.
  std::optional<Expr> match(const Expr& e) {
    const Expr* scaled = &e;
    Expr beta;
    if (const auto* add = call_of(e, "add")) {
      for (std::size_t k = 0; k < 2 && !beta.defined(); ++k)
        if (float_vector(add->args[1 - k]) && call_of(add->args[k], "mul") &&
            users_.once(add->args[k])) {
          beta = add->args[1 - k];
          scaled = &add->args[k];
        }
      if (!beta.defined()) return std::nullopt;
    }
    Expr gamma;
    const Expr* normalized = scaled;
    if (const auto* mul = call_of(*scaled, "mul")) {
      for (std::size_t k = 0; k < 2 && !gamma.defined(); ++k)
        if (float_vector(mul->args[1 - k]) && call_of(mul->args[k], "div") &&
            (scaled == &e || users_.once(mul->args[k]))) {
          gamma = mul->args[1 - k];
          normalized = &mul->args[k];
        }
      if (!gamma.defined()) return std::nullopt;
    }
    const auto n = normalization(*normalized);
    if (!n) return std::nullopt;
    const auto rank_of = [&](const Expr& c) { return static_cast<std::int64_t>(c.type().ndim()); };
    if (gamma.defined() && rank_of(gamma) != n->dims) return std::nullopt;
    if (beta.defined() && rank_of(beta) != n->dims) return std::nullopt;
    if (!gamma.defined() || !beta.defined()) {
      // ones or zeros of the normalized dims: known from gamma, or from a typed x
      std::vector<std::int64_t> shape;
      if (gamma.defined()) {
        shape = gamma.as<ConstantNode>()->value->shape();
      } else if (n->x.has_type()) {
        const auto& xs = n->x.type().shape;
        for (auto d = xs.end() - n->dims; d != xs.end(); ++d) {
          const auto v = d->as_int();
          if (!v) return std::nullopt;
          shape.push_back(*v);
        }
      } else {
        return std::nullopt;
      }
      const std::string base = fmt::format("layer_norm{}", fused_);
      if (!gamma.defined())
        gamma = constant(base + ".gamma",
                         te::NDArray::from_floats(shape, std::vector<float>(volume(shape), 1.0f)));
      if (!beta.defined()) beta = constant(base + ".beta", te::NDArray(DType::float32(), shape));
    }
    ++fused_;
    return layer_norm(visit(n->x), gamma, beta, {.axis = -n->dims, .epsilon = n->epsilon});
  }

  // d / sqrt(v + epsilon) with d = x - reduce_mean(x), v = reduce_mean(d * d | pow(d, 2)), the
  // reductions over the same trailing dims kept, every inner value read in the pattern only.
  std::optional<Normalized> normalization(const Expr& e) const {
    const auto* div = call_of(e, "div");
    if (div == nullptr) return std::nullopt;
    const Expr& d = div->args[0];
    const auto* sub = call_of(d, "sub");
    const auto* sqrt = call_of(div->args[1], "sqrt");
    if (sub == nullptr || sqrt == nullptr || !users_.once(div->args[1])) return std::nullopt;
    const auto* plus = call_of(sqrt->args[0], "add");
    if (plus == nullptr || !users_.once(sqrt->args[0])) return std::nullopt;
    std::optional<float> epsilon;
    const Expr* variance = nullptr;
    for (std::size_t k = 0; k < 2 && variance == nullptr; ++k)
      if ((epsilon = float_scalar(plus->args[1 - k]))) variance = &plus->args[k];
    if (variance == nullptr || !users_.once(*variance)) return std::nullopt;
    const auto* v = call_of(*variance, "reduce_mean");
    if (v == nullptr || !users_.once(v->args[0])) return std::nullopt;
    // the square of d, and d read by it and by the division only
    const Expr& square = v->args[0];
    int square_reads = 0;
    if (const auto* m = call_of(square, "mul");
        m && m->args[0].get() == d.get() && m->args[1].get() == d.get())
      square_reads = 2;
    if (const auto* p = call_of(square, "pow");
        p && p->args[0].get() == d.get() && float_scalar(p->args[1]) == 2.0f)
      square_reads = 1;
    if (square_reads == 0 || users_.of(d) != square_reads + 1) return std::nullopt;
    const Expr& x = sub->args[0];
    const auto* mean = call_of(sub->args[1], "reduce_mean");
    if (mean == nullptr || !users_.once(sub->args[1]) || mean->args[0].get() != x.get())
      return std::nullopt;
    const auto pm = reduce_params(mean->attrs), pv = reduce_params(v->attrs);
    if (!pm.keepdims || !pv.keepdims) return std::nullopt;
    const auto axes = trailing(pm.axes, x), again = trailing(pv.axes, x);
    if (!axes || axes != again) return std::nullopt;
    return Normalized{x, *axes, static_cast<double>(*epsilon)};
  }

  // k when `axes` are the last k dims of x (negative ones, or any on a typed x).
  static std::optional<std::int64_t> trailing(std::vector<std::int64_t> axes, const Expr& x) {
    if (axes.empty()) return std::nullopt;
    const bool typed = x.has_type();
    const auto rank = typed ? static_cast<std::int64_t>(x.type().ndim()) : 0;
    for (auto& a : axes) {
      if (a >= 0 && !typed) return std::nullopt;
      if (a >= 0) a -= rank;
    }
    std::sort(axes.begin(), axes.end());
    const auto k = static_cast<std::int64_t>(axes.size());
    for (std::int64_t i = 0; i < k; ++i)
      if (axes[static_cast<std::size_t>(i)] != i - k) return std::nullopt;
    return k;
  }

  static bool float_vector(const Expr& e) {
    const auto* c = e.as<ConstantNode>();
    return c != nullptr && c->value->dtype() == DType::float32();
  }

  static std::size_t volume(const std::vector<std::int64_t>& shape) {
    std::size_t n = 1;
    for (auto d : shape) n *= static_cast<std::size_t>(d);
    return n;
  }

  Users users_;
  int fused_ = 0;
};

}  // namespace detail

DLAVM_INLINE Function recognize_layer_norm(const Function& fn, const Target&) {
  return detail::LayerNormRecognizer(fn).mutate(fn);
}

}  // namespace dlavm::graph
