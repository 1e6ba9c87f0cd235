// The fake_quantization_to_integer pass against the float path it replaces: random add, sub
// and mul between dequantizations and a quantization (int8 and uint8, zero points, a relu or
// clip between), their scales in a power-of-two ratio or not, over every pair of input levels.
// Where the pass rewrites, the integer function gives the float function's levels on every
// pair (the float path is the reference: dequantize, the float32 op, quantize); where it does
// not, the float ops stay.
#include <dlavm/graph.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace fake_quantization_test {

namespace graph = dlavm::graph;
using dlavm::DType;
using dlavm::te::NDArray;

std::map<std::string, int> op_counts(const graph::Function& fn) {
  std::map<std::string, int> n;
  for (const auto& e : graph::post_order(fn.results()))
    if (const auto* c = e.as<graph::CallNode>()) ++n[c->op()];
  return n;
}

graph::Expr scalar(const std::string& name, float v) {
  return graph::constant(name, NDArray::from_floats({}, {v}));
}
graph::Expr zero(const std::string& name, DType t, std::int64_t v) {
  return graph::constant(name, NDArray::from_ints(t, {}, {v}));
}

struct Case {
  std::string op;  // add, sub, mul
  DType ta, tb, ty;
  float sa, sb, sy;
  std::int64_t za, zb, zy;
  int activation;  // 0 none, 1 relu, 2 clip
  double lo, hi;
  bool exact;  // the scales allow the integer form
};

graph::Function model(const Case& c) {
  auto a = graph::input("a", {256, 256}, c.ta);
  auto b = graph::input("b", {256, 256}, c.tb);
  auto fa = graph::dequantize_linear(a, scalar("sa", c.sa), zero("za", c.ta, c.za));
  auto fb = graph::dequantize_linear(b, scalar("sb", c.sb), zero("zb", c.tb, c.zb));
  auto v = c.op == "add"   ? graph::add(fa, fb)
           : c.op == "sub" ? graph::sub(fa, fb)
                           : graph::mul(fa, fb);
  if (c.activation == 1) v = graph::relu(v);
  if (c.activation == 2) v = graph::clip(v, {.lo = c.lo, .hi = c.hi});
  auto y = graph::quantize_linear(v, scalar("sy", c.sy), zero("zy", c.ty, c.zy));
  return graph::function({a, b}, {y});
}

// Every pair of levels: a varies along rows, b along columns.
std::pair<NDArray, NDArray> all_pairs(DType ta, DType tb) {
  NDArray a(ta, {256, 256}), b(tb, {256, 256});
  const std::int64_t a0 = ta == DType::uint8() ? 0 : -128, b0 = tb == DType::uint8() ? 0 : -128;
  for (std::int64_t i = 0; i < 256; ++i)
    for (std::int64_t j = 0; j < 256; ++j) {
      a.set_flat(static_cast<std::size_t>(i * 256 + j), a0 + i);
      b.set_flat(static_cast<std::size_t>(i * 256 + j), b0 + j);
    }
  return {std::move(a), std::move(b)};
}

}  // namespace fake_quantization_test

TEST_CASE("property: fake_quantization_to_integer is the float path exactly, where it rewrites") {
  using namespace fake_quantization_test;
  std::mt19937_64 rng(41);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const graph::Target target;
  const int cases = DLAVM_TEST_SANITIZED ? 12 : 60;
  int rewritten = 0, kept = 0;
  for (int n = 0; n < cases; ++n) {
    Case c;
    c.op = std::array{"add", "sub", "mul"}[static_cast<std::size_t>(pick(0, 2))];
    const auto type = [&] { return pick(0, 1) == 0 ? DType::int8() : DType::uint8(); };
    c.ta = type(), c.tb = type(), c.ty = type();
    const auto zp = [&](DType t) { return t == DType::uint8() ? pick(0, 255) : pick(-128, 127); };
    c.za = pick(0, 2) == 0 ? 0 : zp(c.ta);
    c.zb = pick(0, 2) == 0 ? 0 : zp(c.tb);
    c.zy = pick(0, 2) == 0 ? 0 : zp(c.ty);
    c.sy = static_cast<float>(std::uniform_real_distribution<double>(0.001, 0.2)(rng));
    // two in three: an exact power-of-two ratio; else a scale a little off one
    c.exact = pick(0, 2) != 0;
    if (c.op == "mul") {
      const auto k = pick(0, 4);
      c.sa = static_cast<float>(std::ldexp(1.0, static_cast<int>(pick(-3, 3))));
      c.sb = std::ldexp(c.sy, static_cast<int>(k)) / c.sa;
      if (static_cast<double>(c.sa) * c.sb !=
          std::ldexp(static_cast<double>(c.sy), static_cast<int>(k)))
        c.exact = false;  // (the quotient rounded: not a power-of-two ratio after all)
    } else {
      c.sa = std::ldexp(c.sy, static_cast<int>(pick(0, 8)));
      c.sb = std::ldexp(c.sy, static_cast<int>(pick(0, 8)));
    }
    if (!c.exact) c.sa *= 1.37f;
    c.activation = static_cast<int>(pick(0, 2));
    c.lo = -0.5 + 0.01 * static_cast<double>(pick(0, 50));
    c.hi = c.lo + 0.02 * static_cast<double>(pick(1, 100));
    CAPTURE(n);
    CAPTURE(c.op);
    CAPTURE(fmt::format("{} {} -> {}, scales {} {} {}, zeros {} {} {}, activation {}", c.ta, c.tb,
                        c.ty, c.sa, c.sb, c.sy, c.za, c.zb, c.zy, c.activation));
    const auto fn = model(c);
    const auto integer = graph::fake_quantization_to_integer(fn, target);
    const auto counts = op_counts(integer);
    CHECK(counts.contains("dequantize_linear") == !c.exact);
    CHECK(counts.contains("quantize_linear") == !c.exact);
    (c.exact ? rewritten : kept) += 1;
    // the float path: the same function with the pass left out
    const auto float_path = graph::run_passes(fn, target, graph::default_passes(),
                                              {.disabled = {"fake_quantization_to_integer"}});
    const auto placed = graph::infer_type(fn, target);
    const auto [a, b] = all_pairs(c.ta, c.tb);
    const auto want = graph::evaluate(float_path, {{"a", a}, {"b", b}}, {})[0];
    const auto got = graph::evaluate(placed, {{"a", a}, {"b", b}}, {})[0];
    REQUIRE(got.dtype() == c.ty);
    CHECK(got == want);
  }
  CHECK(rewritten > cases / 3);
  CHECK(kept > cases / 8);
}

TEST_CASE("fake_quantization_to_integer: an equal-scale add becomes a saturating integer sum") {
  using namespace fake_quantization_test;
  const graph::Target target;
  const Case c{
      "add", DType::int8(), DType::int8(), DType::int8(), 0.05f, 0.05f, 0.05f, 0, 0, 0, 1, 0,
      0,     true};
  const auto integer = graph::fake_quantization_to_integer(model(c), target);
  // cast, cast, add, clip (the relu: levels from 0), cast
  CHECK(op_counts(integer) == std::map<std::string, int>{{"add", 1}, {"cast", 3}, {"clip", 1}});
  const auto [a, b] = all_pairs(DType::int8(), DType::int8());
  const auto got = graph::evaluate(graph::infer_type(integer, target), {{"a", a}, {"b", b}}, {})[0];
  int wrong = 0;
  for (std::size_t k = 0; k < got.size(); ++k)
    wrong += got.data()[k] != std::clamp<std::int64_t>(a.data()[k] + b.data()[k], 0, 127);
  CHECK(wrong == 0);
}

TEST_CASE("fake_quantization_to_integer: what is read outside the pattern, or not exact, stays") {
  using namespace fake_quantization_test;
  const graph::Target target;
  auto a = graph::input("a", {4}, DType::int8());
  auto b = graph::input("b", {4}, DType::int8());
  const auto s = scalar("s", 0.1f);
  const auto z = zero("z", DType::int8(), 0);
  auto fa = graph::dequantize_linear(a, s, z);
  auto fb = graph::dequantize_linear(b, s, z);
  auto sum = graph::add(fa, fb);
  // the float sum is a result too: the quantization reads a value the caller reads
  const auto shared = graph::function({a, b}, {graph::quantize_linear(sum, s, z), sum});
  CHECK(op_counts(graph::fake_quantization_to_integer(shared, target)).at("quantize_linear") == 1);
  // a per-channel scale, a sigmoid between: stay
  auto per_channel = graph::dequantize_linear(
      a, graph::constant("sc", NDArray::from_floats({4}, {0.1f, 0.1f, 0.1f, 0.1f})), z,
      {.axis = 0});
  const auto channels =
      graph::function({a, b}, {graph::quantize_linear(graph::add(per_channel, fb), s, z)});
  CHECK(op_counts(graph::fake_quantization_to_integer(channels, target)).at("add") == 1);
  const auto sigmoid = graph::function(
      {a}, {graph::quantize_linear(graph::sigmoid(fa), scalar("s256", 1.0f / 256), z)});
  CHECK(op_counts(graph::fake_quantization_to_integer(sigmoid, target)).at("sigmoid") == 1);
  // the rewrite's constants take names no leaf has: the zero point 5 is added as an int32
  // constant, which would be named int5
  const auto named = graph::function(
      {a, b}, {graph::quantize_linear(graph::add(fa, fb), s, zero("int5", DType::int8(), 5))});
  const auto renamed = graph::fake_quantization_to_integer(named, target);
  CHECK(op_counts(renamed).at("add") == 2);
  CHECK_NOTHROW(graph::infer_type(renamed, target));
}
