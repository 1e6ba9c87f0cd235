// The recognize_layer_norm, recognize_gelu and recognize_hard_swish passes: the written-out
// forms exporters write (in their variants: pow or a product for the square, the factors in any
// order, with and without the affine step, a division or a product with 1/6) become one
// layer_norm, gelu or hard_swish that computes the same within float32
// rounding (graph::evaluate of both, the written form as the reference); forms the passes must
// leave alone (a value read outside the pattern, other constants or axes) stay as written.
#include <dlavm/graph.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace recognize_test {

namespace graph = dlavm::graph;
namespace te = dlavm::te;
namespace host = dlavm::host;
using dlavm::DType;

graph::Expr scalar(const std::string& name, float v) {
  return graph::constant(name, te::NDArray::from_floats({}, {v}));
}

std::vector<std::string> ops_of(const graph::Function& fn) {
  std::vector<std::string> ops;
  for (const auto& e : graph::post_order(fn.roots()))
    if (const auto* c = e.as<graph::CallNode>()) ops.emplace_back(c->op());
  return ops;
}

// The largest difference between fn and pass(fn) on x, relative to the result's magnitude.
template <class Pass>
double rewritten_error(const graph::Function& fn, Pass pass, const te::NDArray& x) {
  const graph::Target target;
  const graph::NamedArray in{"x", x};
  const auto want = graph::evaluate(graph::infer_type(fn, graph::default_ops()), std::span(&in, 1));
  const auto got =
      graph::evaluate(graph::infer_type(pass(fn, target), graph::default_ops()), std::span(&in, 1));
  double err = 0, scale = 1e-6;
  for (std::size_t r = 0; r < want.size(); ++r)
    for (std::size_t i = 0; i < want[r].size(); ++i) {
      err = std::max(err, std::abs(double(got[r].fdata()[i]) - want[r].fdata()[i]));
      scale = std::max(scale, std::abs(double(want[r].fdata()[i])));
    }
  return err / scale;
}

struct WrittenLayerNorm {
  bool pow_square = true;  // pow(d, 2), else d * d
  bool affine = true;      // * gamma + beta
  bool gamma_first = false;
  std::vector<std::int64_t> axes = {-1};
  bool through_relu = false;  // x an (untyped) call, not the input
};

// x [2, 5, 8] normalized as PyTorch's exporter writes LayerNorm before opset 17.
graph::Function written_layer_norm(const WrittenLayerNorm& f, graph::Expr* leak = nullptr) {
  auto input = graph::input("x", {2, 5, 8}, DType::float32());
  auto x = f.through_relu ? graph::relu(input) : input;
  const host::ReduceParams over{.axes = f.axes, .keepdims = true};
  auto d = graph::sub(x, graph::reduce_mean(x, over));
  auto square = f.pow_square ? graph::pow(d, scalar("two", 2)) : graph::mul(d, d);
  auto variance = graph::reduce_mean(square, over);
  auto n = graph::div(d, graph::sqrt(graph::add(variance, scalar("eps", 1e-5f))));
  graph::Expr y = n;
  if (f.affine) {
    const std::int64_t k = static_cast<std::int64_t>(f.axes.size());
    const std::vector<std::int64_t> shape =
        k == 1 ? std::vector<std::int64_t>{8} : std::vector<std::int64_t>{5, 8};
    auto gamma = graph::constant("gamma", te::NDArray::random_float(shape, 3, 0.5, 1.5));
    auto beta = graph::constant("beta", te::NDArray::random_float(shape, 4, -1, 1));
    y = graph::add(f.gamma_first ? graph::mul(gamma, n) : graph::mul(n, gamma), beta);
  }
  if (leak != nullptr) *leak = variance;
  std::vector<graph::Expr> results = {graph::named(y, "ln_out")};
  if (leak != nullptr) results.push_back(variance);
  return graph::function({input}, results);
}

TEST_CASE("recognize_layer_norm: the written-out forms become one layer_norm") {
  const graph::Target target;
  const auto x = te::NDArray::random_float({2, 5, 8}, 9, -3, 3);
  for (const WrittenLayerNorm& f :
       {WrittenLayerNorm{}, WrittenLayerNorm{.pow_square = false},
        WrittenLayerNorm{.gamma_first = true}, WrittenLayerNorm{.axes = {-2, -1}},
        WrittenLayerNorm{.affine = false}}) {
    CAPTURE(f.pow_square);
    CAPTURE(f.axes.size());
    const auto fn = written_layer_norm(f);
    const auto fused = graph::recognize_layer_norm(fn, target);
    REQUIRE(ops_of(fused) == std::vector<std::string>{"layer_norm"});
    const auto* ln = fused.results()[0].as<graph::CallNode>();
    CHECK(ln->result_name == "ln_out");
    const auto p = graph::layer_norm_params(ln->attrs);
    CHECK(p.axis == -static_cast<std::int64_t>(f.axes.size()));
    CHECK(p.epsilon == doctest::Approx(1e-5));
    CHECK(rewritten_error(fn, graph::recognize_layer_norm, x) < 1e-5);
  }
  // positive axes on a typed value: the input, or a call once typed
  CHECK(ops_of(graph::recognize_layer_norm(written_layer_norm({.axes = {2}}), target)) ==
        std::vector<std::string>{"layer_norm"});
  const auto typed = graph::infer_type(written_layer_norm({.axes = {2}, .through_relu = true}),
                                       graph::default_ops());
  CHECK(ops_of(graph::recognize_layer_norm(typed, target)) ==
        std::vector<std::string>{"relu", "layer_norm"});
  // and the default pipeline runs it
  CHECK(
      graph::infer_type(written_layer_norm({}), target).results()[0].as<graph::CallNode>()->op() ==
      "layer_norm");
}

TEST_CASE("recognize_layer_norm: forms it must leave alone") {
  const graph::Target target;
  // the variance read outside the pattern (a second result)
  graph::Expr variance;
  const auto leaky = written_layer_norm({}, &variance);
  CHECK(ops_of(graph::recognize_layer_norm(leaky, target)) == ops_of(leaky));
  // positive axes without types: the rank is unknown
  const auto untyped = written_layer_norm({.axes = {2}, .through_relu = true});
  CHECK(ops_of(graph::recognize_layer_norm(untyped, target)) == ops_of(untyped));
  // a leading axis is no layer normalization
  const auto leading = written_layer_norm({.affine = false, .axes = {-2}});
  CHECK(ops_of(graph::recognize_layer_norm(leading, target)) == ops_of(leading));
  // a cube instead of a square
  auto x = graph::input("x", {2, 8}, DType::float32());
  auto d = graph::sub(x, graph::reduce_mean(x, {.axes = {-1}}));
  auto v = graph::reduce_mean(graph::pow(d, scalar("three", 3)), {.axes = {-1}});
  const auto cube =
      graph::function({x}, {graph::div(d, graph::sqrt(graph::add(v, scalar("eps", 1e-5f))))});
  CHECK(ops_of(graph::recognize_layer_norm(cube, target)) == ops_of(cube));
}

// GELU as PyTorch's exporter writes it before opset 20, its factors grouped as `order` says.
graph::Function written_gelu(int order, bool by_reciprocal = false, float half = 0.5f) {
  auto x = graph::input("x", {3, 16}, DType::float32());
  auto scaled = by_reciprocal ? graph::mul(scalar("inv_sqrt2", 0.70710678f), x)
                              : graph::div(x, scalar("sqrt2", 1.4142135f));
  auto sum = order % 2 == 0 ? graph::add(graph::erf(scaled), scalar("one", 1))
                            : graph::add(scalar("one", 1), graph::erf(scaled));
  graph::Expr y;
  if (order < 2)
    y = graph::mul(graph::mul(x, sum), scalar("half", half));  // (x * s) * 0.5
  else if (order < 4)
    y = graph::mul(graph::mul(x, scalar("half", half)), sum);  // (x * 0.5) * s
  else
    y = graph::mul(x, graph::mul(sum, scalar("half", half)));  // x * (s * 0.5)
  return graph::function({x}, {graph::named(y, "gelu_out")});
}

TEST_CASE("recognize_gelu: the written-out forms become one gelu") {
  const graph::Target target;
  const auto x = te::NDArray::random_float({3, 16}, 11, -4, 4);
  for (int order = 0; order < 6; ++order)
    for (bool by_reciprocal : {false, true}) {
      CAPTURE(order);
      CAPTURE(by_reciprocal);
      const auto fn = written_gelu(order, by_reciprocal);
      const auto fused = graph::recognize_gelu(fn, target);
      REQUIRE(ops_of(fused) == std::vector<std::string>{"gelu"});
      CHECK(fused.results()[0].as<graph::CallNode>()->result_name == "gelu_out");
      CHECK(rewritten_error(fn, graph::recognize_gelu, x) < 1e-6);
    }
  CHECK(graph::infer_type(written_gelu(0), target).results()[0].as<graph::CallNode>()->op() ==
        "gelu");
}

TEST_CASE("recognize_gelu: forms it must leave alone") {
  const graph::Target target;
  const auto other = written_gelu(0, false, 0.25f);  // x * 0.25 * (1 + erf(...))
  CHECK(ops_of(graph::recognize_gelu(other, target)) == ops_of(other));
  // the erf read outside the pattern
  auto x = graph::input("x", {3, 16}, DType::float32());
  auto e = graph::erf(graph::div(x, scalar("sqrt2", 1.4142135f)));
  auto y = graph::mul(graph::mul(x, graph::add(e, scalar("one", 1))), scalar("half", 0.5f));
  const auto leaky = graph::function({x}, {y, e});
  CHECK(ops_of(graph::recognize_gelu(leaky, target)) == ops_of(leaky));
  // erf of another value than the one multiplied
  auto z = graph::input("z", {3, 16}, DType::float32());
  auto crossed = graph::mul(
      graph::mul(
          x, graph::add(graph::erf(graph::div(z, scalar("sqrt2", 1.4142135f))), scalar("one", 1))),
      scalar("half", 0.5f));
  const auto two = graph::function({x, z}, {crossed});
  CHECK(ops_of(graph::recognize_gelu(two, target)) == ops_of(two));
}

// x * clip(x + 3, 0, 6) / 6 in the forms exporters write: `form` picks one; `six`, `three`
// and `hi` are the constants (other values make forms the pass must leave alone).
graph::Function written_hard_swish(int form, float six = 6.0f, float three = 3.0f,
                                   double hi = 6.0) {
  auto x = graph::input("x", {2, 4, 5}, DType::float32());
  const auto relu6 = [&] {
    auto sum = form % 2 == 0 ? graph::add(x, scalar("three", three))
                             : graph::add(scalar("three", three), x);
    return graph::clip(sum, {.lo = 0, .hi = hi});
  };
  graph::Expr y;
  switch (form) {
    case 0:
    case 1:  // Paddle and PyTorch: x * relu6(x + 3) / 6
      y = graph::div(graph::mul(x, relu6()), scalar("six", six));
      break;
    case 2:  // relu6(x + 3) * x / 6
      y = graph::div(graph::mul(relu6(), x), scalar("six", six));
      break;
    case 3:  // x * (relu6(x + 3) / 6)
      y = graph::mul(x, graph::div(relu6(), scalar("six", six)));
      break;
    case 4:  // (x * relu6(x + 3)) * (1/6)
      y = graph::mul(graph::mul(x, relu6()), scalar("sixth", 1.0f / six));
      break;
    case 5:  // (1/6 * x) * relu6(x + 3)
      y = graph::mul(graph::mul(scalar("sixth", 1.0f / six), x), relu6());
      break;
    default:  // x * hard_sigmoid(x, 1/6, 0.5): PyTorch's hardswish before opset 14
      y = graph::mul(x, graph::hard_sigmoid(x, {.alpha = 1.0 / six, .beta = 0.5}));
      break;
  }
  return graph::function({x}, {graph::named(y, "hswish_out")});
}

TEST_CASE("recognize_hard_swish: the written-out forms become one hard_swish") {
  const graph::Target target;
  const auto x = te::NDArray::random_float({2, 4, 5}, 12, -5, 5);
  for (int form = 0; form < 7; ++form) {
    CAPTURE(form);
    const auto fn = written_hard_swish(form);
    const auto fused = graph::recognize_hard_swish(fn, target);
    REQUIRE(ops_of(fused) == std::vector<std::string>{"hard_swish"});
    CHECK(fused.results()[0].as<graph::CallNode>()->result_name == "hswish_out");
    CHECK(rewritten_error(fn, graph::recognize_hard_swish, x) < 1e-6);
  }
  // in the default pipeline
  CHECK(graph::infer_type(written_hard_swish(0), target).results()[0].as<graph::CallNode>()->op() ==
        "hard_swish");
}

TEST_CASE("recognize_hard_swish: forms it must leave alone") {
  const graph::Target target;
  for (const auto& fn :
       {written_hard_swish(0, 5.0f), written_hard_swish(4, 5.0f), written_hard_swish(0, 6.0f, 2.0f),
        written_hard_swish(3, 6.0f, 3.0f, 8.0), written_hard_swish(6, 5.0f)})
    CHECK(ops_of(graph::recognize_hard_swish(fn, target)) == ops_of(fn));
  // the clip read outside the pattern
  auto x = graph::input("x", {2, 4, 5}, DType::float32());
  auto gate = graph::clip(graph::add(x, scalar("three", 3)), {.lo = 0, .hi = 6});
  auto y = graph::div(graph::mul(x, gate), scalar("six", 6));
  const auto leaky = graph::function({x}, {y, gate});
  CHECK(ops_of(graph::recognize_hard_swish(leaky, target)) == ops_of(leaky));
  // the gate of another value than the one multiplied
  auto z = graph::input("z", {2, 4, 5}, DType::float32());
  auto crossed =
      graph::div(graph::mul(x, graph::clip(graph::add(z, scalar("three", 3)), {.lo = 0, .hi = 6})),
                 scalar("six", 6));
  const auto two = graph::function({x, z}, {crossed});
  CHECK(ops_of(graph::recognize_hard_swish(two, target)) == ops_of(two));
}

}  // namespace recognize_test
