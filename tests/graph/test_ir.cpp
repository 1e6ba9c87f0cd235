// The graph IR: attributes, nodes and their builders, Function invariants, the post-order
// walk and the functor/mutator idiom (including graphs far deeper than the C++ stack allows
// for recursion).
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/ne/ops.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;

TEST_CASE("graph attrs: sorted, typed getters name the key") {
  graph::Attrs a{{"strides", {2, 2}},
                 {"rounding", "nearest"},
                 {"shift", 8},
                 {"eps", 1e-5},
                 {"out", DType::int8()}};
  CHECK(a.size() == 5);
  std::vector<std::string> keys;
  for (const auto& e : a) keys.push_back(e.key);
  CHECK(keys == std::vector<std::string>{"eps", "out", "rounding", "shift", "strides"});
  CHECK(a.get_int("shift") == 8);
  CHECK(a.get_float("shift") == 8.0);  // an integer reads as a float
  CHECK(a.get_float("eps") == 1e-5);
  CHECK(a.get_string("rounding") == "nearest");
  CHECK(a.get_ints("strides") == std::vector<std::int64_t>{2, 2});
  CHECK(a.get_dtype("out") == DType::int8());
  CHECK(fmt::format("{}", a) ==
        "eps=1e-05, out=int8, rounding=\"nearest\", shift=8, strides=[2, 2]");
  CHECK_THROWS_WITH_AS(a.get_string("shift"),
                       "attribute 'shift' is an integer (8), expected a string", dlavm::TypeError);
  CHECK_THROWS_WITH_AS(a.get_int("eps"), "attribute 'eps' is a float (1e-05), expected an integer",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(a.get_ints("axis"), "attribute 'axis' is missing", dlavm::ValueError);
  CHECK_THROWS_WITH_AS((graph::Attrs{{"a", 1}, {"a", 2}}), "attributes: 'a' is given twice",
                       dlavm::ValueError);
  a.set("shift", std::int64_t{9});
  CHECK(a.get_int("shift") == 9);
  CHECK(a.size() == 5);
  CHECK(graph::to_string(graph::AttrValue{2.0}) == "2.0");
  CHECK(graph::to_string(graph::AttrValue{std::string("a\"b")}) == "\"a\\\"b\"");
  CHECK(graph::Attrs{{"x", 1}} == graph::Attrs{{"x", 1}});
  CHECK(graph::Attrs{{"axis", 0}}.get_int("axis") == 0);  // 0 is an integer, not a null string
  CHECK_FALSE(graph::Attrs{{"x", 1}} == graph::Attrs{{"x", 1.0}});
}

TEST_CASE("graph nodes: builders check what a user can get wrong") {
  auto token = ne::var("token", 1, 2048);
  auto x = graph::input("x", {1, token, 512}, DType::int8());
  CHECK(x.kind() == graph::NodeKind::Input);
  CHECK(x.name() == "x");
  CHECK(x.type().dtype == DType::int8());
  CHECK(x.type().shape[1].same_as(token));
  CHECK(x.device() == graph::Device::Any);
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {256, 512}, 1));
  CHECK(w.type().shape[0].as_int() == 256);
  CHECK(w.as<graph::ConstantNode>()->value->shape() == std::vector<std::int64_t>{256, 512});
  auto y = graph::call("dense", {x, w});
  CHECK(y.as<graph::CallNode>()->op() == "dense");
  CHECK_FALSE(y.has_type());
  CHECK_THROWS_WITH_AS(y.type(),
                       doctest::Contains("call 'dense' has no type yet; run graph::infer_type"),
                       dlavm::ValueError);
  auto n = ne::var("n", 0, 4);
  CHECK_THROWS_WITH_AS(graph::input("x", {n}, DType::int8()),
                       "graph::input 'x': dim 0 is n, which can be 0 (dims must be >= 1; a "
                       "state's may be 0: graph::state_input)",
                       dlavm::ShapeError);
  // a state's length may start at 0, but no param may be empty
  auto cache = graph::state_input("cache", {n, 4}, DType::int8());
  CHECK_THROWS_WITH_AS(graph::state_input("c2", {n + 1 - 1 - 1, 4}, DType::int8()),
                       doctest::Contains("(dims must be >= 1, or one variable of minimum 0)"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(graph::function({cache}, {cache}),
                       "graph::function: param 'cache' can be empty along dim 0 (`n`); only a "
                       "state may be (graph::state_input)",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(graph::input("", {1}, DType::int8()), doctest::Contains("the name is empty"),
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::input("h", {1}, DType::parse("float16")),
                       doctest::Contains("dtype float16 is not supported"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(graph::input("v", {1}, DType::int32().with_lanes(4)),
                       doctest::Contains("int32x4 is not supported"), dlavm::TypeError);
  CHECK_THROWS_WITH_AS(graph::call("dense", {x, graph::Expr()}),
                       "graph::call 'dense': argument 1 is undefined", dlavm::ValueError);
  CHECK_THROWS_AS(graph::constant("c", te::NDArray(DType::int8(), {0, 3})), dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(graph::Expr().kind(), doctest::Contains("undefined Expr"),
                       dlavm::ValueError);
}

TEST_CASE("graph function: params are inputs with unique names, every used input is a param") {
  auto x = graph::input("x", {4}, DType::int8());
  auto x2 = graph::input("x", {4}, DType::int8());
  auto w = graph::constant("w", te::NDArray(DType::int8(), {4}));
  auto y = graph::call("add", {x, w});
  auto fn = graph::function({x}, {y});
  CHECK(fn.params().size() == 1);
  CHECK(fn.results()[0].same_as(y));
  CHECK_THROWS_WITH_AS(graph::function({}, {y}),
                       "graph::function: input 'x' is used by the results but is not a param",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::function({x, x2}, {y}),
                       "graph::function: params 0 and 1 are both named 'x'", dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::function({w}, {y}),
                       "graph::function: param 0 ('w') is a constant; params must be inputs",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      graph::function({x}, {graph::call("add", {x, x2})}),
      doctest::Contains("two different leaves (inputs or constants) are named 'x'"),
      dlavm::ValueError);
  auto w2 = graph::constant("w", te::NDArray(DType::int8(), {4}));
  CHECK_THROWS_WITH_AS(graph::function({x}, {graph::call("add", {w, w2})}),
                       doctest::Contains("are named 'w'"), dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::function({x}, {}), "graph::function: no results", dlavm::ValueError);
  // an unused param is fine
  auto z = graph::input("z", {1}, DType::int8());
  CHECK(graph::function({x, z}, {y}).params().size() == 2);
}

TEST_CASE("graph post_order: arguments first, each node once, deterministic") {
  auto a = graph::input("a", {2}, DType::int8());
  auto b = graph::input("b", {2}, DType::int8());
  auto s = graph::call("add", {a, b});
  auto m = graph::call("mul", {s, a});
  auto r = graph::call("add", {m, s});
  const std::vector<graph::Expr> roots{r, s};
  auto order = graph::post_order(roots);
  std::vector<std::string> names;
  for (const auto& e : order) names.push_back(e.name());
  CHECK(names == std::vector<std::string>{"a", "b", "add", "mul", "add"});
  CHECK(order[2].same_as(s));
  CHECK(order[4].same_as(r));
  CHECK(graph::post_order(roots).size() == 5);
  int count = 0;
  graph::for_each_node(graph::function({a, b}, {r}), [&](const graph::Expr&) { ++count; });
  CHECK(count == 5);
}

namespace {

// Counts calls per op and the depth of each node: a functor over the DAG.
struct Depth : graph::ExprFunctor<Depth, int> {
  int visit_input(const graph::InputNode&, const graph::Expr&) { return 0; }
  int visit_constant(const graph::ConstantNode&, const graph::Expr&) { return 0; }
  int visit_call(const graph::CallNode&, const graph::Expr&, graph::ArgResults<int> args) {
    ++calls;
    int d = 0;
    for (std::size_t i = 0; i < args.size(); ++i) d = std::max(d, args[i]);
    return d + 1;
  }
  int calls = 0;
};

// Rewrites relu into clip: a mutator that changes one kind of call.
struct ReluToClip : graph::ExprMutator<ReluToClip> {
  graph::Expr visit_call(const graph::CallNode& call, const graph::Expr& e,
                         graph::ArgResults<graph::Expr> args) {
    graph::Expr rebuilt = ExprMutator::visit_call(call, e, args);
    if (call.op() != "relu") return rebuilt;
    return graph::call("clip", {args[0]}, {{"lo", 0.0}, {"hi", 127.0}});
  }
};

}  // namespace

TEST_CASE("graph functor and mutator: memoized, iterative, rebuild only what changed") {
  auto x = graph::input("x", {8}, DType::int8());
  auto shared = graph::call("relu", {x});
  auto left = graph::call("add", {shared, x});
  auto right = graph::call("mul", {shared, shared});
  auto top = graph::call("add", {left, right});
  Depth depth;
  CHECK(depth.visit(top) == 3);
  CHECK(depth.calls == 4);  // `shared` is visited once
  auto fn = graph::function({x}, {top});
  auto out = ReluToClip().mutate(fn);
  CHECK(out.params()[0].same_as(x));
  const auto& new_top = *out.results()[0].as<graph::CallNode>();
  const auto& new_left = *new_top.args[0].as<graph::CallNode>();
  const auto& new_right = *new_top.args[1].as<graph::CallNode>();
  CHECK(new_left.args[0].name() == "clip");
  CHECK(new_left.args[0].same_as(new_right.args[0]));  // still shared
  CHECK(new_right.args[0].same_as(new_right.args[1]));
  // nothing to rewrite: the same nodes come back
  auto g = graph::function({x}, {left});
  auto plain = graph::call("add", {x, x});
  struct Identity : graph::ExprMutator<Identity> {};
  CHECK(Identity().mutate(graph::function({x}, {plain})).results()[0].same_as(plain));
  CHECK_FALSE(ReluToClip().mutate(g).results()[0].same_as(left));
}

TEST_CASE("graph traversal: a chain of 200000 calls needs no recursion") {
  auto x = graph::input("x", {1}, DType::int32());
  graph::Expr e = x;
  for (int i = 0; i < 200000; ++i) e = graph::call("relu", {e});
  Depth depth;
  CHECK(depth.visit(e) == 200000);
  CHECK(graph::post_order(std::vector<graph::Expr>{e}).size() == 200001);
  struct Identity : graph::ExprMutator<Identity> {};
  CHECK(Identity().mutate(graph::function({x}, {e})).results()[0].same_as(e));
  e = graph::Expr();  // destroying the chain must not recurse either (CallNode::~CallNode)
  CHECK(x.use_count() == 1);
}
