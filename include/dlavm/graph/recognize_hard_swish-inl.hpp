// Definitions for graph/recognize_hard_swish.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/ops/elementwise.hpp>
#include <dlavm/graph/ops/unary.hpp>
#include <dlavm/graph/pattern.hpp>
#include <dlavm/graph/recognize_hard_swish.hpp>

#include <cmath>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::graph {

namespace detail {

class HardSwishRecognizer : public ExprMutator<HardSwishRecognizer> {
 public:
  explicit HardSwishRecognizer(const Function& fn) : users_(fn) {}

  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    if (call.op() == "mul" || call.op() == "div")
      if (const auto x = match(e)) {
        Expr y = hard_swish(visit(*x));
        return call.result_name.empty() ? y : named(y, call.result_name);
      }
    return ExprMutator<HardSwishRecognizer>::visit_call(call, e, args);
  }

 private:
  static bool near(std::optional<float> v, double want) {
    return v.has_value() && std::abs(static_cast<double>(*v) - want) <= 1e-5;
  }

  static bool attr_near(const Attrs& a, std::string_view key, double want) {
    return a.contains(key) && std::abs(a.get_float(key) - want) <= 1e-5;
  }

  // x where e is x * clip(x + 3, 0, 6) / 6 in one of the forms above, or nullopt.
  std::optional<Expr> match(const Expr& e) const {
    std::vector<Expr> factors;
    if (const auto* div = call_of(e, "div")) {
      // (the product) / 6
      if (!near(float_scalar(div->args[1]), 6.0) || !users_.once(div->args[0])) return std::nullopt;
      leaves_of(div->args[0], "mul", users_, factors);
      if (factors.size() != 2) return std::nullopt;
      return pair_of(factors[0], factors[1], false);
    }
    leaves_of(e, "mul", users_, factors);
    if (factors.size() == 2) return pair_of(factors[0], factors[1], true);
    if (factors.size() != 3) return std::nullopt;
    for (std::size_t sixth = 0; sixth < 3; ++sixth) {
      if (!near(float_scalar(factors[sixth]), 1.0 / 6.0)) continue;
      const Expr& a = factors[(sixth + 1) % 3];
      const Expr& b = factors[(sixth + 2) % 3];
      if (auto x = pair_of(a, b, false)) return x;
    }
    return std::nullopt;
  }

  // x when {a, b} is {x, clip(x + 3, 0, 6)} (either way round; the caller has the division by
  // 6), or with `scaled` {x, clip(x + 3, 0, 6) / 6} or {x, hard_sigmoid(x, 1/6, 0.5)}.
  std::optional<Expr> pair_of(const Expr& a, const Expr& b, bool scaled) const {
    for (const auto& [x, gate] : {std::pair{a, b}, std::pair{b, a}}) {
      if (!users_.once(gate)) continue;
      if (!scaled) {
        if (relu6_of_x_plus_3(gate, x)) return x;
        continue;
      }
      if (const auto* div = call_of(gate, "div");
          div != nullptr && near(float_scalar(div->args[1]), 6.0) && users_.once(div->args[0]) &&
          relu6_of_x_plus_3(div->args[0], x))
        return x;
      if (const auto* hs = call_of(gate, "hard_sigmoid");
          hs != nullptr && hs->args[0].get() == x.get() &&
          attr_near(hs->attrs, "alpha", 1.0 / 6.0) && attr_near(hs->attrs, "beta", 0.5))
        return x;
    }
    return std::nullopt;
  }

  // Whether e is clip(x + 3, 0, 6) (3 + x too), its sum read only by the clip.
  bool relu6_of_x_plus_3(const Expr& e, const Expr& x) const {
    const auto* clip = call_of(e, "clip");
    if (clip == nullptr || !users_.once(clip->args[0])) return false;
    const auto bounds = clip_params(clip->attrs);
    if (std::abs(bounds.lo) > 1e-5 || std::abs(bounds.hi - 6.0) > 1e-5) return false;
    const auto* add = call_of(clip->args[0], "add");
    if (add == nullptr) return false;
    for (std::size_t k = 0; k < 2; ++k)
      if (add->args[k].get() == x.get() && near(float_scalar(add->args[1 - k]), 3.0)) return true;
    return false;
  }

  Users users_;
};

}  // namespace detail

DLAVM_INLINE Function recognize_hard_swish(const Function& fn, const Target&) {
  return detail::HardSwishRecognizer(fn).mutate(fn);
}

}  // namespace dlavm::graph
