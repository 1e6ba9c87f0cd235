// infer_type: the type rule of every op (symbolic dims included), placement, normalized
// attributes, and every mistake with its message (the node as the printer names it, the
// input, the numbers).
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/structural.hpp>

#include <doctest/doctest.h>

#include "default_ops.hpp"
#include <string>

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;

namespace {

using dlavm_test::ops;

// The typed result of a one-result function over `params`.
graph::Expr typed(std::vector<graph::Expr> params, graph::Expr result) {
  return graph::infer_type(graph::function(std::move(params), {std::move(result)}), ops())
      .results()[0];
}

std::string shape_of(const graph::Expr& e) { return graph::shape_text(e.type().shape); }

graph::Expr weight(std::string name, DType t, std::vector<std::int64_t> shape) {
  return graph::constant(std::move(name), te::NDArray(t, std::move(shape)));
}

}  // namespace

TEST_CASE("infer_type: dense and matmul with a symbolic token count") {
  auto token = ne::var("token", 1, 2048);
  auto x = graph::input("x", {1, token, 512}, DType::int8());
  auto y = typed({x}, graph::dense(x, weight("w", DType::int8(), {256, 512})));
  CHECK(shape_of(y) == "(1, token, 256)");
  CHECK(y.type().dtype == DType::int32());
  CHECK(y.device() == graph::Device::Host);
  auto q = graph::input("q", {8, token, 64}, DType::float32());
  auto k = graph::input("k", {8, 64, token}, DType::float32());
  auto s = typed({q, k}, graph::matmul(q, k));
  CHECK(shape_of(s) == "(8, token, token)");
  CHECK(s.type().dtype == DType::float32());
  auto a = graph::input("a", {1, 5, 3}, DType::int32());
  auto b = graph::input("b", {4, 1, 3, 2}, DType::int32());
  CHECK(shape_of(typed({a, b}, graph::matmul(a, b))) == "(4, 1, 5, 2)");
}

TEST_CASE("infer_type: conv2d and pools, symbolic heights simplify") {
  auto h = ne::var("h", 8, 64);
  auto x = graph::input("x", {1, 16, h, 32}, DType::int8());
  auto w = weight("w", DType::int8(), {32, 16, 3, 3});
  CHECK(shape_of(typed({x}, graph::conv2d(x, w, {.padding = {1, 1, 1, 1}}))) == "(1, 32, h, 32)");
  auto strided = typed({x}, graph::conv2d(x, w, {.strides = {2, 2}, .padding = {1, 1, 1, 1}}));
  CHECK(shape_of(strided) == "(1, 32, floordiv(h + 1, 2), 16)");
  // the symbolic height agrees with the formula at every value of h
  for (std::int64_t v = 8; v <= 64; ++v)
    CHECK(ne::eval(strided.type().shape[2], {{"h", v}}) == (v + 2 - 3) / 2 + 1);
  auto pooled = typed(
      {x}, graph::max_pool2d(x, {.pool_size = {3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}}));
  CHECK(pooled.type().dtype == DType::int8());
  CHECK(ne::eval(pooled.type().shape[3]) == 16);
  auto avg = typed({x}, graph::avg_pool2d(x, {.pool_size = {2, 2}, .strides = {2, 2}}));
  CHECK(shape_of(avg) == "(1, 16, floordiv(h, 2), 16)");
  CHECK(shape_of(typed({x}, graph::global_avg_pool2d(x))) == "(1, 16, 1, 1)");
}

TEST_CASE("infer_type: element-wise ops broadcast symbolic dims") {
  auto token = ne::var("token", 1, 128);
  auto a = graph::input("a", {token, 1}, DType::int32());
  auto b = graph::input("b", {4}, DType::int32());
  CHECK(shape_of(typed({a, b}, graph::add(a, b))) == "(token, 4)");
  auto c = graph::input("c", {2, 1, token}, DType::int32());
  auto d = graph::input("d", {token, 1}, DType::int32());
  CHECK(shape_of(typed({c, d}, graph::mul(c, d))) == "(2, token, token)");
  auto x = graph::input("x", {1, 8, token}, DType::int32());
  auto bias = weight("bias", DType::int32(), {8});
  CHECK(shape_of(typed({x}, graph::relu(graph::bias_add(x, bias)))) == "(1, 8, token)");
  auto q = typed({x}, graph::requantize(x, {.shift = 4, .lo = 0, .hi = 100}));
  CHECK(q.type().dtype == DType::int8());
  CHECK(typed({x}, graph::cast(x, DType::float32())).type().dtype == DType::float32());
  CHECK(typed({x}, graph::clip(x, {.lo = -3, .hi = 3})).type().dtype == DType::int32());
}

TEST_CASE("infer_type: shape ops with symbolic dims") {
  auto token = ne::var("token", 1, 2048);
  auto x = graph::input("x", {1, token, 512}, DType::int8());
  CHECK(shape_of(typed({x}, graph::reshape(x, {.newshape = {0, 0, 8, -1}}))) ==
        "(1, token, 8, 64)");
  CHECK(shape_of(typed({x}, graph::reshape(x, {.newshape = {-1, 64}}))) == "(token*8, 64)");
  CHECK(shape_of(typed({x}, graph::reshape(x, {.newshape = {-1}}))) == "(token*512)");
  CHECK(shape_of(typed({x}, graph::transpose(x))) == "(512, token, 1)");
  CHECK(shape_of(typed({x}, graph::transpose(x, {.perm = {1, 0, 2}}))) == "(token, 1, 512)");
  CHECK(shape_of(typed({x}, graph::flatten(x))) == "(1, token*512)");
  CHECK(shape_of(typed({x}, graph::flatten(x, {.axis = 2}))) == "(token, 512)");
  auto y = graph::input("y", {1, 1, 512}, DType::int8());
  CHECK(shape_of(typed({x, y}, graph::concat({x, y, x}, {.axis = 1}))) ==
        "(1, (token*2) + 1, 512)");
  CHECK(shape_of(typed({x}, graph::pad(x, {.pad_before = {0, 1, 0}, .pad_after = {0, 2, 3}}))) ==
        "(1, token + 3, 515)");
}

TEST_CASE("infer_type: integer_softmax, its attributes and shapes checked at the call") {
  auto token = ne::var("token", 1, 64);
  auto last = ne::var("last", 0, 100);
  auto s = graph::input("s", {8, token, ne::Expr(last) + token}, DType::int8());
  CHECK(shape_of(typed({s}, graph::integer_softmax(s, {.causal = true}))) ==
        "(8, token, last + token)");
  auto st = graph::input("st", {8, ne::Expr(last) + token, token}, DType::int8());
  CHECK(shape_of(typed({st}, graph::integer_softmax(st, {.axis = -2, .causal = true}))) ==
        "(8, last + token, token)");
  CHECK_THROWS_WITH_AS(typed({s}, graph::integer_softmax(s, {.axis = 0, .causal = true})),
                       "%0 (integer_softmax): a causal softmax's keys cannot be axis 0 of input 0 "
                       "(%s) (rank 3): the keys are one of the last two dims, the queries the "
                       "other",
                       dlavm::ValueError);
  // the queries before the keys, the heads last: [1, token, last + token, 8]
  auto sh = graph::input("sh", {1, token, ne::Expr(last) + token, 8}, DType::int8());
  const host::IntegerSoftmaxParams before{
      .axis = -2, .causal = true, .queries = host::CausalQueries::Before};
  CHECK(shape_of(typed({sh}, graph::integer_softmax(sh, before))) == "(1, token, last + token, 8)");
  CHECK_THROWS_WITH_AS(
      typed({sh}, graph::integer_softmax(
                      sh, {.axis = 0, .causal = true, .queries = host::CausalQueries::Before})),
      "%0 (integer_softmax): a causal softmax's keys cannot be axis 0 of input 0 (%sh) (rank 4): "
      "the queries are the dim before the keys, and the keys are the first dim",
      dlavm::ValueError);
  auto hq = graph::input("hq", {token, 4, 8}, DType::int8());
  CHECK_THROWS_WITH_AS(typed({hq}, graph::integer_softmax(hq, before)),
                       "%0 (integer_softmax): input 0 (%hq) has 4 keys (dim 1) and token "
                       "queries; a causal mask needs at least as many keys as queries (the "
                       "queries are the last positions)",
                       dlavm::ShapeError);
  auto few = graph::input("few", {token, 4}, DType::int8());
  CHECK_THROWS_WITH_AS(typed({few}, graph::integer_softmax(few, {.causal = true})),
                       "%0 (integer_softmax): input 0 (%few) has 4 keys (dim 1) and token "
                       "queries; a causal mask needs at least as many keys as queries (the "
                       "queries are the last positions)",
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(typed({s}, graph::integer_softmax(s, {.scale = 2.0})),
                       doctest::Contains("%0 (integer_softmax): scale 2 is outside [0.000666"),
                       dlavm::ValueError);
  auto f = graph::input("f", {4, 4}, DType::float32());
  CHECK_THROWS_WITH_AS(typed({f}, graph::integer_softmax(f)),
                       "%0 (integer_softmax): input 0 (%f) is float32; the integer softmax takes "
                       "int8 scores",
                       dlavm::TypeError);
  auto many = ne::var("many", 1, 9000);
  auto wide = graph::input("wide", {2, many}, DType::int8());
  CHECK_THROWS_WITH_AS(typed({wide}, graph::integer_softmax(wide)),
                       "%0 (integer_softmax): input 0 (%wide) has many keys along axis 1 (at most "
                       "9000); at most 8191 keep the sum of the exponentials in 32 bits",
                       dlavm::ShapeError);
}

TEST_CASE("infer_type: integer_softmax's halves, their attributes and shapes checked at the call") {
  auto token = ne::var("token", 1, 64);
  auto last = ne::var("last", 0, 100);
  auto sh = graph::input("sh", {1, token, ne::Expr(last) + token, 8}, DType::int8());
  const host::IntegerSoftmaxParams before{
      .axis = -2, .causal = true, .queries = host::CausalQueries::Before};
  const auto e = graph::integer_softmax_exp(sh, before);
  CHECK(shape_of(typed({sh}, e)) == "(1, token, last + token, 8)");
  CHECK(shape_of(typed({sh}, graph::integer_softmax_normalize(e, before))) ==
        "(1, token, last + token, 8)");
  CHECK_THROWS_WITH_AS(typed({sh}, graph::integer_softmax_exp(sh, {.scale = 2.0})),
                       doctest::Contains("%0 (integer_softmax_exp): scale 2 is outside [0.000666"),
                       dlavm::ValueError);
  // the normalization has no scale attribute: the exponentials' scale is the first half's
  const auto n = graph::integer_softmax_normalize(sh, before);
  CHECK_FALSE(n.as<graph::CallNode>()->attrs.contains("scale"));
  auto f = graph::input("f", {4, 4}, DType::float32());
  CHECK_THROWS_WITH_AS(typed({f}, graph::integer_softmax_normalize(f, {})),
                       "%0 (integer_softmax_normalize): input 0 (%f) is float32; the integer "
                       "softmax takes int8 exponentials",
                       dlavm::TypeError);
  auto hq = graph::input("hq", {token, 4, 8}, DType::int8());
  CHECK_THROWS_WITH_AS(typed({hq}, graph::integer_softmax_normalize(hq, before)),
                       doctest::Contains("%0 (integer_softmax_normalize): input 0 (%hq) has 4 "
                                         "keys (dim 1) and token queries"),
                       dlavm::ShapeError);
}

TEST_CASE("infer_type: integer_context_normalize, its operands and shift checked at the call") {
  auto token = ne::var("token", 1, 64);
  auto last = ne::var("last", 0, 100);
  auto context = graph::input("context", {1, 8, token, 64}, DType::int32());
  auto e = graph::input("e", {1, 8, token, ne::Expr(last) + token}, DType::int8());
  const auto y = typed({context, e}, graph::integer_context_normalize(context, e, {.shift = 7}));
  CHECK(shape_of(y) == "(1, 8, token, 64)");
  CHECK(y.type().dtype == DType::int8());
  CHECK(graph::integer_context_normalize_params(y.as<graph::CallNode>()->attrs).shift == 7);
  CHECK_THROWS_WITH_AS(typed({e}, graph::integer_context_normalize(e, e)),
                       "%0 (integer_context_normalize): input 0 (%e) is int8; it takes the int32 "
                       "product of exponentials and V",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(typed({context}, graph::integer_context_normalize(context, context)),
                       "%0 (integer_context_normalize): input 1 (%context) is int32; it takes "
                       "int8 exponentials",
                       dlavm::TypeError);
  auto other = graph::input("other", {1, 4, token, 16}, DType::int8());
  CHECK_THROWS_WITH_AS(typed({context, other}, graph::integer_context_normalize(context, other)),
                       doctest::Contains("dim 1 of input 1 (%other)"), dlavm::ShapeError);
  auto flat = graph::input("flat", {8}, DType::int32());
  CHECK_THROWS_AS(typed({flat, e}, graph::integer_context_normalize(flat, e)), dlavm::ShapeError);
  auto wide = graph::input("wide", {1, 8, token, 8192}, DType::int8());
  CHECK_THROWS_WITH_AS(typed({context, wide}, graph::integer_context_normalize(context, wide)),
                       doctest::Contains("input 1 (%wide) has 8192 keys (at most 8192); at most "
                                         "8191 keep their sum in 32 bits"),
                       dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      typed({context, e}, graph::integer_context_normalize(context, e, {.shift = 40})),
      "%0 (integer_context_normalize): shift 40 is outside [0, 31]", dlavm::ValueError);
}

TEST_CASE("infer_type: float ops, and the host's float32-only rule as a placement error") {
  auto token = ne::var("token", 1, 64);
  auto x = graph::input("x", {token, 16}, DType::float32());
  auto g = weight("g", DType::float32(), {16});
  CHECK(shape_of(typed({x}, graph::gelu(graph::layer_norm(x, g, g)))) == "(token, 16)");
  CHECK(shape_of(typed({x}, graph::softmax(x, {.axis = 0}))) == "(token, 16)");
  auto i = graph::input("i", {token, 16}, DType::int8());
  CHECK_THROWS_WITH_AS(
      typed({i}, graph::softmax(i)),
      "%0 (softmax): the host cannot run this call: computes in float32 only, and input 0 (%i) is "
      "int8 (cast it to float32 first) (infer_type(fn, target) also considers VTA)",
      dlavm::TypeError);
  CHECK_THROWS_WITH_AS(typed({x}, graph::layer_norm(x, weight("g8", DType::float32(), {8}), g)),
                       "%0 (layer_norm): input 1 (%g8) dim 0 is 8 but input 0 (%x) dim 1 is 16",
                       dlavm::ShapeError);
  auto wide = graph::input("wide", {1, 1, 4, 4}, DType::int64());
  CHECK_THROWS_WITH_AS(
      typed({wide}, graph::global_avg_pool2d(wide)),
      doctest::Contains(
          "the host cannot run this call: averages integers of at most 32 bits, and input 0 "
          "(%wide) is int64"),
      dlavm::TypeError);
}

TEST_CASE("infer_type: calls carry every attribute; the builders' defaults are the specs'") {
  auto x = graph::input("x", {1, 4, 8, 8}, DType::int8());
  auto w = weight("w", DType::int8(), {4, 4, 3, 3});
  auto f = graph::input("f", {2, 4}, DType::float32());
  auto xi = graph::input("xi", {1, 4, 8, 8}, DType::int32());
  const std::vector<std::pair<graph::Expr, graph::Function>> built = [&] {
    std::vector<graph::Expr> calls{
        graph::conv2d(x, w),
        graph::max_pool2d(x, {.pool_size = {2, 2}}),
        graph::avg_pool2d(x, {.pool_size = {2, 2}}),
        graph::bias_add(x, weight("b", DType::int8(), {4})),
        graph::clip(x, {.lo = 0, .hi = 6}),
        graph::requantize(xi, {.shift = 3}),
        graph::cast(x, DType::int32()),
        graph::reshape(x, {.newshape = {-1}}),
        graph::transpose(x),
        graph::flatten(x),
        graph::concat({x}, {.axis = 0}),
        graph::pad(x, {.pad_before = {0, 0, 1, 1}, .pad_after = {0, 0, 1, 1}}),
        graph::softmax(f),
        graph::layer_norm(f, weight("g", DType::float32(), {4}),
                          weight("be", DType::float32(), {4})),
    };
    std::vector<std::pair<graph::Expr, graph::Function>> out;
    for (auto& c : calls) {
      std::vector<graph::Expr> params;
      for (const auto& p : {x, f, xi})
        for (const auto& a : c.as<graph::CallNode>()->args)
          if (a.same_as(p)) params.push_back(p);
      out.emplace_back(c, graph::infer_type(graph::function(params, {c}), ops()));
    }
    return out;
  }();
  for (const auto& pair : built) {
    const auto& call = pair.first;  // (not a binding: Clang 14's CAPTURE cannot read one)
    const auto& fn = pair.second;
    const auto& before = call.as<graph::CallNode>()->attrs;
    const auto& after = fn.results()[0].as<graph::CallNode>()->attrs;
    const auto& record = ops().at(call.name());
    CAPTURE(call.name());
    CHECK(after.size() == record.attrs.size());  // every attribute, defaults filled
    for (const auto& e : before) CHECK(after.find(e.key) != nullptr);
    for (const auto& e : before) CHECK(*after.find(e.key) == e.value);
  }
}

TEST_CASE("infer_type: mistakes are named at the node with the numbers") {
  auto x = graph::input("x", {1, 16, 8, 8}, DType::int8());
  auto w = weight("w", DType::int8(), {4, 16, 3, 3});
  auto first = graph::relu(x);  // %0, so the failing call below is %1
#define CHECK_NODE_ERROR(bad, message, E) \
  CHECK_THROWS_WITH_AS(typed({x}, graph::add(first, bad)), message, E)
  // (the list is the registry's names, sorted)
  const auto names = graph::default_ops().names();
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::count(names.begin(), names.end(), "dense") == 1);
  const std::string unknown =
      fmt::format("%1 (densee): unknown op 'densee'; known ops: {}", fmt::join(names, ", "));
  CHECK_NODE_ERROR(graph::call("densee", {first, w}), unknown.c_str(), dlavm::ValueError);
  CHECK_NODE_ERROR(graph::call("dense", {first}), "%1 (dense): takes 2 inputs, given 1",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(graph::call("concat", {}, {{"axis", 0}}),
                   "%1 (concat): takes at least 1 inputs, given 0", dlavm::ValueError);
  CHECK_NODE_ERROR(graph::call("conv2d", {first, w}, {{"stride", {2, 2}}}),
                   "%1 (conv2d): unknown attribute 'stride'; known attributes: strides, padding, "
                   "groups, dilations",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(graph::call("relu", {first}, {{"alpha", 1}}),
                   "%1 (relu): unknown attribute 'alpha'; known attributes: none",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(
      graph::call("conv2d", {first, w}, {{"strides", 2}}),
      "%1 (conv2d): attribute 'strides' is an integer (2), expected a list of integers",
      dlavm::TypeError);
  CHECK_NODE_ERROR(
      graph::call("requantize", {first}),
      "%1 (requantize): attribute 'shift' (an integer: the right shift after the rounding "
      "constant) is required",
      dlavm::ValueError);
  CHECK_NODE_ERROR(graph::call("requantize", {first}, {{"shift", 2}, {"rounding", "round"}}),
                   "%1 (requantize): attribute 'rounding' is \"round\"; allowed: floor, nearest",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(graph::call("conv2d", {first, w}, {{"groups", 0}}),
                   "%1 (conv2d): attribute 'groups' is 0; it must be >= 1", dlavm::ValueError);
  CHECK_NODE_ERROR(graph::call("conv2d", {first, w}, {{"strides", {1, 1, 1}}}),
                   "%1 (conv2d): attribute 'strides' is [1, 1, 1] (3 values); it takes 2",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(graph::conv2d(first, w, {.strides = {0, 1}}),
                   "%1 (conv2d): attribute 'strides' is [0, 1]; strides must be >= 1",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(
      graph::conv2d(first, weight("w3", DType::int8(), {4, 3, 3, 3})),
      "%1 (conv2d): input 0 (%0) dim 1 (channels) is 16 but input 1 (%w3) dim 1 (channels) is 3",
      dlavm::ShapeError);
  CHECK_NODE_ERROR(
      graph::conv2d(first, weight("w32", DType::int32(), {4, 16, 3, 3})),
      "%1 (conv2d): input 0 (%0) is int8 and input 1 (%w32) is int32; supported are int8 x int8 -> "
      "int32, int32 x int32 -> int32 and float32 x float32 -> float32",
      dlavm::TypeError);
  CHECK_NODE_ERROR(graph::dense(first, weight("w1", DType::int8(), {4})),
                   "%1 (dense): input 1 (%w1) must have 2 dims, got Tensor[(4), int8]",
                   dlavm::ShapeError);
  CHECK_NODE_ERROR(graph::dense(first, weight("wk", DType::int8(), {4, 7})),
                   "%1 (dense): input 0 (%0) dim -1 (K) is 8 but input 1 (%wk) dim 1 (K) is 7",
                   dlavm::ShapeError);
  CHECK_NODE_ERROR(graph::add(first, graph::cast(first, DType::int32())),
                   "%2 (add): input 0 (%0) is int8 but input 1 (%1) is int32; they must have one "
                   "dtype (cast one first)",
                   dlavm::TypeError);
  CHECK_NODE_ERROR(graph::max_pool2d(first, {.pool_size = {2, 2}, .padding = {2, 0, 0, 0}}),
                   "%1 (max_pool2d): attribute 'padding' is [2, 0, 0, 0] for pool_size [2, 2]; "
                   "each pad must be in "
                   "[0, 2) so that every window holds an element of the input",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(graph::requantize(graph::cast(first, DType::float32()), {.shift = 3}),
                   "%2 (requantize): input 0 (%1) is float32; requantize takes a signed integer "
                   "(an int32 accumulator)",
                   dlavm::TypeError);
  CHECK_NODE_ERROR(graph::requantize(first, {.shift = 8}),
                   "%1 (requantize): attribute 'shift' is 8; for int8 input it must be in [0, 8)",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(
      graph::cast(first, DType::parse("float16")),
      "%1 (cast): attribute 'dtype' is float16; casts go to scalar integers or float32",
      dlavm::TypeError);
  CHECK_NODE_ERROR(graph::clip(first, {.lo = 0.25, .hi = 0.75}),
                   "%1 (clip): no int8 value lies in [lo, hi] = [0.25, 0.75]", dlavm::ValueError);
  CHECK_NODE_ERROR(graph::transpose(first, {.perm = {0, 1}}),
                   "%1 (transpose): attribute 'perm' [0, 1] is not a permutation of the 4 dims",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(graph::reshape(first, {.newshape = {5, -1}}),
                   "%1 (reshape): cannot reshape input 0 (%0) (1, 16, 8, 8) to [5, -1]: the dims "
                   "not copied hold "
                   "`1024` elements, which is not provably a multiple of 5",
                   dlavm::ShapeError);
  CHECK_NODE_ERROR(
      graph::reshape(first, {.newshape = {0, 0, 8, 9}}),
      "%1 (reshape): cannot reshape input 0 (%0) (1, 16, 8, 8) to [0, 0, 8, 9]: `64` elements of x "
      "against 72 (the dims not copied)",
      dlavm::ShapeError);
  CHECK_NODE_ERROR(graph::concat({first, weight("c", DType::int8(), {1, 16, 8, 7})}, {.axis = 1}),
                   "%1 (concat): input 1 (%c) dim 3 is 7 but input 0 (%0) dim 3 is 8",
                   dlavm::ShapeError);
  CHECK_NODE_ERROR(
      graph::bias_add(first, weight("b8", DType::int8(), {8})),
      "%1 (bias_add): input 1 (%b8) dim 0 is 8 but input 0 (%0) dim 1 (the axis) is 16",
      dlavm::ShapeError);
  CHECK_NODE_ERROR(graph::bias_add(first, weight("b16", DType::int8(), {16}), {.axis = 4}),
                   "%1 (bias_add): attribute 'axis' is 4, outside [-4, 4) for 4 dims",
                   dlavm::ValueError);
  CHECK_NODE_ERROR(
      graph::pad(first, {.pad_before = {0}, .pad_after = {0}}),
      "%1 (pad): attributes 'pad_before' [0] and 'pad_after' [0] need one entry per dim (4)",
      dlavm::ValueError);
  CHECK_NODE_ERROR(
      graph::pad(first, {.pad_before = {0, 0, 0, 0}, .pad_after = {0, 0, 0, 1}, .value = 300}),
      "%1 (pad): attribute 'value' 300 is not a int8 value", dlavm::ValueError);
}

TEST_CASE("infer_type: symbolic dims where a rule needs a constant or a proof") {
  auto token = ne::var("token", 1, 2048);
  auto k = ne::var("k", 1, 7);
  auto x = graph::input("x", {1, 4, token, 16}, DType::int8());
  auto wk = graph::input("wk", {8, 4, k, 3}, DType::int8());
  CHECK_THROWS_WITH_AS(typed({x, wk}, graph::conv2d(x, wk)),
                       "%0 (conv2d): input 1 (%wk) dim 2 is `k`, a symbolic dim; conv2d needs a "
                       "constant kernel height",
                       dlavm::ShapeError);
  auto w = graph::constant("w", te::NDArray(DType::int8(), {8, 4, 3, 3}));
  CHECK_THROWS_WITH_AS(
      typed({x}, graph::conv2d(x, w)),
      "%0 (conv2d): the window of 3 is larger than the padded height `token` (which can be 1)",
      dlavm::ShapeError);
  CHECK(shape_of(typed({x}, graph::conv2d(x, w, {.padding = {1, 1, 1, 1}}))) ==
        "(1, 8, token, 16)");
  auto a = graph::input("a", {token, 16}, DType::int32());
  auto b = graph::input("b", {16, 16}, DType::int32());
  CHECK_THROWS_WITH_AS(
      typed({a, b}, graph::add(a, b)),
      "%0 (add): input 0 (%a) (token, 16) and input 1 (%b) (16, 16) do not broadcast: dim 1 from "
      "the end is `token` vs `16` (dims must be provably equal, or one of them 1)",
      dlavm::ShapeError);
  auto n = ne::var("n", 1, 2048);
  auto p = graph::input("p", {token, token}, DType::int32());
  auto v = graph::input("v", {n, 64}, DType::int32());
  CHECK_THROWS_WITH_AS(
      typed({p, v}, graph::matmul(p, v)),
      "%0 (matmul): input 0 (%p) dim -1 (K) is token but input 1 (%v) dim -2 (K) is n (they "
      "may differ for some values of the symbolic dims)",
      dlavm::ShapeError);
  auto v2 = graph::input("v2", {token, 64}, DType::int32());
  CHECK(shape_of(typed({p, v2}, graph::matmul(p, v2))) == "(token, 64)");
  auto odd = graph::input("odd", {token, 6}, DType::int8());
  CHECK_THROWS_WITH_AS(
      typed({odd}, graph::reshape(odd, {.newshape = {-1, 4}})),
      "%0 (reshape): cannot reshape input 0 (%odd) (token, 6) to [-1, 4]: the dims not copied hold "
      "`token*6` elements, which is not provably a multiple of 4",
      dlavm::ShapeError);
}

TEST_CASE("infer_type: global attributes, and typing twice changes nothing") {
  auto x = graph::input("x", {4}, DType::int8());
  auto fn = graph::function({x}, {graph::relu(x)});
  // A named map: GCC 12 warns (maybe-uninitialized, falsely) on the variant of a temporary one.
  const graph::Attrs global{{"opt_level", 3}};
  CHECK_THROWS_WITH_AS(
      graph::infer_type(fn, ops(), global),
      "infer_type: global attributes: unknown attribute 'opt_level'; known attributes: none",
      dlavm::ValueError);
  auto once = graph::infer_type(fn, ops());
  CHECK(fmt::format("{}", graph::infer_type(once, ops())) == fmt::format("{}", once));
  CHECK(fn.results()[0].device() == graph::Device::Any);  // the input function is unchanged
}
