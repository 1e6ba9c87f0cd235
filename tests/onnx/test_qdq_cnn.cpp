// A quantized CNN in QDQ form (examples/onnx_import/qdq_models.hpp: per-channel weight scales,
// asymmetric padding, a symbolic batch), written with ONNX's classes, imported, built and run
// on SimDevice, against a reference computed here directly from the model's initializers:
// ONNX's QuantizeLinear, the integer convolution with zero points and bias, QLinearConv's
// rescale, the ReLU between a DequantizeLinear and a QuantizeLinear, the average pool and the
// classifier. The quantized features must match bit for bit, the float logits within 1e-4.
#include <dlavm/graph.hpp>
#include <dlavm/onnx/import.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include "../../examples/onnx_import/mac_split.hpp"
#include "../../examples/onnx_import/qdq_models.hpp"
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

namespace onnx_qdq_cnn {

using namespace dlavm;
namespace importer = dlavm::onnx;
using te::NDArray;

struct Reference {
  std::map<std::string, NDArray> init;
  explicit Reference(const ::onnx::ModelProto& m) {
    for (const auto& t : m.graph().initializer()) {
      const std::string bytes = t.SerializeAsString();
      init.emplace(t.name(),
                   importer::read_tensor(std::span(
                       reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size())));
    }
  }
  float f(const std::string& n) const { return init.at(n).fdata()[0]; }
  std::int64_t i(const std::string& n) const { return init.at(n).data()[0]; }

  static std::int64_t quantize(float x, float s, std::int64_t z) {
    const double r = std::nearbyint(static_cast<double>(x / s));
    return static_cast<std::int64_t>(std::clamp(r + static_cast<double>(z), 0.0, 255.0));
  }

  // features (uint8, as int64 values) and logits for one image [C, H, W]
  std::pair<std::vector<std::int64_t>, std::vector<float>> run(const qdq_models::CnnSpec& spec,
                                                               const NDArray& image,
                                                               std::int64_t n) const {
    std::int64_t C = spec.channels, H = spec.height, W = spec.width;
    std::vector<std::int64_t> q(static_cast<std::size_t>(C * H * W));
    for (std::size_t k = 0; k < q.size(); ++k)
      q[k] =
          quantize(image.fdata()[static_cast<std::size_t>(n) * q.size() + k], f("s_in"), i("z_in"));
    float sx = f("s_in");
    std::int64_t zx = i("z_in");
    for (std::size_t k = 0; k < spec.convs.size(); ++k) {
      const auto& c = spec.convs[k];
      const std::string p = "conv" + std::to_string(k);
      const NDArray& wq = init.at(p + "_wq");
      const NDArray& ws = init.at(p + "_ws");
      const NDArray& bq = init.at(p + "_bq");
      const float sy = f(p + "_so");
      const std::int64_t zy = i(p + "_zo");
      const std::int64_t OH = (H + c.pad_top + c.pad_bottom - c.kernel) / c.stride + 1;
      const std::int64_t OW = (W + c.pad_left + c.pad_right - c.kernel) / c.stride + 1;
      std::vector<std::int64_t> y(static_cast<std::size_t>(c.out_channels * OH * OW));
      for (std::int64_t o = 0; o < c.out_channels; ++o) {
        const float m = static_cast<float>(sx * ws.fdata()[static_cast<std::size_t>(o)]) / sy;
        for (std::int64_t oy = 0; oy < OH; ++oy)
          for (std::int64_t ox = 0; ox < OW; ++ox) {
            std::int64_t acc = bq.data()[static_cast<std::size_t>(o)];
            for (std::int64_t ci = 0; ci < C; ++ci)
              for (std::int64_t ky = 0; ky < c.kernel; ++ky)
                for (std::int64_t kx = 0; kx < c.kernel; ++kx) {
                  const std::int64_t iy = oy * c.stride - c.pad_top + ky;
                  const std::int64_t ix = ox * c.stride - c.pad_left + kx;
                  if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                  acc += (q[static_cast<std::size_t>((ci * H + iy) * W + ix)] - zx) *
                         wq.at({o, ci, ky, kx});
                }
            const double r = std::nearbyint(static_cast<double>(acc) * static_cast<double>(m));
            auto v = static_cast<std::int64_t>(std::clamp(r + static_cast<double>(zy), 0.0, 255.0));
            // ReLU between a DequantizeLinear and a QuantizeLinear, in float32
            const float d = (static_cast<float>(v) - static_cast<float>(zy)) * sy;
            v = quantize(std::max(d, 0.0f), sy, zy);
            y[static_cast<std::size_t>((o * OH + oy) * OW + ox)] = v;
          }
      }
      q = std::move(y);
      C = c.out_channels;
      H = OH;
      W = OW;
      sx = sy;
      zx = zy;
    }
    // the float tail: dequantize, average per channel, classify
    const NDArray& fc = init.at("fc_w");
    std::vector<float> pooled(static_cast<std::size_t>(C));
    for (std::int64_t ci = 0; ci < C; ++ci) {
      float s = 0;
      for (std::int64_t k = 0; k < H * W; ++k)
        s += (static_cast<float>(q[static_cast<std::size_t>(ci * H * W + k)]) -
              static_cast<float>(zx)) *
             sx;
      pooled[static_cast<std::size_t>(ci)] = s / static_cast<float>(H * W);
    }
    std::vector<float> logits(static_cast<std::size_t>(spec.classes));
    for (std::int64_t j = 0; j < spec.classes; ++j) {
      float s = 0;
      for (std::int64_t ci = 0; ci < C; ++ci)
        s += pooled[static_cast<std::size_t>(ci)] * fc.at_float({j, ci});
      logits[static_cast<std::size_t>(j)] = s;
    }
    return {q, logits};
  }
};

TEST_CASE("a QDQ CNN imports, builds and runs equal to its reference at several batches") {
  const auto spec = qdq_models::small_cnn();
  const auto model = qdq_models::cnn(spec, 11);
  const std::string bytes = model.SerializeAsString();
  const auto fn =
      importer::import(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
                       {.dims = {{"batch", {1, 4}}}}, "qdq_cnn.onnx");
  // every QDQ-wrapped convolution was folded into an integer one
  int rescales = 0;
  for (const auto& node : graph::post_order(fn.results()))
    if (const auto* c = node.as<graph::CallNode>()) rescales += c->op() == "rescale";
  CHECK(rescales == static_cast<int>(spec.convs.size()));
  graph::Target target;
  target.int32_results = true;
  const auto typed = graph::infer_type(fn, target);
  for (const auto& node : graph::post_order(typed.results()))
    if (const auto* c = node.as<graph::CallNode>(); c != nullptr && c->op() == "conv2d")
      CHECK(node.type().dtype == DType::int32());
  // the integer sums run on VTA (int8 x int8, the zero points a bias); only the rescales, the
  // input shift and pads, and the float tail stay on the host
  CHECK(qdq_models::mac_split(typed).vta_share() >= 0.95);
  auto mod = graph::build(typed, target, {.name = "qdq_cnn"});
  const Reference ref(model);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  for (std::int64_t batch : {1, 3}) {
    const auto image = NDArray::random_float({batch, spec.channels, spec.height, spec.width},
                                             static_cast<std::uint64_t>(batch), -1.0, 1.0);
    const auto out = exec.run({{"image", image}}, {{"batch", batch}});
    REQUIRE(out.size() == 2);
    CHECK(out[0].dtype() == DType::uint8());
    const std::size_t per = out[0].size() / static_cast<std::size_t>(batch);
    // a meaningful comparison: the features spread over many levels, not saturated
    const std::set<std::int64_t> levels(out[0].data().begin(), out[0].data().end());
    CHECK(levels.size() >= 30);
    for (std::int64_t n = 0; n < batch; ++n) {
      const auto [features, logits] = ref.run(spec, image, n);
      REQUIRE(features.size() == per);
      int differ = 0;
      for (std::size_t k = 0; k < per; ++k)
        differ += out[0].data()[static_cast<std::size_t>(n) * per + k] != features[k];
      CHECK_MESSAGE(differ == 0, "batch ", batch, " image ", n, ": ", differ, " of ", per,
                    " features differ");
      for (std::size_t j = 0; j < logits.size(); ++j)
        CHECK(out[1].fdata()[static_cast<std::size_t>(n) * logits.size() + j] ==
              doctest::Approx(logits[j]).epsilon(1e-4));
    }
  }
}

TEST_CASE("without QDQ folding the same model runs its convolutions in float") {
  const auto model = qdq_models::cnn(qdq_models::small_cnn(), 11);
  const std::string bytes = model.SerializeAsString();
  const auto fn =
      importer::import(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
                       {.dims = {{"batch", {1, 4}}}, .fold_qdq = false}, "qdq_cnn.onnx");
  const auto typed = graph::infer_type(fn, graph::default_ops());
  int float_convs = 0;
  for (const auto& node : graph::post_order(typed.results()))
    if (const auto* c = node.as<graph::CallNode>(); c != nullptr && c->op() == "conv2d")
      float_convs += node.type().dtype.is_float();
  CHECK(float_convs == 3);
}

}  // namespace onnx_qdq_cnn

namespace onnx_qdq_cnn {

// Counts the rescale calls (folded convolutions) and the float convolutions of an import.
std::pair<int, int> folded_and_float(const ::onnx::ModelProto& model) {
  const std::string bytes = model.SerializeAsString();
  const auto fn =
      importer::import(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
                       {.dims = {{"batch", {1, 4}}}}, "qdq_cnn.onnx");
  const auto typed = graph::infer_type(fn, graph::default_ops());
  int rescales = 0, float_convs = 0;
  for (const auto& node : graph::post_order(typed.results()))
    if (const auto* c = node.as<graph::CallNode>()) {
      rescales += c->op() == "rescale";
      float_convs += c->op() == "conv2d" && node.type().dtype.is_float();
    }
  return {rescales, float_convs};
}

TEST_CASE("a bias whose scale is not x_scale * w_scale keeps its convolution in float") {
  auto model = qdq_models::cnn(qdq_models::small_cnn(), 11);
  CHECK(folded_and_float(model) == std::pair{3, 0});
  // conv1's bias at another scale: dequantized, it is not the int32 sum's bias
  for (auto& t : *model.mutable_graph()->mutable_initializer())
    if (t.name() == "conv1_bs")
      for (int i = 0; i < t.float_data_size(); ++i) t.set_float_data(i, t.float_data(i) * 1.5f);
  CHECK(folded_and_float(model) == std::pair{2, 1});
}

}  // namespace onnx_qdq_cnn
