// The fold_scale_shift pass: a product, sum or difference with a float32 constant (one value,
// or one per channel) after a convolution with constant weights becomes that convolution with
// its weight and bias changed, equal within float32 rounding to the unfolded function
// (graph::evaluate of both); chains fold one after another; every case it must leave alone
// stays as written, and the default pipeline runs it.
#include <dlavm/graph.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

namespace fold_scale_shift_test {

namespace graph = dlavm::graph;
namespace te = dlavm::te;
using dlavm::DType;

std::vector<std::string> ops_of(const graph::Function& fn) {
  std::vector<std::string> ops;
  for (const auto& e : graph::post_order(fn.results()))
    if (const auto* c = e.as<graph::CallNode>()) ops.emplace_back(c->op());
  return ops;
}

graph::Expr values(const std::string& name, std::vector<std::int64_t> shape, std::uint64_t seed) {
  return graph::constant(name, te::NDArray::random_float(std::move(shape), seed, -1.5, 1.5));
}

// x [2, 3, 6, 6] through a 3x3 convolution to 4 channels, with a bias_add when `bias`.
graph::Expr conv(const graph::Expr& x, bool bias) {
  auto y = graph::conv2d(x, values("w", {4, 3, 3, 3}, 1), {.padding = {1, 1, 1, 1}});
  return bias ? graph::bias_add(y, values("b", {4}, 2), {.axis = 1}) : y;
}

double folded_error(const graph::Function& fn) {
  const graph::Target target;
  const auto x = te::NDArray::random_float({2, 3, 6, 6}, 9, -1, 1);
  const graph::NamedArray in{"x", x};
  const auto want = graph::evaluate(graph::infer_type(fn, graph::default_ops()), std::span(&in, 1));
  const auto got =
      graph::evaluate(graph::infer_type(graph::fold_scale_shift(fn, target), graph::default_ops()),
                      std::span(&in, 1));
  double err = 0, scale = 1e-6;
  for (std::size_t r = 0; r < want.size(); ++r) {
    REQUIRE(got[r].shape() == want[r].shape());
    for (std::size_t i = 0; i < want[r].size(); ++i) {
      err = std::max(err, std::abs(double(got[r].fdata()[i]) - want[r].fdata()[i]));
      scale = std::max(scale, std::abs(double(want[r].fdata()[i])));
    }
  }
  return err / scale;
}

TEST_CASE("fold_scale_shift: scales and shifts after a convolution fold into it") {
  const graph::Target target;
  for (const bool bias : {false, true})
    for (const auto& shape :
         std::vector<std::vector<std::int64_t>>{{}, {1}, {4, 1, 1}, {1, 4, 1, 1}})
      for (int form = 0; form < 5; ++form) {
        CAPTURE(bias);
        CAPTURE(shape.size());
        CAPTURE(form);
        auto x = graph::input("x", {2, 3, 6, 6}, DType::float32());
        const auto c = values("s", shape, 3);
        const auto layer = conv(x, bias);
        graph::Expr y = form == 0   ? graph::mul(layer, c)
                        : form == 1 ? graph::mul(c, layer)
                        : form == 2 ? graph::add(layer, c)
                        : form == 3 ? graph::sub(layer, c)
                                    : graph::add(graph::mul(layer, c), values("t", shape, 4));
        const auto fn = graph::function({x}, {graph::named(y, "affine")});
        const auto folded = graph::fold_scale_shift(fn, target);
        CHECK(ops_of(folded) == std::vector<std::string>{"conv2d", "bias_add"});
        CHECK(folded.results()[0].as<graph::CallNode>()->result_name == "affine");
        CHECK(folded_error(fn) < 1e-5);
      }
  // in the default pipeline: the written layer is one conv2d and its bias_add
  auto x = graph::input("x", {2, 3, 6, 6}, DType::float32());
  const auto fn = graph::function(
      {x}, {graph::add(graph::mul(conv(x, true), values("s", {}, 3)), values("t", {}, 4))});
  const auto typed = graph::infer_type(fn, target);
  CHECK(ops_of(typed) == std::vector<std::string>{"conv2d", "bias_add"});
}

TEST_CASE("fold_scale_shift: cases it must leave alone") {
  const graph::Target target;
  auto x = graph::input("x", {2, 3, 6, 6}, DType::float32());
  const auto unchanged = [&](const graph::Function& fn) {
    CHECK(ops_of(graph::fold_scale_shift(fn, target)) == ops_of(fn));
  };
  const auto layer = conv(x, true);
  // a constant that is not per channel: per column, per position, or of another rank
  unchanged(graph::function({x}, {graph::mul(layer, values("s", {6}, 3))}));
  unchanged(graph::function({x}, {graph::mul(layer, values("s", {4, 6, 6}, 3))}));
  unchanged(graph::function({x}, {graph::add(layer, values("s", {1, 1, 1, 1, 1}, 3))}));
  // the constant on the left of a sub, and a division
  unchanged(graph::function({x}, {graph::sub(values("s", {}, 3), layer)}));
  unchanged(graph::function({x}, {graph::div(layer, values("s", {}, 3))}));
  // the layer read elsewhere too
  unchanged(graph::function({x}, {graph::mul(layer, values("s", {}, 3)), layer}));
  // a weight that is not a constant
  auto w = graph::input("w", {4, 3, 3, 3}, DType::float32());
  unchanged(graph::function({x, w}, {graph::mul(graph::conv2d(x, w), values("s", {}, 3))}));
  // a product of two computed values
  unchanged(graph::function({x}, {graph::mul(layer, graph::relu(layer))}));
}

}  // namespace fold_scale_shift_test
