// The reference executor: results against the host kernels called by hand, the checks on the
// input arrays, and a seeded property test over random graphs with symbolic dims: at random
// bindings, the inferred shapes are the shapes evaluation produces, and every node's value is
// what the host kernels give when called directly.
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/host.hpp>
#include <dlavm/ne/eval.hpp>

#include <doctest/doctest.h>

#include "default_ops.hpp"
#include <functional>
#include <numeric>
#include <random>
#include <unordered_map>

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;

namespace {

using dlavm_test::ops;

}  // namespace

TEST_CASE("evaluate: a dense layer with a token count equals the host kernels called by hand") {
  auto token = ne::var("token", 1, 64);
  auto x = graph::input("x", {1, token, 32}, DType::int8());
  auto w_array = te::NDArray::random(DType::int8(), {16, 32}, 1);
  auto b_array = te::NDArray::random(DType::int32(), {16}, 2, -1000, 1000);
  auto w = graph::constant("w", w_array);
  auto b = graph::constant("b", b_array);
  auto d = graph::dense(x, w);
  auto y = graph::relu(graph::requantize(graph::bias_add(d, b, {.axis = -1}), {.shift = 7}));
  auto fn = graph::infer_type(graph::function({x}, {y, d}), ops());
  for (std::int64_t t : {1, 5, 64}) {
    auto x_array = te::NDArray::random(DType::int8(), {1, t, 32}, static_cast<std::uint64_t>(t));
    auto out = graph::evaluate(fn, {{"x", x_array}}, {{"token", t}});
    REQUIRE(out.size() == 2);
    auto by_hand_d = host::dense(x_array, w_array);
    auto by_hand = host::relu(
        host::requantize(host::bias_add(by_hand_d, b_array, {.axis = -1}), {.shift = 7}));
    CHECK(out[0] == by_hand);
    CHECK(out[1] == by_hand_d);
    CHECK(out[0].shape() == std::vector<std::int64_t>{1, t, 16});
  }
}

TEST_CASE("evaluate_trace: every node's value, constants shared") {
  auto x = graph::input("x", {2, 3}, DType::float32());
  auto c = graph::constant("c", te::NDArray::random(DType::float32(), {3}, 4));
  auto s = graph::add(x, c);
  auto y = graph::softmax(graph::gelu(s));
  auto fn = graph::infer_type(graph::function({x}, {y}), ops());
  auto x_array = te::NDArray::random(DType::float32(), {2, 3}, 5);
  auto trace = graph::evaluate_trace(fn, {{"x", x_array}});
  CHECK(trace.nodes.size() == 5);
  CHECK(trace.values.size() == 5);
  const auto& typed_s =
      fn.results()[0].as<graph::CallNode>()->args[0].as<graph::CallNode>()->args[0];
  CHECK(trace.value_of(typed_s) == host::add(x_array, *c.as<graph::ConstantNode>()->value));
  CHECK(trace.results[0] ==
        host::softmax(host::gelu(host::add(x_array, *c.as<graph::ConstantNode>()->value))));
  CHECK(trace.value_of(c).fdata().data() == c.as<graph::ConstantNode>()->value->fdata().data());
  CHECK(trace.value_of(x) == x_array);
  CHECK_THROWS_WITH_AS(trace.value_of(graph::relu(x)),
                       doctest::Contains("node 'relu' is not part of the evaluated graph"),
                       dlavm::ValueError);
}

TEST_CASE("evaluate: input arrays are checked against the params under the bindings") {
  auto token = ne::var("token", 1, 16);
  auto x = graph::input("x", {token, 4}, DType::int8());
  auto fn = graph::infer_type(graph::function({x}, {graph::relu(x)}), ops());
  auto a = te::NDArray(DType::int8(), {3, 4});
  CHECK(graph::evaluate(fn, {{"x", a}}, {{"token", 3}})[0] == a);
  CHECK_THROWS_WITH_AS(graph::evaluate(fn, {{"x", a}}, {{"token", 4}}),
                       "evaluate: input %x is Tensor[(token, 4), int8], [4, 4] under the bindings, "
                       "but its array is [3, 4]",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      graph::evaluate(fn, {{"x", a}}),
      "evaluate: input %x dim 0 is `token`: ne::eval of `token`: no value for variable token",
      dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::evaluate(fn, {{"x", a}}, {{"token", 17}}),
                       doctest::Contains("outside its range [1, 16]"), dlavm::ValueError);
  auto i32 = te::NDArray(DType::int32(), {3, 4});
  CHECK_THROWS_WITH_AS(graph::evaluate(fn, {{"x", i32}}, {{"token", 3}}),
                       "evaluate: input %x is Tensor[(token, 4), int8] but its array is int32",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(graph::evaluate(fn, {}, {{"token", 3}}),
                       "evaluate: no array for input %x (Tensor[(token, 4), int8])",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::evaluate(fn, {{"x", a}, {"y", a}}, {{"token", 3}}),
                       "evaluate: 'y' is not an input of the function (its inputs: x)",
                       dlavm::ValueError);
  auto untyped = graph::function({x}, {graph::relu(x)});
  CHECK_THROWS_WITH_AS(
      graph::evaluate(untyped, {{"x", a}}, {{"token", 3}}),
      "evaluate: %0 (relu) has no type; run graph::infer_type on the function first",
      dlavm::ValueError);
}

// ---- property test ------------------------------------------------------------------------

namespace {

using Values = std::unordered_map<const graph::Node*, te::NDArray>;
// The value of a node from its arguments' values, by calling host kernels directly.
using Reference = std::function<te::NDArray(const std::vector<const te::NDArray*>&)>;

struct RandomGraph {
  std::mt19937 rng;
  ne::Var token = ne::var("token", 1, 9);
  std::vector<graph::Expr> params;
  std::vector<graph::Expr> values;                       // candidates for arguments
  std::vector<std::pair<graph::Expr, Reference>> steps;  // creation order
  int constants = 0;

  explicit RandomGraph(std::uint32_t seed) : rng(seed) {}

  std::int64_t pick(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }
  DType random_dtype() {
    const DType options[] = {DType::int8(), DType::int32(), DType::float32()};
    return options[pick(0, 2)];
  }

  void add_value(graph::Expr e, Reference ref) {
    values.push_back(e);
    steps.emplace_back(std::move(e), std::move(ref));
  }

  // An input of rank 1..4 whose dims are small constants or the token count.
  void add_input() {
    std::vector<ne::Expr> shape;
    const auto rank = pick(1, 4);
    for (std::int64_t k = 0; k < rank; ++k)
      shape.push_back(pick(0, 2) == 0 ? ne::Expr(token) : ne::Expr(pick(1, 3)));
    auto x = graph::input(fmt::format("in{}", params.size()), shape, random_dtype());
    params.push_back(x);
    values.push_back(x);
  }

  // A constant broadcastable against `like`: its trailing dims, symbolic ones replaced by 1.
  graph::Expr broadcast_constant(const graph::TensorType& like) {
    std::vector<std::int64_t> shape;
    const auto drop = pick(0, static_cast<std::int64_t>(like.ndim()));
    for (std::size_t k = static_cast<std::size_t>(drop); k < like.ndim(); ++k) {
      const auto d = like.shape[k].as_int();
      shape.push_back(d && pick(0, 3) != 0 ? *d : 1);
    }
    return graph::constant(fmt::format("c{}", constants++),
                           te::NDArray::random(like.dtype, shape, rng(), -50, 50));
  }

  // Typing as we go: the type of a candidate (the typed graph is rebuilt at the end).
  graph::TensorType type_of(const graph::Expr& e) {
    if (e.kind() != graph::NodeKind::Call) return e.type();
    std::vector<graph::Expr> ps;
    for (const auto& p : params) ps.push_back(p);
    return graph::infer_type(graph::function(ps, {e}), ops()).results()[0].type();
  }

  // One random op applied to a random candidate, with its reference.
  void add_op() {
    const graph::Expr x =
        values[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(values.size()) - 1))];
    const graph::TensorType t = type_of(x);
    const auto rank = static_cast<std::int64_t>(t.ndim());
    switch (pick(0, 12)) {
      case 0:
        add_value(graph::relu(x), [](const auto& a) { return host::relu(*a[0]); });
        return;
      case 1: {
        auto c = broadcast_constant(t);
        const bool is_add = pick(0, 1) == 0;
        auto e = is_add ? graph::add(x, c) : graph::mul(c, x);
        add_value(e, [is_add](const auto& a) {
          return is_add ? host::add(*a[0], *a[1]) : host::mul(*a[0], *a[1]);
        });
        return;
      }
      case 2: {
        const host::ClipParams p{.lo = double(pick(-20, 0)), .hi = double(pick(0, 20))};
        add_value(graph::clip(x, p), [p](const auto& a) { return host::clip(*a[0], p); });
        return;
      }
      case 3: {
        const DType to = random_dtype();
        add_value(graph::cast(x, to), [to](const auto& a) { return host::cast(*a[0], to); });
        return;
      }
      case 4: {
        if (!t.dtype.is_int()) return;
        const host::RequantizeParams p{
            .shift = pick(0, 4),
            .rounding = pick(0, 1) ? host::Rounding::Nearest : host::Rounding::Floor};
        add_value(graph::requantize(x, p),
                  [p](const auto& a) { return host::requantize(*a[0], p); });
        return;
      }
      case 5: {
        std::vector<std::int64_t> perm(static_cast<std::size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        add_value(graph::transpose(x, {.perm = perm}),
                  [perm](const auto& a) { return host::transpose(*a[0], {.perm = perm}); });
        return;
      }
      case 6: {
        const host::FlattenParams p{.axis = pick(-rank, rank)};
        add_value(graph::flatten(x, p), [p](const auto& a) { return host::flatten(*a[0], p); });
        return;
      }
      case 7: {
        // keep a prefix with 0 entries, fold the rest into one -1
        std::vector<std::int64_t> newshape(static_cast<std::size_t>(pick(0, rank)), 0);
        newshape.push_back(-1);
        add_value(graph::reshape(x, {.newshape = newshape}), [newshape](const auto& a) {
          return host::reshape(*a[0], {.newshape = newshape});
        });
        return;
      }
      case 8: {
        host::PadParams p;
        for (std::int64_t k = 0; k < rank; ++k) {
          p.pad_before.push_back(pick(0, 2));
          p.pad_after.push_back(pick(0, 1));
        }
        p.value = double(pick(-3, 3));
        add_value(graph::pad(x, p), [p](const auto& a) { return host::pad(*a[0], p); });
        return;
      }
      case 9: {
        const host::ConcatParams p{.axis = pick(-rank, rank - 1)};
        add_value(graph::concat({x, x}, p), [p](const auto& a) { return host::concat(a, p); });
        return;
      }
      case 10:
      case 11: {
        if (rank != 4 || (t.dtype.is_integral() && t.dtype.bits() > 32)) return;
        // windows of 1 or 2 with enough padding that a symbolic dim of 1 still fits
        host::Pool2dParams p{.pool_size = {pick(1, 2), pick(1, 2)},
                             .strides = {pick(1, 2), pick(1, 2)}};
        for (std::size_t k = 0; k < 4; ++k) p.padding[k] = p.pool_size[k % 2] - 1;
        p.count_include_pad = pick(0, 1) == 1;
        if (pick(0, 1) == 0)
          add_value(graph::max_pool2d(x, p),
                    [p](const auto& a) { return host::max_pool2d(*a[0], p); });
        else
          add_value(graph::avg_pool2d(x, p),
                    [p](const auto& a) { return host::avg_pool2d(*a[0], p); });
        return;
      }
      case 12: {
        if (t.dtype != DType::float32()) return;
        const host::SoftmaxParams p{.axis = pick(-rank, rank - 1)};
        add_value(graph::softmax(graph::gelu(x), p),
                  [p](const auto& a) { return host::softmax(host::gelu(*a[0]), p); });
        // the gelu inside is checked through the softmax: one step for both
        return;
      }
    }
  }
};

// The reference values of every step, by host kernels, given the inputs.
Values reference_values(const RandomGraph& g, const Values& inputs) {
  Values v = inputs;
  for (const auto& [e, ref] : g.steps) {
    const auto& call = *e.as<graph::CallNode>();
    auto value = [&](const graph::Expr& a) -> const te::NDArray* {
      if (const auto* c = a.as<graph::ConstantNode>()) return c->value.get();
      return &v.at(a.get());
    };
    std::vector<const te::NDArray*> args;
    if (call.op() == "softmax") {  // softmax(gelu(x)): the reference takes x
      args.push_back(value(call.args[0].as<graph::CallNode>()->args[0]));
    } else {
      for (const auto& a : call.args) args.push_back(value(a));
    }
    v.emplace(e.get(), ref(args));
  }
  return v;
}

}  // namespace

TEST_CASE(
    "evaluate property: inferred shapes and values agree with the host kernels on random graphs") {
  int graphs = 0, checked_nodes = 0;
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    RandomGraph g(seed);
    g.add_input();
    if (g.pick(0, 1) == 1) g.add_input();
    const auto ops_count = g.pick(3, 10);
    for (int i = 0; i < ops_count; ++i) g.add_op();
    if (g.steps.empty()) continue;
    // results: the last value and a random earlier one (shared subgraphs are common)
    std::vector<graph::Expr> results{
        g.steps.back().first,
        g.steps[static_cast<std::size_t>(g.pick(0, static_cast<std::int64_t>(g.steps.size()) - 1))]
            .first};
    const auto source = graph::function(g.params, results);
    const auto fn = graph::infer_type(source, ops());
    CAPTURE(seed);
    CAPTURE(fmt::format("{}", fn));
    ++graphs;
    for (std::int64_t tok : {1L, g.pick(2, 9)}) {
      const std::vector<ne::Binding> bindings{{"token", tok}};
      std::vector<graph::NamedArray> named;
      std::vector<te::NDArray> arrays;
      arrays.reserve(g.params.size());
      Values inputs;
      for (const auto& p : g.params) {
        std::vector<std::int64_t> shape;
        for (const auto& d : p.type().shape) shape.push_back(ne::eval(d, bindings));
        arrays.push_back(te::NDArray::random(p.type().dtype, shape, g.rng(), -100, 100));
        inputs.emplace(p.get(), arrays.back());
      }
      for (std::size_t i = 0; i < g.params.size(); ++i)
        named.push_back({g.params[i].name(), arrays[i]});
      const auto trace = graph::evaluate_trace(fn, named, bindings);
      const Values reference = reference_values(g, inputs);
      // the typed graph mirrors the source: pair nodes by their post-order position
      const auto source_order = graph::post_order(source.results());
      REQUIRE(source_order.size() == trace.nodes.size());
      for (std::size_t i = 0; i < trace.nodes.size(); ++i) {
        const auto& typed = trace.nodes[i];
        const auto& value = *trace.values[i];
        std::vector<std::int64_t> inferred;
        for (const auto& d : typed.type().shape) inferred.push_back(ne::eval(d, bindings));
        CHECK(inferred == value.shape());
        CHECK(typed.type().dtype == value.dtype());
        auto it = reference.find(source_order[i].get());
        if (it != reference.end()) {
          CHECK(value == it->second);
          ++checked_nodes;
        }
      }
    }
  }
  CHECK(graphs >= 50);
  CHECK(checked_nodes >= 300);
}
