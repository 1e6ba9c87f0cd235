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

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

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

inline const AttrSchema<host::StridedSliceParams>& strided_slice_schema() {
  using P = host::StridedSliceParams;
  static const auto schema =
      AttrSchema<P>()
          .field("begin", &P::begin, "the first index per sliced dim (negative: from the end)",
                 true)
          .field("end", &P::end, "the index past the last per sliced dim (clamped to the dim)",
                 true)
          .field("step", &P::step, "the step per sliced dim, not 0 (empty: all 1)")
          .field("axes", &P::axes, "the dim each entry slices (empty: 0, 1, ...)");
  return schema;
}

inline const AttrSchema<host::TakeParams>& take_schema() {
  static const auto schema = AttrSchema<host::TakeParams>().field(
      "axis", &host::TakeParams::axis, "the dim of x the indices select along");
  return schema;
}

inline const AttrSchema<host::BroadcastToParams>& broadcast_to_schema() {
  static const auto schema = AttrSchema<host::BroadcastToParams>().field(
      "shape", &host::BroadcastToParams::shape, "the shape x is broadcast with", true);
  return schema;
}

inline const AttrSchema<host::TileParams>& tile_schema() {
  static const auto schema = AttrSchema<host::TileParams>().field(
      "repeats", &host::TileParams::repeats, "how many times each dim is repeated", true);
  return schema;
}

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

// One dim of a slice resolved over the dims' ranges: the first index read, the extent, the
// step (SliceAxis with expressions).
struct SliceDim {
  ne::Expr start, extent;
  std::int64_t step = 1;
};

// A bound of a slice along a symbolic dim d: v (negative: d + v) clamped to [lo, d + hi], when
// the same one of the three applies for every value of d; nullopt otherwise.
inline std::optional<ne::Expr> slice_bound(std::int64_t v, const ne::Expr& d, std::int64_t dmax,
                                           std::int64_t lo, std::int64_t hi) {
  v = std::clamp(v, -dmax - 1, dmax + 1);  // beyond, v clamps as these do
  const ne::Expr x = v < 0 ? ne::simplify(d + v) : ne::Expr(v);
  const ne::Expr top = ne::simplify(d + hi);
  if (ne::can_prove(x >= lo && x <= top)) return x;
  if (ne::can_prove(x <= lo)) return ne::Expr(lo);
  if (ne::can_prove(x >= top)) return top;
  return std::nullopt;
}

// host::slice_axis over a symbolic dim d (ranging over [dmin, dmax]); nullopt where the start,
// the end or the sign of the extent depends on d's value.
inline std::optional<SliceDim> symbolic_slice(std::int64_t begin, std::int64_t end,
                                              std::int64_t step, const ne::Expr& d) {
  const auto range = ne::bounds(d);
  const bool up = step > 0;
  if (!up && range.min < 1) return std::nullopt;  // host: nothing to slice in an empty dim
  const auto start = slice_bound(begin, d, range.max, 0, up ? 0 : -1);
  const auto stop = slice_bound(end, d, range.max, up ? 0 : -1, up ? 0 : -1);
  if (!start || !stop) return std::nullopt;
  const ne::Expr diff = ne::simplify(up ? *stop - *start : *start - *stop);
  // a step longer than the dim reads one element, as one of dmax + 1 does
  const std::int64_t m =
      up ? std::min(step, range.max + 1) : (step < -range.max - 1 ? range.max + 1 : -step);
  if (ne::can_prove(diff <= 0)) return SliceDim{0, 0, 1};
  if (!ne::can_prove(diff >= 0)) return std::nullopt;
  return SliceDim{*start, ne::simplify(ne::floordiv(diff + (m - 1), m)), up ? m : -m};
}

// Every dim of input 0 resolved: whole, host::slice_axis on a constant dim, symbolic_slice on
// a symbolic one (ShapeError naming the input, the dim and the numbers when it cannot).
inline std::vector<SliceDim> slice_dims(const TypeCall& c) {
  const auto p = params_of(c, strided_slice_schema());
  const auto& x = c.type(0).shape;
  const auto entry = host::slice_entries(p, x.size(), c.label);
  std::vector<SliceDim> out;
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (!entry[k]) {
      out.push_back({0, x[k], 1});
      continue;
    }
    const std::int64_t b = p.begin[*entry[k]], e = p.end[*entry[k]];
    const std::int64_t step = host::slice_step(p, *entry[k]);
    if (const auto n = ne::simplify(x[k]).as_int()) {
      const auto a = host::slice_axis(b, e, step, *n);
      out.push_back({a.start, a.extent, a.step});
    } else if (const auto s = symbolic_slice(b, e, step, x[k])) {
      out.push_back(*s);
    } else {
      const auto range = ne::bounds(x[k]);
      raise<ShapeError>(
          "{}: {} dim {} is `{}` (from {} to {}): begin {}, end {}, step {} give a slice that "
          "depends on its value; slice a symbolic dim whole, or between constants within its "
          "minimum (counted from either end; a negative step needs a minimum of 1)",
          c.label, c.arg(0), k, x[k], range.min, range.max, b, e, step);
    }
  }
  return out;
}

inline TensorType strided_slice_type(const TypeCall& c) {
  std::vector<ne::Expr> out;
  for (const auto& d : slice_dims(c)) out.push_back(d.extent);
  return {std::move(out), c.type(0).dtype};
}

inline TensorType take_type(const TypeCall& c) {
  host::check_take_indices(c.type(1).dtype, c.label, c.arg(1));
  const auto& x = c.type(0).shape;
  const std::size_t axis = c.axis("axis", x.size());
  std::vector<ne::Expr> out(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), c.type(1).shape.begin(), c.type(1).shape.end());
  out.insert(out.end(), x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end());
  return {std::move(out), c.type(0).dtype};
}

inline TensorType broadcast_to_type(const TypeCall& c) {
  const auto shape = params_of(c, broadcast_to_schema()).shape;
  host::check_broadcast_shape(shape, c.label);
  const std::vector<ne::Expr> to(shape.begin(), shape.end());
  const std::string what = fmt::format("attribute 'shape' [{}]", fmt::join(shape, ", "));
  return {broadcast(c, c.arg(0), c.type(0).shape, what, to), c.type(0).dtype};
}

inline TensorType tile_type(const TypeCall& c) {
  const auto repeats = params_of(c, tile_schema()).repeats;
  const auto& x = c.type(0).shape;
  host::check_repeats(repeats, x.size(), c.label);
  std::vector<ne::Expr> out(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) out[k] = ne::simplify(x[k] * repeats[k]);
  return {std::move(out), c.type(0).dtype};
}

}  // namespace detail

DLAVM_INLINE host::TransposeParams transpose_params(const Attrs& attrs) {
  return detail::transpose_schema().from_attrs(attrs);
}
DLAVM_INLINE host::PadParams pad_params(const Attrs& attrs) {
  return detail::pad_schema().from_attrs(attrs);
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
DLAVM_INLINE Expr strided_slice(Expr x, const host::StridedSliceParams& p) {
  return call("strided_slice", {std::move(x)}, detail::strided_slice_schema().to_attrs(p));
}
DLAVM_INLINE Expr take(Expr x, Expr indices, const host::TakeParams& p) {
  return call("take", {std::move(x), std::move(indices)}, detail::take_schema().to_attrs(p));
}
DLAVM_INLINE Expr broadcast_to(Expr x, const host::BroadcastToParams& p) {
  return call("broadcast_to", {std::move(x)}, detail::broadcast_to_schema().to_attrs(p));
}
DLAVM_INLINE Expr tile(Expr x, const host::TileParams& p) {
  return call("tile", {std::move(x)}, detail::tile_schema().to_attrs(p));
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

// An int64 local array of dims.
inline FirmwareLocal dims_local(std::string name, std::span<const ne::Expr> dims) {
  FirmwareLocal l{std::move(name), "std::int64_t", true, {}};
  for (const auto& d : dims) l.items.push_back(FirmwareArg::dim(d));
  return l;
}

// runtime::strided_slice(x, y, shape, start, step, out, rank); a rank-0 x is copied.
inline FirmwareCall strided_slice_firmware(const FirmwareStep& s) {
  const auto& x = s.input(0);
  if (x.empty()) return elements_call("dlavm::runtime::copy", s, 1);
  std::vector<ne::Expr> start, step;
  for (const auto& d : slice_dims(s.call)) {
    start.push_back(d.start);
    step.push_back(d.step);
  }
  return {"dlavm::runtime::strided_slice",
          {FirmwareArg::input(0), FirmwareArg::output(), FirmwareArg::local("shape"),
           FirmwareArg::local("start"), FirmwareArg::local("step"), FirmwareArg::local("out"),
           FirmwareArg::integer(static_cast<std::int64_t>(x.size()))},
          {dims_local("shape", x), dims_local("start", start), dims_local("step", step),
           dims_local("out", s.result.shape)}};
}

// runtime::tile(x, y, shape, out, rank), x's shape padded with leading 1s to the result's rank:
// tile, and broadcast_to (a tile whose repeated dims are 1s); a rank-0 result is a copy.
inline FirmwareCall tile_firmware(const FirmwareStep& s) {
  const auto& out = s.result.shape;
  if (out.empty()) return elements_call("dlavm::runtime::copy", s, 1);
  std::vector<ne::Expr> shape(out.size() - s.input(0).size(), ne::Expr(1));
  shape.insert(shape.end(), s.input(0).begin(), s.input(0).end());
  return {"dlavm::runtime::tile",
          {FirmwareArg::input(0), FirmwareArg::output(), FirmwareArg::local("shape"),
           FirmwareArg::local("out"), FirmwareArg::integer(static_cast<std::int64_t>(out.size()))},
          {dims_local("shape", shape), dims_local("out", out)}};
}

// runtime::take(x, indices, y, outer, extent, inner, count), which clamps an index outside the
// dim (host::take raises).
inline FirmwareCall take_firmware(const FirmwareStep& s) {
  const auto& x = s.input(0);
  const auto split = host::split_at(std::span(x), s.call.axis("axis", x.size()));
  return {"dlavm::runtime::take",
          {FirmwareArg::input(0), FirmwareArg::input(1), FirmwareArg::output(),
           FirmwareArg::dim(split.outer), FirmwareArg::dim(split.extent),
           FirmwareArg::dim(split.inner), FirmwareArg::dim(product(s.input(1)))}};
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
           .firmware = {.call = detail::copy_firmware},
           .keeps_order = true});
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
           .firmware = {.call = detail::copy_firmware},
           .keeps_order = true});
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
             return host::pad(*a[0], pad_params(attrs));
           }});
  ops.add({.name = "strided_slice",
           .attrs = detail::strided_slice_schema().specs(),
           .type_rule = detail::strided_slice_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::strided_slice(*a[0],
                                            detail::strided_slice_schema().from_attrs(attrs));
               },
           .firmware = {.call = detail::strided_slice_firmware}});
  ops.add({.name = "take",
           .min_args = 2,
           .max_args = 2,
           .attrs = detail::take_schema().specs(),
           .type_rule = detail::take_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::take(*a[0], *a[1], detail::take_schema().from_attrs(attrs));
               },
           .firmware = {.call = detail::take_firmware}});
  ops.add({.name = "broadcast_to",
           .attrs = detail::broadcast_to_schema().specs(),
           .type_rule = detail::broadcast_to_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::broadcast_to(*a[0], detail::broadcast_to_schema().from_attrs(attrs));
               },
           .firmware = {.call = detail::tile_firmware}});
  ops.add({.name = "tile",
           .attrs = detail::tile_schema().specs(),
           .type_rule = detail::tile_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::tile(*a[0], detail::tile_schema().from_attrs(attrs));
               },
           .firmware = {.call = detail::tile_firmware}});
}

}  // namespace dlavm::graph
