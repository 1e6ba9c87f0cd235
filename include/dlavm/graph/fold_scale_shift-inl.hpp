// Definitions for graph/fold_scale_shift.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/fold_scale_shift.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/ops/elementwise.hpp>
#include <dlavm/graph/pattern.hpp>

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

namespace dlavm::graph {

namespace detail {

class ScaleShiftFolder : public ExprMutator<ScaleShiftFolder> {
 public:
  explicit ScaleShiftFolder(const Function& fn) : users_(fn) {}

  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    Expr rebuilt = ExprMutator<ScaleShiftFolder>::visit_call(call, e, args);
    const auto op = call.op();
    if ((op != "mul" && op != "add" && op != "sub") || call.args.size() != 2) return rebuilt;
    // the layer on either side of mul and add, on the left of sub
    for (std::size_t k = 0; k < (op == "sub" ? 1u : 2u); ++k)
      if (auto folded = fold(call, args[k], call.args[k], args[1 - k])) return *folded;
    return rebuilt;
  }

 private:
  // The folded layer, or nullopt. `layer` is the mutated operand (`original` the function's
  // node it came from), `c` the other operand.
  std::optional<Expr> fold(const CallNode& affine, const Expr& layer, const Expr& original,
                           const Expr& c) {
    const auto* k = c.as<ConstantNode>();
    if (k == nullptr || k->value->dtype() != DType::float32() || !users_.once(original))
      return std::nullopt;
    // the convolution, through one bias_add of a constant along its channels
    const Expr* conv_expr = &layer;
    const te::NDArray* bias = nullptr;
    if (const auto* b = call_of(layer, "bias_add")) {
      const auto* bc = b->args[1].as<ConstantNode>();
      if (bc == nullptr || bc->value->dtype() != DType::float32() || bc->value->ndim() != 1 ||
          bias_add_params(b->attrs).axis != 1 || !fresh_or_once(b->args[0]))
        return std::nullopt;
      bias = bc->value.get();
      conv_expr = &b->args[0];
    }
    const auto* conv = call_of(*conv_expr, "conv2d");
    if (conv == nullptr) return std::nullopt;
    const auto* wc = conv->args[1].as<ConstantNode>();
    if (wc == nullptr || wc->value->dtype() != DType::float32() || wc->value->ndim() != 4)
      return std::nullopt;
    const te::NDArray& w = *wc->value;
    const std::int64_t channels = w.shape()[0];
    if (bias != nullptr && bias->shape()[0] != channels) return std::nullopt;
    const auto per_channel = per_channel_values(*k->value, channels);
    if (!per_channel) return std::nullopt;

    const std::string op(affine.op());
    const std::string name = !affine.result_name.empty()
                                 ? affine.result_name
                                 : fmt::format("{}.{}{}", wc->name, op, folds_);
    ++folds_;
    te::NDArray b2(DType::float32(), {channels});
    for (std::int64_t o = 0; o < channels; ++o) {
      const auto i = static_cast<std::size_t>(o);
      const float b = bias != nullptr ? bias->fdata()[i] : 0.0f;
      const float v = (*per_channel)[i];
      b2.fdata()[i] = op == "mul" ? b * v : op == "add" ? b + v : b - v;
    }
    Expr weight = conv->args[1];
    if (op == "mul") {
      te::NDArray w2 = w;
      const auto kernel = static_cast<std::int64_t>(w.size()) / channels;
      for (std::int64_t o = 0; o < channels; ++o)
        for (std::int64_t j = o * kernel; j < (o + 1) * kernel; ++j)
          w2.fdata()[static_cast<std::size_t>(j)] *= (*per_channel)[static_cast<std::size_t>(o)];
      weight = constant(name + ".weight", std::move(w2));
    }
    Expr new_conv = call("conv2d", {conv->args[0], weight}, conv->attrs, conv->result_name);
    Expr y = bias_add(std::move(new_conv), constant(name + ".bias", std::move(b2)), {.axis = 1});
    return affine.result_name.empty() ? y : named(y, affine.result_name);
  }

  // One value per output channel from a constant of one value, or of shape [O, 1, 1] or
  // [1, O, 1, 1] (which broadcast along an NCHW result's channels without changing its shape).
  static std::optional<std::vector<float>> per_channel_values(const te::NDArray& c,
                                                              std::int64_t channels) {
    const auto& s = c.shape();
    if (c.size() == 1 && s.size() <= 4)
      return std::vector<float>(static_cast<std::size_t>(channels), c.fdata()[0]);
    const bool fits = (s.size() == 3 && s[0] == channels && s[1] == 1 && s[2] == 1) ||
                      (s.size() == 4 && s[0] == 1 && s[1] == channels && s[2] == 1 && s[3] == 1);
    if (!fits) return std::nullopt;
    return std::vector<float>(c.fdata().begin(), c.fdata().end());
  }

  // A node this pass made (no reader in the function it started from) or one read once.
  bool fresh_or_once(const Expr& e) const { return users_.of(e) <= 1; }

  Users users_;
  int folds_ = 0;
};

}  // namespace detail

DLAVM_INLINE Function fold_scale_shift(const Function& fn, const Target&) {
  return detail::ScaleShiftFolder(fn).mutate(fn);
}

}  // namespace dlavm::graph
