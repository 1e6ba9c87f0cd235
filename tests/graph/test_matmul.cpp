// The batched matmul on VTA (attention's Q.K^T and scores.V): its two layouts against their
// element-by-element definition, random matmuls over symbolic rows, K and N with random
// epilogues built and run on the simulator against the reference executor, and the matmuls
// that stay on the host with their reasons.
#include <dlavm/graph.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include "random_graphs.hpp"
#include "random_networks.hpp"
#include <random>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

TEST_CASE("layout: batched_matrix and matmul_weight tile each product; unpack inverts") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const auto pick = [&](std::int64_t lo, std::int64_t hi) {
      return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    const std::int64_t b0 = pick(1, 3), b1 = pick(1, 2), m = pick(1, 20), c = pick(1, 40);
    const std::int64_t r = pick(1, 3), t = std::int64_t{1} << pick(0, 4);
    INFO("trial ", trial, ": [", b0, ", ", b1, ", ", m, ", ", c, "], tile ", r, "x", t);
    const auto x =
        te::NDArray::random(DType::int8(), {b0, b1, m, c}, static_cast<std::uint64_t>(trial));
    const graph::Layout bm{graph::Layout::Kind::BatchedMatrix, r, t};
    const graph::Layout mw{graph::Layout::Kind::MatmulWeight, r, t};
    const auto p = graph::pack(x, bm);
    const auto q = graph::pack(x, mw);
    const std::int64_t products = b0 * b1;
    REQUIRE(p.shape() ==
            std::vector<std::int64_t>{products, (m + r - 1) / r, (c + t - 1) / t, r, t});
    // the right operand [.., K = m, N = c] transposed: N along the tile rows
    REQUIRE(q.shape() ==
            std::vector<std::int64_t>{products, (c + r - 1) / r, (m + t - 1) / t, r, t});
    std::int64_t nonzero_p = 0, nonzero_q = 0;
    for (std::int64_t b = 0; b < products; ++b)
      for (std::int64_t i = 0; i < p.shape()[1] * r; ++i)
        for (std::int64_t j = 0; j < p.shape()[2] * t; ++j) {
          const std::int64_t want = i < m && j < c ? x.at({b / b1, b % b1, i, j}) : 0;
          CHECK(p.at({b, i / r, j / t, i % r, j % t}) == want);
          nonzero_p += p.at({b, i / r, j / t, i % r, j % t}) != 0;
        }
    for (std::int64_t b = 0; b < products; ++b)
      for (std::int64_t n = 0; n < q.shape()[1] * r; ++n)
        for (std::int64_t k = 0; k < q.shape()[2] * t; ++k) {
          const std::int64_t want = n < c && k < m ? x.at({b / b1, b % b1, k, n}) : 0;
          CHECK(q.at({b, n / r, k / t, n % r, k % t}) == want);
          nonzero_q += want != 0;
        }
    CHECK(nonzero_p == nonzero_q);
    CHECK(graph::unpack(p, bm, x.shape()) == x);
    // byte planes: [products, M/R, C/T, 4, R, T], plane k the value's byte k
    const auto wide =
        te::NDArray::random(DType::int32(), {b0, b1, m, c}, 77 + static_cast<std::uint64_t>(trial));
    te::NDArray planes(DType::int8(), {products, p.shape()[1], p.shape()[2], 4, r, t});
    for (std::int64_t b = 0; b < products; ++b)
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < c; ++j)
          for (std::int64_t k = 0; k < 4; ++k)
            planes.set({b, i / r, j / t, k, i % r, j % t},
                       static_cast<std::int8_t>(wide.at({b / b1, b % b1, i, j}) >> (8 * k)));
    graph::Layout bm4 = bm;
    bm4.planes = 4;
    CHECK(graph::unpack(planes, bm4, wide.shape()) == wide);
  }
  CHECK_THROWS_WITH_AS(
      graph::unpack(te::NDArray(DType::int8(), {1, 1, 1, 1, 16}),
                    {graph::Layout::Kind::MatmulWeight, 1, 16}, std::vector<std::int64_t>{1, 16}),
      "unpack from layout matmul_weight[1x16]: VTA only reads it", dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      graph::pack(te::NDArray(DType::int8(), {16}), {graph::Layout::Kind::BatchedMatrix, 1, 16}),
      "layout batched_matrix[1x16]: a value of rank 1 cannot take it (it needs "
      "rank 2 or more)",
      dlavm::ShapeError);
}

TEST_CASE("build: random batched matmuls over symbolic rows, K and N equal the reference") {
  random_graphs::Rng rng{std::mt19937_64(31)};
  int vta_steps = 0;
  for (int trial = 0; trial < 14; ++trial) {
    // either dim symbolic or constant; Q.K^T has symbolic N, scores.V symbolic K
    const auto dim = [&](const char* name, std::int64_t max) -> ne::Expr {
      return rng.coin() ? ne::Expr(ne::var(name, 1, rng(1, max))) : ne::Expr(rng(1, max));
    };
    const ne::Expr m = dim("m", 40), k = dim("k", 70), n = dim("n", 50);
    std::vector<ne::Expr> batch;
    for (std::int64_t d = rng(0, 2); d > 0; --d) batch.emplace_back(rng(1, 3));
    const auto with_batch = [&](ne::Expr a, ne::Expr b) {
      auto s = batch;
      s.insert(s.end(), {std::move(a), std::move(b)});
      return s;
    };
    auto a = graph::input("a", with_batch(m, k), DType::int8());
    // the right operand arrives as K's rows (a cache of keys) and is transposed, as in Q.K^T
    auto bt = graph::input("b", with_batch(n, k), DType::int8());
    std::vector<std::int64_t> perm;
    for (std::size_t d = 0; d < batch.size(); ++d) perm.push_back(static_cast<std::int64_t>(d));
    perm.insert(perm.end(), {static_cast<std::int64_t>(batch.size()) + 1,
                             static_cast<std::int64_t>(batch.size())});
    auto acc = graph::matmul(a, graph::transpose(bt, {.perm = perm}));
    std::vector<graph::Expr> params{a, bt};
    graph::Expr y = acc;
    graph::Target target;
    // a bias needs a constant channel count; an int32 result leaves VTA as byte planes
    if (n.is_const() && rng.coin())
      y = random_graphs::random_epilogue(rng, acc, *n.as_int(), -1, with_batch(m, n), params,
                                         static_cast<std::uint64_t>(trial));
    else if (rng.coin())
      y = graph::requantize(acc, {.shift = rng(0, 10)});
    else
      target.int32_results = true;
    const auto fn = graph::function(params, {y});
    std::vector<ne::Binding> at_min, at_max;
    for (const auto& d : {m, k, n})
      if (const auto* v = d.as<ne::VarNode>()) {
        at_min.push_back({v->name, 1});
        at_max.push_back({v->name, ne::bounds(d).max});
      }
    for (const auto& b : {at_min, at_max}) {
      INFO("trial ", trial, ": batch ", batch.size(), " dims, M ", m, ", K ", k, ", N ", n);
      vta_steps += random_graphs::check_on_vta(fn, b, static_cast<std::uint64_t>(trial), target);
    }
  }
  CHECK(vta_steps >= 26);  // every matmul runs on VTA
}

TEST_CASE("placement: a broadcast or float matmul stays on the host, saying why") {
  auto m = ne::var("m", 1, 64);
  auto a = graph::input("a", {2, m, 32}, DType::int8());
  auto shared = graph::input("b", {32, 48}, DType::int8());
  auto fn =
      graph::infer_type(graph::function({a, shared}, {graph::matmul(a, shared)}), graph::Target{});
  const auto& part = *fn.placement();
  REQUIRE(part.groups.size() == 1);
  CHECK(part.groups[0].device == graph::Device::Host);
  CHECK(
      part.describe(part.groups[0])
          .find("VTA multiplies one pair per batch index; input 0 (%a) has rank 3 and input 1 (%b) "
                "rank 2") != std::string::npos);
  auto c = graph::input("c", {3, m, 32}, DType::int8());
  auto d = graph::input("d", {1, 32, 16}, DType::int8());
  auto fn2 = graph::infer_type(graph::function({c, d}, {graph::matmul(c, d)}), graph::Target{});
  CHECK(fn2.placement()
            ->describe(fn2.placement()->groups[0])
            .find("batch dim 0 is 3 in input 0 (%c) and 1 in input 1 (%d)") != std::string::npos);
  auto unbounded = ne::var("n", 1, std::int64_t{1} << 40);
  auto e = graph::input("e", {2, 16, 32}, DType::int8());
  auto f = graph::input("f", {2, 32, unbounded}, DType::int8());
  CHECK_THROWS_WITH_AS(
      graph::infer_type(graph::function({e, f}, {graph::matmul(e, f)}), graph::Target{}),
      doctest::Contains("%0 (matmul): input 1 (%f) has n columns (N), at most 1099511627776"),
      dlavm::ShapeError);
}

TEST_CASE("lowering: a symbolic reduction's partial last step loads each block in one transfer") {
  // x's rows are kt tiles apart in DRAM (kt symbolic) and the last step is shorter than the
  // SRAM row: the input load pads each row's tail with zeros instead of one LOAD per row
  const vta::Env env;
  graph::Epilogue e;
  e.imm(graph::EpilogueStep::Kind::Shr, 7, dlavm::vta::Config{});
  const graph::DenseShape shape{ne::var("m", 1, 2048), ne::var("k", 1, 4095), 64, 8};
  const graph::DenseKernel kernel(env, shape, e, "pv");
  auto s = kernel.schedule({128, 2, 8, 2});
  const auto prog = vta::build(s, kernel.args(), env, "pv");
  vta::SimDevice dev(env.config);
  const std::int64_t m = 256, k = 200;  // 13 K tiles: steps of 8 and 5
  auto x = te::NDArray::random(DType::int8(), {8, m, 13, 1, 16}, 3);
  auto w = te::NDArray::random(DType::int8(), {8, 4, 13, 16, 16}, 4);
  for (auto* a : {&x, &w})  // the zero padding of K that graph::pack writes
    for (std::size_t i = 0; i < a->size(); ++i)
      if (static_cast<std::int64_t>(i) % 16 >= k % 16 &&
          (static_cast<std::int64_t>(i) / (a == &x ? 16 : 256)) % 13 == 12)
        a->data()[i] = 0;
  te::NDArray y(DType::int8(), {8, m, 4, 1, 16});
  const auto run = prog.run(dev, {&x, &w, &y}, {{"m", m}, {"k", k}});
  // 8 products x 2 row blocks x 2 column blocks x 2 steps: 64 steps of 2 input and 2 weight
  // loads and a GEMM, plus resets, ALU passes and stores; one LOAD per row would be 8192
  CHECK(run.instructions < 500);
  for (std::int64_t b = 0; b < 8; ++b)
    for (std::int64_t i = 0; i < m; i += 17)
      for (std::int64_t n = 0; n < 64; ++n) {
        std::int64_t acc = 0;
        for (std::int64_t kk = 0; kk < k; ++kk)
          acc += x.at({b, i, kk / 16, 0, kk % 16}) * w.at({b, n / 16, kk / 16, n % 16, kk % 16});
        CHECK(y.at({b, i, n / 16, 0, n % 16}) == static_cast<std::int8_t>(acc >> 7));
      }
}
