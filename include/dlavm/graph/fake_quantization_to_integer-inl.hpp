// Definitions for graph/fake_quantization_to_integer.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/fake_quantization_to_integer.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/ops/elementwise.hpp>
#include <dlavm/graph/ops/quantize.hpp>
#include <dlavm/graph/pattern.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace dlavm::graph {

namespace detail {

// The value of an int8 or uint8 constant of one element, and its type.
struct ZeroPoint {
  std::int64_t value;
  DType dtype;
};
inline std::optional<ZeroPoint> zero_point_scalar(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  if (c == nullptr || c->value->size() != 1 ||
      (c->value->dtype() != DType::int8() && c->value->dtype() != DType::uint8()))
    return std::nullopt;
  return ZeroPoint{c->value->data()[0], c->value->dtype()};
}

// k with `scale` = `unit` * 2^k exactly, k in [0, max_k] (doubles hold the product of two
// floats exactly, so `scale` may be such a product); nullopt otherwise.
inline std::optional<int> power_of_two_ratio(double scale, double unit, int max_k) {
  if (!(unit > 0) || !std::isnormal(unit)) return std::nullopt;
  for (int k = 0; k <= max_k; ++k)
    if (scale == std::ldexp(unit, k)) return k;
  return std::nullopt;
}

class FakeQuantizationToInteger : public ExprMutator<FakeQuantizationToInteger> {
 public:
  explicit FakeQuantizationToInteger(const Function& fn) : users_(fn) {
    for (const Expr& e : post_order(fn.roots()))
      if (const auto* c = e.as<ConstantNode>()) names_.insert(c->name);
  }

  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    Expr rebuilt = ExprMutator<FakeQuantizationToInteger>::visit_call(call, e, args);
    if (call.op() != "quantize_linear" || call.args.size() != 3) return rebuilt;
    if (auto integer = rewrite(call)) return *integer;
    return rebuilt;
  }

 private:
  struct Operand {
    Expr levels;  // the quantized value (the function's node, mutated)
    double scale;
    std::int64_t zero;
  };

  // x as a dequantization of scalar parameters, or nullopt.
  std::optional<Operand> dequantized(const Expr& x) const {
    const auto* d = call_of(x, "dequantize_linear");
    if (d == nullptr || d->args.size() != 3) return std::nullopt;
    const auto s = float_scalar(d->args[1]);
    const auto z = zero_point_scalar(d->args[2]);
    if (!s || !z || !(*s > 0)) return std::nullopt;
    return Operand{result_of(d->args[0]), *s, z->value};
  }

  std::optional<Expr> rewrite(const CallNode& q) {
    const auto sy = float_scalar(q.args[1]);
    const auto zy = zero_point_scalar(q.args[2]);
    if (!sy || !zy || !(*sy > 0)) return std::nullopt;
    const bool is_unsigned = zy->dtype == DType::uint8();
    const double qmin = is_unsigned ? 0 : -128, qmax = is_unsigned ? 255 : 127;
    // the levels' bounds: the type's, narrowed by a relu or clip before the quantization
    double lo = qmin, hi = qmax;
    Expr v = q.args[0];
    // quantize_linear's level of a float32 value: its float32 quotient, rounded half to even
    const auto level = [&](float real) {
      const float quotient = real / *sy;
      return std::clamp(
          std::nearbyint(static_cast<double>(quotient)) + static_cast<double>(zy->value), qmin,
          qmax);
    };
    if (const auto* r = call_of(v, "relu"); r != nullptr && users_.once(v)) {
      lo = static_cast<double>(zy->value);
      v = r->args[0];
    } else if (const auto* c = call_of(v, "clip"); c != nullptr && users_.once(v)) {
      const auto p = clip_params(c->attrs);
      // the float path clips float32 values: bounds as float32
      lo = std::max(lo, level(static_cast<float>(p.lo)));
      hi = std::min(hi, level(static_cast<float>(p.hi)));
      v = c->args[0];
    }
    const auto* op = v.as<CallNode>();
    if (op == nullptr || op->args.size() != 2 || !users_.once(v) ||
        (op->op() != "add" && op->op() != "sub" && op->op() != "mul"))
      return std::nullopt;
    const auto a = dequantized(op->args[0]), b = dequantized(op->args[1]);
    if (!a || !b) return std::nullopt;
    const auto int32 = [&](std::int64_t value) {
      return constant(fresh(fmt::format("int{}", value)),
                      te::NDArray::from_ints(DType::int32(), {}, {value}));
    };
    // (x - z) * 2^k in int32
    const auto term = [&](const Operand& x, int k) {
      Expr t = cast(x.levels, DType::int32());
      if (x.zero != 0) t = add(t, int32(-x.zero));
      if (k != 0) t = mul(t, int32(std::int64_t{1} << k));
      return t;
    };
    const double unit = *sy;
    Expr sum;
    if (op->op() == "mul") {
      const auto k = power_of_two_ratio(a->scale * b->scale, unit, 4);
      if (!k) return std::nullopt;
      sum = mul(term(*a, 0), term(*b, 0));
      if (*k != 0) sum = mul(sum, int32(std::int64_t{1} << *k));
    } else {
      const auto ka = power_of_two_ratio(a->scale, unit, 8);
      const auto kb = power_of_two_ratio(b->scale, unit, 8);
      if (!ka || !kb) return std::nullopt;
      sum =
          op->op() == "add" ? add(term(*a, *ka), term(*b, *kb)) : sub(term(*a, *ka), term(*b, *kb));
    }
    if (zy->value != 0) sum = add(sum, int32(zy->value));
    return cast(clip(sum, {.lo = lo, .hi = hi}), zy->dtype);
  }

  // A constant name no leaf of the function has (names identify leaves).
  std::string fresh(const std::string& stem) {
    std::string name = stem;
    for (int k = 1; names_.contains(name); ++k) name = fmt::format("{}_{}", stem, k);
    names_.insert(name);
    return name;
  }

  Users users_;
  std::set<std::string> names_;
};

}  // namespace detail

DLAVM_INLINE Function fake_quantization_to_integer(const Function& fn, const Target&) {
  return detail::FakeQuantizationToInteger(fn).mutate(fn);
}

}  // namespace dlavm::graph
