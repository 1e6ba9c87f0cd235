// Definitions for graph/ops/transform.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/transform.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>

#include <fmt/format.h>

#include <optional>

namespace dlavm::graph {

namespace detail {

// Dims copied by a 0 entry cancel between x and the result, so the -1 (or the size check)
// only involves the other dims: [1, token, 512] -> [0, 0, 8, -1] infers 512 / 8.
inline TensorType reshape_type(const TypeCall& c) {
  const auto& newshape = c.attrs.get_ints("newshape");
  const auto& x = c.type(0).shape;
  host::check_newshape(newshape, x.size(), c.label);
  std::vector<ne::Expr> out(newshape.size());
  std::vector<bool> copied(x.size(), false);
  std::optional<std::size_t> infer;
  ne::Expr known = 1;
  for (std::size_t k = 0; k < newshape.size(); ++k) {
    if (newshape[k] == -1) {
      infer = k;
    } else if (newshape[k] == 0) {
      out[k] = x[k];
      copied[k] = true;
    } else {
      out[k] = newshape[k];
      known = known * newshape[k];
    }
  }
  ne::Expr rest = 1;  // the dims of x no 0 entry copies
  for (std::size_t k = 0; k < x.size(); ++k)
    if (!copied[k]) rest = rest * x[k];
  rest = ne::simplify(rest);
  known = ne::simplify(known);
  if (infer) {
    const ne::Expr remainder = ne::simplify(ne::floormod(rest, known));
    if (remainder.as_int() != 0)
      raise<ShapeError>(
          "{}: cannot reshape {} {} to [{}]: the dims not copied hold `{}` elements, which is "
          "not provably a multiple of {}",
          c.label, c.arg(0), shape_text(x), fmt::join(newshape, ", "), rest, known);
    out[*infer] = ne::simplify(ne::floordiv(rest, known));
  } else if (!ne::can_prove(rest == known)) {
    raise<ShapeError>(
        "{}: cannot reshape {} {} to [{}]: `{}` elements of x against {} (the dims not copied)",
        c.label, c.arg(0), shape_text(x), fmt::join(newshape, ", "), rest, known);
  }
  return {std::move(out), c.type(0).dtype};
}

inline TensorType transpose_type(const TypeCall& c) {
  const auto& x = c.type(0).shape;
  const auto perm = host::transpose_perm(c.attrs.get_ints("perm"), x.size(), c.label);
  std::vector<ne::Expr> out(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) out[k] = x[perm[k]];
  return {std::move(out), c.type(0).dtype};
}

inline TensorType flatten_type(const TypeCall& c) {
  const std::span<const ne::Expr> x = c.type(0).shape;
  const std::size_t axis = host::flatten_axis(c.attrs.get_int("axis"), x.size(), c.label);
  return {{product(x.first(axis)), product(x.subspan(axis))}, c.type(0).dtype};
}

inline TensorType concat_type(const TypeCall& c) {
  const auto& first = c.type(0).shape;
  const std::size_t axis = c.axis("axis", first.size());
  ne::Expr extent = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    c.require_same_dtype(0, i);
    c.require_rank(i, first.size());
    for (std::size_t k = 0; k < first.size(); ++k)
      if (k != axis)
        c.require_equal(c.type(i).shape[k], fmt::format("{} dim {}", c.arg(i), k), first[k],
                        fmt::format("{} dim {}", c.arg(0), k));
    extent = extent + c.type(i).shape[axis];
  }
  std::vector<ne::Expr> out = first;
  out[axis] = ne::simplify(extent);
  return {std::move(out), c.type(0).dtype};
}

inline host::PadParams pad_params(const Attrs& attrs) {
  return {.pad_before = attrs.get_ints("pad_before"),
          .pad_after = attrs.get_ints("pad_after"),
          .value = attrs.get_float("value")};
}

inline TensorType pad_type(const TypeCall& c) {
  const host::PadParams p = pad_params(c.attrs);
  const auto& x = c.type(0).shape;
  host::validate(p, x.size(), c.label);
  host::check_pad_value(p.value, c.type(0).dtype, c.label);
  std::vector<ne::Expr> out(x.size());
  for (std::size_t k = 0; k < x.size(); ++k)
    out[k] = ne::simplify(x[k] + (p.pad_before[k] + p.pad_after[k]));
  return {std::move(out), c.type(0).dtype};
}

}  // namespace detail

DLAVM_INLINE Expr reshape(Expr x, const host::ReshapeParams& p) {
  return call("reshape", {std::move(x)}, {{"newshape", p.newshape}});
}
DLAVM_INLINE Expr transpose(Expr x, const host::TransposeParams& p) {
  return call("transpose", {std::move(x)}, {{"perm", p.perm}});
}
DLAVM_INLINE Expr flatten(Expr x, const host::FlattenParams& p) {
  return call("flatten", {std::move(x)}, {{"axis", p.axis}});
}
DLAVM_INLINE Expr concat(std::vector<Expr> xs, const host::ConcatParams& p) {
  return call("concat", std::move(xs), {{"axis", p.axis}});
}
DLAVM_INLINE Expr pad(Expr x, const host::PadParams& p) {
  return call("pad", {std::move(x)},
              {{"pad_before", p.pad_before}, {"pad_after", p.pad_after}, {"value", p.value}});
}

DLAVM_INLINE void add_transform_ops(OpRegistry& ops) {
  ops.add({.name = "reshape",
           .attrs = {{"newshape", AttrKind::Ints, std::nullopt}},
           .type_rule = detail::reshape_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::reshape(*a[0], {.newshape = attrs.get_ints("newshape")});
           }});
  ops.add({.name = "transpose",
           .attrs = {{"perm", AttrKind::Ints, std::vector<std::int64_t>{}}},
           .type_rule = detail::transpose_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::transpose(*a[0], {.perm = attrs.get_ints("perm")});
           }});
  ops.add({.name = "flatten",
           .attrs = {{"axis", AttrKind::Int, host::FlattenParams{}.axis}},
           .type_rule = detail::flatten_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::flatten(*a[0], {.axis = attrs.get_int("axis")});
           }});
  ops.add({.name = "concat",
           .min_args = 1,
           .max_args = OpRecord::kVariadic,
           .attrs = {{"axis", AttrKind::Int, std::nullopt}},
           .type_rule = detail::concat_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::concat(a, {.axis = attrs.get_int("axis")});
           }});
  ops.add({.name = "pad",
           .attrs = {{"pad_before", AttrKind::Ints, std::nullopt},
                     {"pad_after", AttrKind::Ints, std::nullopt},
                     {"value", AttrKind::Float, host::PadParams{}.value}},
           .type_rule = detail::pad_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::pad(*a[0], detail::pad_params(attrs));
           }});
}

}  // namespace dlavm::graph
