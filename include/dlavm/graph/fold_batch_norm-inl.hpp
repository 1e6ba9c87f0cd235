// Definitions for graph/fold_batch_norm.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/fold_batch_norm.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/ops/elementwise.hpp>
#include <dlavm/graph/ops/float_ops.hpp>

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <unordered_map>

namespace dlavm::graph {

namespace detail {

// A float32 constant's array, or null.
inline const te::NDArray* float_constant(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  return c != nullptr && c->value->dtype() == DType::float32() ? c->value.get() : nullptr;
}

class BatchNormFolder : public ExprMutator<BatchNormFolder> {
 public:
  explicit BatchNormFolder(std::unordered_map<const Node*, int> users) : users_(std::move(users)) {}

  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    Expr rebuilt = ExprMutator<BatchNormFolder>::visit_call(call, e, args);
    if (call.op() != "batch_norm") return rebuilt;
    if (auto folded = fold(call, args)) return *folded;
    return rebuilt;
  }

 private:
  // The folded layer, or nullopt when the batch_norm does not follow a foldable one.
  std::optional<Expr> fold(const CallNode& bn, ArgResults<Expr> args) {
    const te::NDArray* stats[4] = {};
    for (std::size_t i = 0; i < 4; ++i)
      if ((stats[i] = float_constant(args[1 + i])) == nullptr || stats[i]->ndim() != 1)
        return std::nullopt;
    // the layer, through one bias_add of a constant along the same channel
    const Expr* layer = &bn.args[0];
    const te::NDArray* bias = nullptr;
    if (const auto* b = layer->as<CallNode>(); b != nullptr && b->op() == "bias_add") {
      if (!read_once(*layer) || (bias = float_constant(b->args[1])) == nullptr) return std::nullopt;
      layer = &b->args[0];
    }
    const auto* l = layer->as<CallNode>();
    if (l == nullptr || !read_once(*layer) || (l->op() != "conv2d" && l->op() != "dense"))
      return std::nullopt;
    const te::NDArray* w = float_constant(l->args[1]);
    if (w == nullptr || w->ndim() < 2) return std::nullopt;
    const std::int64_t channels = w->shape()[0];
    for (const auto* s : stats)
      if (s->shape()[0] != channels) return std::nullopt;
    if (bias != nullptr && bias->shape() != std::vector<std::int64_t>{channels})
      return std::nullopt;
    // the batch_norm's axis must be the layer's output channel: 1 for conv2d (NCHW), the last
    // for dense (known from the weight alone only for a 2-D input, so a dense folds only with
    // axis -1 or, for 2-D, 1)
    const auto p = batch_norm_params(bn.attrs);
    if (l->op() == "conv2d" ? p.axis != 1 : p.axis != -1 && p.axis != 1) return std::nullopt;
    if (l->op() == "dense" && p.axis == 1 && !two_dimensional(l->args[0])) return std::nullopt;
    if (bias != nullptr && bias_add_params(bn.args[0].as<CallNode>()->attrs).axis != p.axis)
      return std::nullopt;

    const auto& gamma = stats[0]->fdata();
    const auto& beta = stats[1]->fdata();
    const auto& mean = stats[2]->fdata();
    const auto& var = stats[3]->fdata();
    const auto eps = static_cast<float>(p.epsilon);
    te::NDArray w2 = *w;
    te::NDArray b2(DType::float32(), {channels});
    const auto per_channel = static_cast<std::int64_t>(w->size()) / channels;
    for (std::int64_t c = 0; c < channels; ++c) {
      const auto i = static_cast<std::size_t>(c);
      const float s = gamma[i] / std::sqrt(var[i] + eps);
      for (std::int64_t k = c * per_channel; k < (c + 1) * per_channel; ++k)
        w2.fdata()[static_cast<std::size_t>(k)] *= s;
      b2.fdata()[i] = ((bias != nullptr ? bias->fdata()[i] : 0.0f) - mean[i]) * s + beta[i];
    }
    // the new constants are named after the batch_norm's value, or its weight's and a count
    const std::string name =
        !bn.result_name.empty()
            ? bn.result_name
            : fmt::format("{}.bn{}", l->args[1].as<ConstantNode>()->name, folds_);
    ++folds_;
    auto new_layer =
        call(std::string(l->op()), {visit(l->args[0]), constant(name + ".weight", std::move(w2))},
             l->attrs, l->result_name);
    auto y =
        bias_add(std::move(new_layer), constant(name + ".bias", std::move(b2)), {.axis = p.axis});
    return bn.result_name.empty() ? y : named(y, bn.result_name);
  }

  bool read_once(const Expr& e) const {
    const auto it = users_.find(e.get());
    return it != users_.end() && it->second == 1;
  }

  static bool two_dimensional(const Expr& x) { return x.has_type() && x.type().ndim() == 2; }

  std::unordered_map<const Node*, int> users_;
  int folds_ = 0;
};

}  // namespace detail

DLAVM_INLINE Function fold_batch_norm(const Function& fn, const Target&) {
  // how many calls (and results and states) read each node: a layer read elsewhere too keeps
  // its own weights
  std::unordered_map<const Node*, int> users;
  for (const Expr& e : post_order(fn.roots()))
    if (const auto* c = e.as<CallNode>())
      for (const Expr& a : c->args) ++users[a.get()];
  for (const Expr& r : fn.roots()) ++users[r.get()];
  return detail::BatchNormFolder(std::move(users)).mutate(fn);
}

}  // namespace dlavm::graph
