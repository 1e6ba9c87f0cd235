// The math ops of issue 40 as graph ops: the records made from host's tables (names,
// attributes, defaults), their type rules over symbolic dims (broadcasts, prelu's slope,
// reductions with and without keepdims), every mistake named at the node with the input, the
// axis and the numbers, and evaluate against the host kernels called by hand.
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/host.hpp>
#include <dlavm/ne/ops.hpp>

#include <doctest/doctest.h>

#include "default_ops.hpp"
#include <string>
#include <vector>

namespace math_ops_test {

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace ne = dlavm::ne;
namespace rt = dlavm::runtime;
namespace te = dlavm::te;
using dlavm::DType;
using dlavm_test::ops;

// The typed result of a one-result function over `params`.
graph::Expr typed(std::vector<graph::Expr> params, graph::Expr result) {
  return graph::infer_type(graph::function(std::move(params), {std::move(result)}), ops())
      .results()[0];
}

std::string shape_of(const graph::Expr& e) { return graph::shape_text(e.type().shape); }

TEST_CASE("math ops: one record per entry of the host's tables, with ONNX's defaults") {
  for (const auto& op : host::kUnaryOps) CHECK(ops().find(op.name) != nullptr);
  for (const auto& op : host::kBinaryOps) CHECK(ops().at(op.name).min_args == 2);
  for (const auto& op : host::kReduceOps) {
    const auto& r = ops().at(op.name);
    CHECK(*r.find_attr("axes")->default_value == graph::AttrValue{std::vector<std::int64_t>{}});
    CHECK(*r.find_attr("keepdims")->default_value == graph::AttrValue{std::int64_t{1}});
  }
  const auto& hs = ops().at("hard_sigmoid");
  CHECK(*hs.find_attr("alpha")->default_value == graph::AttrValue{0.2});
  CHECK(*hs.find_attr("beta")->default_value == graph::AttrValue{0.5});
  CHECK(*ops().at("leaky_relu").find_attr("alpha")->default_value == graph::AttrValue{0.01});
  CHECK(ops().at("hard_swish").attrs.empty());
  CHECK(*ops().at("log_softmax").find_attr("axis")->default_value ==
        graph::AttrValue{std::int64_t{-1}});
  // the builders' calls: the named op, the builder's attributes
  auto x = graph::input("x", {2, 3}, DType::float32());
  CHECK(graph::unary(rt::Unary::Erf, x).name() == "erf");
  CHECK(graph::binary(rt::Binary::Maximum, x, x).name() == "maximum");
  CHECK(graph::prelu(x, x).name() == "prelu");
  const auto mean = graph::reduce_mean(x, {.axes = {1}, .keepdims = false});
  const auto& attrs = mean.as<graph::CallNode>()->attrs;
  CHECK(attrs.get_ints("axes") == std::vector<std::int64_t>{1});
  CHECK(attrs.get_int("keepdims") == 0);
  CHECK(graph::leaky_relu(x, {.alpha = 0.5}).as<graph::CallNode>()->attrs.get_float("alpha") ==
        0.5);
}

TEST_CASE("math ops: type rules over symbolic dims") {
  auto token = ne::var("token", 1, 128);
  auto x = graph::input("x", {1, token, 16}, DType::float32());
  auto col = graph::input("col", {token, 1}, DType::float32());
  // element-wise: x's type; broadcasts like add
  CHECK(shape_of(typed({x}, graph::hard_swish(graph::sigmoid(x)))) == "(1, token, 16)");
  CHECK(shape_of(typed({x, col}, graph::div(x, col))) == "(1, token, 16)");
  auto e = graph::input("e", {4}, DType::float32());
  CHECK(shape_of(typed({col, e}, graph::pow(col, e))) == "(token, 4)");
  auto i = graph::input("i", {token, 8}, DType::int8());
  CHECK(typed({i}, graph::neg(graph::abs(i))).type().dtype == DType::int8());
  // prelu: a slope of dims 1 or x's keeps x's shape
  auto img = graph::input("img", {token, 4, 5, 5}, DType::float32());
  auto slope = graph::constant("slope", te::NDArray(DType::float32(), {4, 1, 1}));
  CHECK(shape_of(typed({img}, graph::prelu(img, slope))) == "(token, 4, 5, 5)");
  // reductions: reduced dims 1 or dropped, symbolic ones too
  CHECK(shape_of(typed({x}, graph::reduce_mean(x, {.axes = {1}}))) == "(1, 1, 16)");
  CHECK(shape_of(typed({x}, graph::reduce_sum(x, {.axes = {-1}, .keepdims = false}))) ==
        "(1, token)");
  CHECK(shape_of(typed({x}, graph::reduce_max(x, {.keepdims = false}))) == "()");
  CHECK(shape_of(typed({x}, graph::reduce_min(x))) == "(1, 1, 1)");
  CHECK(shape_of(typed({x}, graph::log_softmax(x, {.axis = 1}))) == "(1, token, 16)");
  auto s = typed({i}, graph::reduce_sum(i, {.axes = {0}}));
  CHECK(s.type().dtype == DType::int8());
  CHECK(shape_of(s) == "(1, 8)");
}

TEST_CASE("math ops: mistakes are named at the node, with the input, axis and numbers") {
  auto token = ne::var("token", 1, 128);
  auto x = graph::input("x", {1, token, 16}, DType::float32());
  CHECK_THROWS_WITH_AS(typed({x}, graph::reduce_sum(x, {.axes = {0, 3}})),
                       "%0 (reduce_sum): attribute 'axes' is [0, 3]: axis 3 is outside [-3, 3) "
                       "for input 0 (%x) (1, token, 16), of 3 dims",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(typed({x}, graph::reduce_max(x, {.axes = {2, -1}})),
                       "%0 (reduce_max): attribute 'axes' is [2, -1]: dim 2 of input 0 (%x) (1, "
                       "token, 16) is named twice",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      typed({x}, graph::call("reduce_min", {x}, {{"keepdims", 2}})),
      doctest::Contains("%0 (reduce_min): attribute 'keepdims' is 2; it is 0 or 1"),
      dlavm::ValueError);
  // dtypes: the host's support rule names the input
  auto i = graph::input("i", {token, 8}, DType::int32());
  CHECK_THROWS_WITH_AS(
      typed({i}, graph::sigmoid(i)),
      "%0 (sigmoid): the host cannot run this call: computes in float32 only, and input 0 (%i) is "
      "int32 (cast it to float32 first) (infer_type(fn, target) also considers VTA)",
      dlavm::TypeError);
  CHECK_THROWS_WITH_AS(typed({i}, graph::pow(i, i)),
                       doctest::Contains("%0 (pow): the host cannot run this call: computes in "
                                         "float32 only, and input 0 (%i) is int32"),
                       dlavm::TypeError);
  auto wide = graph::input("wide", {4}, DType::int64());
  CHECK_THROWS_WITH_AS(typed({wide}, graph::reduce_mean(wide)),
                       doctest::Contains("%0 (reduce_mean): the host cannot run this call: "
                                         "averages integers of at most 32 bits, and input 0 "
                                         "(%wide) is int64"),
                       dlavm::TypeError);
  CHECK_NOTHROW(typed({wide}, graph::reduce_max(wide)));
  CHECK_THROWS_WITH_AS(typed({x, i}, graph::sub(x, i)),
                       "%0 (sub): input 0 (%x) is float32 but input 1 (%i) is int32; they must "
                       "have one dtype (cast one first)",
                       dlavm::TypeError);
  // broadcasting: symbolic dims must be provably equal, prelu's slope may not stretch x
  auto col = graph::input("col", {8, 1}, DType::float32());
  CHECK_THROWS_WITH_AS(typed({x, col}, graph::maximum(x, col)),
                       doctest::Contains("%0 (maximum): input 0 (%x) (1, token, 16) and input 1 "
                                         "(%col) (8, 1) do not broadcast: dim 1 from the end is "
                                         "`token` vs `8`"),
                       dlavm::ShapeError);
  auto chans = graph::input("chans", {16}, DType::float32());
  auto img = graph::input("img", {1, 16, 4, 4}, DType::float32());
  CHECK_THROWS_WITH_AS(typed({img, chans}, graph::prelu(img, chans)),
                       "%0 (prelu): input 1 (%chans) dim 0 is 16 but input 0 (%img) dim 3 (a "
                       "slope dim is 1 or x's) is 4",
                       dlavm::ShapeError);
  auto big = graph::input("big", {2, 1, 16, 4, 4}, DType::float32());
  CHECK_THROWS_WITH_AS(typed({img, big}, graph::prelu(img, big)),
                       "%0 (prelu): input 1 (%big) (2, 1, 16, 4, 4) has more dims than input 0 "
                       "(%img) (1, 16, 4, 4); the slope broadcasts to x's shape",
                       dlavm::ShapeError);
  auto tokens = graph::input("tokens", {token}, DType::float32());
  CHECK_THROWS_WITH_AS(typed({x, tokens}, graph::prelu(x, tokens)),
                       doctest::Contains("%0 (prelu): input 1 (%tokens) dim 0 is token but input "
                                         "0 (%x) dim 2 (a slope dim is 1 or x's) is 16"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(typed({x}, graph::log_softmax(x, {.axis = 3})),
                       "%0 (log_softmax): attribute 'axis' is 3, outside [-3, 3) for 3 dims",
                       dlavm::ValueError);
}

TEST_CASE("math ops: evaluate equals the host kernels called by hand, per binding") {
  auto n = ne::var("n", 1, 6);
  auto x = graph::input("x", {n, 3, 4}, DType::float32());
  auto q = graph::input("q", {n, 3, 4}, DType::int8());
  auto slope_array = te::NDArray::from_floats({3, 1}, {0.5f, -1.0f, 2.0f});
  auto slope = graph::constant("slope", slope_array);
  auto divisor_array = te::NDArray::from_ints(DType::int8(), {4}, {-1, 0, 3, -7});
  auto divisor = graph::constant("divisor", divisor_array);
  auto a = graph::leaky_relu(graph::prelu(x, slope), {.alpha = 0.25});
  auto b = graph::reduce_mean(graph::maximum(graph::exp(x), a), {.axes = {0, 2}});
  auto c = graph::log_softmax(graph::hard_sigmoid(x, {.alpha = 0.5, .beta = 0.1}), {.axis = 1});
  auto d = graph::reduce_sum(graph::div(graph::neg(q), divisor), {.axes = {1}, .keepdims = false});
  auto fn = graph::infer_type(graph::function({x, q}, {a, b, c, d}), ops());
  for (std::int64_t v : {1, 4}) {
    auto xa = te::NDArray::random_float({v, 3, 4}, static_cast<std::uint64_t>(v), -3, 3);
    auto qa = te::NDArray::random(DType::int8(), {v, 3, 4}, static_cast<std::uint64_t>(v) + 9);
    auto out = graph::evaluate(fn, {{"x", xa}, {"q", qa}}, {{"n", v}});
    REQUIRE(out.size() == 4);
    auto ha = host::leaky_relu(host::binary(rt::Binary::Prelu, xa, slope_array), {.alpha = 0.25});
    CHECK(out[0] == ha);
    CHECK(out[1] ==
          host::reduce(rt::Reduce::Mean,
                       host::binary(rt::Binary::Maximum, host::unary(rt::Unary::Exp, xa), ha),
                       {.axes = {0, 2}}));
    CHECK(out[1].shape() == std::vector<std::int64_t>{1, 3, 1});
    CHECK(out[2] ==
          host::log_softmax(host::hard_sigmoid(xa, {.alpha = 0.5, .beta = 0.1}), {.axis = 1}));
    CHECK(out[3] == host::reduce(rt::Reduce::Sum,
                                 host::binary(rt::Binary::Div, host::unary(rt::Unary::Neg, qa),
                                              divisor_array),
                                 {.axes = {1}, .keepdims = false}));
    CHECK(out[3].shape() == std::vector<std::int64_t>{v, 4});
  }
}

}  // namespace math_ops_test
