// Random networks of convolutions, poolings and a dense head, shared by the graph property
// tests and by tests/deploy's generated firmware (so no doctest here).
#pragma once

#include <dlavm/graph.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace random_graphs {

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;

// A recurrent convolution, h' = relu(requantize(conv(x) + h)), h a state the module keeps
// between runs (the graph tests check it runs; tests/deploy emits it with h in the cache region).
inline graph::Function recurrent_convolution() {
  auto x = graph::input("x", {1, 16, 4, 4}, DType::int8());
  auto h = graph::input("h", {1, 16, 4, 4}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 3, 3}, 1, -8, 8));
  auto sum =
      graph::add(graph::conv2d(x, w, {.padding = {1, 1, 1, 1}}), graph::cast(h, DType::int32()));
  auto next = graph::relu(graph::requantize(sum, {.shift = 4}));
  return graph::function({x}, {graph::cast(next, DType::int32())}, {{h, next}});
}

struct Rng {
  std::mt19937_64 engine;
  std::int64_t operator()(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(engine);
  }
  bool coin() { return (*this)(0, 1) == 1; }
};

struct RandomNetwork {
  graph::Function fn;
  bool symbolic = false;  // over the symbolic dim "batch"
  std::int64_t max_batch = 1;
  std::string layers;  // what it is, for messages
};

// A random multi-layer network over a [batch, C, H, W] image: convolutions (random kernel,
// strides and per-side padding) with requantizing epilogues and residual sums of earlier
// values of the same shape, max and average poolings, and a dense head over the flattened
// map, the earlier feature maps sometimes results too. Half are over a symbolic batch.
inline RandomNetwork random_network(Rng& rng, std::uint64_t seed) {
  const bool symbolic = rng.coin();
  const ne::Expr batch = symbolic ? ne::Expr(ne::var("batch", 1, 3)) : ne::Expr(rng(1, 2));
  const std::int64_t c0 = rng(1, 24);
  ne::Expr h = rng(8, 24), w = rng(8, 24);
  auto x = graph::input("x", {batch, c0, h, w}, DType::int8());
  struct Value {
    graph::Expr e;
    std::int64_t c;
    ne::Expr h, w;
  };
  std::vector<Value> values{{x, c0, h, w}};
  std::vector<graph::Expr> results;
  const auto window = [](const ne::Expr& e, std::int64_t pads, std::int64_t k, std::int64_t s) {
    return ne::simplify(ne::floordiv(e + pads - k, s) + 1);
  };
  std::string layers;
  for (int layer = 0; layer < 6; ++layer) {
    const Value v = values.back();
    const std::int64_t hv = ne::bounds(v.h).min, wv = ne::bounds(v.w).min;
    if (rng(0, 3) > 0) {  // a convolution
      const std::int64_t k = std::min({rng(1, 5), hv, wv}), s = rng(1, 2);
      const std::array<std::int64_t, 4> pad{rng(0, k - 1), rng(0, k - 1), rng(0, k - 1),
                                            rng(0, k - 1)};
      const std::int64_t out = rng(4, 40);
      auto wt = graph::constant(
          fmt::format("w{}", layer),
          te::NDArray::random(DType::int8(), {out, v.c, k, k}, seed * 10 + layer, -8, 8));
      auto acc = graph::conv2d(v.e, wt, {.strides = {s, s}, .padding = pad});
      const Value next{
          {}, out, window(v.h, pad[0] + pad[2], k, s), window(v.w, pad[1] + pad[3], k, s)};
      for (const auto& r : values)
        if (r.c == out && ne::equal(r.h, next.h) && ne::equal(r.w, next.w) && rng.coin()) {
          acc = graph::add(acc, graph::cast(r.e, DType::int32()));
          break;
        }
      auto y =
          graph::requantize(acc, {.shift = rng(4, 8), .rounding = dlavm::host::Rounding::Nearest});
      values.push_back({rng.coin() ? graph::relu(y) : y, next.c, next.h, next.w});
      layers += fmt::format(" conv{}x{}/{} pad {}", k, k, s, fmt::join(pad, ","));
    } else {  // a pooling
      const std::int64_t k = std::min({rng(1, 3), hv, wv}), s = rng(1, 2);
      const std::array<std::int64_t, 4> pad{rng(0, k - 1), rng(0, k - 1), rng(0, k - 1),
                                            rng(0, k - 1)};
      const dlavm::host::Pool2dParams p{.pool_size = {k, k}, .strides = {s, s}, .padding = pad};
      const bool max = rng.coin();
      values.push_back({max ? graph::max_pool2d(v.e, p) : graph::avg_pool2d(v.e, p), v.c,
                        window(v.h, pad[0] + pad[2], k, s), window(v.w, pad[1] + pad[3], k, s)});
      layers += fmt::format(" {}pool{}/{} pad {}", max ? "max" : "avg", k, s, fmt::join(pad, ","));
    }
    if (rng(0, 4) == 0) results.push_back(values.back().e);
  }
  const Value& last = values.back();
  const std::int64_t features = last.c * *ne::simplify(last.h * last.w).as_int();
  auto head = graph::dense(
      graph::flatten(last.e),
      graph::constant("fc", te::NDArray::random(DType::int8(), {10, features}, seed, -8, 8)));
  results.push_back(graph::requantize(head, {.shift = 6}));
  return {graph::function({x}, results), symbolic, ne::bounds(batch).max, layers};
}

}  // namespace random_graphs
