// ONNX's boolean operators as graph ops (graph/ops/logic.hpp, and argmax / argmin in
// graph/ops/reduce.hpp): the records made from host's tables, their type rules over symbolic
// dims (uint8 results, three-way broadcasts, int64 indices), every mistake named at the node
// with the input and the numbers, and evaluate against the host kernels called by hand, on
// random graphs of the ops over random shapes.
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/host.hpp>
#include <dlavm/ne/ops.hpp>

#include <doctest/doctest.h>

#include "default_ops.hpp"
#include <random>
#include <string>
#include <vector>

namespace logic_ops_test {

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace ne = dlavm::ne;
namespace rt = dlavm::runtime;
namespace te = dlavm::te;
using dlavm::DType;
using dlavm_test::ops;

graph::Expr typed(std::vector<graph::Expr> params, graph::Expr result) {
  return graph::infer_type(graph::function(std::move(params), {std::move(result)}), ops())
      .results()[0];
}

std::string shape_of(const graph::Expr& e) { return graph::shape_text(e.type().shape); }

TEST_CASE("logic ops: one record per entry of the host's tables, with ONNX's defaults") {
  for (const auto& op : host::kCompareOps) CHECK(ops().at(op.name).min_args == 2);
  for (const auto& op : host::kLogicalOps) {
    CHECK(ops().at(op.name).min_args == static_cast<std::size_t>(rt::arity(op.kind)));
    CHECK(ops().at(op.name).max_args == static_cast<std::size_t>(rt::arity(op.kind)));
  }
  CHECK(ops().at("where").min_args == 3);
  CHECK(ops().at("is_nan").attrs.empty());
  const auto& inf = ops().at("is_inf");
  CHECK(*inf.find_attr("detect_positive")->default_value == graph::AttrValue{std::int64_t{1}});
  CHECK(*inf.find_attr("detect_negative")->default_value == graph::AttrValue{std::int64_t{1}});
  for (const auto& op : host::kArgReduceOps) {
    const auto& r = ops().at(op.name);
    CHECK(*r.find_attr("axis")->default_value == graph::AttrValue{std::int64_t{0}});
    CHECK(*r.find_attr("keepdims")->default_value == graph::AttrValue{std::int64_t{1}});
    CHECK(*r.find_attr("select_last_index")->default_value == graph::AttrValue{std::int64_t{0}});
    CHECK(static_cast<bool>(r.firmware.call));
  }
  // every record has a firmware kernel
  for (const char* name :
       {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal", "logical_and",
        "logical_or", "logical_xor", "logical_not", "where", "is_nan", "is_inf"})
    CHECK(static_cast<bool>(ops().at(name).firmware.call));
  auto x = graph::input("x", {2, 3}, DType::float32());
  auto b = graph::input("b", {2, 3}, DType::uint8());
  CHECK(graph::compare(rt::Compare::GreaterEqual, x, x).name() == "greater_equal");
  CHECK(graph::logical(rt::Logical::Xor, b, b).name() == "logical_xor");
  CHECK(graph::logical_not(b).name() == "logical_not");
  CHECK(graph::is_inf(x, {.detect_negative = false})
            .as<graph::CallNode>()
            ->attrs.get_int("detect_negative") == 0);
  const auto arg = graph::argmin(x, {.axis = -1, .select_last_index = true});
  CHECK(graph::arg_reduce_params(arg.as<graph::CallNode>()->attrs).select_last_index);
  CHECK_THROWS_WITH_AS(graph::logical(rt::Logical::Not, b, b),
                       "graph::logical: 'logical_not' takes 1 operand, given 2", dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::logical(rt::Logical::And, b),
                       "graph::logical: 'logical_and' takes 2 operands, given 1",
                       dlavm::ValueError);
}

TEST_CASE("logic ops: type rules over symbolic dims") {
  auto token = ne::var("token", 1, 128);
  auto x = graph::input("x", {1, token, 16}, DType::float32());
  auto col = graph::input("col", {token, 1}, DType::float32());
  auto mask = graph::input("mask", {token, 16}, DType::uint8());
  const auto gt = typed({x, col}, graph::greater(x, col));
  CHECK(shape_of(gt) == "(1, token, 16)");
  CHECK(gt.type().dtype == DType::uint8());
  const auto both = typed({x, col, mask}, graph::logical_and(graph::less_equal(x, col), mask));
  CHECK(shape_of(both) == "(1, token, 16)");
  CHECK(typed({mask}, graph::logical_not(mask)).type().dtype == DType::uint8());
  // where: the three broadcast together, the result of a's dtype
  auto i = graph::input("i", {token, 1}, DType::int32());
  auto j = graph::input("j", {16}, DType::int32());
  auto row = graph::input("row", {1, 16}, DType::uint8());
  const auto w = typed({row, i, j}, graph::where(row, i, j));
  CHECK(shape_of(w) == "(token, 16)");
  CHECK(w.type().dtype == DType::int32());
  const auto nan = typed({x}, graph::is_nan(x));
  CHECK(shape_of(nan) == "(1, token, 16)");
  CHECK(nan.type().dtype == DType::uint8());
  // argmax / argmin: int64, the axis 1 or dropped, over a symbolic dim too
  const auto am = typed({x}, graph::argmax(x, {.axis = 1}));
  CHECK(shape_of(am) == "(1, 1, 16)");
  CHECK(am.type().dtype == DType::int64());
  CHECK(shape_of(typed({x}, graph::argmin(x, {.axis = -1, .keepdims = false}))) == "(1, token)");
  auto scores = graph::input("scores", {token}, DType::int8());
  CHECK(shape_of(typed({scores}, graph::argmax(scores, {.keepdims = false}))) == "()");
}

TEST_CASE("logic ops: mistakes are named at the node, with the input and the numbers") {
  auto token = ne::var("token", 1, 128);
  auto x = graph::input("x", {1, token, 16}, DType::float32());
  auto i = graph::input("i", {token, 16}, DType::int8());
  auto m = graph::input("m", {token, 16}, DType::uint8());
  CHECK_THROWS_WITH_AS(typed({x, i}, graph::equal(x, i)),
                       "%0 (equal): input 0 (%x) is float32 but input 1 (%i) is int8; they must "
                       "have one dtype (cast one first)",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(typed({m, i}, graph::logical_or(m, i)),
                       "%0 (logical_or): input 1 (%i) is int8; logical ops take uint8 (a boolean: "
                       "0 or 1, any nonzero true)",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(typed({i, x}, graph::where(i, x, x)),
                       "%0 (where): input 0 (%i) is int8; the condition is uint8 (a boolean: 0 "
                       "or 1, any nonzero true)",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(typed({m, x, i}, graph::where(m, x, i)),
                       "%0 (where): input 1 (%x) is float32 but input 2 (%i) is int8; they must "
                       "have one dtype (cast one first)",
                       dlavm::TypeError);
  auto eight = graph::input("eight", {8, 1}, DType::uint8());
  CHECK_THROWS_WITH_AS(typed({eight, x}, graph::where(eight, x, x)),
                       doctest::Contains("%0 (where): input 0 (%eight) (8, 1) and the broadcast "
                                         "of inputs 1 and 2 (1, token, 16) do not broadcast: dim "
                                         "1 from the end is `8` vs `token`"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(typed({i}, graph::is_inf(i)),
                       doctest::Contains("%0 (is_inf): the host cannot run this call: computes in "
                                         "float32 only, and input 0 (%i) is int8"),
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(typed({x}, graph::argmax(x, {.axis = 3})),
                       "%0 (argmax): attribute 'axis' is 3, outside [-3, 3) for 3 dims",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(typed({x}, graph::call("argmin", {x}, {{"select_last_index", 2}})),
                       doctest::Contains("attribute 'select_last_index' is 2; it is 0 or 1"),
                       dlavm::ValueError);
  // a growing state may be empty: no index to pick along its growing dim
  auto len = ne::var("len", 0, 16);
  const auto& argmin = ops().at("argmin");
  const auto call = [&](std::int64_t axis) {
    return graph::TypeCall{"%0 (argmin)",
                           {"%cache"},
                           {{{3, len}, DType::int8()}},
                           graph::normalize_attrs(argmin.attrs, {{"axis", axis}}, "%0 (argmin)")};
  };
  CHECK_THROWS_WITH_AS(argmin.type_rule(call(1)),
                       "%0 (argmin): input 0 (%cache) (3, len) may have no element along the axis "
                       "(dim 1, `len`, can be 0) to pick an index of",
                       dlavm::ShapeError);
  CHECK(argmin.type_rule(call(0)).shape.size() == 2);
}

TEST_CASE("logic ops: evaluate equals the host kernels called by hand, per binding") {
  auto n = ne::var("n", 1, 6);
  auto x = graph::input("x", {n, 3, 4}, DType::float32());
  auto q = graph::input("q", {n, 3, 4}, DType::int8());
  auto threshold_array = te::NDArray::from_floats({3, 1}, {-0.5f, 0.0f, 0.5f});
  auto threshold = graph::constant("threshold", threshold_array);
  auto zero_array = te::NDArray::from_ints(DType::int8(), {}, {0});
  auto zero = graph::constant("zero", zero_array);
  auto above = graph::greater(x, threshold);
  auto positive = graph::less(zero, q);
  auto either = graph::logical_xor(above, positive);
  auto picked = graph::where(
      either, x, graph::constant("minus", te::NDArray::from_floats({4}, {-1, -2, -3, -4})));
  auto fn = graph::infer_type(
      graph::function(
          {x, q},
          {either, picked, graph::argmax(picked, {.axis = 1}),
           graph::argmin(q, {.axis = -1, .keepdims = false, .select_last_index = true}),
           graph::is_inf(graph::div(x, graph::constant("z", te::NDArray::from_floats({}, {0.0f}))),
                         {.detect_positive = false})}),
      ops());
  for (std::int64_t v : {1, 4}) {
    auto xa = te::NDArray::random_float({v, 3, 4}, static_cast<std::uint64_t>(v), -1, 1);
    auto qa =
        te::NDArray::random(DType::int8(), {v, 3, 4}, static_cast<std::uint64_t>(v) + 3, -2, 2);
    auto out = graph::evaluate(fn, {{"x", xa}, {"q", qa}}, {{"n", v}});
    REQUIRE(out.size() == 5);
    const auto ha = host::compare(rt::Compare::Greater, xa, threshold_array);
    const auto hp = host::compare(rt::Compare::Less, zero_array, qa);
    const auto he = host::logical(rt::Logical::Xor, ha, hp);
    CHECK(out[0] == he);
    const auto hw = host::where(he, xa, te::NDArray::from_floats({4}, {-1, -2, -3, -4}));
    CHECK(out[1] == hw);
    CHECK(out[2] == host::arg_reduce(rt::ArgReduce::Max, hw, {.axis = 1}));
    CHECK(out[3] == host::arg_reduce(rt::ArgReduce::Min, qa,
                                     {.axis = -1, .keepdims = false, .select_last_index = true}));
    CHECK(out[3].shape() == std::vector<std::int64_t>{v, 3});
    // x / 0 is -inf where x < 0
    for (std::size_t k = 0; k < xa.size(); ++k)
      CHECK(out[4].data()[k] == (xa.fdata()[k] < 0 ? 1 : 0));
  }
}

TEST_CASE("logic ops: random graphs of comparisons, logic and where over random shapes") {
  std::mt19937 rng(71);
  for (int round = 0; round < 30; ++round) {
    std::vector<std::int64_t> shape(1 + rng() % 3);
    for (auto& d : shape) d = 1 + static_cast<std::int64_t>(rng() % 4);
    // b's shape: a's suffix with some dims 1
    std::vector<std::int64_t> bs(shape.begin() + static_cast<std::ptrdiff_t>(rng() % shape.size()),
                                 shape.end());
    for (auto& d : bs)
      if (rng() % 2 == 0) d = 1;
    const DType t = round % 3 == 0   ? DType::float32()
                    : round % 3 == 1 ? DType::int8()
                                     : DType::int32();
    const auto dims = [](const std::vector<std::int64_t>& v) {
      return std::vector<ne::Expr>(v.begin(), v.end());
    };
    auto a = graph::input("a", dims(shape), t);
    auto b = graph::input("b", dims(bs), t);
    const auto kind = host::kCompareOps[rng() % std::size(host::kCompareOps)].kind;
    const auto logic = host::kLogicalOps[rng() % 3].kind;  // one of the binary kinds
    auto c1 = graph::compare(kind, a, b);
    auto c2 = graph::compare(rt::Compare::NotEqual, b, a);
    auto l = graph::logical(logic, c1, graph::logical_not(c2));
    auto w = graph::where(l, a, b);
    auto fn = graph::infer_type(graph::function({a, b}, {l, w}), ops());
    const auto av = te::NDArray::random(t, shape, rng(), -2, 2);
    const auto bv = te::NDArray::random(t, bs, rng(), -2, 2);
    const auto out = graph::evaluate(fn, {{"a", av}, {"b", bv}});
    const auto hl = host::logical(logic, host::compare(kind, av, bv),
                                  host::logical_not(host::compare(rt::Compare::NotEqual, bv, av)));
    CAPTURE(round);
    CHECK(out[0] == hl);
    CHECK(out[1] == host::where(hl, av, bv));
    CHECK(out[1].shape() == shape);
  }
}

}  // namespace logic_ops_test
