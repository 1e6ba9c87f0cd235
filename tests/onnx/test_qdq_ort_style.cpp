// Quantized models as ONNX Runtime writes them, on VTA with the default graph::Target:
//   - QDQ (examples/onnx_import/qdq_models.hpp's ort_cnn): each Conv -> Relu / Clip ->
//     QuantizeLinear folded into an integer convolution whose activation is a clamp of the
//     quantized result, a QuantizeLinear read by two consumers, a quantized Gemm classifier
//     as a dense layer; >= 95% of the multiply-accumulates on VTA, and the VTA run against the
//     same model imported without folding (float convolutions between the QDQ pairs, on the
//     host): the logits within one quantization step;
//   - QOperator (com.microsoft): QGemm, QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
//     QLinearConcat, QLinearSigmoid and QLinearLeakyRelu against references computed here
//     from their definitions.
// tests/onnx/real_models/run.sh holds the QDQ CNN against ONNX Runtime itself (a long test).
#include <dlavm/graph.hpp>
#include <dlavm/onnx/import.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include "../../examples/onnx_import/mac_split.hpp"
#include "../../examples/onnx_import/qdq_models.hpp"
#include "model_builder.hpp"
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace onnx_qdq_ort_style {

using namespace dlavm;
using onnx_test::ModelBuilder;
using te::NDArray;
using TP = ::onnx::TensorProto;

graph::Function import_model(const ::onnx::ModelProto& m, bool fold = true) {
  const std::string bytes = m.SerializeAsString();
  return dlavm::onnx::import(
      std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
      {.dims = {{"batch", {1, 4}}}, .fold_qdq = fold}, "ort_qdq_cnn.onnx");
}

std::map<std::string, int> op_counts(const graph::Function& fn) {
  std::map<std::string, int> n;
  for (const auto& e : graph::post_order(fn.results()))
    if (const auto* c = e.as<graph::CallNode>()) ++n[c->op()];
  return n;
}

TEST_CASE("an ONNX Runtime-style QDQ CNN runs >= 95% of its MACs on VTA by default") {
  const auto spec = qdq_models::ort_style(qdq_models::small_cnn());
  const auto model = qdq_models::ort_cnn(spec, 11);
  const auto fn = import_model(model);
  const auto ops = op_counts(fn);
  // every convolution and the classifier folded: one rescale each, an activation clamp per
  // convolution, no float convolution or dense layer left
  CHECK(ops.at("rescale") == static_cast<int>(spec.convs.size()) + 1);
  CHECK(ops.at("clip") == static_cast<int>(spec.convs.size()));
  const graph::Target target;  // the default: int32 sums leave VTA as byte planes
  const auto typed = graph::infer_type(fn, target);
  for (const auto& e : graph::post_order(typed.results()))
    if (const auto* c = e.as<graph::CallNode>();
        c != nullptr && (c->op() == "conv2d" || c->op() == "dense"))
      CHECK(e.type().dtype == DType::int32());
  const double share = qdq_models::mac_split(typed).vta_share();
  CHECK(share >= 0.95);
  // the same model without folding: float convolutions, all on the host
  CHECK(qdq_models::mac_split(graph::infer_type(import_model(model, false), target)).vta_share() ==
        0.0);
}

TEST_CASE("the ONNX Runtime-style QDQ CNN on VTA equals its float QDQ form within a step") {
  const auto spec = qdq_models::ort_style(qdq_models::small_cnn());
  const auto model = qdq_models::ort_cnn(spec, 11);
  const graph::Target target;
  auto folded = graph::build(graph::infer_type(import_model(model), target), target, {.name = "q"});
  auto unfolded =
      graph::build(graph::infer_type(import_model(model, false), target), target, {.name = "f"});
  vta::SimDevice dev(target.env.config);
  graph::Executor on_vta(folded, dev), on_host(unfolded, dev);
  // the logits' quantization step: the scale of their QuantizeLinear
  float step = 0;
  for (const auto& t : model.graph().initializer())
    if (t.name() == "fc_so") step = t.float_data(0);
  REQUIRE(step > 0);
  int equal = 0, total = 0;
  std::set<float> levels;
  for (std::int64_t batch : {1, 3}) {
    const auto image = NDArray::random_float({batch, spec.channels, spec.height, spec.width},
                                             static_cast<std::uint64_t>(batch + 40), 0.0, 1.0);
    const auto a = on_vta.run({{"image", image}}, {{"batch", batch}});
    const auto b = on_host.run({{"image", image}}, {{"batch", batch}});
    REQUIRE(a.size() == 2);
    CHECK(a[0].dtype() == DType::uint8());
    REQUIRE(a[1].shape() == b[1].shape());
    for (std::size_t k = 0; k < a[1].size(); ++k) {
      const float x = a[1].fdata()[k], y = b[1].fdata()[k];
      CHECK_MESSAGE(std::abs(x - y) <= step * 1.001f, "logit ", k, ": ", x, " vs ", y);
      equal += x == y;
      ++total;
      levels.insert(x);
    }
  }
  // a meaningful comparison: logits over many levels, nearly all equal (the float form rounds
  // each float32 sum; a sum near a rounding tie may land on the other side)
  CHECK(levels.size() >= 15);
  CHECK(equal >= total * 9 / 10);
}

TEST_CASE("QDQ folding: Clip bounds become clamps in quantized units; Gemm a QGemm") {
  ModelBuilder b;
  b.input("x", {std::int64_t{2}, std::int64_t{16}});
  auto q8 = [&](const std::string& name, int type, std::int32_t v) {
    auto* t = b.g().add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_int32_data(v);
  };
  b.initializer("sx", {}, {0.05f});
  q8("zx", TP::UINT8, 128);
  b.node("QuantizeLinear", {"x", "sx", "zx"}, {"xq"});
  b.node("DequantizeLinear", {"xq", "sx", "zx"}, {"xd"});
  auto* w = b.g().add_initializer();
  w->set_name("wq");
  w->set_data_type(TP::INT8);
  w->add_dims(8);
  w->add_dims(16);
  for (int k = 0; k < 8 * 16; ++k) w->add_int32_data((k * 37) % 255 - 127);
  b.initializer("sw", {}, {0.01f});
  q8("zw", TP::INT8, 0);
  b.node("DequantizeLinear", {"wq", "sw", "zw"}, {"wd"});
  auto& g = b.node("Gemm", {"xd", "wd"}, {"y"}, "fc");
  onnx_test::set_int(g, "transB", 1);
  b.initializer("lo", {}, {-0.5f});
  b.initializer("hi", {}, {0.75f});
  b.node("Clip", {"y", "lo", "hi"}, {"yc"});
  b.initializer("sy", {}, {0.02f});
  q8("zy", TP::UINT8, 100);
  b.node("QuantizeLinear", {"yc", "sy", "zy"}, {"yq"});
  b.output("yq");
  const auto fn = b.import();
  const auto ops = op_counts(fn);
  CHECK(ops.count("dense") == 1);
  CHECK(ops.count("rescale") == 1);
  // Q(-0.5) = -25 + 100 = 75, Q(0.75) = 37.5 -> 38 (half to even) + 100 = 138
  for (const auto& e : graph::post_order(fn.results()))
    if (const auto* c = e.as<graph::CallNode>(); c != nullptr && c->op() == "clip") {
      CHECK(c->attrs.get_float("lo") == 75);
      CHECK(c->attrs.get_float("hi") == 138);
    }
  // against the float form, on random inputs: equal, or one step apart at a tie
  const auto x = NDArray::random_float({2, 16}, 5, -4.0, 4.0);
  const graph::Target target;
  const auto run = [&](const graph::Function& f) {
    return graph::evaluate(graph::infer_type(f, target), {{"x", x}}, {})[0];
  };
  const auto got = run(fn), want = run(b.import({.fold_qdq = false}));
  for (std::size_t k = 0; k < got.size(); ++k) {
    CHECK(std::abs(got.data()[k] - want.data()[k]) <= 1);
    CHECK(got.data()[k] >= 75);
    CHECK(got.data()[k] <= 138);
  }
}

TEST_CASE("QDQ folding: MaxPool, Concat and Reshape between pairs of one quantization") {
  ModelBuilder b;
  b.input("x", {std::int64_t{1}, std::int64_t{4}, std::int64_t{6}, std::int64_t{6}});
  auto* z = b.g().add_initializer();
  z->set_name("z");
  z->set_data_type(TP::UINT8);
  z->add_int32_data(90);
  b.initializer("s", {}, {0.03f});
  b.initializer("s2", {}, {0.05f});
  b.node("QuantizeLinear", {"x", "s", "z"}, {"xq"});
  b.node("DequantizeLinear", {"xq", "s", "z"}, {"xd"});
  auto& pool = b.node("MaxPool", {"xd"}, {"p"}, "pool");
  onnx_test::set_ints(pool, "kernel_shape", {3, 3});
  onnx_test::set_ints(pool, "pads", {1, 1, 1, 1});
  onnx_test::set_ints(pool, "strides", {2, 2});
  b.node("QuantizeLinear", {"p", "s", "z"}, {"pq"});
  b.node("DequantizeLinear", {"pq", "s", "z"}, {"pd"});
  auto& cat = b.node("Concat", {"pd", "pd"}, {"c"}, "cat");
  onnx_test::set_int(cat, "axis", 1);
  b.node("QuantizeLinear", {"c", "s", "z"}, {"cq"});
  // a Reshape whose QuantizeLinear has another scale stays in float
  b.node("DequantizeLinear", {"cq", "s", "z"}, {"cd"});
  b.ints("shape", {1, -1});
  b.node("Reshape", {"cd", "shape"}, {"r"}, "reshape");
  b.node("QuantizeLinear", {"r", "s2", "z"}, {"rq"});
  b.output("cq");
  b.output("rq");
  const auto fn = b.import();
  const auto ops = op_counts(fn);
  CHECK(ops.count("max_pool2d") == 1);
  CHECK(ops.count("concat") == 1);
  // the input's quantization, the reshape's pair; none around the pool and the concat
  CHECK(ops.at("quantize_linear") == 2);
  CHECK(ops.at("dequantize_linear") == 1);
  const auto x = NDArray::random_float({1, 4, 6, 6}, 8, -3.0, 5.0);
  const graph::Target target;
  const auto run = [&](const graph::Function& f) {
    return graph::evaluate(graph::infer_type(f, target), {{"x", x}}, {});
  };
  const auto got = run(fn), want = run(b.import({.fold_qdq = false}));
  REQUIRE(got.size() == 2);
  for (std::size_t k = 0; k < 2; ++k) {
    CHECK(got[k].dtype() == DType::uint8());
    CHECK(got[k].shape() == want[k].shape());
    CHECK(std::ranges::equal(got[k].data(), want[k].data()));
  }
}

TEST_CASE("QDQ: MaxPool on VTA, an Add of equal scales in integers, as the float path computes") {
  // int8 activations (ONNX Runtime's quantizer with activation_type QInt8; VTA max-pools
  // int8, so a uint8 MaxPool stays on the host)
  // x (int8) -> DequantizeLinear -> MaxPool 3x3 (stride 1, pad 1) -> QuantizeLinear ->
  // DequantizeLinear -> Add (+ x dequantized) -> Relu -> QuantizeLinear, one quantization;
  // a second Add whose output scale is not a power-of-two ratio of its inputs' stays float
  ModelBuilder b;
  b.input("x", {std::int64_t{1}, std::int64_t{16}, std::int64_t{8}, std::int64_t{8}}, TP::INT8);
  auto* z = b.g().add_initializer();
  z->set_name("z");
  z->set_data_type(TP::INT8);
  z->add_int32_data(-5);
  b.initializer("s", {}, {0.03f});
  b.initializer("s3", {}, {0.07f});
  b.node("DequantizeLinear", {"x", "s", "z"}, {"xd"});
  auto& pool = b.node("MaxPool", {"xd"}, {"p"}, "pool");
  onnx_test::set_ints(pool, "kernel_shape", {3, 3});
  onnx_test::set_ints(pool, "pads", {1, 1, 1, 1});
  b.node("QuantizeLinear", {"p", "s", "z"}, {"pq"});
  b.node("DequantizeLinear", {"pq", "s", "z"}, {"pd"});
  b.node("Add", {"pd", "xd"}, {"sum"}, "add");
  b.node("Relu", {"sum"}, {"r"}, "relu");
  b.node("QuantizeLinear", {"r", "s", "z"}, {"y"});
  b.node("DequantizeLinear", {"y", "s", "z"}, {"yd"});
  b.node("Add", {"yd", "xd"}, {"sum2"}, "add2");
  b.node("QuantizeLinear", {"sum2", "s3", "z"}, {"y2"});
  b.output("y");
  b.output("y2");
  const graph::Target target;
  const auto placed = graph::infer_type(b.import(), target);
  int int_adds = 0, float_adds = 0;
  for (const auto& e : graph::post_order(placed.results()))
    if (const auto* c = e.as<graph::CallNode>()) {
      if (c->op() == "max_pool2d") CHECK(e.device() == graph::Device::Vta);
      if (c->op() == "add") (e.type().dtype.is_float() ? float_adds : int_adds) += 1;
    }
  // the first Add: the zero points out, the sum, the zero point in; the second stays float
  CHECK(int_adds >= 2);
  CHECK(float_adds == 1);
  // against the float path: the same model unfolded, the pass left out
  const auto float_path =
      graph::run_passes(b.import({.fold_qdq = false}), target, graph::default_passes(),
                        {.disabled = {"fake_quantization_to_integer"}});
  auto mod = graph::build(placed, target, {.name = "qdq_add"});
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    const auto x = NDArray::random(DType::int8(), {1, 16, 8, 8}, 60 + seed);
    const auto want = graph::evaluate(float_path, {{"x", x}}, {});
    const auto got = exec.run({{"x", x}});
    REQUIRE(got.size() == 2);
    CHECK(got[0] == want[0]);
    CHECK(got[1] == want[1]);
  }
}

// ---- QOperator (com.microsoft) -----------------------------------------------------------

struct QModel {
  ModelBuilder b;
  QModel() {
    auto* o = b.m.add_opset_import();
    o->set_domain("com.microsoft");
    o->set_version(1);
  }
  void scale(const std::string& name, float v) { b.initializer(name, {}, {v}); }
  void zero(const std::string& name, std::int32_t v) {
    auto* t = b.g().add_initializer();
    t->set_name(name);
    t->set_data_type(TP::UINT8);
    t->add_int32_data(v);
  }
  ::onnx::NodeProto& node(const std::string& op, std::vector<std::string> in,
                          const std::string& out) {
    auto& n = b.node(op, std::move(in), {out}, op);
    n.set_domain("com.microsoft");
    return n;
  }
};

float dq(std::int64_t q, float s, std::int64_t z) { return static_cast<float>(q - z) * s; }
std::int64_t qz(float y, float s, std::int64_t z) {
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::nearbyint(y / s)) + z, 0, 255);
}

TEST_CASE("QOperator: QLinearAdd, Mul, Sigmoid, LeakyRelu, GlobalAveragePool, Concat") {
  QModel m;
  m.b.input("a", {std::int64_t{1}, std::int64_t{4}, std::int64_t{3}, std::int64_t{3}}, TP::UINT8);
  m.b.input("c", {std::int64_t{1}, std::int64_t{4}, std::int64_t{3}, std::int64_t{3}}, TP::UINT8);
  m.scale("sa", 0.04f), m.zero("za", 120), m.scale("sc", 0.03f), m.zero("zc", 10);
  m.scale("sy", 0.05f), m.zero("zy", 128);
  m.node("QLinearAdd", {"a", "sa", "za", "c", "sc", "zc", "sy", "zy"}, "add");
  m.node("QLinearMul", {"a", "sa", "za", "c", "sc", "zc", "sy", "zy"}, "mul");
  m.scale("ss", 1.0f / 256), m.zero("zs", 0);
  m.node("QLinearSigmoid", {"a", "sa", "za", "ss", "zs"}, "sig");
  auto& lr = m.node("QLinearLeakyRelu", {"a", "sa", "za", "sy", "zy"}, "leaky");
  auto* alpha = lr.add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(::onnx::AttributeProto::FLOAT);
  alpha->set_f(0.2f);
  m.node("QLinearGlobalAveragePool", {"a", "sa", "za", "sy", "zy"}, "gap");
  // concat: one input at the output's parameters, one not
  auto& cat = m.node("QLinearConcat", {"sy", "zy", "add", "sy", "zy", "a", "sa", "za"}, "cat");
  onnx_test::set_int(cat, "axis", 1);
  for (const char* o : {"add", "mul", "sig", "leaky", "gap", "cat"}) m.b.output(o);
  const auto fn = m.b.import();
  const auto a = NDArray::random(DType::uint8(), {1, 4, 3, 3}, 3);
  const auto c = NDArray::random(DType::uint8(), {1, 4, 3, 3}, 4);
  const graph::Target target;
  const auto out = graph::evaluate(graph::infer_type(fn, target), {{"a", a}, {"c", c}}, {});
  REQUIRE(out.size() == 6);
  const auto av = a.data(), cv = c.data();
  for (std::size_t k = 0; k < av.size(); ++k) {
    const float x = dq(av[k], 0.04f, 120), y = dq(cv[k], 0.03f, 10);
    CHECK(out[0].data()[k] == qz(x + y, 0.05f, 128));
    CHECK(out[1].data()[k] == qz(x * y, 0.05f, 128));
    CHECK(std::abs(out[2].data()[k] - qz(1.0f / (1.0f + std::exp(-x)), 1.0f / 256, 0)) <= 1);
    CHECK(out[3].data()[k] == qz(x >= 0 ? x : 0.2f * x, 0.05f, 128));
    // concat: the sum's integers as they are, then a's requantized
    CHECK(out[5].data()[k] == out[0].data()[k]);
    CHECK(out[5].data()[k + av.size()] == qz(x, 0.05f, 128));
  }
  for (std::size_t ch = 0; ch < 4; ++ch) {
    float s = 0;
    for (std::size_t k = 0; k < 9; ++k) s += dq(av[ch * 9 + k], 0.04f, 120);
    CHECK(std::abs(out[4].data()[ch] - qz(s / 9, 0.05f, 128)) <= 1);
  }
}

TEST_CASE("QOperator: QGemm with and without y_scale, transB, an int32 bias") {
  for (const bool quantized_out : {true, false}) {
    QModel m;
    m.b.input("a", {std::int64_t{3}, std::int64_t{20}}, TP::UINT8);
    m.scale("sa", 0.05f), m.zero("za", 100), m.scale("sb", 0.01f);
    auto* w = m.b.g().add_initializer();
    w->set_name("b");
    w->set_data_type(TP::INT8);
    w->add_dims(5);
    w->add_dims(20);
    for (int k = 0; k < 100; ++k) w->add_int32_data((k * 53) % 255 - 127);
    auto* zb = m.b.g().add_initializer();
    zb->set_name("zb");
    zb->set_data_type(TP::INT8);
    zb->add_int32_data(0);
    auto* bias = m.b.g().add_initializer();
    bias->set_name("bias");
    bias->set_data_type(TP::INT32);
    bias->add_dims(5);
    for (int k = 0; k < 5; ++k) bias->add_int32_data(k * 300 - 700);
    m.scale("sy", 0.3f), m.zero("zy", 128);
    std::vector<std::string> in = {"a", "sa", "za", "b", "sb", "zb", "bias"};
    if (quantized_out) in.insert(in.end(), {"sy", "zy"});
    auto& g = m.node("QGemm", in, "y");
    onnx_test::set_int(g, "transB", 1);
    m.b.output("y");
    const graph::Target target;
    const auto typed = graph::infer_type(m.b.import(), target);
    CHECK(qdq_models::mac_split(typed).vta_share() == 1.0);  // the product runs on VTA
    auto mod = graph::build(typed, target, {.name = "qgemm"});
    vta::SimDevice dev(target.env.config);
    graph::Executor exec(mod, dev);
    const auto a = NDArray::random(DType::uint8(), {3, 20}, 9);
    const auto y = exec.run({{"a", a}}, {})[0];
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 5; ++j) {
        std::int64_t acc = j * 300 - 700;
        for (std::int64_t k = 0; k < 20; ++k)
          acc += (a.data()[static_cast<std::size_t>(i * 20 + k)] - 100) *
                 ((j * 20 + k) * 53 % 255 - 127);
        const auto at = static_cast<std::size_t>(i * 5 + j);
        if (quantized_out) {
          const float mult = (0.05f * 0.01f) / 0.3f;
          CHECK(y.data()[at] == qz(static_cast<float>(acc) * mult, 1.0f, 128));
        } else {
          CHECK(y.fdata()[at] == doctest::Approx(static_cast<float>(acc) * (0.05f * 0.01f)));
        }
      }
  }
}

TEST_CASE("QOperator: refusals name the node and the reason") {
  QModel m;
  m.b.input("a", {std::int64_t{2}, std::int64_t{4}}, TP::UINT8);
  m.node("QLinearSoftmax", {"a"}, "y");
  m.b.output("y");
  CHECK_THROWS_WITH_AS(m.b.import(),
                       doctest::Contains("node 'QLinearSoftmax' (QLinearSoftmax): the importer "
                                         "converts com.microsoft's QGemm"),
                       dlavm::onnx::NotSupported);
}

}  // namespace onnx_qdq_ort_style
