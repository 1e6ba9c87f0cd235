// Target::int32_results: convolutions and dense layers whose int32 sums leave VTA as byte
// planes, against the reference executor, with sums far beyond 16 bits and of both signs;
// the byte planes' layout against hand-derived values; on by default, and what stays on the
// host without it.
#include <dlavm/graph.hpp>

#include <doctest/doctest.h>

#include "random_graphs.hpp"
#include <random>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;

namespace {

graph::Target int32_target() {
  graph::Target t;
  t.int32_results = true;
  return t;
}

// A bias and maybe a residual sum, left int32.
graph::Expr int32_epilogue(random_graphs::Rng& rng, graph::Expr acc, std::int64_t channels,
                           std::int64_t axis, const std::vector<ne::Expr>& shape,
                           std::vector<graph::Expr>& params, std::uint64_t seed) {
  if (rng.coin())
    acc = graph::bias_add(acc,
                          graph::constant("bias", te::NDArray::random(DType::int32(), {channels},
                                                                      seed, -3000000, 3000000)),
                          {.axis = axis});
  if (rng(0, 2) == 0) {
    params.push_back(graph::input("residual", shape, DType::int32()));
    acc = graph::add(acc, params.back());
  }
  return acc;
}

std::size_t vta_steps(const graph::Module& m) {
  std::size_t n = 0;
  for (const auto& s : m.steps()) n += s.kind == graph::ModuleStep::Kind::Vta;
  return n;
}

}  // namespace

TEST_CASE("int32 results: random convolutions return their int32 sums from VTA exactly") {
  random_graphs::Rng rng{std::mt19937_64(31)};
  const auto target = int32_target();
  for (int trial = 0; trial < 10; ++trial) {
    const std::int64_t n = rng(1, 2), c = rng(1, 48), o = rng(1, 40);
    const std::int64_t h = rng(3, 9), w = rng(3, 9), k = rng(1, 3), s = rng(1, 2);
    const std::int64_t p = rng(0, k - 1);
    INFO("trial ", trial, ": ", n, "x", c, "x", h, "x", w, " -> ", o, ", kernel ", k, ", stride ",
         s, ", padding ", p);
    auto x = graph::input("x", {n, c, h, w}, DType::int8());
    // the full int8 range: sums of up to 48 x 9 products of 2^14 reach 2^23
    auto wt = graph::constant(
        "w", te::NDArray::random(DType::int8(), {o, c, k, k}, static_cast<std::uint64_t>(trial)));
    auto acc = graph::conv2d(x, wt, {.strides = {s, s}, .padding = {p, p, p, p}});
    const auto shape =
        graph::infer_type(graph::function({x}, {acc}), target).results()[0].type().shape;
    std::vector<graph::Expr> params{x};
    auto y = int32_epilogue(rng, acc, o, 1, shape, params, static_cast<std::uint64_t>(trial));
    const auto fn = graph::function(params, {y});
    auto mod = graph::build(fn, target);
    CHECK(vta_steps(mod) == 1);
    CHECK(random_graphs::check_module(mod, fn, {}, static_cast<std::uint64_t>(trial), nullptr,
                                      target) == 1);
  }
}

TEST_CASE("int32 results: dense layers over a symbolic row count, with two virtual threads") {
  random_graphs::Rng rng{std::mt19937_64(5)};
  const auto target = int32_target();
  for (int trial = 0; trial < 8; ++trial) {
    auto rows = ne::var("rows", 1, rng(1, 40));
    const std::int64_t k = rng(1, 90), nout = rng(1, 70);
    auto x = graph::input("x", {rows, k}, DType::int8());
    auto wt = graph::constant(
        "w", te::NDArray::random(DType::int8(), {nout, k}, static_cast<std::uint64_t>(trial)));
    std::vector<graph::Expr> params{x};
    auto y = int32_epilogue(rng, graph::dense(x, wt), nout, -1, {rows, nout}, params,
                            static_cast<std::uint64_t>(trial));
    const auto fn = graph::function(params, {y});
    auto mod = graph::build(fn, target);
    CHECK(vta_steps(mod) == 1);
    for (const std::int64_t r : {std::int64_t{1}, ne::bounds(rows).max}) {
      INFO("trial ", trial, ": rows ", r, ", K ", k, ", N ", nout);
      const ne::Binding b[] = {{"rows", r}};
      CHECK(random_graphs::check_module(mod, fn, b, static_cast<std::uint64_t>(trial), nullptr,
                                        target) == 1);
    }
  }
}

TEST_CASE("int32 results: on by default; off, the group runs on the host and says why") {
  auto x = graph::input("x", {1, 16, 4, 4}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 3, 3}, 1));
  const auto fn = graph::function({x}, {graph::conv2d(x, w, {.padding = {1, 1, 1, 1}})});
  CHECK(graph::Target{}.int32_results);
  CHECK(graph::infer_type(fn, graph::Target{}).placement()->groups[0].device == graph::Device::Vta);
  graph::Target off;
  off.int32_results = false;
  const auto placed = graph::infer_type(fn, off);
  REQUIRE(placed.placement()->groups.size() == 1);
  CHECK(placed.placement()->groups[0].device == graph::Device::Host);
  CHECK(placed.placement()->groups[0].note.find("build with Target::int32_results") !=
        std::string::npos);
  // a placement made without int32 results is not reused by a build with them
  auto mod = graph::build(placed, int32_target());
  CHECK(vta_steps(mod) == 1);
  CHECK(fmt::format("{}", mod).find("4 planes") != std::string::npos);
}

TEST_CASE("int32 results: byte planes unpack to the int32 values they hold") {
  // one 1x2 tile of two values, [C/T, P, R, T] = [1, 4, 1, 2] with planes least significant
  // first: -2 = fe ff ff ff, 0x01020304 = 04 03 02 01
  const graph::Layout l{graph::Layout::Kind::Matrix, 1, 2, {}, 4};
  CHECK(graph::to_string(l) == "matrix[1x2, 4 planes]");
  CHECK(graph::packed_shape(l, {ne::Expr(1), ne::Expr(2)}).size() == 5);
  te::NDArray planes(DType::int8(), {1, 1, 4, 1, 2});
  const std::int64_t bytes[] = {-2, 4, -1, 3, -1, 2, -1, 1};
  for (std::size_t i = 0; i < 8; ++i) planes.set_flat(i, bytes[i]);
  const std::int64_t shape[] = {1, 2};
  const auto v = graph::unpack(planes, l, shape);
  CHECK(v.dtype() == DType::int32());
  CHECK(v.data()[0] == -2);
  CHECK(v.data()[1] == 0x01020304);
  CHECK_THROWS_AS(graph::pack(v, l), dlavm::ValueError);
  const graph::Layout bad{graph::Layout::Kind::ConvWeight, 16, 16, {}, 4};
  CHECK_THROWS_WITH_AS(graph::packed_shape(bad, {16, 16, 3, 3}),
                       doctest::Contains("byte planes are 1 to 4, of an activation or a matrix"),
                       dlavm::ValueError);
}

TEST_CASE("int32 results: the host's rescale after a VTA convolution says why it stays there") {
  auto x = graph::input("x", {1, 16, 4, 4}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 1, 1}, 2));
  auto y = graph::rescale(graph::conv2d(x, w),
                          graph::constant("m", te::NDArray::from_floats({}, {0.0037f})),
                          graph::constant("zp", te::NDArray(DType::uint8(), {})));
  const auto placed = graph::infer_type(graph::function({x}, {y}), int32_target());
  const auto& groups = placed.placement()->groups;
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].device == graph::Device::Vta);
  CHECK(groups[1].note ==
        "its float32 multiplier, rounded half to even, is no shift VTA's ALU has: kept exact on "
        "the host");
}
