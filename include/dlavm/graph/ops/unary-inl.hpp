// Definitions for graph/ops/unary.hpp: the records come from host::kUnaryOps, the attributes of
// hard_sigmoid and leaky_relu from their schemas.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/unary.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace dlavm::graph {

namespace detail {

inline const AttrSchema<host::HardSigmoidParams>& hard_sigmoid_schema() {
  using P = host::HardSigmoidParams;
  static const auto schema = AttrSchema<P>()
                                 .field("alpha", &P::alpha, "the slope of the ramp")
                                 .field("beta", &P::beta, "the ramp's value at 0");
  return schema;
}

inline const AttrSchema<host::LeakyReluParams>& leaky_relu_schema() {
  static const auto schema = AttrSchema<host::LeakyReluParams>().field(
      "alpha", &host::LeakyReluParams::alpha, "the slope below 0");
  return schema;
}

// The one attribute alpha of elu, celu and thresholded_relu.
template <class P>
const AttrSchema<P>& alpha_schema(const char* doc) {
  static const auto schema = AttrSchema<P>().field("alpha", &P::alpha, doc);
  return schema;
}
inline const AttrSchema<host::EluParams>& elu_schema() {
  return alpha_schema<host::EluParams>("the scale of exp(x) - 1 below 0");
}
inline const AttrSchema<host::CeluParams>& celu_schema() {
  return alpha_schema<host::CeluParams>("the scale of exp(x / alpha) - 1 below 0");
}
inline const AttrSchema<host::ThresholdedReluParams>& thresholded_relu_schema() {
  return alpha_schema<host::ThresholdedReluParams>("the threshold");
}
inline const AttrSchema<host::SeluParams>& selu_schema() {
  using P = host::SeluParams;
  static const auto schema = AttrSchema<P>()
                                 .field("alpha", &P::alpha, "the scale of exp(x) - 1 below 0")
                                 .field("gamma", &P::gamma, "the scale of the result");
  return schema;
}

// f(schema) for the op of `kind` that has attributes; false for the others.
template <class F>
bool with_unary_schema(runtime::Unary kind, F&& f) {
  switch (kind) {
    case runtime::Unary::HardSigmoid:
      f(hard_sigmoid_schema());
      return true;
    case runtime::Unary::LeakyRelu:
      f(leaky_relu_schema());
      return true;
    case runtime::Unary::Elu:
      f(elu_schema());
      return true;
    case runtime::Unary::Selu:
      f(selu_schema());
      return true;
    case runtime::Unary::Celu:
      f(celu_schema());
      return true;
    case runtime::Unary::ThresholdedRelu:
      f(thresholded_relu_schema());
      return true;
    default:
      return false;
  }
}

// The attributes of the op of `kind` (none for most), and runtime::unary's alpha and beta from
// a call's normalized attributes.
inline std::vector<AttrSpec> unary_specs(runtime::Unary kind) {
  std::vector<AttrSpec> specs;
  with_unary_schema(kind, [&](const auto& schema) { specs = schema.specs(); });
  return specs;
}
inline host::UnaryCoefficients unary_coefficients(runtime::Unary kind, const Attrs& attrs) {
  host::UnaryCoefficients c;
  with_unary_schema(kind,
                    [&](const auto& schema) { c = host::coefficients(schema.from_attrs(attrs)); });
  return c;
}

// runtime::unary<kind>(x, y, elements[, alpha, beta]).
inline FirmwareCall unary_firmware(runtime::Unary kind, const FirmwareStep& s) {
  FirmwareCall c = elements_call(fmt::format("dlavm::runtime::unary<dlavm::runtime::Unary::{}>",
                                             host::unary_op(kind).enumerator),
                                 s, 1);
  if (!unary_specs(kind).empty()) {
    const host::UnaryCoefficients k = unary_coefficients(kind, s.call.attrs);
    c.args.push_back(FirmwareArg::real(static_cast<float>(k.alpha)));
    c.args.push_back(FirmwareArg::real(static_cast<float>(k.beta)));
  }
  return c;
}

inline OpRecord unary_record(const host::UnaryOp& op) {
  const runtime::Unary kind = op.kind;
  return {.name = std::string(op.name),
          .attrs = unary_specs(kind),
          .type_rule = [](const TypeCall& c) { return c.type(0); },
          .host_kernel =
              [kind](HostArgs a, const Attrs& attrs) {
                return host::unary(kind, *a[0], unary_coefficients(kind, attrs));
              },
          .host_support = runtime::takes_integers(kind) ? SupportRule(host_float32_or_integers)
                                                        : SupportRule(host_float32_only),
          .firmware = {.call = [kind](const FirmwareStep& s) { return unary_firmware(kind, s); }}};
}

}  // namespace detail

DLAVM_INLINE Expr unary(runtime::Unary kind, Expr x) {
  return call(std::string(host::unary_op(kind).name), {std::move(x)});
}
DLAVM_INLINE Expr sigmoid(Expr x) { return unary(runtime::Unary::Sigmoid, std::move(x)); }
DLAVM_INLINE Expr tanh(Expr x) { return unary(runtime::Unary::Tanh, std::move(x)); }
DLAVM_INLINE Expr exp(Expr x) { return unary(runtime::Unary::Exp, std::move(x)); }
DLAVM_INLINE Expr log(Expr x) { return unary(runtime::Unary::Log, std::move(x)); }
DLAVM_INLINE Expr sqrt(Expr x) { return unary(runtime::Unary::Sqrt, std::move(x)); }
DLAVM_INLINE Expr erf(Expr x) { return unary(runtime::Unary::Erf, std::move(x)); }
DLAVM_INLINE Expr abs(Expr x) { return unary(runtime::Unary::Abs, std::move(x)); }
DLAVM_INLINE Expr neg(Expr x) { return unary(runtime::Unary::Neg, std::move(x)); }
DLAVM_INLINE Expr hard_sigmoid(Expr x, const host::HardSigmoidParams& p) {
  return call("hard_sigmoid", {std::move(x)}, detail::hard_sigmoid_schema().to_attrs(p));
}
DLAVM_INLINE Expr hard_swish(Expr x) { return unary(runtime::Unary::HardSwish, std::move(x)); }
DLAVM_INLINE Expr leaky_relu(Expr x, const host::LeakyReluParams& p) {
  return call("leaky_relu", {std::move(x)}, detail::leaky_relu_schema().to_attrs(p));
}

DLAVM_INLINE Expr reciprocal(Expr x) { return unary(runtime::Unary::Reciprocal, std::move(x)); }
DLAVM_INLINE Expr floor(Expr x) { return unary(runtime::Unary::Floor, std::move(x)); }
DLAVM_INLINE Expr ceil(Expr x) { return unary(runtime::Unary::Ceil, std::move(x)); }
DLAVM_INLINE Expr round(Expr x) { return unary(runtime::Unary::Round, std::move(x)); }
DLAVM_INLINE Expr sign(Expr x) { return unary(runtime::Unary::Sign, std::move(x)); }
DLAVM_INLINE Expr softplus(Expr x) { return unary(runtime::Unary::Softplus, std::move(x)); }
DLAVM_INLINE Expr softsign(Expr x) { return unary(runtime::Unary::Softsign, std::move(x)); }
DLAVM_INLINE Expr elu(Expr x, const host::EluParams& p) {
  return call("elu", {std::move(x)}, detail::elu_schema().to_attrs(p));
}
DLAVM_INLINE Expr selu(Expr x, const host::SeluParams& p) {
  return call("selu", {std::move(x)}, detail::selu_schema().to_attrs(p));
}
DLAVM_INLINE Expr celu(Expr x, const host::CeluParams& p) {
  return call("celu", {std::move(x)}, detail::celu_schema().to_attrs(p));
}
DLAVM_INLINE Expr thresholded_relu(Expr x, const host::ThresholdedReluParams& p) {
  return call("thresholded_relu", {std::move(x)}, detail::thresholded_relu_schema().to_attrs(p));
}

DLAVM_INLINE void add_unary_ops(OpRegistry& ops) {
  for (const host::UnaryOp& op : host::kUnaryOps) ops.add(detail::unary_record(op));
}

}  // namespace dlavm::graph
