// The fold_batch_norm pass: a batch_norm after a convolution or dense layer with constant
// float32 weights becomes that layer with scaled weights and a bias, equal within float32
// rounding to the unfolded function (graph::evaluate of both); every case it must leave alone
// stays a batch_norm, and the default pipeline runs it first.
#include <dlavm/graph.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

namespace fold_batch_norm_test {

namespace graph = dlavm::graph;
namespace te = dlavm::te;
using dlavm::DType;

graph::Expr stat(const std::string& name, std::int64_t c, std::uint64_t seed, double lo,
                 double hi) {
  return graph::constant(name, te::NDArray::random_float({c}, seed, lo, hi));
}

// batch_norm over y's channels (c of them) along `axis`.
graph::Expr norm(const graph::Expr& y, std::int64_t c, std::int64_t axis = 1) {
  return graph::batch_norm(y, stat("gamma", c, 1, 0.5, 1.5), stat("beta", c, 2, -1, 1),
                           stat("mean", c, 3, -1, 1), stat("var", c, 4, 0.1, 2),
                           {.axis = axis, .epsilon = 1e-3});
}

std::vector<std::string> ops_of(const graph::Function& fn) {
  std::vector<std::string> ops;
  for (const auto& e : graph::post_order(fn.results()))
    if (const auto* c = e.as<graph::CallNode>()) ops.emplace_back(c->op());
  return ops;
}

// The largest difference between fn and fold_batch_norm(fn) on x, relative to the result's
// largest magnitude.
double folded_error(const graph::Function& fn, const te::NDArray& x) {
  const graph::Target target;
  const auto folded = graph::fold_batch_norm(fn, target);
  const graph::NamedArray in{"x", x};
  const auto want = graph::evaluate(graph::infer_type(fn, graph::default_ops()), std::span(&in, 1));
  const auto got =
      graph::evaluate(graph::infer_type(folded, graph::default_ops()), std::span(&in, 1));
  double err = 0, scale = 1e-6;
  for (std::size_t r = 0; r < want.size(); ++r)
    for (std::size_t i = 0; i < want[r].size(); ++i) {
      err = std::max(err, std::abs(double(got[r].fdata()[i]) - want[r].fdata()[i]));
      scale = std::max(scale, std::abs(double(want[r].fdata()[i])));
    }
  return err / scale;
}

TEST_CASE("fold_batch_norm: conv2d, conv2d + bias_add and dense fold into weights and a bias") {
  const graph::Target target;
  auto x = graph::input("x", {2, 3, 6, 6}, DType::float32());
  auto w = graph::constant("w", te::NDArray::random_float({4, 3, 3, 3}, 5, -1, 1));
  auto conv = graph::conv2d(x, w, {.padding = {1, 1, 1, 1}});
  const auto xv = te::NDArray::random_float({2, 3, 6, 6}, 6, -2, 2);

  const auto plain = graph::function({x}, {graph::named(norm(conv, 4), "bn_out")});
  const auto folded = graph::fold_batch_norm(plain, target);
  CHECK(ops_of(folded) == std::vector<std::string>{"conv2d", "bias_add"});
  const auto* bias = folded.results()[0].as<graph::CallNode>();
  CHECK(bias->result_name == "bn_out");
  CHECK(bias->args[1].as<graph::ConstantNode>()->name == "bn_out.bias");
  CHECK(folded_error(plain, xv) < 1e-5);

  auto biased = graph::bias_add(conv, stat("b", 4, 7, -1, 1));
  const auto with_bias = graph::function({x}, {norm(biased, 4)});
  CHECK(ops_of(graph::fold_batch_norm(with_bias, target)) ==
        std::vector<std::string>{"conv2d", "bias_add"});
  CHECK(folded_error(with_bias, xv) < 1e-5);

  auto v = graph::input("x", {5, 8}, DType::float32());
  auto dw = graph::constant("dw", te::NDArray::random_float({6, 8}, 8, -1, 1));
  const auto dense = graph::function({v}, {norm(graph::dense(v, dw), 6, -1)});
  CHECK(ops_of(graph::fold_batch_norm(dense, target)) ==
        std::vector<std::string>{"dense", "bias_add"});
  CHECK(folded_error(dense, te::NDArray::random_float({5, 8}, 9, -2, 2)) < 1e-5);
}

TEST_CASE("fold_batch_norm: what it must leave alone stays a batch_norm") {
  const graph::Target target;
  auto x = graph::input("x", {1, 3, 4, 4}, DType::float32());
  auto w = graph::constant("w", te::NDArray::random_float({3, 3, 1, 1}, 5, -1, 1));
  auto conv = graph::conv2d(x, w);
  const auto stays = [&](const graph::Function& fn) {
    const auto ops = ops_of(graph::fold_batch_norm(fn, target));
    return std::count(ops.begin(), ops.end(), "batch_norm") == 1;
  };
  // the convolution is read elsewhere too
  CHECK(stays(graph::function({x}, {norm(conv, 3), conv})));
  // the weight is not a constant
  auto wi = graph::input("w", {3, 3, 1, 1}, DType::float32());
  CHECK(stays(graph::function({x, wi}, {norm(graph::conv2d(x, wi), 3)})));
  // the batch_norm is along another axis than the convolution's channels
  CHECK(stays(graph::function({x}, {norm(graph::conv2d(x, w), 4, 2)})));
  // no layer before it
  CHECK(stays(graph::function({x}, {norm(graph::relu(x), 3)})));
  // a statistic that is not a constant
  auto m = graph::input("m", {3}, DType::float32());
  CHECK(stays(
      graph::function({x, m}, {graph::batch_norm(conv, stat("g", 3, 1, 1, 2), stat("b", 3, 2, 0, 1),
                                                 m, stat("v", 3, 3, 1, 2))})));
}

TEST_CASE("fold_batch_norm: the default pipeline folds before typing, build runs the result") {
  const auto passes = graph::default_passes();
  REQUIRE(!passes.empty());
  CHECK(passes.front().name == "fold_batch_norm");
  const graph::Target target;
  auto x = graph::input("x", {1, 3, 4, 4}, DType::float32());
  auto w = graph::constant("w", te::NDArray::random_float({3, 3, 1, 1}, 5, -1, 1));
  const auto fn = graph::function({x}, {norm(graph::conv2d(x, w), 3)});
  const auto typed = graph::infer_type(fn, target);
  CHECK(ops_of(typed) == std::vector<std::string>{"conv2d", "bias_add"});
  // disabled, the batch_norm runs on the host
  const auto kept = graph::run_passes(fn, target, passes, {.disabled = {"fold_batch_norm"}});
  CHECK(ops_of(kept) == std::vector<std::string>{"conv2d", "batch_norm"});
}

}  // namespace fold_batch_norm_test
