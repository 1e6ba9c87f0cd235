// A multilayer perceptron over a symbolic batch: three dense layers, each fused with its bias,
// requantization and ReLU into one VTA program built once for any batch of 1 to 256 rows,
// then a softmax over the float logits on the host. Each batch size instantiates the same
// programs (no recompilation); every run is checked against the host reference end to end
// and layer by layer.
//   mlp [--dump DIR] [--preset NAME]
//     DIR: every VTA step's stream, micro-ops and DRAM images with a manifest of their
//     addresses, one folder per batch and step (replayable by VTA's functional simulator)
#include "model_check.hpp"
#include "models.hpp"
#include <string>

int main(int argc, char** argv) try {
  const auto opts = models::model_options(argc, argv);
  if (!opts) return 2;
  const std::string& dump = opts->dump;
  namespace graph = dlavm::graph;
  namespace te = dlavm::te;
  namespace vta = dlavm::vta;
  const models::Mlp net;
  const graph::Target target = opts->target();
  const auto fn = net.function();
  const auto typed = graph::infer_type(fn, target);
  fmt::print("{}\n", typed);
  auto mod = graph::build(fn, target, {.name = "mlp"});
  fmt::print("{}\n", mod);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  bool ok = true;
  for (const std::int64_t batch : {1, 7, 64, 256}) {
    const auto x = te::NDArray::random(dlavm::DType::int8(), {batch, 64}, 100 + batch);
    const graph::NamedArray inputs[] = {{"x", x}};
    const dlavm::ne::Binding bindings[] = {{"batch", batch}};
    const auto check = models::run_and_check(exec, typed, inputs, bindings,
                                             models::dump_dir(dump, fmt::format("batch{}", batch)));
    fmt::print("batch {:>3}: {} VTA cycles, {} VTA layers checked, {} differ, outputs {}\n", batch,
               exec.last_run().vta_cycles, check.layers, check.mismatches,
               check.outputs_equal ? "equal" : "DIFFERENT");
    ok = ok && check.layers == 3 && check.mismatches == 0 && check.outputs_equal;
  }
  fmt::print("{}\n", exec.summary());
  if (!ok) {
    fmt::print("FAIL: mlp differs from the host reference\n");
    return 1;
  }
  fmt::print("PASS: mlp equals the host reference for every batch\n");
  return 0;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
