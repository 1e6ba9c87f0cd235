// Quantized CNNs written as ONNX models in QDQ form (what onnxruntime's quantizer produces):
// every Conv between DequantizeLinear nodes (uint8 activations, int8 weights with one scale
// per output channel, int32 biases) and a QuantizeLinear, a ReLU between a DequantizeLinear and
// a QuantizeLinear, then a global average pool and a float classifier. The example
// onnx_import, tests/onnx and bench/onnx share them.
//
//   auto model = qdq_models::cnn(qdq_models::small_cnn(), 7);    // an ::onnx::ModelProto
//   model.SerializeToOstream(&file);
#pragma once

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace qdq_models {

struct ConvSpec {
  std::int64_t out_channels, kernel, stride;
  std::int64_t pad_top, pad_left, pad_bottom, pad_right;
};

struct CnnSpec {
  std::int64_t channels = 3, height = 32, width = 32;
  std::string batch = "batch";  // the batch dim's dim_param
  std::vector<ConvSpec> convs;
  std::int64_t classes = 10;
};

// Two strided convolutions with asymmetric padding, the test's and the example's network.
inline CnnSpec small_cnn() {
  CnnSpec s;
  s.convs = {{16, 3, 2, 1, 1, 2, 2}, {32, 3, 1, 0, 0, 1, 1}, {32, 1, 1, 0, 0, 0, 0}};
  return s;
}

// ResNet-18's twenty convolutions (224 x 224 input) as one chain: a ResNet-18-sized model for
// the import and build benchmark.
inline CnnSpec resnet18_sized() {
  CnnSpec s;
  s.height = s.width = 224;
  s.convs.push_back({64, 7, 2, 3, 3, 3, 3});
  const std::int64_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage)
    for (int layer = 0; layer < 4; ++layer) {
      const bool down = stage > 0 && layer == 0;
      s.convs.push_back({widths[stage], 3, down ? 2 : 1, 1, 1, 1, 1});
    }
  s.convs.push_back({512, 1, 1, 0, 0, 0, 0});
  s.convs.push_back({512, 1, 1, 0, 0, 0, 0});
  s.convs.push_back({512, 1, 1, 0, 0, 0, 0});
  s.classes = 1000;
  return s;
}

namespace detail {

using TP = ::onnx::TensorProto;

class Writer {
 public:
  explicit Writer(std::uint64_t seed) : rng_(seed) {
    m_.set_ir_version(8);
    m_.set_producer_name("dlavm qdq_models");
    auto* o = m_.add_opset_import();
    o->set_domain("");
    o->set_version(13);
    g().set_name("qdq_cnn");
  }
  ::onnx::GraphProto& g() { return *m_.mutable_graph(); }
  ::onnx::ModelProto take() { return std::move(m_); }

  std::string scalar_float(const std::string& name, float v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(TP::FLOAT);
    t->add_float_data(v);
    return name;
  }
  std::string scalar_int(const std::string& name, int type, std::int32_t v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    t->add_int32_data(v);
    return name;
  }
  std::string tensor(const std::string& name, int type, std::vector<std::int64_t> dims,
                     std::int32_t lo, std::int32_t hi) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    std::int64_t n = 1;
    for (auto d : dims) {
      t->add_dims(d);
      n *= d;
    }
    // raw little-endian data, as exporters write weights
    const int bytes = type == TP::INT32 ? 4 : 1;
    std::string raw(static_cast<std::size_t>(n * bytes), '\0');
    std::uniform_int_distribution<std::int32_t> dist(lo, hi);
    for (std::int64_t i = 0; i < n; ++i) {
      const auto v = static_cast<std::uint32_t>(dist(rng_));
      for (int b = 0; b < bytes; ++b)
        raw[static_cast<std::size_t>(i * bytes + b)] = static_cast<char>((v >> (8 * b)) & 0xff);
    }
    t->set_raw_data(std::move(raw));
    return name;
  }
  std::string floats(const std::string& name, std::vector<std::int64_t> dims,
                     const std::vector<float>& v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(TP::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
    return name;
  }
  ::onnx::NodeProto& node(const std::string& op, const std::string& name,
                          std::vector<std::string> in, const std::string& out) {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : in) n->add_input(i);
    n->add_output(out);
    return *n;
  }
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng_); }

 private:
  ::onnx::ModelProto m_;
  std::mt19937_64 rng_;
};

inline void ints_attr(::onnx::NodeProto& n, const std::string& name, std::vector<std::int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
inline void int_attr(::onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

}  // namespace detail

// The model: input "image" float32 [batch, C, H, W]; outputs "features" (the last quantized
// activation, uint8) and "logits" (float32 [batch, classes]). Weights and scales from `seed`.
inline ::onnx::ModelProto cnn(const CnnSpec& spec, std::uint64_t seed) {
  detail::Writer w(seed);
  using TP = ::onnx::TensorProto;
  auto* in = w.g().add_input();
  in->set_name("image");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(TP::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param(spec.batch);
  for (auto d : {spec.channels, spec.height, spec.width})
    tt->mutable_shape()->add_dim()->set_dim_value(d);

  // activations: uint8 with a zero point near the middle; the scale keeps sums in range
  float act_scale = 1.0f / 64;
  std::string x = "image";
  w.node("QuantizeLinear", "quant_in",
         {x, w.scalar_float("s_in", act_scale), w.scalar_int("z_in", TP::UINT8, 120)}, "image_q");
  w.node("DequantizeLinear", "dequant_in", {"image_q", "s_in", "z_in"}, "image_dq");
  x = "image_dq";
  std::int64_t channels = spec.channels;
  for (std::size_t k = 0; k < spec.convs.size(); ++k) {
    const auto& c = spec.convs[k];
    const std::string p = "conv" + std::to_string(k);
    std::vector<float> ws;
    for (std::int64_t o = 0; o < c.out_channels; ++o) ws.push_back(w.uniform(0.002f, 0.02f));
    w.floats(p + "_ws", {c.out_channels}, ws);
    w.tensor(p + "_wq", TP::INT8, {c.out_channels, channels, c.kernel, c.kernel}, -127, 127);
    w.tensor(p + "_wz", TP::INT8, {c.out_channels}, 0, 0);
    auto& dqw = w.node("DequantizeLinear", p + "_dqw", {p + "_wq", p + "_ws", p + "_wz"}, p + "_w");
    detail::int_attr(dqw, "axis", 0);
    // the bias: int32 at scale act_scale * w_scale[c], zero point 0
    std::vector<float> bs;
    for (float s : ws) bs.push_back(act_scale * s);
    w.floats(p + "_bs", {c.out_channels}, bs);
    w.tensor(p + "_bq", TP::INT32, {c.out_channels}, -2000, 2000);
    w.tensor(p + "_bz", TP::INT32, {c.out_channels}, 0, 0);
    auto& dqb = w.node("DequantizeLinear", p + "_dqb", {p + "_bq", p + "_bs", p + "_bz"}, p + "_b");
    detail::int_attr(dqb, "axis", 0);
    auto& conv = w.node("Conv", p, {x, p + "_w", p + "_b"}, p + "_y");
    detail::ints_attr(conv, "kernel_shape", {c.kernel, c.kernel});
    detail::ints_attr(conv, "strides", {c.stride, c.stride});
    detail::ints_attr(conv, "pads", {c.pad_top, c.pad_left, c.pad_bottom, c.pad_right});
    // the output's scale: a typical sum's range over 256 levels
    const float out_scale =
        act_scale * 0.011f * std::sqrt(static_cast<float>(channels * c.kernel * c.kernel)) * 60;
    const std::int32_t zp = 100 + static_cast<std::int32_t>(k % 3) * 10;
    w.node("QuantizeLinear", p + "_q",
           {p + "_y", w.scalar_float(p + "_so", out_scale), w.scalar_int(p + "_zo", TP::UINT8, zp)},
           p + "_yq");
    w.node("DequantizeLinear", p + "_dq", {p + "_yq", p + "_so", p + "_zo"}, p + "_ydq");
    w.node("Relu", p + "_relu", {p + "_ydq"}, p + "_r");
    w.node("QuantizeLinear", p + "_rq", {p + "_r", p + "_so", p + "_zo"}, p + "_rq_out");
    w.node("DequantizeLinear", p + "_rdq", {p + "_rq_out", p + "_so", p + "_zo"}, p + "_out");
    x = p + "_out";
    act_scale = out_scale;
    channels = c.out_channels;
  }
  const std::string last_q =
      "conv" + std::to_string(spec.convs.size() - 1) + "_rq_out";  // uint8 features
  w.node("GlobalAveragePool", "pool", {x}, "pooled");
  w.node("Flatten", "flatten", {"pooled"}, "flat");
  std::vector<float> fc;
  for (std::int64_t i = 0; i < spec.classes * channels; ++i) fc.push_back(w.uniform(-0.1f, 0.1f));
  w.floats("fc_w", {spec.classes, channels}, fc);
  auto& gemm = w.node("Gemm", "fc", {"flat", "fc_w"}, "logits");
  detail::int_attr(gemm, "transB", 1);
  w.g().add_output()->set_name(last_q);
  w.g().add_output()->set_name("logits");
  return w.take();
}

}  // namespace qdq_models
