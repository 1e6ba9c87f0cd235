// The ONNX importer: a ResNet-18-sized quantized model (its twenty convolutions in QDQ form,
// 224 x 224, examples/onnx_import/qdq_models.hpp) imported (QDQ folding included) and built,
// and the share of its MACs that runs on VTA; the same network as ONNX Runtime's quantizer
// writes it.
#include <dlavm/graph.hpp>
#include <dlavm/onnx/import.hpp>

#include <benchmark/benchmark.h>

#include "../../examples/onnx_import/mac_split.hpp"
#include "../../examples/onnx_import/qdq_models.hpp"
#include <string>

namespace {

const std::string& resnet18_sized_bytes() {
  static const std::string bytes =
      qdq_models::cnn(qdq_models::resnet18_sized(), 5).SerializeAsString();
  return bytes;
}

dlavm::graph::Function import_model() {
  const auto& b = resnet18_sized_bytes();
  dlavm::onnx::ImportOptions options;
  options.dims = {{"batch", {1, 1}}};
  return dlavm::onnx::import(std::span(reinterpret_cast<const std::uint8_t*>(b.data()), b.size()),
                             options, "resnet18_sized.onnx");
}

void BM_ImportResNet18Sized(benchmark::State& state) {
  resnet18_sized_bytes();  // written once, outside the timing
  for (auto _ : state) benchmark::DoNotOptimize(import_model());
  state.counters["model_bytes"] = static_cast<double>(resnet18_sized_bytes().size());
}
BENCHMARK(BM_ImportResNet18Sized)->Unit(benchmark::kMillisecond);

void BM_ImportBuildResNet18Sized(benchmark::State& state) {
  resnet18_sized_bytes();
  const dlavm::graph::Target target;  // the integer sums leave VTA whole for the host's rescale
  qdq_models::MacSplit macs;
  for (auto _ : state) {
    const auto typed = dlavm::graph::infer_type(import_model(), target);
    auto mod = dlavm::graph::build(typed, target, {.name = "resnet18_sized"});
    benchmark::DoNotOptimize(mod);
    state.PauseTiming();
    macs = qdq_models::mac_split(typed);
    state.ResumeTiming();
  }
  state.counters["macs"] = macs.all;
  state.counters["vta_mac_share"] = macs.vta_share();
}
BENCHMARK(BM_ImportBuildResNet18Sized)->Unit(benchmark::kMillisecond);

// The same network as ONNX Runtime's quantizer writes it (qdq_models::ort_cnn: activations
// before their QuantizeLinear, a QuantizeLinear with two consumers, a quantized Gemm
// classifier), imported and built for the default Target: the share of its MACs on VTA.
void BM_ImportBuildOrtStyleResNet18Sized(benchmark::State& state) {
  static const std::string bytes =
      qdq_models::ort_cnn(qdq_models::ort_style(qdq_models::resnet18_sized()), 5)
          .SerializeAsString();
  const dlavm::graph::Target target;
  qdq_models::MacSplit macs;
  for (auto _ : state) {
    dlavm::onnx::ImportOptions options;
    options.dims = {{"batch", {1, 1}}};
    const auto typed = dlavm::graph::infer_type(
        dlavm::onnx::import(
            std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), options,
            "ort_style.onnx"),
        target);
    auto mod = dlavm::graph::build(typed, target, {.name = "ort_style"});
    benchmark::DoNotOptimize(mod);
    state.PauseTiming();
    macs = qdq_models::mac_split(typed);
    state.ResumeTiming();
  }
  state.counters["model_bytes"] = static_cast<double>(bytes.size());
  state.counters["macs"] = macs.all;
  state.counters["vta_mac_share"] = macs.vta_share();
}
BENCHMARK(BM_ImportBuildOrtStyleResNet18Sized)->Unit(benchmark::kMillisecond);

}  // namespace
