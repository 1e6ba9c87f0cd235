// Host kernel for recurrent layers: ONNX's LSTM, GRU and RNN over a whole sequence, their
// default activations (sigmoid for the gates, tanh for the rest). The semantics below are the
// definition the graph op reproduces (its firmware kernel: none; deploy::emit refuses it by
// name).
//
//   recurrent(x[S, B, I], w[D, G*H, I], r[D, G*H, H], b[D, 2*G*H], h0[D, B, H], c0[D, B, H],
//             {cell, hidden_size = H, direction, linear_before_reset, result})
//     -> [S, D, B, H]: the hidden state after each step (result hidden), or the LSTM's cell
//        state after each step (result cell), in x's step order for both directions
//   D = 2 for bidirectional (the second direction runs the steps backwards), else 1 (reverse:
//   backwards). G = 4 for LSTM (gates in ONNX's order i, o, f, c), 3 for GRU (z, r, h), 1 for
//   RNN. b holds the input weights' biases, then the recurrent ones. Per step t, with
//   g(W) = x_t W^T + Wb and q(R) = h R^T + Rb:
//     LSTM  i = sig(g(Wi) + q(Ri)), f = sig(g(Wf) + q(Rf)), o = sig(g(Wo) + q(Ro)),
//           c' = tanh(g(Wc) + q(Rc)), c = f * c + i * c', h = o * tanh(c)
//     GRU   z = sig(g(Wz) + q(Rz)), r = sig(g(Wr) + q(Rr)),
//           n = tanh(g(Wh) + q_r(Rh)) with q_r = (r * h) Rh^T + Rbh, or r * (h Rh^T + Rbh)
//           when linear_before_reset; h = (1 - z) * n + z * h
//     RNN   h = tanh(g(Wi) + q(Ri))
//   float32, each dot product summed in float32 in index order. c0 is read by LSTM only.
//
//   auto y = host::recurrent(x, w, r, b, h0, c0, {.cell = host::RecurrentCell::Lstm,
//                                                 .hidden_size = 64});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <string_view>

namespace dlavm::host {

enum class RecurrentCell : std::uint8_t { Lstm, Gru, Rnn };
enum class RecurrentDirection : std::uint8_t { Forward, Reverse, Bidirectional };
enum class RecurrentResult : std::uint8_t { Hidden, Cell };

struct RecurrentParams {
  RecurrentCell cell = RecurrentCell::Lstm;
  std::int64_t hidden_size = 0;
  RecurrentDirection direction = RecurrentDirection::Forward;
  bool linear_before_reset = false;  // GRU only
  RecurrentResult result = RecurrentResult::Hidden;
};

// G: the gates per cell (4, 3, 1); D: the directions (1, 2).
std::int64_t gates_of(RecurrentCell cell);
std::int64_t directions_of(RecurrentDirection direction);
// ValueError naming `who`: hidden_size >= 1; a cell result of an LSTM only.
void validate(const RecurrentParams& p, std::string_view who);

te::NDArray recurrent(const te::NDArray& x, const te::NDArray& w, const te::NDArray& r,
                      const te::NDArray& b, const te::NDArray& h0, const te::NDArray& c0,
                      const RecurrentParams& p);

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/recurrent-inl.hpp>
#endif
