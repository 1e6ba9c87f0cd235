// Random float layers (convolutions: dense, depthwise, strided, padded; dense layers; with a
// bias and a ReLU, a ReLU6 clip or nothing), each quantized by dlavm::quantize (symmetric or
// asymmetric activations, in turn by groups of four) and written by
// dlavm::onnx::export_model with its int8 result as the model's output, for run.sh to hold
// ONNX Runtime's run against dlavm's. Layer k goes to OUTDIR/layer<k>/: model.onnx, the input
// in_x.bin (float32), dlavm's output out_0.bin (int64, as run_model.cpp writes integers) and
// ties_0.bin, one byte per output element: 1 where the exact rescaled sum lies within 0.001
// of a rounding tie, where ONNX Runtime's float32 path may round the other way. Prints a line
// per layer: its directory and its input's dims (D0xD1...).
//   write_exported_layers OUTDIR COUNT
#include <dlavm/dlavm.hpp>
#include <dlavm/onnx/export.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

namespace graph = dlavm::graph;
using dlavm::DType;
using dlavm::te::NDArray;

void write(const std::filesystem::path& path, const char* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  if (!out.write(data, static_cast<std::streamsize>(bytes)))
    throw dlavm::ValueError(fmt::format("cannot write '{}'", path.string()));
}

const graph::CallNode* call_of(const graph::Expr& e, const char* op) {
  const auto* c = e.as<graph::CallNode>();
  return c != nullptr && c->op() == op ? c : nullptr;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 3) {
    fmt::print(stderr, "usage: {} OUTDIR COUNT\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int count = std::atoi(argv[2]);
  std::mt19937_64 rng(41);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int k = 0; k < count; ++k) {
    const auto seed = static_cast<std::uint64_t>(10 * k);
    std::vector<std::int64_t> shape;
    graph::Expr x, y;
    std::int64_t channels = 0;
    if (k % 4 == 3) {  // a dense layer
      const std::int64_t rows = pick(1, 8), in = pick(4, 64);
      channels = pick(2, 48);
      shape = {rows, in};
      x = graph::input("x", {shape.begin(), shape.end()}, DType::float32());
      y = graph::dense(
          x, graph::constant("w", NDArray::random_float({channels, in}, seed, -0.4, 0.4)));
    } else {
      const std::int64_t c = pick(1, 24), hw = pick(4, 14), kernel = pick(0, 1) == 1 ? 3 : 1;
      const bool depthwise = k % 4 == 1;
      channels = depthwise ? c : pick(1, 32);
      const std::int64_t pad = kernel == 3 ? pick(0, 1) : 0, stride = pick(1, 2);
      shape = {1, c, hw, hw};
      x = graph::input("x", {shape.begin(), shape.end()}, DType::float32());
      y = graph::conv2d(
          x,
          graph::constant("w", NDArray::random_float({channels, depthwise ? 1 : c, kernel, kernel},
                                                     seed, -0.4, 0.4)),
          {.strides = {stride, stride},
           .padding = {pad, pad, pad, pad},
           .groups = depthwise ? c : 1});
    }
    y = graph::bias_add(
        y, graph::constant("b", NDArray::random_float({channels}, seed + 1, -0.2, 0.2)),
        {.axis = shape.size() == 2 ? -1 : 1});
    if (const auto act = pick(0, 2); act == 1)
      y = graph::relu(y);
    else if (act == 2)
      y = graph::clip(y, {.lo = 0, .hi = 6});
    std::vector<dlavm::quantization::Sample> samples;
    for (std::uint64_t s = 0; s < 8; ++s)
      samples.push_back({{{"x", NDArray::random_float(shape, seed + 100 + s, -1, 1)}}, {}});
    // every other group of four: asymmetric activations (zero points, pads with them)
    const auto q = dlavm::quantize(
        graph::function({x}, {y}), samples,
        {.activations = (k / 4) % 2 == 1 ? dlavm::quantization::Activations::Asymmetric
                                         : dlavm::quantization::Activations::Symmetric});
    // the int8 result: the quantized function's result before its dequantize_linear
    const auto* dq = call_of(q.function.results()[0], "dequantize_linear");
    if (dq == nullptr) throw dlavm::ValueError(fmt::format("layer {} was not quantized", k));
    const graph::Expr result = dq->args[0];
    graph::Expr rescaled = result;
    if (const auto* clip = call_of(rescaled, "clip")) rescaled = clip->args[0];
    const auto* rescale = call_of(rescaled, "rescale");
    if (rescale == nullptr) throw dlavm::ValueError(fmt::format("layer {}: no rescale", k));
    const graph::Expr acc = rescale->args[0];
    const auto& multiplier = *rescale->args[1].as<graph::ConstantNode>()->value;
    const auto input = NDArray::random_float(shape, seed + 7, -1.2, 1.2);
    const auto params = q.function.params();
    const auto fn = graph::function(params, {result});
    const auto ops = graph::default_ops();
    const auto ours = graph::evaluate(graph::infer_type(fn, ops), {{"x", input}}, {})[0];
    const auto sums = graph::evaluate(graph::infer_type(graph::function(params, {acc}), ops),
                                      {{"x", input}}, {})[0];
    // the channel of each output element: dim 1 of a convolution's, the last of a dense one's
    const auto& s = sums.shape();
    const std::int64_t inner = shape.size() == 2 ? 1 : s[2] * s[3];
    std::vector<std::uint8_t> ties;
    for (std::size_t i = 0; i < sums.size(); ++i) {
      const auto c = static_cast<std::size_t>((static_cast<std::int64_t>(i) / inner) % channels);
      const double v =
          static_cast<double>(sums.data()[i]) * multiplier.fdata()[multiplier.size() == 1 ? 0 : c];
      ties.push_back(std::abs(v - std::floor(v) - 0.5) < 1e-3 ? 1 : 0);
    }
    const auto out = dir / fmt::format("layer{}", k);
    std::filesystem::create_directories(out);
    dlavm::onnx::export_model(fn, out / "model.onnx");
    write(out / "in_x.bin", reinterpret_cast<const char*>(input.fdata().data()),
          input.size() * sizeof(float));
    write(out / "out_0.bin", reinterpret_cast<const char*>(ours.data().data()),
          ours.size() * sizeof(std::int64_t));
    write(out / "ties_0.bin", reinterpret_cast<const char*>(ties.data()), ties.size());
    fmt::print("{} {}\n", out.string(), fmt::join(shape, "x"));
  }
  return 0;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "FAIL: {}\n", e.what());
  return 1;
}
