// Definitions for graph/ops/linear.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/linear.hpp>
#include <dlavm/host/linear.hpp>

#include <fmt/format.h>

#include <span>

namespace dlavm::graph {

namespace detail {

inline TensorType dense_type(const TypeCall& c) {
  c.require_min_rank(0, 1);
  c.require_rank(1, 2);
  const DType dtype = product_dtype(c);
  const auto& x = c.type(0).shape;
  const auto& w = c.type(1).shape;
  c.require_equal(x.back(), fmt::format("{} dim -1 (K)", c.arg(0)), w[1],
                  fmt::format("{} dim 1 (K)", c.arg(1)));
  std::vector<ne::Expr> shape(x.begin(), x.end() - 1);
  shape.push_back(w[0]);
  return {std::move(shape), dtype};
}

inline TensorType matmul_type(const TypeCall& c) {
  c.require_min_rank(0, 2);
  c.require_min_rank(1, 2);
  const DType dtype = product_dtype(c);
  const auto& a = c.type(0).shape;
  const auto& b = c.type(1).shape;
  c.require_equal(a.back(), fmt::format("{} dim -1 (K)", c.arg(0)), b[b.size() - 2],
                  fmt::format("{} dim -2 (K)", c.arg(1)));
  // broadcast the batch dims: a type call over the batch parts only
  TypeCall batch = c;
  batch.arg_types[0].shape.resize(a.size() - 2);
  batch.arg_types[1].shape.resize(b.size() - 2);
  std::vector<ne::Expr> shape = broadcast(batch, 0, 1);
  shape.push_back(a[a.size() - 2]);
  shape.push_back(b.back());
  return {std::move(shape), dtype};
}

}  // namespace detail

DLAVM_INLINE Expr dense(Expr x, Expr w) { return call("dense", {std::move(x), std::move(w)}); }
DLAVM_INLINE Expr matmul(Expr a, Expr b) { return call("matmul", {std::move(a), std::move(b)}); }

namespace detail {

// runtime::dense(x, w, y, rows, N, K): x's leading dims as the rows.
inline FirmwareCall dense_firmware(const FirmwareStep& s) {
  const auto& x = s.input(0);
  return {"dlavm::runtime::dense",
          {FirmwareArg::input(0), FirmwareArg::input(1), FirmwareArg::output(),
           FirmwareArg::dim(product(std::span(x).first(x.size() - 1))),
           FirmwareArg::dim(s.input(1)[0]), FirmwareArg::dim(x.back())}};
}

}  // namespace detail

DLAVM_INLINE void add_linear_ops(OpRegistry& ops) {
  ops.add({.name = "dense",
           .min_args = 2,
           .max_args = 2,
           .type_rule = detail::dense_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::dense(*a[0], *a[1]); },
           .firmware = {.call = detail::dense_firmware}});
  ops.add({.name = "matmul",
           .min_args = 2,
           .max_args = 2,
           .type_rule = detail::matmul_type,
           .host_kernel = [](HostArgs a, const Attrs&) { return host::matmul(*a[0], *a[1]); }});
}

}  // namespace dlavm::graph
