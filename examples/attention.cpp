// One causal self-attention block (8 heads, d_model 512) in int8 over a symbolic token count
// of 1 to 2048, built once: the four projections and both attention matmuls (Q.K^T and
// probabilities.V, batched over the heads, with symbolic rows and columns) run on VTA; the
// softmax runs in float32 on the host between exact quantize and dequantize steps. Each token
// count instantiates the same programs; every run is checked against the host reference end to
// end and layer by layer, and the per-step table shows where the time goes.
//   attention [--dump DIR] [--preset NAME]
//     DIR: every VTA step's stream, micro-ops and DRAM images with a manifest of their
//     addresses, one folder per token count and step (replayable by VTA's functional simulator)
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
  const models::Attention net;
  const graph::Target target = opts->target();
  const auto fn = net.function();
  const auto typed = graph::infer_type(fn, target);
  fmt::print("{}\n", typed);
  auto mod = graph::build(fn, target, {.name = "attention"});
  fmt::print("{}\n", mod);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  bool ok = true;
  for (const std::int64_t token : {1, 17, 64}) {
    const auto x = te::NDArray::random(dlavm::DType::int8(), {1, token, 512}, 300 + token);
    const graph::NamedArray inputs[] = {{"x", x}};
    const dlavm::ne::Binding bindings[] = {{"token", token}};
    const auto check = models::run_and_check(exec, typed, inputs, bindings,
                                             models::dump_dir(dump, fmt::format("token{}", token)));
    fmt::print("token {:>2}: {} VTA cycles, {} VTA layers checked, {} differ, outputs {}\n", token,
               exec.last_run().vta_cycles, check.layers, check.mismatches,
               check.outputs_equal ? "equal" : "DIFFERENT");
    ok = ok && check.layers == 6 && check.mismatches == 0 && check.outputs_equal;
  }
  fmt::print("{}\n", exec.summary());
  if (!ok) {
    fmt::print("FAIL: attention differs from the host reference\n");
    return 1;
  }
  fmt::print("PASS: attention equals the host reference for every token count\n");
  return 0;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
