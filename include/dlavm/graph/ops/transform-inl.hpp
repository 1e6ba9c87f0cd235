// Definitions for graph/ops/transform.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attr_schema.hpp>
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

inline const AttrSchema<host::ReshapeParams>& reshape_schema() {
  static const auto schema = AttrSchema<host::ReshapeParams>().field(
      "newshape", &host::ReshapeParams::newshape,
      "the new dims: 0 keeps the input's dim, -1 takes what is left", true);
  return schema;
}

inline const AttrSchema<host::TransposeParams>& transpose_schema() {
  static const auto schema = AttrSchema<host::TransposeParams>().field(
      "perm", &host::TransposeParams::perm, "the input dim of each output dim (empty: reversed)");
  return schema;
}

inline const AttrSchema<host::FlattenParams>& flatten_schema() {
  static const auto schema = AttrSchema<host::FlattenParams>().field(
      "axis", &host::FlattenParams::axis, "the dims before it make the rows, the rest the columns");
  return schema;
}

inline const AttrSchema<host::ConcatParams>& concat_schema() {
  static const auto schema = AttrSchema<host::ConcatParams>().field(
      "axis", &host::ConcatParams::axis, "the dim the inputs are joined along", true);
  return schema;
}

inline const AttrSchema<host::PadParams>& pad_schema() {
  using P = host::PadParams;
  static const auto schema =
      AttrSchema<P>()
          .field("pad_before", &P::pad_before, "elements before, per dim", true)
          .field("pad_after", &P::pad_after, "elements after, per dim", true)
          .field("value", &P::value, "the value padded with (mode constant)")
          .field("mode", &P::mode, "constant, edge (the nearest element) or reflect (mirrored)",
                 {{"constant", host::PadMode::Constant},
                  {"edge", host::PadMode::Edge},
                  {"reflect", host::PadMode::Reflect}});
  return schema;
}

inline host::PadParams pad_params(const Attrs& attrs) { return pad_schema().from_attrs(attrs); }

// Dims copied by a 0 entry cancel between x and the result, so the -1 (or the size check)
// only involves the other dims: [1, token, 512] -> [0, 0, 8, -1] infers 512 / 8.
inline TensorType reshape_type(const TypeCall& c) {
  const auto newshape = params_of(c, reshape_schema()).newshape;
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
  const auto perm = host::transpose_perm(params_of(c, transpose_schema()).perm, x.size(), c.label);
  std::vector<ne::Expr> out(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) out[k] = x[perm[k]];
  return {std::move(out), c.type(0).dtype};
}

inline TensorType flatten_type(const TypeCall& c) {
  const std::span<const ne::Expr> x = c.type(0).shape;
  const std::size_t axis =
      host::flatten_axis(params_of(c, flatten_schema()).axis, x.size(), c.label);
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

inline TensorType pad_type(const TypeCall& c) {
  const host::PadParams p = pad_params(c.attrs);
  const auto& x = c.type(0).shape;
  host::validate(p, x.size(), c.label);
  host::check_pad_value(p.value, c.type(0).dtype, c.label);
  std::vector<std::optional<std::int64_t>> dims;
  for (const auto& d : x) dims.push_back(d.as_int());
  host::check_pad_extent(p, dims, c.label);
  std::vector<ne::Expr> out(x.size());
  for (std::size_t k = 0; k < x.size(); ++k)
    out[k] = ne::simplify(x[k] + (p.pad_before[k] + p.pad_after[k]));
  return {std::move(out), c.type(0).dtype};
}

}  // namespace detail

DLAVM_INLINE host::TransposeParams transpose_params(const Attrs& attrs) {
  return detail::transpose_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr reshape(Expr x, const host::ReshapeParams& p) {
  return call("reshape", {std::move(x)}, detail::reshape_schema().to_attrs(p));
}
DLAVM_INLINE Expr transpose(Expr x, const host::TransposeParams& p) {
  return call("transpose", {std::move(x)}, detail::transpose_schema().to_attrs(p));
}
DLAVM_INLINE Expr flatten(Expr x, const host::FlattenParams& p) {
  return call("flatten", {std::move(x)}, detail::flatten_schema().to_attrs(p));
}
DLAVM_INLINE Expr concat(std::vector<Expr> xs, const host::ConcatParams& p) {
  return call("concat", std::move(xs), detail::concat_schema().to_attrs(p));
}
DLAVM_INLINE Expr pad(Expr x, const host::PadParams& p) {
  return call("pad", {std::move(x)}, detail::pad_schema().to_attrs(p));
}

namespace detail {

// runtime::copy(x, y, elements): a reshape or flatten keeps the row-major order.
inline FirmwareCall copy_firmware(const FirmwareStep& s) {
  return elements_call("dlavm::runtime::copy", s, 1);
}

// runtime::transpose(x, y, shape, perm, rank), of rank 8 at most.
inline FirmwareKernel transpose_firmware() {
  return {.support = [](const FirmwareStep& s) -> std::optional<std::string> {
            if (s.input(0).size() <= 8) return std::nullopt;
            return fmt::format("transpose of rank {} has no firmware kernel (rank 8 at most)",
                               s.input(0).size());
          },
          .call =
              [](const FirmwareStep& s) {
                const auto& x = s.input(0);
                const auto perm = host::transpose_perm(transpose_params(s.call.attrs).perm,
                                                       x.size(), "transpose");
                FirmwareLocal shape{"shape", "std::int64_t", true, {}};
                FirmwareLocal order{"perm", "std::int64_t", true, {}};
                for (const auto& d : x) shape.items.push_back(FirmwareArg::dim(d));
                for (const auto p : perm)
                  order.items.push_back(FirmwareArg::integer(static_cast<std::int64_t>(p)));
                return FirmwareCall{"dlavm::runtime::transpose",
                                    {FirmwareArg::input(0), FirmwareArg::output(),
                                     FirmwareArg::local("shape"), FirmwareArg::local("perm"),
                                     FirmwareArg::integer(static_cast<std::int64_t>(x.size()))},
                                    {std::move(shape), std::move(order)}};
              }};
}

}  // namespace detail

DLAVM_INLINE void add_transform_ops(OpRegistry& ops) {
  ops.add({.name = "reshape",
           .attrs = detail::reshape_schema().specs(),
           .type_rule = detail::reshape_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::reshape(*a[0], detail::reshape_schema().from_attrs(attrs));
               },
           .firmware = {.call = detail::copy_firmware}});
  ops.add({.name = "transpose",
           .attrs = detail::transpose_schema().specs(),
           .type_rule = detail::transpose_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::transpose(*a[0], detail::transpose_schema().from_attrs(attrs));
               },
           .firmware = detail::transpose_firmware(),
           .permutation = [](const TypeCall& c) -> std::optional<std::vector<std::int64_t>> {
             const auto perm = host::transpose_perm(params_of(c, detail::transpose_schema()).perm,
                                                    c.type(0).ndim(), c.label);
             return std::vector<std::int64_t>(perm.begin(), perm.end());
           }});
  ops.add({.name = "flatten",
           .attrs = detail::flatten_schema().specs(),
           .type_rule = detail::flatten_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::flatten(*a[0], detail::flatten_schema().from_attrs(attrs));
               },
           .firmware = {.call = detail::copy_firmware}});
  ops.add({.name = "concat",
           .min_args = 1,
           .max_args = OpRecord::kVariadic,
           .attrs = detail::concat_schema().specs(),
           .type_rule = detail::concat_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::concat(a, detail::concat_schema().from_attrs(attrs));
               },
           .concat_axis = [](const TypeCall& c) -> std::optional<std::size_t> {
             return c.axis("axis", c.type(0).ndim());
           }});
  ops.add({.name = "pad",
           .attrs = detail::pad_schema().specs(),
           .type_rule = detail::pad_type,
           .host_kernel = [](HostArgs a, const Attrs& attrs) {
             return host::pad(*a[0], detail::pad_params(attrs));
           }});
}

}  // namespace dlavm::graph
