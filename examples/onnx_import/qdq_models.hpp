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
  // imports ONNX Runtime's com.microsoft domain (version 1) too
  ::onnx::OperatorSetIdProto* import_microsoft_domain() {
    auto* o = m_.add_opset_import();
    o->set_domain("com.microsoft");
    o->set_version(1);
    return o;
  }
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

// The same network as ONNX Runtime's quantizer writes it (quantize_static, QDQ format): no
// QuantizeLinear between a Conv and its activation (Relu, or Clip 0..6 for every second
// convolution: ReLU6), so each Conv's output passes through the activation before its
// QuantizeLinear; a residual Add between QDQ pairs over the second-to-last convolution's
// output, whose QuantizeLinear therefore has two consumers (a DequantizeLinear each); global
// average pooling between QDQ pairs; and the classifier a quantized Gemm (int8 weights per
// output channel, transB, an int32 bias) whose output is quantized and dequantized. The
// residual needs the last two convolutions to keep the shape (stride 1, same channels, 1x1 or
// padded); `ort_style` of small_cnn() adds such a pair. Outputs: the last convolution's
// quantized features (uint8) and the dequantized logits.
inline CnnSpec ort_style(CnnSpec s) {
  const std::int64_t c = s.convs.back().out_channels;
  s.convs.push_back({c, 3, 1, 1, 1, 1, 1});
  s.convs.push_back({c, 1, 1, 0, 0, 0, 0});
  return s;
}

// `weight_max`: the weights' magnitude bound (127; 63 is the quantizer's reduce_range).
inline ::onnx::ModelProto ort_cnn(const CnnSpec& spec, std::uint64_t seed,
                                  std::int32_t weight_max = 127) {
  detail::Writer w(seed);
  using TP = ::onnx::TensorProto;
  auto* in = w.g().add_input();
  in->set_name("image");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(TP::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param(spec.batch);
  for (auto d : {spec.channels, spec.height, spec.width})
    tt->mutable_shape()->add_dim()->set_dim_value(d);
  float act_scale = 1.0f / 64;
  std::int32_t act_zp = 120;
  w.node("QuantizeLinear", "quant_in",
         {"image", w.scalar_float("s_in", act_scale), w.scalar_int("z_in", TP::UINT8, act_zp)},
         "image_q");
  w.node("DequantizeLinear", "dequant_in", {"image_q", "s_in", "z_in"}, "image_dq");
  w.floats("six", {}, {6.0f});
  w.floats("zero", {}, {0.0f});
  std::string x = "image_dq";
  std::string residual_q;  // the quantized output the residual Add reads again
  float residual_scale = 0;
  std::int32_t residual_zp = 0;
  std::int64_t channels = spec.channels;
  const std::size_t n = spec.convs.size();
  for (std::size_t k = 0; k < n; ++k) {
    const auto& c = spec.convs[k];
    const std::string p = "conv" + std::to_string(k);
    std::vector<float> ws;
    for (std::int64_t o = 0; o < c.out_channels; ++o) ws.push_back(w.uniform(0.002f, 0.02f));
    w.floats(p + "_ws", {c.out_channels}, ws);
    w.tensor(p + "_wq", TP::INT8, {c.out_channels, channels, c.kernel, c.kernel}, -weight_max,
             weight_max);
    w.tensor(p + "_wz", TP::INT8, {c.out_channels}, 0, 0);
    auto& dqw = w.node("DequantizeLinear", p + "_dqw", {p + "_wq", p + "_ws", p + "_wz"}, p + "_w");
    detail::int_attr(dqw, "axis", 0);
    std::vector<float> bs;
    for (float sc : ws) bs.push_back(act_scale * sc);
    w.floats(p + "_bs", {c.out_channels}, bs);
    w.tensor(p + "_bq", TP::INT32, {c.out_channels}, -2000, 2000);
    w.tensor(p + "_bz", TP::INT32, {c.out_channels}, 0, 0);
    auto& dqb = w.node("DequantizeLinear", p + "_dqb", {p + "_bq", p + "_bs", p + "_bz"}, p + "_b");
    detail::int_attr(dqb, "axis", 0);
    auto& conv = w.node("Conv", p, {x, p + "_w", p + "_b"}, p + "_y");
    detail::ints_attr(conv, "kernel_shape", {c.kernel, c.kernel});
    detail::ints_attr(conv, "strides", {c.stride, c.stride});
    detail::ints_attr(conv, "pads", {c.pad_top, c.pad_left, c.pad_bottom, c.pad_right});
    // the activation, then one QuantizeLinear: its scale covers the activation's range
    if (k % 2 == 0)
      w.node("Relu", p + "_relu", {p + "_y"}, p + "_a");
    else
      w.node("Clip", p + "_relu6", {p + "_y", "zero", "six"}, p + "_a");
    const float out_scale =
        act_scale * 0.011f * std::sqrt(static_cast<float>(channels * c.kernel * c.kernel)) * 30;
    const std::int32_t zp = 0;  // a ReLU's output: uint8 from 0
    w.node("QuantizeLinear", p + "_q",
           {p + "_a", w.scalar_float(p + "_so", out_scale), w.scalar_int(p + "_zo", TP::UINT8, zp)},
           p + "_aq");
    w.node("DequantizeLinear", p + "_dq", {p + "_aq", p + "_so", p + "_zo"}, p + "_out");
    x = p + "_out";
    act_scale = out_scale;
    act_zp = zp;
    channels = c.out_channels;
    if (k + 2 == n) {  // its quantized output read again by the residual Add
      residual_q = p + "_aq";
      residual_scale = out_scale;
      residual_zp = zp;
    }
  }
  // residual: the last convolution's output plus the one before it, between QDQ pairs
  w.node(
      "DequantizeLinear", "res_dq",
      {residual_q, "conv" + std::to_string(n - 2) + "_so", "conv" + std::to_string(n - 2) + "_zo"},
      "res_in");
  w.node("Add", "residual", {x, "res_in"}, "sum");
  const float sum_scale = act_scale + residual_scale;
  w.node("QuantizeLinear", "sum_q",
         {"sum", w.scalar_float("sum_s", sum_scale), w.scalar_int("sum_z", TP::UINT8, act_zp)},
         "sum_qv");
  w.node("DequantizeLinear", "sum_dq", {"sum_qv", "sum_s", "sum_z"}, "sum_out");
  (void)residual_zp;
  w.node("GlobalAveragePool", "pool", {"sum_out"}, "pooled");
  w.node("QuantizeLinear", "pool_q", {"pooled", "sum_s", "sum_z"}, "pooled_q");
  w.node("DequantizeLinear", "pool_dq", {"pooled_q", "sum_s", "sum_z"}, "pooled_dq");
  w.node("Flatten", "flatten", {"pooled_dq"}, "flat");
  // the classifier: int8 weights [classes, channels] per class, an int32 bias
  std::vector<float> fs;
  for (std::int64_t o = 0; o < spec.classes; ++o) fs.push_back(w.uniform(0.002f, 0.01f));
  w.floats("fc_ws", {spec.classes}, fs);
  w.tensor("fc_wq", TP::INT8, {spec.classes, channels}, -weight_max, weight_max);
  w.tensor("fc_wz", TP::INT8, {spec.classes}, 0, 0);
  auto& dqf = w.node("DequantizeLinear", "fc_dqw", {"fc_wq", "fc_ws", "fc_wz"}, "fc_w");
  detail::int_attr(dqf, "axis", 0);
  std::vector<float> fbs;
  for (float sc : fs) fbs.push_back(sum_scale * sc);
  w.floats("fc_bs", {spec.classes}, fbs);
  w.tensor("fc_bq", TP::INT32, {spec.classes}, -500, 500);
  w.tensor("fc_bz", TP::INT32, {spec.classes}, 0, 0);
  auto& dqfb = w.node("DequantizeLinear", "fc_dqb", {"fc_bq", "fc_bs", "fc_bz"}, "fc_b");
  detail::int_attr(dqfb, "axis", 0);
  auto& gemm = w.node("Gemm", "fc", {"flat", "fc_w", "fc_b"}, "fc_y");
  detail::int_attr(gemm, "transB", 1);
  const float logit_scale = sum_scale * 0.006f * std::sqrt(static_cast<float>(channels)) * 8;
  w.node("QuantizeLinear", "fc_q",
         {"fc_y", w.scalar_float("fc_so", logit_scale), w.scalar_int("fc_zo", TP::UINT8, 128)},
         "fc_yq");
  w.node("DequantizeLinear", "fc_dq", {"fc_yq", "fc_so", "fc_zo"}, "logits");
  w.g().add_output()->set_name("conv" + std::to_string(n - 1) + "_aq");  // uint8 features
  w.g().add_output()->set_name("logits");
  return w.take();
}

// A small network in ONNX Runtime's QOperator form (its com.microsoft domain): input "x"
// float32 [1, 8, 6, 6] minus 0.5 quantized to uint8, then QLinearLeakyRelu, QLinearSigmoid,
// QLinearAdd, QLinearMul, QLinearConcat (inputs of other scales), QLinearGlobalAveragePool, a
// Flatten and a QGemm (int8 weights, transB, an int32 bias). Outputs "cat" (uint8 [1, 16, 6, 6])
// and "y" (uint8 [1, 10]).
inline ::onnx::ModelProto qoperator_net(std::uint64_t seed) {
  detail::Writer w(seed);
  using TP = ::onnx::TensorProto;
  w.import_microsoft_domain();
  auto* in = w.g().add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(TP::FLOAT);
  for (std::int64_t d : {1, 8, 6, 6}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  const auto ms_node = [&](const std::string& op, std::vector<std::string> inputs,
                           const std::string& out) -> ::onnx::NodeProto& {
    auto& n = w.node(op, out, std::move(inputs), out);
    n.set_domain("com.microsoft");
    return n;
  };
  w.floats("half", {}, {0.5f});
  w.node("Sub", "center", {"x", "half"}, "xc");  // (the run's inputs are in [0, 1): both signs)
  w.node("QuantizeLinear", "quant",
         {"xc", w.scalar_float("sx", 0.008f), w.scalar_int("zx", TP::UINT8, 128)}, "xq");
  auto& leaky = ms_node(
      "QLinearLeakyRelu",
      {"xq", "sx", "zx", w.scalar_float("sl", 0.04f), w.scalar_int("zl", TP::UINT8, 60)}, "leaky");
  auto* alpha = leaky.add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(::onnx::AttributeProto::FLOAT);
  alpha->set_f(0.1f);
  ms_node("QLinearSigmoid",
          {"xq", "sx", "zx", w.scalar_float("ss", 1.0f / 256), w.scalar_int("zs", TP::UINT8, 0)},
          "sig");
  ms_node("QLinearAdd",
          {"leaky", "sl", "zl", "sig", "ss", "zs", w.scalar_float("sa", 0.05f),
           w.scalar_int("za", TP::UINT8, 50)},
          "sum");
  ms_node("QLinearMul",
          {"sum", "sa", "za", "xq", "sx", "zx", w.scalar_float("sm", 0.06f),
           w.scalar_int("zm", TP::UINT8, 128)},
          "prod");
  auto& cat = ms_node("QLinearConcat",
                      {w.scalar_float("sc", 0.07f), w.scalar_int("zc", TP::UINT8, 100), "prod",
                       "sm", "zm", "leaky", "sl", "zl"},
                      "cat");
  detail::int_attr(cat, "axis", 1);
  ms_node("QLinearGlobalAveragePool",
          {"cat", "sc", "zc", w.scalar_float("sp", 0.02f), w.scalar_int("zp", TP::UINT8, 90)},
          "pool");
  w.node("Flatten", "flatten", {"pool"}, "flat");
  w.tensor("wq", TP::INT8, {10, 16}, -127, 127);
  w.tensor("bq", TP::INT32, {10}, -3000, 3000);
  auto& gemm = ms_node(
      "QGemm",
      {"flat", "sp", "zp", "wq", w.scalar_float("sw", 0.01f), w.scalar_int("zw", TP::INT8, 0), "bq",
       w.scalar_float("sy", 0.05f), w.scalar_int("zy", TP::UINT8, 128)},
      "y");
  detail::int_attr(gemm, "transB", 1);
  w.g().add_output()->set_name("cat");
  w.g().add_output()->set_name("y");
  return w.take();
}

}  // namespace qdq_models
