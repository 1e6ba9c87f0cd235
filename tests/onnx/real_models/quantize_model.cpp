// Quantizes a real float model with dlavm::quantize, builds it for the default Target, and
// checks it against the reference executor's run of the same quantized function (bit for bit)
// and against the float model (the top class of a classifier's first output), both as
// graph::build places them.
//   onnx_quantize_model MODEL.onnx INPUT D0xD1... CALIBRATION_SAMPLES TEST_INPUTS noise|text
//                       [symmetric|asymmetric] [multiplier|shift]
// noise: inputs uniform in [-1, 1); many sit near a decision boundary, so 85% of the top
// classes must agree. text: lines of text rendered upright or upside down (text_lines.hpp),
// the inputs of PP-OCR's text-direction classifier; 99% must agree. The first 100 test inputs
// run on the simulated VTA, the rest on the reference executor (the same function, which the
// first 100 show bit-exact). Prints the figures (MACs on VTA, the grouped convolutions' share
// of their roofline bound); exits 1 when a check fails, 77 without FreeType or its fonts.
#include <dlavm/dlavm.hpp>
#include <dlavm/onnx/import.hpp>

#include <fmt/format.h>

#ifdef DLAVM_TEXT_LINES
#include "text_lines.hpp"
#endif

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr int kSimulatedInputs = 100;

std::int64_t top_class(const dlavm::te::NDArray& logits) {
  const auto v = logits.fdata();
  return std::ranges::max_element(v) - v.begin();
}

}  // namespace

int main(int argc, char** argv) try {
  namespace graph = dlavm::graph;
  namespace q = dlavm::quantization;
  using dlavm::te::NDArray;
  const auto arg = [&](int k, const char* otherwise) {
    return std::string(k < argc ? argv[k] : otherwise);
  };
  if (argc < 7 || argc > 9 || (arg(6, "") != "noise" && arg(6, "") != "text") ||
      (arg(7, "symmetric") != "symmetric" && arg(7, "") != "asymmetric") ||
      (arg(8, "multiplier") != "multiplier" && arg(8, "") != "shift")) {
    fmt::print(stderr,
               "usage: {} MODEL.onnx INPUT D0xD1... CALIBRATION_SAMPLES TEST_INPUTS noise|text "
               "[symmetric|asymmetric] [multiplier|shift]\n",
               argv[0]);
    return 2;
  }
  const std::string input = argv[2];
  std::vector<std::int64_t> shape;
  for (std::string dims = argv[3]; !dims.empty();) {
    const auto x = dims.find('x');
    shape.push_back(std::stoll(dims.substr(0, x)));
    dims = x == std::string::npos ? "" : dims.substr(x + 1);
  }
  const auto calibration = static_cast<std::size_t>(std::atoi(argv[4]));
  const int tests = std::atoi(argv[5]);
  const bool text = std::string(argv[6]) == "text";
  // input k of the calibration (k < 10^6) or test (k >= 10^6) set, and whether a text line is
  // upside down
  std::function<std::pair<NDArray, bool>(std::uint64_t)> make_input;
  if (text) {
#ifdef DLAVM_TEXT_LINES
    auto renderer = std::make_shared<text_lines::Renderer>();
    make_input = [renderer, shape](std::uint64_t k) {
      auto l = renderer->line(k, shape[2], shape[3]);
      return std::pair{std::move(l.image), l.upside_down};
    };
#else
    fmt::print("skip: built without FreeType (libfreetype-dev)\n");
    return 77;
#endif
  } else {
    make_input = [shape](std::uint64_t k) {
      return std::pair{NDArray::random_float(shape, 100 + k, -1, 1), false};
    };
  }
  dlavm::onnx::ImportOptions options;
  options.shapes[input] = shape;
  const auto fn = dlavm::onnx::import(argv[1], options);
  const graph::Target target;
  const q::SampleSource samples{calibration, [&](std::size_t k) {
                                  return q::Sample{{{input, make_input(k).first}}};
                                }};
  const q::QuantizeOptions quantize_options{
      .requantize =
          arg(8, "multiplier") == "shift" ? q::Requantize::Shift : q::Requantize::Multiplier,
      .activations = arg(7, "symmetric") == "asymmetric" ? q::Activations::Asymmetric
                                                         : q::Activations::Symmetric};
  const auto result = dlavm::quantize(fn, samples, quantize_options, target);
  auto mod = graph::build(result.function, target, {.name = "quantized"});
  dlavm::vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  const auto typed = graph::infer_type(fn, target);
  // the reference: the quantized function as build places it (the graph passes applied: a
  // hard_swish written out in float ops recognized as one, as on the simulator's side)
  const auto placed = graph::infer_type(result.function, target);
  int same_top = 0, differ = 0, float_right = 0;
  std::uint64_t grouped_cycles = 0, grouped_roofline = 0;
  for (int k = 0; k < tests; ++k) {
    const auto [x, upside_down] = make_input(1'000'000 + static_cast<std::uint64_t>(k));
    const auto on_host = graph::evaluate(placed, {{input, x}}, {})[0];
    if (k < kSimulatedInputs) {
      differ += !(exec.run({{input, x}})[0] == on_host);
      const auto& run = exec.last_run();
      for (std::size_t s = 0; s < mod.steps().size(); ++s) {
        const auto& step = mod.steps()[s];
        if (step.kind == graph::ModuleStep::Kind::Vta && step.workload.op == "conv2d" &&
            graph::conv2d_params(step.workload.attrs).groups > 1) {
          grouped_cycles += run.steps[s].cycles;
          grouped_roofline += run.steps[s].roofline_cycles;
        }
      }
    }
    const auto want = top_class(graph::evaluate(typed, {{input, x}}, {})[0]);
    same_top += want == top_class(on_host);
    float_right += want == (upside_down ? 1 : 0);
  }
  std::size_t quantized = 0;
  for (const auto& l : result.layers) quantized += l.quantized;
  fmt::print(
      "dlavm::quantize ({}, {}): {} of {} layers int8, {:.1f}% of their MACs on VTA, the last "
      "layer's SQNR {:.1f} dB, its grouped "
      "convolutions at {:.1f}% of their roofline bound; top class equal to the float model's on {} "
      "of {} inputs{}; VTA and host differ on {} of {}\n",
      q::to_string(quantize_options.activations), q::to_string(quantize_options.requantize),
      quantized, result.layers.size(), 100 * result.vta_mac_share(),
      result.layers.empty() ? 0.0 : result.layers.back().sqnr_db,
      grouped_cycles == 0
          ? 0.0
          : 100.0 * static_cast<double>(grouped_roofline) / static_cast<double>(grouped_cycles),
      same_top, tests,
      text ? fmt::format(" (the float model reads the direction right on {})", float_right) : "",
      differ, std::min(tests, kSimulatedInputs));
  const bool enough = text ? same_top * 100 >= tests * 99 : same_top * 20 >= tests * 17;
  return differ == 0 && enough ? 0 : 1;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "FAIL: {}\n", e.what());
  return 1;
}
