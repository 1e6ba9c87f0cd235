// Definitions for graph/ops/recurrent.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/ops/common.hpp>
#include <dlavm/graph/ops/recurrent.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace dlavm::graph {

namespace detail {

inline const AttrSchema<host::RecurrentParams>& recurrent_schema() {
  using P = host::RecurrentParams;
  using C = host::RecurrentCell;
  using D = host::RecurrentDirection;
  using R = host::RecurrentResult;
  static const auto schema =
      AttrSchema<P>()
          .field("cell", &P::cell, "the cell: LSTM, GRU or a plain RNN",
                 {{"lstm", C::Lstm}, {"gru", C::Gru}, {"rnn", C::Rnn}})
          .field("hidden_size", &P::hidden_size, "H: the state's size")
          .field("direction", &P::direction, "the order of the steps",
                 {{"forward", D::Forward},
                  {"reverse", D::Reverse},
                  {"bidirectional", D::Bidirectional}})
          .field("linear_before_reset", &P::linear_before_reset,
                 "GRU: the reset gate scales the recurrent product, not the state")
          .field("result", &P::result, "the hidden state after each step, or the LSTM's cell",
                 {{"hidden", R::Hidden}, {"cell", R::Cell}});
  return schema;
}

inline TensorType recurrent_type(const TypeCall& c) {
  const host::RecurrentParams p = params_of(c, recurrent_schema());
  host::validate(p, c.label);
  const std::size_t ranks[] = {3, 3, 3, 2, 3, 3};
  for (std::size_t i = 0; i < c.size(); ++i) c.require_rank(i, ranks[i]);
  const auto& x = c.type(0).shape;
  const std::int64_t d = host::directions_of(p.direction), g = host::gates_of(p.cell);
  const std::int64_t h = p.hidden_size;
  const auto check = [&](std::size_t i, std::size_t k, const ne::Expr& want, const char* what) {
    c.require_equal(c.type(i).shape[k], fmt::format("{} dim {}", c.arg(i), k), want, what);
  };
  for (std::size_t i = 1; i < c.size(); ++i) check(i, 0, ne::Expr(d), "the directions");
  check(1, 1, ne::Expr(g * h), "gates times hidden_size");
  check(1, 2, x[2], "x's input size");
  check(2, 1, ne::Expr(g * h), "gates times hidden_size");
  check(2, 2, ne::Expr(h), "hidden_size");
  check(3, 1, ne::Expr(2 * g * h), "twice gates times hidden_size");
  for (std::size_t i = 4; i < c.size(); ++i) {
    check(i, 1, x[1], "x's batch");
    check(i, 2, ne::Expr(h), "hidden_size");
  }
  return {{x[0], ne::Expr(d), x[1], ne::Expr(h)}, c.type(0).dtype};
}

}  // namespace detail

DLAVM_INLINE host::RecurrentParams recurrent_params(const Attrs& attrs) {
  return detail::recurrent_schema().from_attrs(attrs);
}

DLAVM_INLINE Expr recurrent(Expr x, Expr w, Expr r, Expr b, const host::RecurrentParams& p, Expr h0,
                            Expr c0) {
  std::vector<Expr> args = {std::move(x), std::move(w), std::move(r), std::move(b)};
  if (h0.defined()) args.push_back(std::move(h0));
  if (c0.defined()) args.push_back(std::move(c0));
  return call("recurrent", std::move(args), detail::recurrent_schema().to_attrs(p));
}

DLAVM_INLINE void add_recurrent_ops(OpRegistry& ops) {
  ops.add({.name = "recurrent",
           .min_args = 4,
           .max_args = 6,
           .attrs = detail::recurrent_schema().specs(),
           .type_rule = detail::recurrent_type,
           .host_kernel =
               [](HostArgs a, const Attrs& attrs) {
                 const auto p = recurrent_params(attrs);
                 // absent initial states are zeros
                 const std::int64_t d = host::directions_of(p.direction);
                 const te::NDArray zeros(DType::float32(), {d, a[0]->shape()[1], p.hidden_size});
                 return host::recurrent(*a[0], *a[1], *a[2], *a[3], a.size() > 4 ? *a[4] : zeros,
                                        a.size() > 5 ? *a[5] : zeros, p);
               },
           .host_support = detail::host_float32_only});
}

}  // namespace dlavm::graph
