// Definitions for graph/ops/common.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/printer.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/ne/structural.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace dlavm::graph::detail {

DLAVM_INLINE DType product_dtype(const TypeCall& c) {
  return host::product_dtype_or_raise(c.label, c.arg(0), c.type(0).dtype, c.arg(1),
                                      c.type(1).dtype);
}

DLAVM_INLINE std::vector<ne::Expr> broadcast(const TypeCall& c, std::size_t i, std::size_t j) {
  return broadcast(c, c.arg(i), c.type(i).shape, c.arg(j), c.type(j).shape);
}

DLAVM_INLINE std::vector<ne::Expr> broadcast(const TypeCall& c, std::string_view what_a,
                                             std::span<const ne::Expr> a, std::string_view what_b,
                                             std::span<const ne::Expr> b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<ne::Expr> out(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    const std::size_t from_end = rank - 1 - k;
    const ne::Expr* pa = from_end < a.size() ? &a[a.size() - 1 - from_end] : nullptr;
    const ne::Expr* pb = from_end < b.size() ? &b[b.size() - 1 - from_end] : nullptr;
    if (pa == nullptr || pb == nullptr) {
      out[k] = pa != nullptr ? *pa : *pb;
      continue;
    }
    const ne::Expr da = ne::simplify(*pa), db = ne::simplify(*pb);
    if (ne::can_prove(da == db) || db.as_int() == 1) {
      out[k] = *pa;
    } else if (da.as_int() == 1) {
      out[k] = *pb;
    } else {
      raise<ShapeError>(
          "{}: {} {} and {} {} do not broadcast: dim {} from the end is `{}` vs `{}` (dims must "
          "be provably equal, or one of them 1)",
          c.label, what_a, shape_text(std::vector<ne::Expr>(a.begin(), a.end())), what_b,
          shape_text(std::vector<ne::Expr>(b.begin(), b.end())), from_end, *pa, *pb);
    }
  }
  return out;
}

DLAVM_INLINE ne::Expr product(std::span<const ne::Expr> dims) { return element_count(dims); }

DLAVM_INLINE ne::Expr window_output(const TypeCall& c, const ne::Expr& extent, std::int64_t pads,
                                    std::int64_t window, std::int64_t stride,
                                    std::string_view what) {
  const ne::Expr padded = ne::simplify(extent + pads);
  if (!ne::can_prove(padded >= window))
    raise<ShapeError>("{}: the window of {} is larger than the padded {} `{}` (which can be {})",
                      c.label, window, what, padded, ne::bounds(padded).min);
  return ne::simplify(host::window_output(extent, pads, window, stride));
}

DLAVM_INLINE std::optional<std::string> host_float32_only(const TypeCall& c) {
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c.type(i).dtype != DType::float32())
      return fmt::format("computes in float32 only, and {} is {} (cast it to float32 first)",
                         c.arg(i), c.type(i).dtype);
  return std::nullopt;
}

DLAVM_INLINE std::optional<std::string> host_float32_or_integers(const TypeCall& c) {
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c.type(i).dtype.is_float() && c.type(i).dtype != DType::float32())
      return fmt::format("computes in float32 or integers, and {} is {} (cast it first)", c.arg(i),
                         c.type(i).dtype);
  return std::nullopt;
}

DLAVM_INLINE FirmwareCall elements_call(std::string function, const FirmwareStep& s,
                                        std::size_t inputs) {
  FirmwareCall c{std::move(function), {}};
  for (std::size_t k = 0; k < inputs; ++k) c.args.push_back(FirmwareArg::input(k));
  c.args.push_back(FirmwareArg::output());
  c.args.push_back(FirmwareArg::dim(product(s.input(0))));
  return c;
}

DLAVM_INLINE FirmwareKernel broadcast_firmware(std::string op, std::string elements,
                                               std::string broadcast,
                                               std::vector<std::string> locals) {
  const auto same_shape = [](const FirmwareStep& s) {
    const auto same = [](const ne::Expr& x, const ne::Expr& y) { return ne::equal(x, y); };
    for (std::size_t k = 1; k < s.call.size(); ++k) {
      const auto &a = s.input(0), &b = s.input(k);
      if (a.size() != b.size() || !std::equal(a.begin(), a.end(), b.begin(), same)) return false;
    }
    return true;
  };
  const auto support = [same_shape, op](const FirmwareStep& s) -> std::optional<std::string> {
    if (same_shape(s) || s.result.shape.size() <= 8) return std::nullopt;
    return fmt::format("'{}' broadcasting over {} dims has no firmware kernel (8 at most)", op,
                       s.result.shape.size());
  };
  const auto call = [same_shape, elements, broadcast, locals](const FirmwareStep& s) {
    const std::size_t inputs = s.call.size();
    if (same_shape(s)) return elements_call(elements, s, inputs);
    const std::size_t rank = s.result.shape.size();
    const auto aligned = [rank](std::string name, const std::vector<ne::Expr>& dims) {
      FirmwareLocal l{std::move(name), "std::int64_t", true, {}};
      for (std::size_t k = 0; k < rank; ++k)
        l.items.push_back(
            FirmwareArg::dim(k + dims.size() < rank ? ne::Expr(1) : dims[k + dims.size() - rank]));
      return l;
    };
    FirmwareCall c{broadcast, {}, {aligned("shape", s.result.shape)}};
    for (std::size_t k = 0; k < inputs; ++k) c.args.push_back(FirmwareArg::input(k));
    c.args.push_back(FirmwareArg::output());
    c.args.push_back(FirmwareArg::local("shape"));
    for (std::size_t k = 0; k < inputs; ++k) {
      c.args.push_back(FirmwareArg::local(locals.at(k)));
      c.locals.push_back(aligned(locals.at(k), s.input(k)));
    }
    c.args.push_back(FirmwareArg::integer(static_cast<std::int64_t>(rank)));
    return c;
  };
  return {.support = support, .call = call};
}

}  // namespace dlavm::graph::detail
