// A ResNet-18-shaped int8 network (at 32x32 so that the suite stays fast): the graph types,
// evaluates, and its layers equal the host kernels called by hand on the traced inputs.
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/host.hpp>

#include <doctest/doctest.h>

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;

namespace {

struct ResNetBuilder {
  int next = 0;
  graph::Expr conv(graph::Expr x, std::int64_t cin, std::int64_t cout, std::int64_t k,
                   std::int64_t s, bool relu) {
    auto w = graph::constant(fmt::format("w{}", next),
                             te::NDArray::random(DType::int8(), {cout, cin, k, k},
                                                 static_cast<std::uint64_t>(next), -8, 8));
    auto b = graph::constant(fmt::format("b{}", next),
                             te::NDArray::random(DType::int32(), {cout},
                                                 static_cast<std::uint64_t>(next) + 1000, -64, 64));
    ++next;
    const std::int64_t p = k / 2;
    auto y = graph::requantize(
        graph::bias_add(graph::conv2d(x, w, {.strides = {s, s}, .padding = {p, p, p, p}}), b),
        {.shift = 6, .rounding = host::Rounding::Nearest});
    return relu ? graph::relu(y) : y;
  }
  graph::Expr block(graph::Expr x, std::int64_t cin, std::int64_t cout, std::int64_t s) {
    auto y = conv(conv(x, cin, cout, 3, s, true), cout, cout, 3, 1, false);
    auto shortcut = s != 1 || cin != cout ? conv(x, cin, cout, 1, s, false) : x;
    return graph::relu(graph::add(y, shortcut));
  }
};

}  // namespace

TEST_CASE("graph: a ResNet-18-shaped int8 network types, evaluates, and matches its layers") {
  ResNetBuilder r;
  auto data = graph::input("data", {1, 3, 32, 32}, DType::int8());
  auto y = r.conv(data, 3, 64, 7, 2, true);
  y = graph::max_pool2d(y, {.pool_size = {3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}});
  std::int64_t c = 64;
  for (std::int64_t out : {64, 128, 256, 512}) {
    y = r.block(y, c, out, out == 64 ? 1 : 2);
    y = r.block(y, out, out, 1);
    c = out;
  }
  y = graph::flatten(graph::global_avg_pool2d(y));
  y = graph::dense(y, graph::constant("fc", te::NDArray::random(DType::int8(), {10, 512}, 7)));
  auto fn = graph::infer_type(graph::function({data}, {y}), graph::default_ops());
  CHECK(r.next == 20);  // 17 convolutions + 3 downsampling shortcuts
  int calls = 0;
  graph::for_each_node(fn,
                       [&](const graph::Expr& e) { calls += e.kind() == graph::NodeKind::Call; });
  CHECK(calls == 89);
  CHECK(graph::shape_text(fn.results()[0].type().shape) == "(1, 10)");
  CHECK(fn.results()[0].type().dtype == DType::int32());

  auto x = te::NDArray::random(DType::int8(), {1, 3, 32, 32}, 11);
  auto trace = graph::evaluate_trace(fn, {{"data", x}});
  CHECK(trace.results[0].shape() == std::vector<std::int64_t>{1, 10});
  // each call's value is its host kernel applied to its arguments' traced values
  int compared = 0;
  for (std::size_t i = 0; i < trace.nodes.size(); ++i) {
    const auto* call = trace.nodes[i].as<graph::CallNode>();
    if (call == nullptr) continue;
    std::vector<const te::NDArray*> args;
    for (const auto& a : call->args) args.push_back(&trace.value_of(a));
    te::NDArray expect;
    const auto& op = call->op();
    if (op == "conv2d") {
      const auto& s = call->attrs.get_ints("strides");
      const auto& p = call->attrs.get_ints("padding");
      expect = host::conv2d(*args[0], *args[1],
                            {.strides = {s[0], s[1]}, .padding = {p[0], p[1], p[2], p[3]}});
    } else if (op == "bias_add") {
      expect = host::bias_add(*args[0], *args[1]);
    } else if (op == "requantize") {
      expect = host::requantize(*args[0], {.shift = 6, .rounding = host::Rounding::Nearest});
    } else if (op == "relu") {
      expect = host::relu(*args[0]);
    } else if (op == "add") {
      expect = host::add(*args[0], *args[1]);
    } else if (op == "max_pool2d") {
      expect = host::max_pool2d(*args[0],
                                {.pool_size = {3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}});
    } else if (op == "global_avg_pool2d") {
      expect = host::global_avg_pool2d(*args[0]);
    } else if (op == "flatten") {
      expect = host::flatten(*args[0]);
    } else if (op == "dense") {
      expect = host::dense(*args[0], *args[1]);
    } else {
      FAIL("unexpected op ", op);
    }
    CHECK(*trace.values[i] == expect);
    ++compared;
  }
  CHECK(compared == 89);
  // not degenerate: the activations are not all zero
  bool nonzero = false;
  for (auto v : trace.results[0].data()) nonzero = nonzero || v != 0;
  CHECK(nonzero);
}
