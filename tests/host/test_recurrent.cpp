// host::recurrent: LSTM, GRU (both reset forms) and RNN in every direction against the cell
// equations written here in double, step by step, over random sizes; the shape mistakes.
#include <dlavm/host/recurrent.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace recurrent_test {

namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;
using Cell = host::RecurrentCell;
using Direction = host::RecurrentDirection;

double sig(double v) { return 1 / (1 + std::exp(-v)); }

// The reference: y[t][dir][n][k] (hidden or cell) in double.
std::vector<double> reference(const te::NDArray& x, const te::NDArray& w, const te::NDArray& r,
                              const te::NDArray& b, const te::NDArray& h0, const te::NDArray& c0,
                              const host::RecurrentParams& p) {
  const std::int64_t S = x.shape()[0], B = x.shape()[1], I = x.shape()[2], H = p.hidden_size;
  const std::int64_t G = host::gates_of(p.cell), D = host::directions_of(p.direction);
  std::vector<double> y(static_cast<std::size_t>(S * D * B * H));
  for (std::int64_t dir = 0; dir < D; ++dir)
    for (std::int64_t n = 0; n < B; ++n) {
      std::vector<double> h(static_cast<std::size_t>(H)), c(h.size());
      for (std::int64_t k = 0; k < H; ++k) {
        h[static_cast<std::size_t>(k)] = h0.at_float({dir, n, k});
        c[static_cast<std::size_t>(k)] = c0.at_float({dir, n, k});
      }
      for (std::int64_t s = 0; s < S; ++s) {
        const bool back = p.direction == Direction::Reverse || dir == 1;
        const std::int64_t t = back ? S - 1 - s : s;
        // gx(gate, k) = x_t . W[gate*H + k] + Wb; gh(gate, k, state) = state . R[...] + Rb
        const auto gx = [&](std::int64_t gate, std::int64_t k) {
          double v = b.at_float({dir, gate * H + k});
          for (std::int64_t i = 0; i < I; ++i)
            v += double{x.at_float({t, n, i})} * w.at_float({dir, gate * H + k, i});
          return v;
        };
        const auto gh = [&](std::int64_t gate, std::int64_t k, const std::vector<double>& st) {
          double v = b.at_float({dir, G * H + gate * H + k});
          for (std::int64_t j = 0; j < H; ++j)
            v += st[static_cast<std::size_t>(j)] * r.at_float({dir, gate * H + k, j});
          return v;
        };
        std::vector<double> nh(h.size()), nc = c;
        std::vector<double> rh(h.size());
        if (p.cell == Cell::Gru)
          for (std::int64_t k = 0; k < H; ++k)
            rh[static_cast<std::size_t>(k)] =
                sig(gx(1, k) + gh(1, k, h)) * h[static_cast<std::size_t>(k)];
        for (std::int64_t k = 0; k < H; ++k) {
          const auto K = static_cast<std::size_t>(k);
          if (p.cell == Cell::Lstm) {
            const double i = sig(gx(0, k) + gh(0, k, h)), o = sig(gx(1, k) + gh(1, k, h));
            const double f = sig(gx(2, k) + gh(2, k, h));
            nc[K] = f * c[K] + i * std::tanh(gx(3, k) + gh(3, k, h));
            nh[K] = o * std::tanh(nc[K]);
          } else if (p.cell == Cell::Gru) {
            const double z = sig(gx(0, k) + gh(0, k, h)), rg = sig(gx(1, k) + gh(1, k, h));
            const double cand = p.linear_before_reset ? std::tanh(gx(2, k) + rg * gh(2, k, h))
                                                      : std::tanh(gx(2, k) + gh(2, k, rh));
            nh[K] = (1 - z) * cand + z * h[K];
          } else {
            nh[K] = std::tanh(gx(0, k) + gh(0, k, h));
          }
        }
        h = nh;
        c = nc;
        for (std::int64_t k = 0; k < H; ++k)
          y[static_cast<std::size_t>(((t * D + dir) * B + n) * H + k)] =
              p.result == host::RecurrentResult::Cell ? c[static_cast<std::size_t>(k)]
                                                      : h[static_cast<std::size_t>(k)];
      }
    }
  return y;
}

TEST_CASE("host recurrent: every cell and direction against the equations in double") {
  std::mt19937 rng(123);
  int round = 0;
  for (Cell cell : {Cell::Lstm, Cell::Gru, Cell::Rnn})
    for (Direction dir : {Direction::Forward, Direction::Reverse, Direction::Bidirectional})
      for (int variant = 0; variant < 2; ++variant, ++round) {
        host::RecurrentParams p{.cell = cell,
                                .hidden_size = 1 + static_cast<std::int64_t>(rng() % 4),
                                .direction = dir,
                                .linear_before_reset = variant == 1};
        if (cell == Cell::Lstm && variant == 1) p.result = host::RecurrentResult::Cell;
        CAPTURE(round);
        const std::int64_t S = 1 + rng() % 4, B = 1 + rng() % 3, I = 1 + rng() % 4;
        const std::int64_t H = p.hidden_size, G = host::gates_of(cell);
        const std::int64_t D = host::directions_of(dir);
        const auto rnd = [&](std::vector<std::int64_t> shape) {
          return te::NDArray::random_float(shape, rng(), -1.0, 1.0);
        };
        const auto x = rnd({S, B, I}), w = rnd({D, G * H, I}), r = rnd({D, G * H, H});
        const auto b = rnd({D, 2 * G * H}), h0 = rnd({D, B, H}), c0 = rnd({D, B, H});
        const auto y = host::recurrent(x, w, r, b, h0, c0, p);
        REQUIRE(y.shape() == std::vector<std::int64_t>{S, D, B, H});
        const auto want = reference(x, w, r, b, h0, c0, p);
        for (std::size_t i = 0; i < want.size(); ++i)
          CHECK(y.fdata()[i] == doctest::Approx(want[i]).epsilon(1e-5));
      }
}

TEST_CASE("host recurrent: the mistakes name the operand and the sizes") {
  const te::NDArray x(DType::float32(), {2, 1, 3}), w(DType::float32(), {1, 8, 3});
  const te::NDArray r(DType::float32(), {1, 8, 2}), b(DType::float32(), {1, 16});
  const te::NDArray h(DType::float32(), {1, 1, 2});
  CHECK_NOTHROW(host::recurrent(x, w, r, b, h, h, {.hidden_size = 2}));
  CHECK_THROWS_WITH_AS(host::recurrent(x, w, r, b, h, h, {.hidden_size = 3}),
                       doctest::Contains("host::recurrent: w is [1, 8, 3]; hidden_size 3"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(host::recurrent(x, w, r, b, h, h, {.hidden_size = 0}),
                       doctest::Contains("attribute 'hidden_size' is 0"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      host::recurrent(x, w, r, b, h, h,
                      {.cell = Cell::Gru, .hidden_size = 2, .result = host::RecurrentResult::Cell}),
      doctest::Contains("only an LSTM has"), dlavm::ValueError);
}

}  // namespace recurrent_test
