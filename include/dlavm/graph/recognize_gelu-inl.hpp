// Definitions for graph/recognize_gelu.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/ops/float_ops.hpp>
#include <dlavm/graph/pattern.hpp>
#include <dlavm/graph/recognize_gelu.hpp>

#include <cmath>
#include <optional>
#include <utility>
#include <vector>

namespace dlavm::graph {

namespace detail {

inline bool near(std::optional<float> v, double want) {
  return v.has_value() && std::abs(static_cast<double>(*v) - want) <= 1e-5;
}

class GeluRecognizer : public ExprMutator<GeluRecognizer> {
 public:
  explicit GeluRecognizer(const Function& fn) : users_(fn) {}

  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    if (call.op() == "mul")
      if (const auto x = match(e)) {
        Expr y = gelu(visit(*x));
        return call.result_name.empty() ? y : named(y, call.result_name);
      }
    return ExprMutator<GeluRecognizer>::visit_call(call, e, args);
  }

 private:
  // x where e is x * 0.5 * (1 + erf(x / sqrt(2))), or nullopt.
  std::optional<Expr> match(const Expr& e) const {
    std::vector<Expr> factors;
    leaves_of(e, "mul", users_, factors);
    if (factors.size() != 3) return std::nullopt;
    for (std::size_t half = 0; half < 3; ++half) {
      if (!near(float_scalar(factors[half]), 0.5)) continue;
      for (std::size_t sum = 0; sum < 3; ++sum) {
        if (sum == half) continue;
        const Expr& x = factors[3 - half - sum];
        if (one_plus_erf_of(factors[sum], x)) return x;
      }
    }
    return std::nullopt;
  }

  // Whether e is 1 + erf(x / sqrt(2)) (either way round; x * (1 / sqrt(2)) too), read once.
  bool one_plus_erf_of(const Expr& e, const Expr& x) const {
    const auto* add = call_of(e, "add");
    if (add == nullptr || !users_.once(e)) return false;
    for (std::size_t k = 0; k < 2; ++k) {
      const auto* erf = call_of(add->args[1 - k], "erf");
      if (!near(float_scalar(add->args[k]), 1.0) || erf == nullptr ||
          !users_.once(add->args[1 - k]))
        continue;
      const Expr& scaled = erf->args[0];
      if (!users_.once(scaled)) return false;
      if (const auto* div = call_of(scaled, "div"))
        return div->args[0].get() == x.get() && near(float_scalar(div->args[1]), std::sqrt(2.0));
      if (const auto* mul = call_of(scaled, "mul"))
        for (std::size_t j = 0; j < 2; ++j)
          if (mul->args[j].get() == x.get() &&
              near(float_scalar(mul->args[1 - j]), 1.0 / std::sqrt(2.0)))
            return true;
      return false;
    }
    return false;
  }

  Users users_;
};

}  // namespace detail

DLAVM_INLINE Function recognize_gelu(const Function& fn, const Target&) {
  return detail::GeluRecognizer(fn).mutate(fn);
}

}  // namespace dlavm::graph
