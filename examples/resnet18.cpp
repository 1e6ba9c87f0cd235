// ResNet-18 on VTA, end to end: the whole ImageNet network (1x3x224x224, int8 weights from a
// fixed seed) as a graph, built for VTA (20 convolutions, each fused with its bias, residual
// sum, requantization and ReLU into one VTA program, and the max pooling on VTA's ALU; the
// 7x7 average pooling and the dense layer on the host, with layout conversions at the
// boundaries), run on the simulator,
// and checked against the host reference end to end and layer by layer. Prints the module,
// the per-step table of the cycle model and the whole model's cycles against its MACs / 256.
//   resnet18 [--image N] [--dump DIR] [--preset NAME]
//     N: the image size, 224 by default (at least 32); DIR: every VTA step's stream, micro-ops
//     and DRAM images with a manifest of their addresses, one folder per step (replayable by
//     VTA's functional simulator: vta::load_dump and vta::replay)
#include "model_check.hpp"
#include "models.hpp"
#include <algorithm>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) try {
  namespace graph = dlavm::graph;
  namespace te = dlavm::te;
  namespace vta = dlavm::vta;
  std::int64_t image = 224;
  models::ModelOptions opts;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--image" && i + 1 < argc) {
      image = std::atoll(argv[++i]);
    } else if (!opts.take(i, argc, argv)) {
      fmt::print(stderr, "usage: {} [--image N] [--dump DIR] [--preset NAME]\n", argv[0]);
      return 2;
    }
  }
  const models::ResNet18 net(image);
  const graph::Target target = opts.target();
  const auto fn = net.function();
  const auto start = std::chrono::steady_clock::now();
  auto mod = graph::build(fn, target, {.name = "resnet18"});
  const double build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}\n", mod);

  const auto data = te::NDArray::random(dlavm::DType::int8(), {1, 3, image, image}, 1);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  const graph::NamedArray inputs[] = {{"data", data}};
  const auto check =
      models::run_and_check(exec, graph::infer_type(fn, target), inputs, {}, opts.dump);
  fmt::print("{}\n", exec.summary());
  fmt::print("build {:.1f} ms; run on the simulator {:.1f} ms; host reference {:.1f} ms\n",
             build_ms, check.run_ms, check.reference_ms);
  fmt::print(
      "{} VTA layers checked against the host reference, {} differ; their values are "
      "{:.0f}% zeros and {:.1f}% at the int8 limits\n",
      check.layers, check.mismatches, 100 * check.zero_share, 100 * check.saturated_share);
  // The targets of the 3x3 convolutions on the cycle model: 80% or more of the roofline bound,
  // DRAM traffic within 1.2x of what the tiling must move.
  double worst_share = 1, worst_traffic = 0;
  int convs3x3 = 0;
  const auto& run = exec.last_run();
  for (std::size_t i = 0; i < mod.steps().size(); ++i) {
    const auto& step = mod.steps()[i];
    // the kernel's workload says what it computes: its anchor op and shapes
    if (step.kind != graph::ModuleStep::Kind::Vta || step.workload.op != "conv2d") continue;
    const auto& weight = step.workload.args[1].shape;
    if (!(weight[2].as_int() == 3 && weight[3].as_int() == 3)) continue;
    const auto& s = run.steps[i];
    ++convs3x3;
    worst_share = std::min(worst_share,
                           static_cast<double>(s.roofline_cycles) / static_cast<double>(s.cycles));
    worst_traffic = std::max(
        worst_traffic, static_cast<double>(s.data_bytes) / static_cast<double>(s.tiling_bytes));
  }
  fmt::print(
      "{} 3x3 convolutions: the slowest at {:.1f}% of its roofline bound, the most DRAM "
      "traffic {:.2f}x its tiling's\n",
      convs3x3, 100 * worst_share, worst_traffic);
  const bool targets = image != 224 || (worst_share >= 0.8 && worst_traffic <= 1.2);
  if (!targets) fmt::print("the 224x224 targets are 80% of the bound and 1.2x the traffic\n");
  if (check.mismatches != 0 || !check.outputs_equal || check.layers == 0 || !targets) {
    fmt::print("FAIL: resnet18 differs from the host reference\n");
    return 1;
  }
  fmt::print("PASS: resnet18 equals the host reference (logits and every VTA layer)\n");
  return 0;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
