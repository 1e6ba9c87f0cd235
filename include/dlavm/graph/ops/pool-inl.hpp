// Definitions for graph/ops/pool.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/pool.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

// max_pool2d's attributes; avg_pool2d's add count_include_pad.
inline const AttrSchema<host::Pool2dParams>& pool2d_schema(bool average) {
  using P = host::Pool2dParams;
  const auto make = [](bool avg) {
    AttrSchema<P> s;
    s.field("pool_size", &P::pool_size, "the window: (height, width)", true)
        .field("strides", &P::strides, "steps of the window: (height, width)")
        .field("padding", &P::padding, "padded rows and columns: (top, left, bottom, right)");
    if (avg)
      s.field("count_include_pad", &P::count_include_pad,
              "1: divide by the window's size; 0: by the elements inside the input");
    return s;
  };
  static const auto max = make(false), avg = make(true);
  return average ? avg : max;
}

inline TensorType pool2d_type(const TypeCall& c) {
  const host::Pool2dParams p = params_of(c, pool2d_schema(c.attrs.contains("count_include_pad")));
  host::validate(p, c.label);
  c.require_rank(0, 4);
  const auto& x = c.type(0).shape;
  ne::Expr oh =
      window_output(c, x[2], p.padding[0] + p.padding[2], p.pool_size[0], p.strides[0], "height");
  ne::Expr ow =
      window_output(c, x[3], p.padding[1] + p.padding[3], p.pool_size[1], p.strides[1], "width");
  return {{x[0], x[1], std::move(oh), std::move(ow)}, c.type(0).dtype};
}

inline TensorType global_pool_type(const TypeCall& c) {
  c.require_rank(0, 4);
  const auto& x = c.type(0).shape;
  return {{x[0], x[1], 1, 1}, c.type(0).dtype};
}

// The host averages take integers of at most 32 bits, or float32.
inline std::optional<std::string> host_average_support(const TypeCall& c) {
  const DType t = c.type(0).dtype;
  if (t.is_integral() && t.bits() > 32)
    return fmt::format("averages integers of at most 32 bits, and {} is {}", c.arg(0), t);
  return std::nullopt;
}

}  // namespace detail

DLAVM_INLINE host::Pool2dParams pool2d_params(const Attrs& attrs) {
  return detail::pool2d_schema(attrs.contains("count_include_pad")).from_attrs(attrs);
}

DLAVM_INLINE Expr max_pool2d(Expr x, const host::Pool2dParams& p) {
  return call("max_pool2d", {std::move(x)}, detail::pool2d_schema(false).to_attrs(p));
}

DLAVM_INLINE Expr avg_pool2d(Expr x, const host::Pool2dParams& p) {
  return call("avg_pool2d", {std::move(x)}, detail::pool2d_schema(true).to_attrs(p));
}

DLAVM_INLINE Expr global_avg_pool2d(Expr x) { return call("global_avg_pool2d", {std::move(x)}); }

namespace detail {

// runtime::pool_window_max / pool_window_avg over the planes [N*C, H, W]; a global average is
// one window of the whole plane that counts its (absent) padding.
inline FirmwareCall pool_firmware(const FirmwareStep& s, bool maximum, bool global) {
  const auto& x = s.input(0);
  const auto& y = s.result.shape;
  host::Pool2dParams p;
  if (global)
    p.count_include_pad = true;
  else
    p = pool2d_params(s.call.attrs);
  const auto window = [&](std::size_t k) {
    return global ? FirmwareArg::dim(x[2 + k]) : FirmwareArg::integer(p.pool_size[k]);
  };
  FirmwareCall c{
      maximum ? "dlavm::runtime::pool_window_max" : "dlavm::runtime::pool_window_avg",
      {FirmwareArg::input(0), FirmwareArg::output(),
       FirmwareArg::aggregate(
           "dlavm::runtime::PoolShape",
           {FirmwareArg::dim(x[0] * x[1]), FirmwareArg::dim(x[2]), FirmwareArg::dim(x[3]),
            FirmwareArg::dim(y[2]), FirmwareArg::dim(y[3]), window(0), window(1),
            FirmwareArg::integer(p.strides[0]), FirmwareArg::integer(p.strides[1]),
            FirmwareArg::integer(p.padding[0]), FirmwareArg::integer(p.padding[1])})}};
  if (!maximum) c.args.push_back(FirmwareArg::boolean(p.count_include_pad));
  return c;
}

}  // namespace detail

DLAVM_INLINE void add_pool_ops(OpRegistry& ops) {
  ops.add({.name = "max_pool2d",
           .attrs = detail::pool2d_schema(false).specs(),
           .type_rule = detail::pool2d_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::max_pool2d(*a[0], pool2d_params(attrs));
               },
           .firmware = {.call = [](const FirmwareStep& s) {
             return detail::pool_firmware(s, true, false);
           }}});
  ops.add({.name = "avg_pool2d",
           .attrs = detail::pool2d_schema(true).specs(),
           .type_rule = detail::pool2d_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 return host::avg_pool2d(*a[0], pool2d_params(attrs));
               },
           .host_support = detail::host_average_support,
           .firmware = {.call = [](const FirmwareStep& s) {
             return detail::pool_firmware(s, false, false);
           }}});
  ops.add({.name = "global_avg_pool2d",
           .type_rule = detail::global_pool_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::global_avg_pool2d(*a[0]); },
           .host_support = detail::host_average_support,
           .firmware = {.call = [](const FirmwareStep& s) {
             return detail::pool_firmware(s, false, true);
           }}});
}

}  // namespace dlavm::graph
