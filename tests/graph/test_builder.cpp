// GraphBuilder: forward references, undefined names, duplicates, params, cycles.
#include <dlavm/graph/builder.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/expr.hpp>

#include <doctest/doctest.h>

#include <string>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;

TEST_CASE("graph builder: forward references resolve, shared values stay shared") {
  auto token = ne::var("token", 1, 64);
  graph::GraphBuilder b;
  b.call("y", "add", {"h", "h2"});  // both defined later
  b.call("h2", "relu", {"h"});
  b.call("h", "dense", {"x", "w"});
  b.input("x", {token, 8}, DType::int8());
  b.constant("w", te::NDArray::random(DType::int8(), {4, 8}, 1));
  b.call("unused", "relu", {"x"});
  CHECK(b.defines("h2"));
  CHECK_FALSE(b.defines("z"));
  auto fn = b.build({"x"}, {"y"});
  const auto& y = *fn.results()[0].as<graph::CallNode>();
  CHECK(y.op() == "add");
  const auto& h2 = *y.args[1].as<graph::CallNode>();
  CHECK(h2.args[0].same_as(y.args[0]));  // "h" is one node
  // the calls keep the names they were defined by
  CHECK(fmt::format("{}", fn) ==
        "fn (%x: Tensor[(token, 8), int8]) {\n"
        "  %w = constant Tensor[(4, 8), int8]\n"
        "  %h = dense(%x, %w)\n"
        "  %h2 = relu(%h)\n"
        "  %y = add(%h, %h2)\n"
        "  return %y\n"
        "}");
  CHECK(y.result_name == "y");
  // several results, one of them a leaf
  auto fn2 = b.build({"x"}, {"h", "x"});
  CHECK(fn2.results()[1].kind() == graph::NodeKind::Input);
}

TEST_CASE("graph builder: mistakes name the values") {
  graph::GraphBuilder b;
  b.input("x", {4}, DType::int8());
  CHECK_THROWS_WITH_AS(
      b.call("x", "relu", {"x"}),
      "GraphBuilder: 'x' is defined twice: first as an input, then as a call to 'relu'",
      dlavm::ValueError);
  b.call("y", "relu", {"x"});
  CHECK_THROWS_WITH_AS(
      b.constant("y", te::NDArray(DType::int8(), {4})),
      "GraphBuilder: 'y' is defined twice: first as a call to 'relu', then as a constant",
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(b.build({"x"}, {"nothing"}), "GraphBuilder: result 'nothing' is not defined",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(b.build({"y"}, {"y"}),
                       "GraphBuilder: param 'y' is a call to 'relu'; params must be inputs",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(b.build({}, {"y"}),
                       doctest::Contains("input 'x' is used by the results but is not a param"),
                       dlavm::ValueError);
  b.call("z", "add", {"y", "typo"});
  CHECK_THROWS_WITH_AS(b.build({"x"}, {"y"}),
                       "GraphBuilder: 'z' = add(...): argument 1 'typo' is not defined",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(b.call("v", "", {"x"}), doctest::Contains("empty name"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(b.call("", "relu", {"x"}), "GraphBuilder: a value with an empty name",
                       dlavm::ValueError);
  CHECK_THROWS_AS(b.input("bad", {0}, DType::int8()), dlavm::ShapeError);  // graph::input's checks
}

TEST_CASE("graph builder: a cycle is listed") {
  graph::GraphBuilder b;
  b.input("x", {4}, DType::int8());
  b.call("a", "add", {"x", "c"});
  b.call("b", "relu", {"a"});
  b.call("c", "relu", {"b"});
  b.call("out", "relu", {"a"});
  CHECK_THROWS_WITH_AS(b.build({"x"}, {"out"}),
                       "GraphBuilder: the values form a cycle: a -> c -> b -> a",
                       dlavm::ValueError);
  graph::GraphBuilder self;
  self.call("s", "relu", {"s"});
  CHECK_THROWS_WITH_AS(self.build({}, {"s"}), "GraphBuilder: the values form a cycle: s -> s",
                       dlavm::ValueError);
}

TEST_CASE("graph builder: deep chains and wide fan-in build without recursion") {
  graph::GraphBuilder b;
  b.input("v0", {1}, DType::int32());
  const int depth = 50000;
  // defined last-first, so every reference is a forward reference
  for (int i = depth; i >= 1; --i)
    b.call(fmt::format("v{}", i), "relu", {fmt::format("v{}", i - 1)});
  auto fn = b.build({"v0"}, {fmt::format("v{}", depth)});
  int calls = 0;
  graph::Expr e = fn.results()[0];
  while (e.kind() == graph::NodeKind::Call) {
    ++calls;
    e = e.as<graph::CallNode>()->args[0];
  }
  CHECK(calls == depth);
}

TEST_CASE("named calls: printed and reported by name, unnamed ones keep their numbers") {
  auto x = graph::input("x", {2, 8}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {4, 8}, 1));
  auto fc = graph::named(graph::call("dense", {x, w}), "fc1");
  auto r = graph::call("relu", {fc});
  auto out = graph::named(graph::call("add", {fc, r}), "onnx::Add_3");
  const auto fn = graph::function({x}, {out});
  CHECK(fmt::format("{}", fn) ==
        "fn (%x: Tensor[(2, 8), int8]) {\n"
        "  %w = constant Tensor[(4, 8), int8]\n"
        "  %fc1 = dense(%x, %w)\n"
        "  %1 = relu(%fc1)\n"
        "  %\"onnx::Add_3\" = add(%fc1, %1)\n"
        "  return %\"onnx::Add_3\"\n"
        "}");
  CHECK(graph::printed_name("fc1") == "%fc1");
  CHECK(graph::NodeNames(fn).label(fc) == "%fc1 (dense)");
  // a name identifies one value
  CHECK_THROWS_WITH_AS(graph::function({x}, {graph::named(graph::call("relu", {x}), "x")}),
                       "graph::function: a call 'relu' produces a value named 'x', as an input or "
                       "constant is named; a name must identify one value",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      graph::function({x}, {graph::call("add", {graph::named(graph::call("relu", {x}), "a"),
                                                graph::named(graph::call("relu", {x}), "a")})}),
      "graph::function: two different calls ('relu' and another) produce a value named 'a'; a "
      "name must identify one value",
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::named(x, "y"),
                       "graph::named: 'x' is an input; only calls are named this way (inputs and "
                       "constants have their names)",
                       dlavm::ValueError);
}
