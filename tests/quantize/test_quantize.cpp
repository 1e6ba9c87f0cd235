// dlavm::quantize on a small float CNN (a convolution with a BatchNormalization and a ReLU, a
// convolution with a bias and a ReLU6 clip, a global average pool, a dense classifier with a
// bias), against independent references:
//   - the quantized function built for VTA and run on the simulator equals the reference
//     executor's run of the same function bit for bit (the integer path is exact);
//   - its logits follow the float model's (SQNR, and the top class on most inputs);
//   - the input scale min/max calibration picks is the one derived here from the samples;
//   - the report's layers, devices, skip list and SQNR bound; the table and the SVG;
//   - the samples are streamed: a source is asked for each sample once per pass;
//   - bad samples (none, a NaN, a wrong shape or type, a missing or unknown input) are errors
//     naming the sample and the input.
#include <dlavm/graph.hpp>
#include <dlavm/quantize.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace quantize_test {

namespace graph = dlavm::graph;
namespace q = dlavm::quantization;
using dlavm::DType;
using dlavm::te::NDArray;

graph::Expr weight(const std::string& name, std::vector<std::int64_t> shape, std::uint64_t seed,
                   double range) {
  return graph::constant(name, NDArray::random_float(std::move(shape), seed, -range, range));
}

graph::Function cnn() {
  auto x = graph::input("image", {1, 3, 16, 16}, DType::float32());
  auto y = graph::conv2d(x, weight("w1", {16, 3, 3, 3}, 1, 0.4), {.padding = {1, 1, 1, 1}});
  y = graph::batch_norm(y, weight("gamma", {16}, 2, 1.0), weight("beta", {16}, 3, 0.2),
                        weight("mean", {16}, 4, 0.1),
                        graph::constant("var", NDArray::random_float({16}, 5, 0.5, 1.5)));
  y = graph::relu(y);
  y = graph::bias_add(
      graph::conv2d(y, weight("w2", {16, 16, 3, 3}, 6, 0.15), {.padding = {1, 1, 1, 1}}),
      weight("b2", {16}, 7, 0.1));
  y = graph::clip(y, {.lo = 0, .hi = 6});
  y = graph::flatten(graph::global_avg_pool2d(y));
  y = graph::bias_add(graph::dense(y, weight("fc", {10, 16}, 8, 0.5)), weight("fcb", {10}, 9, 0.1),
                      {.axis = -1});
  return graph::function({x}, {y});
}

std::vector<q::Sample> samples(std::size_t n, std::uint64_t seed = 100) {
  std::vector<q::Sample> out;
  for (std::size_t k = 0; k < n; ++k)
    out.push_back({{{"image", NDArray::random_float({1, 3, 16, 16}, seed + k, -1.0, 1.0)}}, {}});
  return out;
}

// Runs each sample's input on VTA (exec, built from `quantized`), checks the output equals the
// reference executor's run of `quantized` bit for bit, and returns its SQNR (dB) against the
// float function's output (100 when equal).
double checked_sqnr_db(graph::Executor& exec, const graph::Function& quantized,
                       const graph::Function& float_fn, const std::vector<q::Sample>& inputs) {
  const graph::Target target;
  const auto typed_float = graph::infer_type(float_fn, target.ops);
  const auto typed = graph::infer_type(quantized, target);
  double signal = 0, noise = 0;
  for (const auto& s : inputs) {
    const auto& [name, image] = s.inputs[0];
    const auto got = exec.run({{name, image}})[0];
    CHECK(got == graph::evaluate(typed, {{name, image}}, {})[0]);
    const auto want = graph::evaluate(typed_float, {{name, image}}, {})[0];
    for (std::size_t k = 0; k < want.size(); ++k) {
      const double d = static_cast<double>(want.fdata()[k]) - got.fdata()[k];
      signal += static_cast<double>(want.fdata()[k]) * want.fdata()[k];
      noise += d * d;
    }
  }
  return noise == 0 ? 100 : 10 * std::log10(signal / noise);
}

TEST_CASE("quantize: a float CNN's layers become int8 on VTA, bit for bit with the host") {
  const auto fn = cnn();
  const auto calib = samples(16);
  const auto result = dlavm::quantize(fn, calib);
  REQUIRE(result.layers.size() == 3);
  for (const auto& l : result.layers) {
    CAPTURE(l.name);
    CHECK(l.quantized);
    CHECK(l.device == "vta");
    CHECK(l.sqnr_db > 25);
  }
  CHECK(result.vta_mac_share() == 1.0);
  // no float convolution or dense layer is left; the batch_norm was folded
  int int8_products = 0;
  for (const auto& e : graph::post_order(result.function.results()))
    if (const auto* c = e.as<graph::CallNode>()) {
      CHECK(c->op() != "batch_norm");
      if (c->op() == "conv2d" || c->op() == "dense") {
        CHECK(c->args[0].type().dtype == DType::int8());
        CHECK(c->args[1].type().dtype == DType::int8());
        ++int8_products;
      }
    }
  CHECK(int8_products == 3);
  const graph::Target target;
  auto mod = graph::build(result.function, target, {.name = "quantized_cnn"});
  dlavm::vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  const auto typed_float = graph::infer_type(fn, target.ops);
  int same_top = 0;
  double signal = 0, noise = 0;
  const auto test = samples(20, 900);
  for (const auto& s : test) {
    const auto& image = s.inputs[0].second;
    const auto on_vta = exec.run({{"image", image}})[0];
    const auto on_host = graph::evaluate(result.function, {{"image", image}}, {})[0];
    CHECK(on_vta == on_host);
    const auto want = graph::evaluate(typed_float, {{"image", image}}, {})[0];
    const auto a = want.fdata(), b = on_vta.fdata();
    same_top += std::ranges::max_element(a) - a.begin() == std::ranges::max_element(b) - b.begin();
    for (std::size_t k = 0; k < a.size(); ++k) {
      signal += static_cast<double>(a[k]) * a[k];
      noise += (static_cast<double>(a[k]) - b[k]) * (static_cast<double>(a[k]) - b[k]);
    }
  }
  CHECK(10 * std::log10(signal / noise) > 25);
  CHECK(same_top >= 18);
}

TEST_CASE("quantize: with shifts every layer runs wholly on VTA, an int8 result") {
  const auto calib = samples(16);
  const auto result = dlavm::quantize(cnn(), calib, {.requantize = q::Requantize::Shift});
  for (const auto& l : result.layers) {
    CAPTURE(l.name);
    CHECK(l.quantized);
    CHECK(l.device == "vta");
    CHECK(l.sqnr_db > 18);
    // power-of-two scales
    CHECK(std::exp2(std::round(std::log2(l.input_scale))) == l.input_scale);
    CHECK(std::exp2(std::round(std::log2(l.output_scale))) == l.output_scale);
  }
  int requantizes = 0, rescales = 0;
  for (const auto& e : graph::post_order(result.function.results()))
    if (const auto* c = e.as<graph::CallNode>()) {
      requantizes += c->op() == "requantize";
      rescales += c->op() == "rescale";
    }
  CHECK(requantizes == 3);
  CHECK(rescales == 0);
  const graph::Target target;
  auto mod = graph::build(result.function, target, {.name = "shifted"});
  // each layer one VTA kernel with its bias, shift and clamp, and no byte planes
  std::size_t vta_steps = 0;
  for (const auto& s : mod.steps()) vta_steps += s.kind == graph::ModuleStep::Kind::Vta;
  CHECK(vta_steps == 3);
  CHECK(fmt::format("{}", mod).find("planes") == std::string::npos);
  dlavm::vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  for (const auto& s : samples(4, 700)) {
    const auto& image = s.inputs[0].second;
    CHECK(exec.run({{"image", image}})[0] ==
          graph::evaluate(result.function, {{"image", image}}, {})[0]);
  }
}

TEST_CASE(
    "quantize: asymmetric activations give a ReLU's output all 256 levels, bit for bit on VTA") {
  const auto fn = cnn();
  const auto calib = samples(16);
  const graph::Target target;
  dlavm::vta::SimDevice dev(target.env.config);
  for (const auto mode : {q::Requantize::Multiplier, q::Requantize::Shift}) {
    CAPTURE(q::to_string(mode));
    const auto symmetric = dlavm::quantize(fn, calib, {.requantize = mode});
    const auto result =
        dlavm::quantize(fn, calib, {.requantize = mode, .activations = q::Activations::Asymmetric});
    REQUIRE(result.layers.size() == 3);
    for (const auto& l : result.layers) {
      CAPTURE(l.name);
      CHECK(l.quantized);
      CHECK(l.device == "vta");
    }
    // conv2d#1 and the dense layer read a ReLU's (a ReLU6's) output: 0 is the lowest level
    CHECK(result.layers[1].input_zero_point == -128);
    CHECK(result.layers[0].output_zero_point == -128);
    // the first layer's output uses twice the levels: about 6 dB more
    CHECK(result.layers[0].sqnr_db > symmetric.layers[0].sqnr_db + 3);
    CHECK(result.layers[1].sqnr_db > 25);
    // each padded convolution whose input has a zero point is padded with that level on the
    // host (VTA pads with level 0): the one reading the ReLU with -128; the image (min < 0 <
    // max) has its zero point inside the range
    std::multiset<double> pads;
    for (const auto& e : graph::post_order(result.function.results()))
      if (const auto* c = e.as<graph::CallNode>(); c != nullptr && c->op() == "pad")
        pads.insert(c->attrs.get_float("value"));
    std::multiset<double> want_pads{-128};
    const auto image_zero = result.layers[0].input_zero_point;
    CHECK(image_zero > -100);
    CHECK(image_zero < 100);
    if (image_zero != 0) want_pads.insert(static_cast<double>(image_zero));
    CHECK(pads == want_pads);
    auto mod = graph::build(result.function, target, {.name = "asymmetric"});
    graph::Executor exec(mod, dev);
    CHECK(checked_sqnr_db(exec, result.function, fn, samples(6, 500)) > 20);
  }
}

TEST_CASE("quantize: a max pool and a flatten between layers run on the int8 levels, on VTA") {
  auto x = graph::input("image", {1, 3, 16, 16}, DType::float32());
  auto y =
      graph::relu(graph::conv2d(x, weight("w1", {16, 3, 3, 3}, 1, 0.4), {.padding = {1, 1, 1, 1}}));
  y = graph::max_pool2d(y, {.pool_size = {3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}});
  y = graph::relu(
      graph::conv2d(y, weight("w2", {16, 16, 3, 3}, 2, 0.2), {.padding = {1, 1, 1, 1}}));
  y = graph::max_pool2d(y, {.pool_size = {2, 2}, .strides = {2, 2}});
  y = graph::dense(graph::flatten(y), weight("fc", {10, 256}, 3, 0.1));
  const auto fn = graph::function({x}, {y});
  const graph::Target target;
  dlavm::vta::SimDevice dev(target.env.config);
  for (const auto activations : {q::Activations::Symmetric, q::Activations::Asymmetric}) {
    CAPTURE(q::to_string(activations));
    const auto result = dlavm::quantize(fn, samples(8), {.activations = activations});
    REQUIRE(result.layers.size() == 3);
    // the next layer reads the pooled levels at the pooled layer's scale and zero point
    for (std::size_t k = 1; k < 3; ++k) {
      CHECK(result.layers[k].input_scale == result.layers[k - 1].output_scale);
      CHECK(result.layers[k].input_zero_point == result.layers[k - 1].output_zero_point);
    }
    const auto placed = graph::infer_type(result.function, target);
    int pools = 0;
    for (const auto& e : graph::post_order(placed.results()))
      if (const auto* c = e.as<graph::CallNode>(); c != nullptr && c->op() == "max_pool2d") {
        ++pools;
        CHECK(e.type().dtype == DType::int8());
        CHECK(e.device() == graph::Device::Vta);
      }
    CHECK(pools == 2);
    auto mod = graph::build(result.function, target, {.name = "pooled"});
    graph::Executor exec(mod, dev);
    CHECK(checked_sqnr_db(exec, placed, fn, samples(4, 800)) > 25);
  }
}

TEST_CASE("quantize: min/max calibration's input scale is the samples' largest magnitude") {
  const auto calib = samples(5);
  float top = 0;
  for (const auto& s : calib)
    for (float v : s.inputs[0].second.fdata()) top = std::max(top, std::abs(v));
  const auto r = dlavm::quantize(cnn(), calib, {.calibration = {.method = q::Calibration::MinMax}});
  CHECK(r.layers[0].input_scale == top / 127.0f);
  // percentile and entropy clip: their scales are at most min/max's
  for (auto m : {q::Calibration::Percentile, q::Calibration::Entropy}) {
    const auto c = dlavm::quantize(cnn(), calib, {.calibration = {.method = m}});
    CHECK(c.layers[0].input_scale <= r.layers[0].input_scale);
    CHECK(c.layers[0].input_scale > 0);
  }
}

TEST_CASE("quantize: skipped layers and layers below the SQNR bound stay float, and say why") {
  const auto calib = samples(4);
  const auto r = dlavm::quantize(cnn(), calib, {.skip = {"dense#0"}});
  REQUIRE(r.layers.size() == 3);
  CHECK(!r.layers[2].quantized);
  CHECK(r.layers[2].note == "skipped (QuantizeOptions::skip)");
  CHECK(r.layers[2].device == "host");
  CHECK(r.vta_mac_share() < 1.0);
  CHECK(r.vta_mac_share() > 0.9);  // the convolutions hold nearly all the MACs
  const auto strict = dlavm::quantize(cnn(), calib, {.min_sqnr_db = 500});
  for (const auto& l : strict.layers) {
    CHECK(!l.quantized);
    CHECK(l.note.find("below min_sqnr_db = 500") != std::string::npos);
  }
  // the table and the plot name every layer
  const auto table = r.table();
  for (const auto& l : r.layers) CHECK(table.find(l.name) != std::string::npos);
  const auto svg = r.svg();
  CHECK(svg.starts_with("<svg"));
  std::size_t rects = 0;
  for (std::size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1))
    ++rects;
  CHECK(rects == r.layers.size());
}

TEST_CASE("quantize: layers reading one float value share its quantization") {
  auto x = graph::input("x", {1, 16, 6, 6}, DType::float32());
  auto a = graph::conv2d(x, weight("wa", {16, 16, 1, 1}, 1, 0.3));
  auto b = graph::conv2d(x, weight("wb", {16, 16, 3, 3}, 2, 0.2), {.padding = {1, 1, 1, 1}});
  const auto fn = graph::function({x}, {graph::add(a, b)});
  std::vector<q::Sample> calib;
  for (std::uint64_t k = 0; k < 3; ++k)
    calib.push_back({{{"x", NDArray::random_float({1, 16, 6, 6}, 40 + k, -1, 1)}}});
  const auto r = dlavm::quantize(fn, calib);
  int quantizes = 0;
  for (const auto& e : graph::post_order(r.function.results()))
    if (const auto* c = e.as<graph::CallNode>()) quantizes += c->op() == "quantize_linear";
  CHECK(quantizes == 1);
  CHECK(r.layers[0].input_scale == r.layers[1].input_scale);
}

TEST_CASE("quantize: samples are streamed, each asked for once per pass") {
  std::size_t asked = 0;
  const q::SampleSource source{10, [&](std::size_t k) {
                                 ++asked;
                                 return samples(1, 300 + k)[0];
                               }};
  dlavm::quantize(cnn(), source, {.report_samples = 2});
  CHECK(asked == 10 * 2 + 2 * 1);  // two passes, then the report's samples (one round)
}

TEST_CASE("quantize: bad samples are errors naming the sample and the input") {
  const auto fn = cnn();
  CHECK_THROWS_WITH_AS(dlavm::quantize(fn, std::vector<q::Sample>{}),
                       "dlavm::quantize: no calibration samples (at least one is needed)",
                       dlavm::ValueError);
  auto bad = samples(3);
  bad[1].inputs[0].second.fdata()[17] = std::nanf("");
  CHECK_THROWS_WITH_AS(dlavm::quantize(fn, bad),
                       "calibration sample 1: input 'image' holds nan at element 17",
                       dlavm::ValueError);
  bad = samples(3);
  bad[2].inputs[0].second.fdata()[3] = -INFINITY;
  CHECK_THROWS_WITH_AS(dlavm::quantize(fn, bad),
                       "calibration sample 2: input 'image' holds -inf at element 3",
                       dlavm::ValueError);
  bad = samples(3);
  bad[2].inputs[0].second = NDArray::random_float({1, 3, 16, 8}, 1, -1, 1);
  CHECK_THROWS_WITH_AS(dlavm::quantize(fn, bad), doctest::Contains("calibration sample 2: "),
                       dlavm::ShapeError);
  bad = samples(3);
  bad[0].inputs[0].second = NDArray::random(DType::int8(), {1, 3, 16, 16}, 1);
  CHECK_THROWS_WITH_AS(dlavm::quantize(fn, bad),
                       "calibration sample 0: input 'image' is int8; the model takes float32",
                       dlavm::TypeError);
  bad = samples(3);
  bad[1].inputs[0].first = "picture";
  CHECK_THROWS_WITH_AS(dlavm::quantize(fn, bad), "calibration sample 1: input 'image' is missing",
                       dlavm::ValueError);
  bad = samples(3);
  bad[1].inputs.push_back({"extra", NDArray::random_float({2}, 1, 0, 1)});
  CHECK_THROWS_WITH_AS(dlavm::quantize(fn, bad),
                       "calibration sample 1: the model has no input 'extra'", dlavm::ValueError);
}

}  // namespace quantize_test

namespace quantize_property_test {

namespace graph = dlavm::graph;
namespace q = dlavm::quantization;
using dlavm::DType;
using dlavm::te::NDArray;

// A random float network: 1 to 3 convolutions (channels, kernel 1 or 3, stride 1 or 2,
// padding, a bias or a batch norm or neither, relu / clip / none), sometimes a residual add
// of two branches, then a global pool and a dense layer (with or without a bias).
struct RandomNet {
  graph::Function fn;
  std::vector<std::int64_t> input_shape;
};

RandomNet random_net(std::mt19937_64& rng, std::uint64_t seed) {
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  std::int64_t c = pick(1, 20), hw = pick(4, 12);
  const std::vector<std::int64_t> input_shape = {1, c, hw, hw};
  auto x = graph::input("x", {1, c, hw, hw}, DType::float32());
  graph::Expr y = x;
  const auto layers = pick(1, 3);
  for (std::int64_t k = 0; k < layers; ++k) {
    const std::int64_t out = pick(1, 40), kernel = hw < 3 || pick(0, 1) == 0 ? 1 : 3;
    const std::int64_t stride = hw >= 4 ? pick(1, 2) : 1, pad = kernel == 3 ? pick(0, 1) : 0;
    const double range = 1.5 / std::sqrt(static_cast<double>(c * kernel * kernel));
    const auto name = [&](const char* what) { return fmt::format("{}{}", what, k); };
    y = graph::conv2d(
        y,
        graph::constant(name("w"), NDArray::random_float({out, c, kernel, kernel}, seed + 10 * k,
                                                         -range, range)),
        {.strides = {stride, stride}, .padding = {pad, pad, pad, pad}});
    switch (pick(0, 2)) {
      case 0:
        y = graph::bias_add(
            y,
            graph::constant(name("b"), NDArray::random_float({out}, seed + 10 * k + 1, -0.2, 0.2)));
        break;
      case 1:
        y = graph::batch_norm(
            y,
            graph::constant(name("g"), NDArray::random_float({out}, seed + 10 * k + 2, 0.5, 1.5)),
            graph::constant(name("be"), NDArray::random_float({out}, seed + 10 * k + 3, -0.2, 0.2)),
            graph::constant(name("m"), NDArray::random_float({out}, seed + 10 * k + 4, -0.2, 0.2)),
            graph::constant(name("v"), NDArray::random_float({out}, seed + 10 * k + 5, 0.5, 1.5)));
        break;
      default:
        break;
    }
    switch (pick(0, 2)) {
      case 0:
        y = graph::relu(y);
        break;
      case 1:
        y = graph::clip(y, {.lo = -0.5, .hi = 2.0});
        break;
      default:
        break;
    }
    hw = (hw + 2 * pad - kernel) / stride + 1;
    c = out;
  }
  if (pick(0, 2) == 0) {  // a residual add of a 1x1 branch
    auto branch = graph::conv2d(
        y, graph::constant("wr", NDArray::random_float({c, c, 1, 1}, seed + 99, -0.5, 0.5)));
    y = graph::add(y, graph::relu(branch));
  }
  const std::int64_t classes = pick(2, 12);
  y = graph::dense(
      graph::flatten(graph::global_avg_pool2d(y)),
      graph::constant("fc", NDArray::random_float({classes, c}, seed + 98, -0.5, 0.5)));
  if (pick(0, 1) == 0)
    y = graph::bias_add(
        y, graph::constant("fcb", NDArray::random_float({classes}, seed + 97, -0.1, 0.1)),
        {.axis = -1});
  return RandomNet{graph::function({x}, {y}), input_shape};
}

TEST_CASE("property: random float networks quantize, run on VTA as on the host, near the float") {
  std::mt19937_64 rng(2026);
  const int cases = DLAVM_TEST_SANITIZED ? 8 : 30;
  const graph::Target target;
  dlavm::vta::SimDevice dev(target.env.config);
  int low = 0;
  std::vector<double> sqnrs;
  for (int n = 0; n < cases; ++n) {
    const auto net = random_net(rng, static_cast<std::uint64_t>(1000 * n));
    CAPTURE(n);
    std::vector<q::Sample> calib;
    for (std::uint64_t k = 0; k < 6; ++k)
      calib.push_back({{{"x", NDArray::random_float(net.input_shape, 50 * n + k, -1, 1)}}});
    const auto method = std::array{q::Calibration::MinMax, q::Calibration::Percentile,
                                   q::Calibration::Entropy}[rng() % 3];
    const auto mode = rng() % 2 == 0 ? q::Requantize::Multiplier : q::Requantize::Shift;
    const auto activations = n % 2 == 0 ? q::Activations::Symmetric : q::Activations::Asymmetric;
    CAPTURE(q::to_string(method));
    CAPTURE(q::to_string(mode));
    CAPTURE(q::to_string(activations));
    const auto result = dlavm::quantize(
        net.fn, calib,
        {.calibration = {.method = method}, .requantize = mode, .activations = activations});
    for (const auto& l : result.layers) CHECK(l.quantized);
    CHECK(result.vta_mac_share() == 1.0);
    auto mod = graph::build(result.function, target, {.name = "random"});
    graph::Executor exec(mod, dev);
    std::vector<q::Sample> test;
    for (std::uint64_t k = 0; k < 3; ++k)
      test.push_back({{{"x", NDArray::random_float(net.input_shape, 7000 + 50 * n + k, -1, 1)}}});
    // int8 all through: the output follows the float model's (a few networks whose logits
    // are all near 0 may fall lower; most must not)
    const double sqnr = quantize_test::checked_sqnr_db(exec, result.function, net.fn, test);
    CAPTURE(sqnr);
    CHECK(sqnr > 5);
    low += sqnr < 15;
    sqnrs.push_back(sqnr);
  }
  CHECK(low * 4 <= cases);  // (8 cases under the sanitizers: at most 2)
  std::ranges::sort(sqnrs);
  MESSAGE(fmt::format("{} random networks: output SQNR {:.1f} dB at the least, {:.1f} dB median",
                      cases, sqnrs.front(), sqnrs[sqnrs.size() / 2]));
}

}  // namespace quantize_property_test
