// Definitions for graph/ops/float_ops.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/float_ops.hpp>

#include <fmt/format.h>

#include <string>

namespace dlavm::graph {

namespace detail {

inline TensorType softmax_type(const TypeCall& c) {
  c.axis("axis", c.type(0).ndim());
  return c.type(0);
}

inline TensorType layer_norm_type(const TypeCall& c) {
  const auto& x = c.type(0).shape;
  const std::size_t axis = c.axis("axis", x.size());
  for (std::size_t i : {1, 2}) {
    c.require_same_dtype(0, i);
    c.require_rank(i, x.size() - axis);
    for (std::size_t k = 0; k < x.size() - axis; ++k)
      c.require_equal(c.type(i).shape[k], fmt::format("{} dim {}", c.arg(i), k), x[axis + k],
                      fmt::format("{} dim {}", c.arg(0), axis + k));
  }
  return c.type(0);
}

inline TensorType gelu_type(const TypeCall& c) { return c.type(0); }

inline TensorType batch_norm_type(const TypeCall& c) {
  const auto& x = c.type(0).shape;
  const std::size_t axis = c.axis("axis", x.size());
  for (std::size_t i = 1; i <= 4; ++i) {
    c.require_same_dtype(0, i);
    c.require_rank(i, 1);
    c.require_equal(c.type(i).shape[0], fmt::format("{} dim 0", c.arg(i)), x[axis],
                    fmt::format("{} dim {}", c.arg(0), axis));
  }
  return c.type(0);
}

inline TensorType causal_mask_type(const TypeCall& c) {
  c.require_min_rank(0, 2);
  const auto& x = c.type(0).shape;
  const auto& m = x[x.size() - 2];
  const auto& n = x.back();
  if (!ne::can_prove(ne::simplify(n - m) >= 0))
    raise<ShapeError>(
        "{}: {} has {} keys (dim -1) and {} queries (dim -2); a causal mask needs at least as "
        "many keys as queries (the queries are the last positions)",
        c.label, c.arg(0), n, m);
  return c.type(0);
}

inline const AttrSchema<host::SoftmaxParams>& softmax_schema() {
  static const auto schema = AttrSchema<host::SoftmaxParams>().field(
      "axis", &host::SoftmaxParams::axis, "the dim normalized over (negative: from the end)");
  return schema;
}

inline const AttrSchema<host::LayerNormParams>& layer_norm_schema() {
  using P = host::LayerNormParams;
  static const auto schema =
      AttrSchema<P>()
          .field("axis", &P::axis, "the first of the trailing dims normalized over")
          .field("epsilon", &P::epsilon, "added to the variance before the square root");
  return schema;
}

inline const AttrSchema<host::BatchNormParams>& batch_norm_schema() {
  using P = host::BatchNormParams;
  static const auto schema =
      AttrSchema<P>()
          .field("axis", &P::axis, "the channel dim")
          .field("epsilon", &P::epsilon, "added to the variance before the square root");
  return schema;
}

}  // namespace detail

DLAVM_INLINE host::BatchNormParams batch_norm_params(const Attrs& attrs) {
  return detail::batch_norm_schema().from_attrs(attrs);
}

DLAVM_INLINE host::LayerNormParams layer_norm_params(const Attrs& attrs) {
  return detail::layer_norm_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr softmax(Expr x, const host::SoftmaxParams& p) {
  return call("softmax", {std::move(x)}, detail::softmax_schema().to_attrs(p));
}
DLAVM_INLINE Expr log_softmax(Expr x, const host::SoftmaxParams& p) {
  return call("log_softmax", {std::move(x)}, detail::softmax_schema().to_attrs(p));
}
DLAVM_INLINE Expr layer_norm(Expr x, Expr gamma, Expr beta, const host::LayerNormParams& p) {
  return call("layer_norm", {std::move(x), std::move(gamma), std::move(beta)},
              detail::layer_norm_schema().to_attrs(p));
}
DLAVM_INLINE Expr gelu(Expr x) { return call("gelu", {std::move(x)}); }
DLAVM_INLINE Expr causal_mask(Expr x) { return call("causal_mask", {std::move(x)}); }
DLAVM_INLINE Expr batch_norm(Expr x, Expr gamma, Expr beta, Expr mean, Expr var,
                             const host::BatchNormParams& p) {
  return call("batch_norm",
              {std::move(x), std::move(gamma), std::move(beta), std::move(mean), std::move(var)},
              detail::batch_norm_schema().to_attrs(p));
}

namespace detail {

// runtime::softmax or runtime::log_softmax (`function`) as (x, y, outer, extent, inner) over
// the axis, float32 only.
inline FirmwareKernel softmax_firmware(std::string function) {
  return {.support = [function](const FirmwareStep& s) -> std::optional<std::string> {
            const DType x = s.call.type(0).dtype;
            if (x == DType::float32()) return std::nullopt;
            return fmt::format("{} of {} has no firmware kernel", function, x);
          },
          .call =
              [function](const FirmwareStep& s) {
                const auto& x = s.input(0);
                const auto split = host::split_at(std::span(x), s.call.axis("axis", x.size()));
                return FirmwareCall{
                    "dlavm::runtime::" + function,
                    {FirmwareArg::input(0), FirmwareArg::output(), FirmwareArg::dim(split.outer),
                     FirmwareArg::dim(split.extent), FirmwareArg::dim(split.inner)}};
              }};
}

// runtime::layer_norm(x, gamma, beta, y, groups, group size, epsilon): the dims from the axis on
// are one group.
inline FirmwareCall layer_norm_firmware(const FirmwareStep& s) {
  const auto& x = s.input(0);
  const auto p = layer_norm_schema().from_attrs(s.call.attrs);
  const auto axis = s.call.axis("axis", x.size());
  return {"dlavm::runtime::layer_norm",
          {FirmwareArg::input(0), FirmwareArg::input(1), FirmwareArg::input(2),
           FirmwareArg::output(), FirmwareArg::dim(product(std::span(x).first(axis))),
           FirmwareArg::dim(product(std::span(x).subspan(axis))),
           FirmwareArg::real(static_cast<float>(p.epsilon))}};
}

// runtime::causal_mask(x, y, rows, M, N) over the last two dims.
inline FirmwareCall causal_mask_firmware(const FirmwareStep& s) {
  const auto& x = s.input(0);
  return {"dlavm::runtime::causal_mask",
          {FirmwareArg::input(0), FirmwareArg::output(),
           FirmwareArg::dim(product(std::span(x).first(x.size() - 1))),
           FirmwareArg::dim(x[x.size() - 2]), FirmwareArg::dim(x.back())}};
}

// runtime::batch_norm(x, gamma, beta, mean, var, y, outer, channels, inner, epsilon).
inline FirmwareCall batch_norm_firmware(const FirmwareStep& s) {
  const auto& x = s.input(0);
  const auto p = batch_norm_schema().from_attrs(s.call.attrs);
  const auto split = host::split_at(std::span(x), s.call.axis("axis", x.size()));
  return {"dlavm::runtime::batch_norm",
          {FirmwareArg::input(0), FirmwareArg::input(1), FirmwareArg::input(2),
           FirmwareArg::input(3), FirmwareArg::input(4), FirmwareArg::output(),
           FirmwareArg::dim(split.outer), FirmwareArg::dim(split.extent),
           FirmwareArg::dim(split.inner), FirmwareArg::real(static_cast<float>(p.epsilon))}};
}

}  // namespace detail

DLAVM_INLINE void add_float_ops(OpRegistry& ops) {
  ops.add({.name = "softmax",
           .attrs = detail::softmax_schema().specs(),
           .type_rule = detail::softmax_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::softmax(*a[0], detail::softmax_schema().from_attrs(attrs));
               },
           .host_support = detail::host_float32_only,
           .firmware = detail::softmax_firmware("softmax")});
  ops.add({.name = "log_softmax",
           .attrs = detail::softmax_schema().specs(),
           .type_rule = detail::softmax_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::log_softmax(*a[0], detail::softmax_schema().from_attrs(attrs));
               },
           .host_support = detail::host_float32_only,
           .firmware = detail::softmax_firmware("log_softmax")});
  ops.add({.name = "layer_norm",
           .min_args = 3,
           .max_args = 3,
           .attrs = detail::layer_norm_schema().specs(),
           .type_rule = detail::layer_norm_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::layer_norm(*a[0], *a[1], *a[2],
                                         detail::layer_norm_schema().from_attrs(attrs));
               },
           .host_support = detail::host_float32_only,
           .firmware = {.call = detail::layer_norm_firmware}});
  ops.add({.name = "gelu",
           .type_rule = detail::gelu_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::gelu(*a[0]); },
           .host_support = detail::host_float32_only});
  ops.add({.name = "batch_norm",
           .min_args = 5,
           .max_args = 5,
           .attrs = detail::batch_norm_schema().specs(),
           .type_rule = detail::batch_norm_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::batch_norm(*a[0], *a[1], *a[2], *a[3], *a[4],
                                         detail::batch_norm_schema().from_attrs(attrs));
               },
           .host_support = detail::host_float32_only,
           .firmware = {.call = detail::batch_norm_firmware}});
  ops.add({.name = "causal_mask",
           .type_rule = detail::causal_mask_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::causal_mask(*a[0]); },
           .host_support = detail::host_float32_only,
           .firmware = {.call = detail::causal_mask_firmware}});
}

}  // namespace dlavm::graph
