// dlavm::onnx::export_model: functions written as ONNX models and imported back.
//   - a float CNN with a depthwise block and a squeeze-and-excitation gate, quantized by
//     dlavm::quantize: its export re-imported is the same function (the same calls with the
//     same attributes and constants, in the same order) and computes the same integers;
//   - a float function of the other exported ops: re-imported, it evaluates the same;
//   - what has no ONNX form (requantize's rounding shift) is refused, naming the node.
#include <dlavm/graph.hpp>
#include <dlavm/onnx/export.hpp>
#include <dlavm/onnx/import.hpp>
#include <dlavm/quantize.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

namespace export_test {

namespace graph = dlavm::graph;
namespace q = dlavm::quantization;
using dlavm::DType;
using dlavm::te::NDArray;

graph::Expr weight(const std::string& name, std::vector<std::int64_t> shape, std::uint64_t seed,
                   double range) {
  return graph::constant(name, NDArray::random_float(std::move(shape), seed, -range, range));
}

// stem conv -> relu, depthwise 3x3 -> relu6, pointwise -> relu, a squeeze-and-excitation gate
// (global pool, dense, hard_sigmoid, multiply), max pool, a dense classifier
graph::Function mobile_cnn() {
  auto x = graph::input("image", {1, 3, 16, 16}, DType::float32());
  auto y = graph::relu(graph::bias_add(
      graph::conv2d(x, weight("stem", {16, 3, 3, 3}, 1, 0.4), {.padding = {1, 1, 1, 1}}),
      weight("stem_b", {16}, 2, 0.1)));
  y = graph::clip(graph::bias_add(graph::conv2d(y, weight("dw", {16, 1, 3, 3}, 3, 0.5),
                                                {.padding = {1, 1, 1, 1}, .groups = 16}),
                                  weight("dw_b", {16}, 4, 0.1)),
                  {.lo = 0, .hi = 6});
  y = graph::relu(graph::conv2d(y, weight("pw", {32, 16, 1, 1}, 5, 0.3)));
  auto gate = graph::flatten(graph::global_avg_pool2d(y));
  // (an ONNX attribute is a float32: 0.25 stays 0.25, where 0.2 would come back as 0.2f)
  gate = graph::hard_sigmoid(graph::dense(gate, weight("se", {32, 32}, 6, 0.3)),
                             {.alpha = 0.25, .beta = 0.5});
  y = graph::mul(y, graph::reshape(gate, {.newshape = {1, 32, 1, 1}}));
  y = graph::max_pool2d(y, {.pool_size = {2, 2}, .strides = {2, 2}});
  y = graph::flatten(graph::global_avg_pool2d(y));
  y = graph::bias_add(graph::dense(y, weight("fc", {10, 32}, 7, 0.5)), weight("fc_b", {10}, 8, 0.1),
                      {.axis = -1});
  return graph::function({x}, {y});
}

std::vector<q::Sample> samples(std::size_t n, std::uint64_t seed) {
  std::vector<q::Sample> out;
  for (std::size_t k = 0; k < n; ++k)
    out.push_back({{{"image", NDArray::random_float({1, 3, 16, 16}, seed + k, -1.0, 1.0)}}, {}});
  return out;
}

graph::Function reimported(const graph::Function& fn) {
  const auto bytes = dlavm::onnx::export_model_bytes(fn);
  return dlavm::onnx::import(
      std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

// The calls of fn as build sees them (its passes applied), one line each: op, attributes,
// result type, and the constants it reads by value.
std::vector<std::string> calls(const graph::Function& fn) {
  const auto typed = graph::infer_type(fn, graph::Target{});
  std::vector<std::string> out;
  for (const auto& e : graph::post_order(typed.results())) {
    const auto* c = e.as<graph::CallNode>();
    if (c == nullptr) continue;
    std::string line = fmt::format("{}({}) -> {} {}", c->op(), c->attrs,
                                   graph::shape_text(e.type().shape), e.type().dtype);
    for (const auto& a : c->args)
      if (const auto* k = a.as<graph::ConstantNode>())
        line += fmt::format(" [{}]", k->value->dtype().is_float()
                                         ? fmt::format("{}", fmt::join(k->value->fdata(), ","))
                                         : fmt::format("{}", fmt::join(k->value->data(), ",")));
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace export_test

TEST_CASE("export: a quantized model re-imported is the same function") {
  using namespace export_test;
  // asymmetric: zero points, and the pad steps that pad with them
  for (const auto activations : {q::Activations::Symmetric, q::Activations::Asymmetric}) {
    CAPTURE(q::to_string(activations));
    const auto result =
        dlavm::quantize(mobile_cnn(), samples(8, 100), {.activations = activations});
    REQUIRE(result.vta_mac_share() > 0.9);
    const auto back = reimported(result.function);
    const auto want = calls(result.function), got = calls(back);
    CHECK(got.size() == want.size());
    for (std::size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
      CAPTURE(k);
      CHECK(got[k] == want[k]);
    }
    const auto a = graph::infer_type(result.function, graph::Target{});
    const auto b = graph::infer_type(back, graph::Target{});
    for (std::uint64_t s = 0; s < 4; ++s) {
      const auto x = NDArray::random_float({1, 3, 16, 16}, 500 + s, -1.0, 1.0);
      CHECK(graph::evaluate(a, {{"image", x}}, {})[0] == graph::evaluate(b, {{"image", x}}, {})[0]);
    }
  }
}

TEST_CASE("export: float ops re-imported evaluate the same") {
  using namespace export_test;
  auto x = graph::input("x", {2, 4, 6, 6}, DType::float32());
  auto y = graph::conv2d(x, weight("w", {8, 2, 3, 3}, 1, 0.5),
                         {.strides = {2, 1}, .padding = {1, 0, 1, 2}, .groups = 2});
  y = graph::hard_swish(graph::bias_add(y, weight("b", {8}, 2, 0.2)));
  auto z = graph::sigmoid(graph::avg_pool2d(y, {.pool_size = {2, 2},
                                                .strides = {1, 1},
                                                .padding = {0, 0, 1, 1},
                                                .count_include_pad = false}));
  y = graph::concat({graph::add(y, z), graph::sub(y, z)}, {.axis = 1});
  y = graph::transpose(y, {.perm = {0, 2, 3, 1}});
  y = graph::softmax(graph::reshape(y, {.newshape = {2, -1, 16}}), {.axis = -1});
  const auto fn = graph::function({x}, {y});
  const auto back = reimported(fn);
  const auto a = graph::infer_type(fn, graph::default_ops());
  const auto b = graph::infer_type(back, graph::default_ops());
  const auto in = NDArray::random_float({2, 4, 6, 6}, 9, -2.0, 2.0);
  CHECK(graph::evaluate(a, {{"x", in}}, {})[0] == graph::evaluate(b, {{"x", in}}, {})[0]);
}

TEST_CASE("export: what has no ONNX form is refused, naming the node") {
  using namespace export_test;
  const auto shifted =
      dlavm::quantize(mobile_cnn(), samples(4, 100), {.requantize = q::Requantize::Shift});
  CHECK_THROWS_WITH_AS(dlavm::onnx::export_model_bytes(shifted.function),
                       doctest::Contains("(requantize): a rounding right shift "
                                         "(Requantize::Shift) has no ONNX operator"),
                       dlavm::onnx::NotSupported);
  CHECK_THROWS_WITH_AS(dlavm::onnx::export_model(mobile_cnn(), "/nonexistent-dir/model.onnx"),
                       "export: cannot write '/nonexistent-dir/model.onnx'", dlavm::ValueError);
}
