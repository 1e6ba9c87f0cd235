// Imports a quantized CNN from an ONNX file (QDQ form: examples/onnx_import/qdq_models.hpp,
// written at build time), prints the graph as placed, the reason of every call left on the
// host, builds it once for batches 1 to 4, runs it on the simulator against the host
// reference, prints the per-step table, and draws the placed graph for Graphviz.
//   onnx_import [MODEL.onnx] [--dot FILE]      (default: the model written at build time)
#include <dlavm/dlavm.hpp>
#include <dlavm/onnx/import.hpp>

#include <fmt/format.h>

#include "mac_split.hpp"
#include <fstream>
#include <string>

int main(int argc, char** argv) try {
  namespace graph = dlavm::graph;
  namespace te = dlavm::te;
  std::string path = DLAVM_ONNX_EXAMPLE_MODEL, dot = "qdq_cnn.dot";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dot" && i + 1 < argc) {
      dot = argv[++i];
    } else if (!a.empty() && a[0] != '-') {
      path = a;
    } else {
      fmt::print(stderr, "usage: {} [MODEL.onnx] [--dot FILE]\n", argv[0]);
      return 2;
    }
  }
  dlavm::onnx::ImportOptions options;
  options.dims = {{"batch", {1, 4}}};
  const graph::Function fn = dlavm::onnx::import(path, options);
  const graph::Target target;  // the integer sums leave VTA whole for the host's rescale
  const auto typed = graph::infer_type(fn, target);
  fmt::print("{}\n\n", typed);
  fmt::print("{:.1f}% of the convolutions' and products' multiply-accumulates on VTA\n\n",
             100.0 * qdq_models::mac_split(typed).vta_share());
  fmt::print("placement:\n");
  for (const auto& g : typed.placement()->groups)
    fmt::print("  {}\n", typed.placement()->describe(g));
  {
    std::ofstream out(dot);
    out << graph::to_dot(typed, {.name = "qdq_cnn"});
    if (!out) throw dlavm::ValueError(fmt::format("onnx_import: cannot write '{}'", dot));
  }
  fmt::print("\nthe placed graph for Graphviz: {} (dot -Tsvg {} -o qdq_cnn.svg)\n\n", dot, dot);
  auto mod = graph::build(typed, target, {.name = "qdq_cnn"});
  dlavm::vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  bool ok = true;
  for (const std::int64_t batch : {1, 4}) {
    const auto image = te::NDArray::random_float({batch, 3, 32, 32}, 40 + batch, -1.0, 1.0);
    const auto out = exec.run({{"image", image}}, {{"batch", batch}});
    const auto want = graph::evaluate(typed, {{"image", image}}, {{"batch", batch}});
    const bool same = out.at(0) == want.at(0) && te::allclose(out.at(1), want.at(1), 1e-5, 1e-6);
    fmt::print("batch {}: features {} x uint8, logits {} floats, {} the host reference\n", batch,
               out.at(0).size(), out.at(1).size(), same ? "equal to" : "DIFFERENT from");
    ok = ok && same;
  }
  fmt::print("\n{}\n", exec.summary());
  if (!ok) {
    fmt::print("FAIL: onnx_import differs from the host reference\n");
    return 1;
  }
  fmt::print("PASS\n");
  return 0;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "FAIL: {}\n", e.what());
  return 1;
}
