// Quantizes a real float model with dlavm::quantize (entropy calibration over inputs uniform in
// [-1, 1)), builds it for the default Target, and runs it on the simulated VTA against the
// reference executor's run of the same quantized function (bit for bit) and against the float
// model (the top class of a classifier's first output), both as graph::build places them.
// Prints the figures; exits 1 when the VTA run differs from the host's or fewer than 85% of
// the top classes agree (the inputs are noise: many sit near a decision boundary).
//   onnx_quantize_model MODEL.onnx INPUT D0xD1... CALIBRATION_SAMPLES TEST_INPUTS
#include <dlavm/dlavm.hpp>
#include <dlavm/onnx/import.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) try {
  namespace graph = dlavm::graph;
  namespace q = dlavm::quantization;
  using dlavm::te::NDArray;
  if (argc != 6) {
    fmt::print(stderr, "usage: {} MODEL.onnx INPUT D0xD1... CALIBRATION_SAMPLES TEST_INPUTS\n",
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
  dlavm::onnx::ImportOptions options;
  options.shapes[input] = shape;
  const auto fn = dlavm::onnx::import(argv[1], options);
  const graph::Target target;
  const q::SampleSource samples{
      calibration, [&](std::size_t k) {
        return q::Sample{{{input, NDArray::random_float(shape, 100 + k, -1, 1)}}};
      }};
  const auto result = dlavm::quantize(fn, samples, {}, target);
  auto mod = graph::build(result.function, target, {.name = "quantized"});
  dlavm::vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  const auto typed = graph::infer_type(fn, target);
  // the reference: the quantized function as build places it (the graph passes applied: a
  // hard_swish written out in float ops recognized as one, as on the simulator's side)
  const auto placed = graph::infer_type(result.function, target);
  int same_top = 0, differ = 0;
  for (int k = 0; k < tests; ++k) {
    const auto x = NDArray::random_float(shape, 5000 + static_cast<std::uint64_t>(k), -1, 1);
    const auto on_vta = exec.run({{input, x}})[0];
    differ += !(on_vta == graph::evaluate(placed, {{input, x}}, {})[0]);
    const auto want = graph::evaluate(typed, {{input, x}}, {})[0];
    const auto a = want.fdata(), b = on_vta.fdata();
    same_top += std::ranges::max_element(a) - a.begin() == std::ranges::max_element(b) - b.begin();
  }
  std::size_t quantized = 0;
  for (const auto& l : result.layers) quantized += l.quantized;
  fmt::print(
      "dlavm::quantize: {} of {} layers int8, {:.1f}% of their MACs on VTA; top class "
      "equal to the float model's on {} of {} inputs; VTA and host differ on {}\n",
      quantized, result.layers.size(), 100 * result.vta_mac_share(), same_top, tests, differ);
  return differ == 0 && same_top * 20 >= tests * 17 ? 0 : 1;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "FAIL: {}\n", e.what());
  return 1;
}
