// Graph op recurrent: ONNX's LSTM, GRU and RNN over a sequence, as one host call. Semantics:
// host/recurrent.hpp.
//
//   recurrent(x[S, B, I], w[D, G*H, I], r[D, G*H, H], b[D, 2*G*H] [, h0[D, B, H] [, c0[D, B,
//             H]]], cell = lstm, hidden_size, direction = forward, linear_before_reset = 0,
//             result = hidden) -> [S, D, B, H]   (absent initial states: zeros)
//   S and B may be symbolic; float32, on the host (no firmware kernel).
//
//   auto y = graph::recurrent(x, w, r, b, {.cell = host::RecurrentCell::Gru, .hidden_size = 32});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/recurrent.hpp>

namespace dlavm::graph {

Expr recurrent(Expr x, Expr w, Expr r, Expr b, const host::RecurrentParams& p, Expr h0 = {},
               Expr c0 = {});
host::RecurrentParams recurrent_params(const Attrs& attrs);

void add_recurrent_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/recurrent-inl.hpp>
#endif
