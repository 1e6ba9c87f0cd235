// The graph ops strided_slice, take, broadcast_to, tile and resize2d: their type rules over
// constant and symbolic dims (a symbolic dim sliced or scaled only where the result is exact),
// every mistake with its message, random cases where the inferred shape at a binding is the
// shape the host kernel produces, and a graph of all five evaluated against the host kernels
// called by hand.
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/host.hpp>
#include <dlavm/ne/eval.hpp>

#include <doctest/doctest.h>

#include "default_ops.hpp"
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace graph_transform_ops_test {

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;
using dlavm_test::ops;
using Shape = std::vector<std::int64_t>;
using i64 = std::int64_t;
constexpr i64 kMax = std::numeric_limits<i64>::max();
constexpr i64 kMin = std::numeric_limits<i64>::min();

graph::Expr typed(std::vector<graph::Expr> params, graph::Expr result) {
  return graph::infer_type(graph::function(std::move(params), {std::move(result)}), ops())
      .results()[0];
}
std::string shape_of(const graph::Expr& e) { return graph::shape_text(e.type().shape); }
// The error a call's type rule raises, as a string ("" when it types).
std::string error_of(std::vector<graph::Expr> params, graph::Expr result) {
  try {
    typed(std::move(params), std::move(result));
  } catch (const dlavm::Error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("strided_slice: static dims any slice, symbolic dims where the extent is exact") {
  auto x = graph::input("x", {2, 10, 4}, DType::int8());
  CHECK(shape_of(typed({x}, graph::strided_slice(
                                x, {.begin = {1, -3}, .end = {kMax, kMax}, .axes = {1, 2}}))) ==
        "(2, 9, 3)");
  CHECK(shape_of(typed({x}, graph::strided_slice(
                                x, {.begin = {-1}, .end = {kMin}, .step = {-3}, .axes = {1}}))) ==
        "(2, 4, 4)");
  CHECK(shape_of(typed({x}, graph::strided_slice(x, {.begin = {5}, .end = {2}, .axes = {1}}))) ==
        "(2, 0, 4)");

  auto token = ne::var("token", 1, 2048);
  auto t = graph::input("t", {1, token, 64}, DType::float32());
  const auto slice = [&](host::StridedSliceParams p) {
    return shape_of(typed({t}, graph::strided_slice(t, std::move(p))));
  };
  CHECK(slice({.begin = {0}, .end = {kMax}, .axes = {1}}) == "(1, token, 64)");
  CHECK(slice({.begin = {-1}, .end = {kMin}, .step = {-1}, .axes = {1}}) == "(1, token, 64)");
  CHECK(slice({.begin = {0}, .end = {1}, .axes = {1}}) == "(1, 1, 64)");
  CHECK(slice({.begin = {-1}, .end = {kMax}, .axes = {1}}) == "(1, 1, 64)");  // the last one
  CHECK(slice({.begin = {1}, .end = {kMax}, .axes = {1}}) == "(1, token - 1, 64)");
  CHECK(slice({.begin = {0}, .end = {kMax}, .step = {2}, .axes = {1}}) ==
        "(1, floordiv(token + 1, 2), 64)");
  CHECK(slice({.begin = {0}, .end = {-5000}, .axes = {1}}) == "(1, 0, 64)");

  auto s = ne::var("s", 16, 512);
  auto u = graph::input("u", {s, 8}, DType::int32());
  CHECK(shape_of(typed({u}, graph::strided_slice(u, {.begin = {-16}, .end = {kMax}}))) ==
        "(16, 8)");
  CHECK(shape_of(typed({u}, graph::strided_slice(u, {.begin = {2}, .end = {-2}}))) == "(s - 4, 8)");
  CHECK(shape_of(typed(
            {u}, graph::strided_slice(u, {.begin = {3, 1}, .end = {kMax, 7}, .step = {4, 3}}))) ==
        "(floordiv(s, 4), 2)");
}

TEST_CASE("strided_slice: mistakes name the node, the input, the dim and the numbers") {
  auto token = ne::var("token", 1, 2048);
  auto t = graph::input("t", {1, token, 64}, DType::float32());
  CHECK(
      error_of({t}, graph::strided_slice(t, {.begin = {0}, .end = {8}, .axes = {1}})) ==
      "%0 (strided_slice): input 0 (%t) dim 1 is `token` (from 1 to 2048): begin 0, end 8, step "
      "1 give a slice that depends on its value; slice a symbolic dim whole, or between constants "
      "within its minimum (counted from either end; a negative step needs a minimum of 1)");
  CHECK(error_of({t}, graph::strided_slice(t, {.begin = {2}, .end = {kMax}, .axes = {1}})) ==
        "%0 (strided_slice): input 0 (%t) dim 1 is `token` (from 1 to 2048): begin 2, end "
        "9223372036854775807, step 1 give a slice that depends on its value; slice a symbolic dim "
        "whole, or between constants within its minimum (counted from either end; a negative step "
        "needs a minimum of 1)");
  // token - 1 can be 0: a negative step has nothing to start from there
  auto rest = graph::strided_slice(t, {.begin = {1}, .end = {kMax}, .axes = {1}});
  CHECK(error_of({t}, graph::strided_slice(
                          rest, {.begin = {-1}, .end = {kMin}, .step = {-1}, .axes = {1}}))
            .starts_with("%1 (strided_slice): input 0 (%0) dim 1 is `token - 1` (from 0 to 2047)"));
  CHECK(error_of({t}, graph::strided_slice(t, {.begin = {0}, .end = {1}, .step = {0}})) ==
        "%0 (strided_slice): attribute 'step' [0] has 0 at entry 0");
  CHECK(error_of({t}, graph::strided_slice(t, {.begin = {0}, .end = {1}, .axes = {3}})) ==
        "%0 (strided_slice): axis 3 (entry 0) is outside [-3, 3) for x's 3 dims");
  CHECK(error_of({t}, graph::strided_slice(t, {.begin = {0, 0}, .end = {1, 1}, .axes = {0, -3}})) ==
        "%0 (strided_slice): attribute 'axes' [0, -3] slices dim 0 twice");
  CHECK(error_of({t}, graph::call("strided_slice", {t}, {{"begin", std::vector<i64>{0}}})) ==
        "%0 (strided_slice): attribute 'end' (a list of integers: the index past the last per "
        "sliced dim (clamped to the dim)) is required");
}

TEST_CASE("take: the indices' dims replace the axis; indices int32 or int64") {
  auto token = ne::var("token", 1, 2048);
  auto x = graph::input("x", {token, 512}, DType::uint8());
  auto i = graph::input("i", {2, 3}, DType::int64());
  auto y = typed({x, i}, graph::take(x, i));
  CHECK(shape_of(y) == "(2, 3, 512)");
  CHECK(y.type().dtype == DType::uint8());
  CHECK(shape_of(typed({x, i}, graph::take(x, i, {.axis = -1}))) == "(token, 2, 3)");
  auto c = graph::constant("c", te::NDArray::from_ints(DType::int32(), {}, {-1}));
  CHECK(shape_of(typed({x}, graph::take(x, c, {.axis = 1}))) == "(token)");
  auto f = graph::input("f", {2}, DType::float32());
  CHECK(error_of({x, f}, graph::take(x, f)) ==
        "%0 (take): input 1 (%f) is float32; indices are int32 or int64 (cast them first)");
  CHECK(error_of({x, i}, graph::take(x, i, {.axis = 2})) ==
        "%0 (take): attribute 'axis' is 2, outside [-2, 2) for 2 dims");
  CHECK(error_of({x}, graph::call("take", {x})) == "%0 (take): takes 2 inputs, given 1");
}

TEST_CASE("broadcast_to and tile: shapes, symbolic dims, mistakes") {
  auto token = ne::var("token", 1, 2048);
  auto x = graph::input("x", {1, token, 1}, DType::int32());
  CHECK(shape_of(typed({x}, graph::broadcast_to(x, {.shape = {4, 1, 1, 8}}))) ==
        "(4, 1, token, 8)");
  CHECK(shape_of(typed({x}, graph::broadcast_to(x, {.shape = {1}}))) == "(1, token, 1)");
  CHECK(error_of({x}, graph::broadcast_to(x, {.shape = {3, 1}})) ==
        "%0 (broadcast_to): input 0 (%x) (1, token, 1) and attribute 'shape' [3, 1] (3, 1) do "
        "not broadcast: dim 1 from the end is `token` vs `3` (dims must be provably equal, or one "
        "of them 1)");
  CHECK(error_of({x}, graph::broadcast_to(x, {.shape = {-2}})) ==
        "%0 (broadcast_to): attribute 'shape' [-2] has -2; dims are >= 0");
  CHECK(shape_of(typed({x}, graph::tile(x, {.repeats = {2, 3, 0}}))) == "(2, token*3, 0)");
  CHECK(error_of({x}, graph::tile(x, {.repeats = {2}})) ==
        "%0 (tile): attribute 'repeats' [2] has 1 entries; x has 3 dims");
}

TEST_CASE("resize2d: scales and sizes over constant and symbolic heights and widths") {
  auto x = graph::input("x", {1, 3, 5, 7}, DType::float32());
  const auto resized = [&](host::Resize2dParams p) {
    return shape_of(typed({x}, graph::resize2d(x, std::move(p))));
  };
  CHECK(resized({.scales = {2, 0.6}}) == "(1, 3, 10, 4)");
  CHECK(resized({.sizes = {1, 9}, .mode = host::ResizeMode::Linear}) == "(1, 3, 1, 9)");
  auto h = ne::var("h", 1, 1024), w = ne::var("w", 2, 512);
  auto s = graph::input("s", {1, 16, h, w}, DType::int8());
  const auto scaled = [&](host::Resize2dParams p) {
    return shape_of(typed({s}, graph::resize2d(s, std::move(p))));
  };
  CHECK(scaled({.scales = {2, 3}}) == "(1, 16, h*2, w*3)");
  CHECK(scaled({.scales = {0.5, 0.25}}) == "(1, 16, floordiv(h, 2), floordiv(w, 4))");
  CHECK(scaled({.scales = {1.5, 1}}) == "(1, 16, floordiv(h*3, 2), w)");
  CHECK(scaled({.sizes = {32, 32}}) == "(1, 16, 32, 32)");
  CHECK(error_of({s}, graph::resize2d(s, {.scales = {2, 2}, .mode = host::ResizeMode::Linear})) ==
        "%0 (resize2d): input 0 (%s) is int8; mode linear computes in float32 only (cast it, or "
        "use mode nearest)");
  // 0.6 as a float is 5033165 / 2^23: exact over h's range
  CHECK(scaled({.scales = {0.6, 1}}) == "(1, 16, floordiv(h*5033165, 8388608), w)");
  auto huge = ne::var("huge", 1, std::int64_t{1} << 32);
  auto b = graph::input("b", {1, 1, huge, 2}, DType::float32());
  CHECK(error_of({b}, graph::resize2d(b, {.scales = {0.6, 1}})) ==
        "%0 (resize2d): input 0 (%b) height `huge` (at most 4294967296) scaled by 0.6 has no "
        "exact symbolic size; give sizes, or a scale p / 2^k with the maximum * p below 2^53");
  CHECK(shape_of(typed({b}, graph::resize2d(b, {.scales = {0.5, 1}}))) ==
        "(1, 1, floordiv(huge, 2), 2)");
  auto e = ne::var("e", 1, 8);
  auto z = graph::input("z", {1, 1, 4, e}, DType::float32());
  auto narrower = graph::strided_slice(z, {.begin = {1}, .end = {kMax}, .axes = {3}});
  CHECK(error_of({z}, graph::resize2d(narrower, {.sizes = {2, 2}})) ==
        "%1 (resize2d): input 0 (%0) width `e - 1` can be 0; resizing needs at least 1");
  auto r3 = graph::input("r3", {1, 4, 4}, DType::float32());
  CHECK(error_of({r3}, graph::resize2d(r3, {.scales = {2, 2}})) ==
        "%0 (resize2d): input 0 (%r3) must have 4 dims, got Tensor[(1, 4, 4), float32]");
  CHECK(error_of({x}, graph::resize2d(x, {})) ==
        "%0 (resize2d): give exactly one of the attributes 'scales' [] and 'sizes' [] (height, "
        "width)");
  CHECK(error_of({x}, graph::call(
                          "resize2d", {x},
                          {{"scales", std::vector<double>{2, 2}}, {"mode", std::string("cubic")}}))
            .starts_with("%0 (resize2d): attribute 'mode' is \"cubic\""));
}

// ---- random cases: the inferred shape at a binding is the host kernel's ------------------

Shape eval_shape(const graph::Expr& e, std::span<const ne::Binding> bind) {
  Shape out;
  for (const auto& d : e.type().shape) out.push_back(ne::eval(d, bind));
  return out;
}

TEST_CASE("strided_slice: a symbolic dim's inferred extent is the host's at every binding") {
  std::mt19937_64 rng(67);
  int accepted = 0, refused = 0;
  for (int round = 0; round < 600; ++round) {
    // the sliced dim d - 1 over [lo, hi] (lo may be 0: inputs' dims are >= 1)
    const i64 lo = i64(rng() % 6), hi = lo + i64(rng() % 12);
    auto d = ne::var("d", lo + 1, hi + 1);
    auto x = graph::input("x", {d, 2}, DType::int8());
    auto rest = graph::strided_slice(x, {.begin = {1}, .end = {kMax}});
    const auto bound = [&]() -> i64 {
      switch (rng() % 6) {
        case 0:
          return kMax;
        case 1:
          return kMin;
        default:
          return i64(rng() % 25) - 12;
      }
    };
    host::StridedSliceParams p{.begin = {bound()}, .end = {bound()}, .step = {0}};
    while (p.step[0] == 0) p.step[0] = i64(rng() % 9) - 4;
    CAPTURE(round);
    std::optional<graph::Expr> y;
    try {
      y = typed({x}, graph::strided_slice(rest, p));
    } catch (const dlavm::ShapeError&) {
      ++refused;
      continue;
    }
    ++accepted;
    for (i64 v = lo; v <= hi; ++v) {
      const ne::Binding bind[] = {{"d", v + 1}};
      const auto host_y = host::strided_slice(te::NDArray(DType::int8(), {v, 2}), p);
      CHECK(eval_shape(*y, bind) == host_y.shape());
    }
  }
  CHECK(accepted > 150);
  CHECK(refused > 50);
}

TEST_CASE("resize2d: a symbolic height's inferred size is the host's at every binding") {
  std::mt19937_64 rng(71);
  const double scales[] = {0.5, 0.25, 0.75, 1.0, 1.5, 2.0, 3.0, 0.125, 2.5, 0.375};
  for (int round = 0; round < 60; ++round) {
    const i64 lo = 1 + i64(rng() % 5), hi = lo + i64(rng() % 40);
    auto h = ne::var("h", lo, hi);
    auto x = graph::input("x", {1, 1, h, 3}, DType::float32());
    const host::Resize2dParams p{.scales = {scales[rng() % 10], scales[rng() % 10]}};
    const auto y = typed({x}, graph::resize2d(x, p));
    CAPTURE(round);
    for (i64 v = lo; v <= hi; ++v) {
      const ne::Binding bind[] = {{"h", v}};
      CHECK(eval_shape(y, bind) ==
            host::resize2d(te::NDArray(DType::float32(), {1, 1, v, 3}), p).shape());
    }
  }
}

TEST_CASE("evaluate: the five ops in one graph equal the host kernels called by hand") {
  auto n = ne::var("n", 2, 6);
  auto x = graph::input("x", {1, 2, n, 4}, DType::float32());
  auto i = graph::input("i", {3}, DType::int32());
  auto up =
      graph::resize2d(x, {.scales = {2, 2},
                          .mode = host::ResizeMode::Linear,
                          .coordinate_transformation_mode = host::ResizeCoordinates::AlignCorners});
  auto cut = graph::strided_slice(
      up, {.begin = {-1, 1}, .end = {kMin, kMax}, .step = {-1, 2}, .axes = {2, 3}});
  auto picked = graph::take(cut, i, {.axis = -1});
  auto wide = graph::broadcast_to(picked, {.shape = {3, 1, 1, 1, 1}});
  auto out = graph::tile(wide, {.repeats = {1, 2, 1, 1, 1}});
  auto fn = graph::infer_type(graph::function({x, i}, {out}), ops());
  CHECK(graph::shape_text(fn.results()[0].type().shape) == "(3, 2, 2, n*2, 3)");
  const auto xa = te::NDArray::random(DType::float32(), {1, 2, 5, 4}, 3);
  const auto ia = te::NDArray::from_ints(DType::int32(), {3}, {0, -1, 2});
  const auto got = graph::evaluate(fn, {{"x", xa}, {"i", ia}}, {{"n", 5}}).at(0);
  auto want =
      host::resize2d(xa, {.scales = {2, 2},
                          .mode = host::ResizeMode::Linear,
                          .coordinate_transformation_mode = host::ResizeCoordinates::AlignCorners});
  want = host::strided_slice(
      want, {.begin = {-1, 1}, .end = {kMin, kMax}, .step = {-1, 2}, .axes = {2, 3}});
  want = host::take(want, ia, {.axis = -1});
  want = host::broadcast_to(want, {.shape = {3, 1, 1, 1, 1}});
  want = host::tile(want, {.repeats = {1, 2, 1, 1, 1}});
  CHECK(got == want);
  // placed on the host: no VTA strategy
  for (const auto& e : graph::post_order(
           graph::infer_type(graph::function({x, i}, {out}), graph::Target{}).roots()))
    if (e.kind() == graph::NodeKind::Call) CHECK(e.device() == graph::Device::Host);
  // a run-time index outside the dim is the host kernel's error
  const auto bad = te::NDArray::from_ints(DType::int32(), {3}, {0, 4, 1});
  CHECK_THROWS_WITH_AS(graph::evaluate(fn, {{"x", xa}, {"i", bad}}, {{"n", 5}}),
                       doctest::Contains("index 4 (element 1 of the indices) is outside [-4, 4)"),
                       dlavm::ValueError);
}

}  // namespace graph_transform_ops_test
