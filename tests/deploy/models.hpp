// The models tests/deploy emits for firmware, built the same way by the generator
// (gen/gen_firmware.cpp, at build time) and by the test (at run time): the gallery's MLP
// (symbolic batch, replayed, debug log) and ResNet-18 at 32x32 (static streams, with and
// without lite), a recurrent convolution (a state in the cache region), chains of host ops
// (the firmware kernels, and an int32 result VTA stores as byte planes; the data movement ones
// in transform_ops; math_ops: every unary, binary and reduction kind; logic_ops: every
// comparison, logical, float class and arg reduction kind, and where), an attention block (VTA's
// batched matmuls), and random networks of convolutions and poolings, and a model with an op of the
// test's own (custom_op.hpp: its firmware kernel in custom_kernels.hpp, which the header includes).
#pragma once

#include <dlavm/dlavm.hpp>

#include "../../examples/models.hpp"
#include "../graph/random_networks.hpp"
#include "custom_op.hpp"
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace deploy_models {

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;

struct Case {
  std::string name;  // the module's name, the header's namespace and file stem
  graph::Function fn;
  dlavm::deploy::EmitOptions emit;
  std::string dim;  // the symbolic dim, if any
  std::vector<std::int64_t> values;
  graph::Target target = {};
};

// Every firmware kernel on the host: integer elementwise ops, poolings, a dense layer and a
// float tail.
inline graph::Function host_ops() {
  const auto n = ne::var("n", 1, 3);
  auto x = graph::input("x", {n, 8, 6, 6}, DType::int8());
  auto y = x;
  auto x32 = graph::cast(y, DType::int32());
  auto s = graph::add(x32, graph::mul(x32, x32));
  s = graph::bias_add(s,
                      graph::constant("b", te::NDArray::random(DType::int32(), {8}, 4, -100, 100)));
  auto q = graph::requantize(s, {.shift = 3, .rounding = dlavm::host::Rounding::Nearest});
  q = graph::clip(graph::relu(q), {.lo = 2, .hi = 90.5});
  auto p = graph::max_pool2d(q, {.pool_size = {2, 2}, .strides = {2, 2}});
  p = graph::avg_pool2d(p, {.pool_size = {2, 2},
                            .strides = {1, 1},
                            .padding = {1, 1, 0, 0},
                            .count_include_pad = false});
  auto g = graph::flatten(graph::global_avg_pool2d(p));
  auto d = graph::dense(g, graph::constant("w", te::NDArray::random(DType::int8(), {5, 8}, 5)));
  auto f = graph::cast(d, DType::float32());
  f = graph::clip(graph::relu(f), {.lo = -1, .hi = 3000.5});
  auto out = graph::softmax(
      graph::mul(f, graph::cast(graph::cast(d, DType::int8()), DType::float32())), {.axis = -1});
  return graph::function({x}, {out, graph::reshape(q, {.newshape = {-1}})});
}

// The float and quantization kernels of the attention models: a per-channel dequantization,
// layer norm, causal mask, softmax, a per-tensor quantization and a transpose, and a per-channel
// rescale (ONNX's QLinearConv output step); the integer
// softmax, causal over the last dim, plain over the symbolic first, causal over dim -2 with the
// queries last (on the host) and with the queries before the keys (on VTA).
inline graph::Function float_ops() {
  const auto n = ne::var("n", 1, 3);
  auto x = graph::input("x", {n, 6, 8}, DType::int8());
  auto scale = graph::constant(
      "scale", te::NDArray::from_floats({8}, {0.5f, 0.25f, 0.125f, 1.0f, 0.75f, 0.1f, 2.0f, 0.3f}));
  auto zero = graph::constant("zero", te::NDArray::random(DType::int8(), {8}, 6, -3, 3));
  auto f = graph::dequantize_linear(x, scale, zero, {.axis = -1});
  f = graph::layer_norm(f, graph::constant("gamma", te::NDArray::random_float({8}, 7, 0.5, 1.5)),
                        graph::constant("beta", te::NDArray::random_float({8}, 8, -0.5, 0.5)),
                        {.axis = -1, .epsilon = 1e-3});
  f = graph::softmax(graph::causal_mask(f), {.axis = -1});
  auto q =
      graph::quantize_linear(f, graph::constant("qs", te::NDArray::from_floats({}, {1.0f / 127})),
                             graph::constant("qz", te::NDArray(DType::int8(), {})));
  // a batch_norm no layer comes before: the host's (the firmware's) kernel, along dim 1
  const auto stat = [](const char* name, std::uint64_t seed, double lo, double hi) {
    return graph::constant(name, te::NDArray::random_float({6}, seed, lo, hi));
  };
  auto bn = graph::batch_norm(f, stat("bn_gamma", 9, 0.5, 1.5), stat("bn_beta", 10, -1, 1),
                              stat("bn_mean", 11, -1, 1), stat("bn_var", 12, 0.2, 2),
                              {.axis = 1, .epsilon = 1e-3});
  return graph::function(
      {x},
      {graph::transpose(q, {.perm = {2, 0, 1}}), f, bn,
       graph::integer_softmax(x, {.axis = -1, .causal = true}),
       graph::integer_softmax(x, {.axis = 0, .scale = 0.05}),
       // on the host, the queries the last dim
       graph::integer_softmax(graph::transpose(x, {.perm = {0, 2, 1}}),
                              {.axis = -2, .causal = true}),
       // on VTA, the queries before the keys
       graph::integer_softmax(
           x, {.axis = -2, .causal = true, .queries = dlavm::host::CausalQueries::Before}),
       // ONNX's requantization of an int32 sum: per channel, uint8 with zero points, ties
       // (x * 3 * 0.5) among the values
       graph::rescale(
           graph::mul(graph::cast(x, DType::int32()),
                      graph::constant("three", te::NDArray::from_ints(DType::int32(), {}, {3}))),
           graph::constant("mult", te::NDArray::from_floats(
                                       {8}, {0.5f, 0.25f, 1.5f, 0.1f, 2.0f, 0.75f, 0.3f, 1.0f})),
           graph::constant("rz", te::NDArray::from_ints(DType::uint8(), {8},
                                                        {0, 128, 7, 255, 100, 3, 50, 128})),
           {.axis = -1})});
}

// The data movement kernels ONNX models need (strided_slice, take, broadcast_to, tile,
// resize2d) over a symbolic height and the dtypes they move: int8 and float32 inputs, uint8,
// int32 and int64 values made by casts; take with constant indices (negative ones too) and
// with indices computed from the input, clipped into the dim.
inline graph::Function transform_ops() {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  namespace host = dlavm::host;
  const auto n = ne::var("n", 2, 5);
  auto x = graph::input("x", {1, 3, n, 4}, DType::int8());
  auto f = graph::input("f", {1, 2, 3, 3}, DType::float32());
  // the symbolic rows reversed, every other column; the last row
  auto rev = graph::strided_slice(
      x, {.begin = {-1, 1}, .end = {kMin, kMax}, .step = {-1, 2}, .axes = {2, 3}});
  auto last = graph::strided_slice(graph::cast(x, DType::int64()),
                                   {.begin = {-1}, .end = {kMax}, .axes = {2}});
  auto picked = graph::take(
      graph::cast(x, DType::uint8()),
      graph::constant("picks", te::NDArray::from_ints(DType::int64(), {2, 2}, {-1, 0, 2, -3})),
      {.axis = 1});
  auto idx = graph::reshape(
      graph::clip(graph::cast(graph::strided_slice(x, {.begin = {0}, .end = {1}, .axes = {2}}),
                              DType::int32()),
                  {.lo = -4, .hi = 3}),
      {.newshape = {-1}});
  auto gathered = graph::take(graph::cast(x, DType::int32()), idx, {.axis = -1});
  auto wide = graph::broadcast_to(last, {.shape = {3, 1, 5, 1}});
  auto tiled = graph::tile(rev, {.repeats = {2, 1, 2, 1}});
  auto near = graph::resize2d(x, {.scales = {2, 0.5}});
  auto smooth = graph::resize2d(
      graph::cast(x, DType::float32()),
      {.scales = {0.5, 1.5},
       .mode = host::ResizeMode::Linear,
       .coordinate_transformation_mode = host::ResizeCoordinates::PytorchHalfPixel});
  auto up = graph::resize2d(f, {.scales = {1.5, 2}, .mode = host::ResizeMode::Linear});
  auto corners =
      graph::resize2d(f, {.sizes = {5, 2},
                          .coordinate_transformation_mode = host::ResizeCoordinates::AlignCorners,
                          .nearest_mode = host::ResizeNearest::Ceil});
  return graph::function({x, f}, {picked, gathered, wide, tiled, near, smooth, up, corners});
}

// The math ops (issue 40): every unary kind on float32 (each on values of its domain) and abs
// and neg on int8; every binary kind of one shape and broadcast (a per-row divisor, a scalar
// exponent, a per-channel slope), an integer division by zero and of the minimum by -1;
// every reduction over the symbolic dim and others, kept and dropped; log_softmax.
inline graph::Function math_ops() {
  const auto n = ne::var("n", 1, 3);
  auto x = graph::input("x", {n, 4, 6}, DType::float32());
  auto i = graph::input("i", {n, 4, 6}, DType::int8());
  const auto floats = [](std::string name, std::vector<std::int64_t> shape, std::vector<float> v) {
    return graph::constant(std::move(name), te::NDArray::from_floats(std::move(shape), v));
  };
  const auto int8s = [](std::string name, std::vector<std::int64_t> v) {
    const auto rows = static_cast<std::int64_t>(v.size());
    return graph::constant(std::move(name), te::NDArray::from_ints(DType::int8(), {rows, 1}, v));
  };
  auto s = graph::sigmoid(x);
  auto u = graph::add(graph::tanh(x), graph::erf(x));
  u = graph::sub(u, graph::mul(graph::log(s), graph::sqrt(graph::abs(x))));
  u = graph::maximum(u, graph::hard_sigmoid(graph::neg(x), {.alpha = 0.3, .beta = 0.4}));
  u = graph::minimum(u, graph::leaky_relu(graph::hard_swish(graph::mul(x, floats("four", {}, {4}))),
                                          {.alpha = 0.1}));
  // the kinds of issue 40's second round, each on values of its domain
  using U = dlavm::runtime::Unary;
  const auto one = floats("one", {}, {1});
  auto t = graph::mul(graph::tanh(x), floats("shrink", {}, {0.9f}));  // in (-0.9, 0.9)
  auto above_one = graph::add(graph::abs(x), one);
  auto w = graph::add(graph::unary(U::Sin, x), graph::unary(U::Cos, x));
  for (U k : {U::Tan, U::Asin, U::Acos, U::Sinh, U::Cosh, U::Atanh})
    w = graph::add(w, graph::unary(k, t));
  for (U k : {U::Atan, U::Asinh, U::Mish}) w = graph::add(w, graph::unary(k, x));
  w = graph::add(w, graph::unary(U::Acosh, above_one));
  w = graph::add(w, graph::reciprocal(above_one));
  auto quarters = graph::mul(x, floats("by4", {}, {4}));
  w = graph::add(w, graph::add(graph::floor(quarters), graph::ceil(quarters)));
  w = graph::add(w, graph::add(graph::round(quarters), graph::sign(x)));
  w = graph::add(w, graph::add(graph::softplus(x), graph::softsign(x)));
  w = graph::add(w, graph::elu(x, {.alpha = 0.5}));
  w = graph::add(w, graph::selu(x, {.alpha = 1.5, .gamma = 0.75}));
  w = graph::add(w, graph::celu(x, {.alpha = 2}));
  w = graph::add(w, graph::thresholded_relu(x, {.alpha = 0.2}));
  auto d = graph::div(graph::exp(x), floats("divisor", {4, 1}, {2, -0.5f, 0.25f, 3}));
  auto p = graph::pow(s, floats("power", {}, {2.5f}));
  auto r = graph::prelu(u, floats("slope", {4, 1}, {0.5f, -1, 2, 0}));
  // row 0 of m is -128 (divided by -1), row 1 is divided by 0
  auto m = graph::minimum(i, int8s("floor", {-128, 127, 127, 127}));
  auto q = graph::div(m, int8s("by", {-1, 0, 3, -7}));
  auto a = graph::sub(graph::abs(q), graph::neg(i));
  a = graph::maximum(
      a, graph::prelu(i, graph::constant("islope", te::NDArray::from_ints(DType::int8(), {6},
                                                                          {3, -1, 0, 2, 5, -7}))));
  a = graph::add(a, graph::sign(i));
  auto a32 = graph::cast(a, DType::int32());
  return graph::function(
      {x, i}, {r, w, graph::reduce_sum(r, {.axes = {1}}),
               graph::reduce_mean(graph::add(d, p), {.keepdims = false}),
               graph::reduce_max(u, {.axes = {0, 2}}),
               graph::reduce_min(p, {.axes = {-1}, .keepdims = false}),
               graph::log_softmax(d, {.axis = 1}), q, a, graph::reduce_sum(a, {.axes = {0, 2}}),
               graph::reduce_mean(a, {.axes = {2}}), graph::reduce_max(a32, {.axes = {1}}),
               graph::reduce_min(a32, {.axes = {0}, .keepdims = false})});
}

// ONNX's boolean operators (issue 40): every comparison kind on float32 (NaN and infinities
// among the values) and int8 (many ties), of one shape and broadcast; every logical kind on
// uint8 inputs of any value (nonzero: true), of one shape and broadcast; where of one shape and
// broadcast three ways, on float32 and int8; is_nan and is_inf (each sign); argmax and argmin
// over the symbolic dim and the others, ties and NaNs from either end.
inline graph::Function logic_ops() {
  const auto n = ne::var("n", 1, 3);
  auto x = graph::input("x", {n, 4, 6}, DType::float32());
  auto i = graph::input("i", {n, 4, 6}, DType::int8());
  auto m = graph::input("m", {n, 4, 6}, DType::uint8());
  const auto floats = [](std::string name, std::vector<std::int64_t> shape, std::vector<float> v) {
    return graph::constant(std::move(name), te::NDArray::from_floats(std::move(shape), v));
  };
  const auto ints = [](std::string name, DType t, std::vector<std::int64_t> shape,
                       std::vector<std::int64_t> v) {
    return graph::constant(std::move(name), te::NDArray::from_ints(t, std::move(shape), v));
  };
  // rows 0 and 2 of d are +-infinity, of nan NaN (infinity times 0)
  auto d = graph::div(x, floats("by", {4, 1}, {0, 1, 0, 2}));
  auto nan = graph::mul(d, floats("zero", {}, {0}));
  // q in [-2, 1]: ties everywhere
  auto q = graph::div(i, ints("sixty_four", DType::int8(), {}, {64}));
  auto level = ints("level", DType::int8(), {4, 1}, {-2, -1, 0, 1});
  auto above = graph::greater(x, floats("half", {1, 6}, {-0.5f, 0, 0.5f, -1, 1, 0.25f}));
  auto cmp = graph::logical_or(graph::logical_and(graph::equal(q, level), graph::not_equal(nan, x)),
                               graph::logical_xor(graph::greater_equal(q, i), graph::less(nan, x)));
  cmp = graph::logical_or(cmp, graph::less_equal(level, q));
  auto mask = graph::logical_and(m, ints("every_other", DType::uint8(), {6}, {1, 0, 7, 0, 255, 0}));
  auto picked = graph::where(graph::logical_not(m), x, graph::neg(x));  // one shape
  auto clipped = graph::where(above, floats("cap", {}, {0.5f}), x);     // three ways
  auto chosen = graph::where(mask, q, level);                           // int8, broadcast
  auto classes = graph::logical_xor(graph::is_inf(d, {.detect_negative = false}),
                                    graph::is_inf(d, {.detect_positive = false}));
  return graph::function(
      {x, i, m},
      {cmp, mask, picked, clipped, chosen, classes, graph::is_nan(nan), graph::is_inf(d),
       graph::argmax(x, {.axis = 0}), graph::argmin(q, {.axis = 1, .select_last_index = true}),
       graph::argmax(q, {.axis = -1, .keepdims = false}),
       graph::argmin(nan, {.axis = 2, .select_last_index = true}),
       graph::argmax(nan, {.axis = 1, .keepdims = false})});
}

inline std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"mlp",
                 models::Mlp().function(),
                 {.debug = true, .weights_array = true},
                 "batch",
                 {1, 5, 33, 256}});
  out.push_back({"resnet", models::ResNet18(32).function(), {}, "", {1}});
  out.push_back({"resnet_lite", models::ResNet18(32).function(), {.lite = true}, "", {1}});
  // built for a Pynq board (no LOAD ACC_8BIT: the pooling's and the residual sums' int8
  // operands widened by host casts in the packed layout)
  graph::Target pynq;
  pynq.env = dlavm::vta::Env(dlavm::vta::preset("pynq"));
  out.push_back({"resnet_pynq", models::ResNet18(32).function(), {}, "", {1}, pynq});
  out.push_back(
      {"recurrent", random_graphs::recurrent_convolution(), {.lite = true}, "", {1, 1, 1}});
  // the dense layer's int32 sums on the host (its firmware kernel), then on VTA as byte planes
  // (Target::int32_results, the default: their firmware unpack)
  graph::Target host_sums;
  host_sums.int32_results = false;
  out.push_back({"host_ops", host_ops(), {}, "n", {1, 3, 2}, host_sums});
  out.push_back({"host_ops_planes", host_ops(), {}, "n", {1, 3, 2}});
  out.push_back({"float_ops", float_ops(), {}, "n", {1, 3, 2}});
  out.push_back({"transform_ops", transform_ops(), {}, "n", {2, 5, 3}});
  out.push_back({"math_ops", math_ops(), {}, "n", {1, 3, 2}});
  out.push_back({"logic_ops", logic_ops(), {}, "n", {1, 3, 2}});
  // one attention block: the batched matmuls' layouts and the host steps between them
  out.push_back(
      {"attention", models::Attention(64, 4, 32).function(), {}, "token", {1, 5, 32, 17}});
  // an LLM decoder layer with its KV cache: a prefill, decode steps, a prefill past a tile of
  // 16 positions (the cache's tiles move), decode again
  out.push_back({"llm_layer",
                 models::LlmLayer(64, 4, 128, 32).function(),
                 {},
                 "token",
                 {5, 1, 1, 3, 1, 16, 1}});
  // the same with the integer softmax on VTA's ALU, one kernel or two, or its exponentials
  // alone and the context normalized on the host
  out.push_back({"llm_layer_int",
                 models::LlmLayer(64, 4, 128, 32, 32, 21, models::llm::Softmax::Integer).function(),
                 {},
                 "token",
                 {5, 1, 1, 3, 1, 16, 1}});
  out.push_back(
      {"llm_layer_int_split",
       models::LlmLayer(64, 4, 128, 32, 32, 21, models::llm::Softmax::IntegerSplit).function(),
       {},
       "token",
       {5, 1, 1, 3, 1, 16, 1}});
  out.push_back(
      {"llm_layer_int_deferred",
       models::LlmLayer(64, 4, 128, 32, 32, 21, models::llm::Softmax::IntegerDeferred).function(),
       {},
       "token",
       {5, 1, 1, 3, 1, 16, 1}});
  out.push_back({"custom_op",
                 custom_op::model(),
                 {.includes = {"custom_kernels.hpp"}},
                 "batch",
                 {1, 8, 3},
                 custom_op::target()});
  random_graphs::Rng rng{std::mt19937_64(77)};
  for (int k = 0; k < 6; ++k) {
    auto net = random_graphs::random_network(rng, static_cast<std::uint64_t>(k));
    out.push_back(
        {"net" + std::to_string(k),
         net.fn,
         {.lite = k % 2 == 0},
         net.symbolic ? "batch" : "",
         net.symbolic ? std::vector<std::int64_t>{1, 3, 2} : std::vector<std::int64_t>{1}});
  }
  return out;
}

}  // namespace deploy_models
