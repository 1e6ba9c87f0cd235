// Definitions for host/recurrent.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/recurrent.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace dlavm::host {

namespace detail {

inline float recurrent_sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

// out[j] = bias[j] + sum_k in[k] * m[j, k] for j < rows, m row-major [rows, cols].
inline void affine(const float* in, const float* m, const float* bias, float* out,
                   std::int64_t rows, std::int64_t cols) {
  for (std::int64_t j = 0; j < rows; ++j) {
    float s = 0.0f;
    const float* row = m + j * cols;
    for (std::int64_t k = 0; k < cols; ++k) s += in[k] * row[k];
    out[j] = s + bias[j];
  }
}

}  // namespace detail

DLAVM_INLINE std::int64_t gates_of(RecurrentCell cell) {
  return cell == RecurrentCell::Lstm ? 4 : cell == RecurrentCell::Gru ? 3 : 1;
}

DLAVM_INLINE std::int64_t directions_of(RecurrentDirection direction) {
  return direction == RecurrentDirection::Bidirectional ? 2 : 1;
}

DLAVM_INLINE void validate(const RecurrentParams& p, std::string_view who) {
  if (p.hidden_size < 1)
    raise<ValueError>("{}: attribute 'hidden_size' is {}; it must be >= 1", who, p.hidden_size);
  if (p.result == RecurrentResult::Cell && p.cell != RecurrentCell::Lstm)
    raise<ValueError>("{}: attribute 'result' is cell, which only an LSTM has", who);
}

DLAVM_INLINE te::NDArray recurrent(const te::NDArray& x, const te::NDArray& w, const te::NDArray& r,
                                   const te::NDArray& b, const te::NDArray& h0,
                                   const te::NDArray& c0, const RecurrentParams& p) {
  constexpr std::string_view who = "host::recurrent";
  validate(p, who);
  const te::NDArray* all[] = {&x, &w, &r, &b, &h0, &c0};
  const char* names[] = {"x", "w", "r", "b", "h0", "c0"};
  const std::size_t ranks[] = {3, 3, 3, 2, 3, 3};
  for (std::size_t i = 0; i < 6; ++i) {
    detail::require_float32(who, names[i], *all[i]);
    detail::require_rank(who, names[i], *all[i], ranks[i]);
  }
  const std::int64_t steps = x.shape()[0], batch = x.shape()[1], in = x.shape()[2];
  const std::int64_t h = p.hidden_size, g = gates_of(p.cell), d = directions_of(p.direction);
  const auto expect = [&](const char* name, const te::NDArray& a, std::vector<std::int64_t> shape) {
    if (a.shape() != shape)
      raise<ShapeError>("{}: {} is {}; hidden_size {} and x {} need {}", who, name,
                        detail::shape_str(a.shape()), h, detail::shape_str(x.shape()),
                        detail::shape_str(shape));
  };
  expect("w", w, {d, g * h, in});
  expect("r", r, {d, g * h, h});
  expect("b", b, {d, 2 * g * h});
  expect("h0", h0, {d, batch, h});
  expect("c0", c0, {d, batch, h});
  te::NDArray y(DType::float32(), {steps, d, batch, h});
  std::vector<float> gx(static_cast<std::size_t>(g * h)), gh(gx.size());
  std::vector<float> state(static_cast<std::size_t>(h)), cell(state.size()), next(state.size());
  for (std::int64_t dir = 0; dir < d; ++dir) {
    const bool backwards = p.direction == RecurrentDirection::Reverse || dir == 1;
    const float* wd = w.fdata().data() + dir * g * h * in;
    const float* rd = r.fdata().data() + dir * g * h * h;
    const float* wb = b.fdata().data() + dir * 2 * g * h;
    const float* rb = wb + g * h;
    for (std::int64_t n = 0; n < batch; ++n) {
      const auto at = [&](std::int64_t k) { return static_cast<std::size_t>(k); };
      for (std::int64_t k = 0; k < h; ++k) {
        state[at(k)] = h0.fdata()[at((dir * batch + n) * h + k)];
        cell[at(k)] = c0.fdata()[at((dir * batch + n) * h + k)];
      }
      for (std::int64_t s = 0; s < steps; ++s) {
        const std::int64_t t = backwards ? steps - 1 - s : s;
        detail::affine(x.fdata().data() + (t * batch + n) * in, wd, wb, gx.data(), g * h, in);
        if (p.cell == RecurrentCell::Gru && !p.linear_before_reset) {
          // z and r as usual; the candidate's recurrent term reads r * h
          detail::affine(state.data(), rd, rb, gh.data(), 2 * h, h);
          for (std::int64_t k = 0; k < h; ++k) {
            const float z = detail::recurrent_sigmoid(gx[at(k)] + gh[at(k)]);
            const float rg = detail::recurrent_sigmoid(gx[at(h + k)] + gh[at(h + k)]);
            next[at(k)] = z;
            cell[at(k)] = rg * state[at(k)];  // (cell is free in a GRU)
          }
          detail::affine(cell.data(), rd + 2 * h * h, rb + 2 * h, gh.data() + 2 * h, h, h);
          for (std::int64_t k = 0; k < h; ++k) {
            const float z = next[at(k)];
            const float cand = std::tanh(gx[at(2 * h + k)] + gh[at(2 * h + k)]);
            next[at(k)] = (1.0f - z) * cand + z * state[at(k)];
          }
        } else {
          detail::affine(state.data(), rd, rb, gh.data(), g * h, h);
          for (std::int64_t k = 0; k < h; ++k) {
            const auto pre = [&](std::int64_t gate) {
              return gx[at(gate * h + k)] + gh[at(gate * h + k)];
            };
            if (p.cell == RecurrentCell::Lstm) {
              const float i = detail::recurrent_sigmoid(pre(0));
              const float o = detail::recurrent_sigmoid(pre(1));
              const float f = detail::recurrent_sigmoid(pre(2));
              const float c = f * cell[at(k)] + i * std::tanh(pre(3));
              cell[at(k)] = c;
              next[at(k)] = o * std::tanh(c);
            } else if (p.cell == RecurrentCell::Gru) {  // linear_before_reset
              const float z = detail::recurrent_sigmoid(pre(0));
              const float rg = detail::recurrent_sigmoid(pre(1));
              const float cand = std::tanh(gx[at(2 * h + k)] + rg * gh[at(2 * h + k)]);
              next[at(k)] = (1.0f - z) * cand + z * state[at(k)];
            } else {
              next[at(k)] = std::tanh(pre(0));
            }
          }
        }
        state.swap(next);
        const auto& out = p.result == RecurrentResult::Cell ? cell : state;
        float* dst = y.fdata().data() + ((t * d + dir) * batch + n) * h;
        for (std::int64_t k = 0; k < h; ++k) dst[k] = out[at(k)];
      }
    }
  }
  return y;
}

}  // namespace dlavm::host
