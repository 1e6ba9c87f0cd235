// Shared by the model examples: runs a built module (its executor) and checks it against
// the reference executor (graph::evaluate_trace on the host kernels), end to end and per
// layer: every value a VTA step produced, unpacked, against the host's value of that node.
#pragma once

#include <dlavm/dlavm.hpp>

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace models {

// The options every model example takes: `--dump DIR` ("" without it) and `--preset NAME`,
// the VTA design to build for and simulate (vta::preset; TVM's simulator without it).
struct ModelOptions {
  std::string dump;
  dlavm::vta::Config config;
  // The target of the design: the default ops and strategies.
  dlavm::graph::Target target() const {
    dlavm::graph::Target t;
    t.env = dlavm::vta::Env(config);
    return t;
  }
  // Takes argv[i] (and its value) if it is one of these options; false otherwise.
  bool take(int& i, int argc, char** argv) {
    const std::string arg = argv[i];
    if (i + 1 >= argc || (arg != "--dump" && arg != "--preset")) return false;
    if (arg == "--dump") {
      dump = argv[++i];
    } else {
      config = dlavm::vta::preset(argv[++i]);
    }
    return true;
  }
};

// The options of a model example that takes no others, or nullopt after printing the usage
// for any other argument.
inline std::optional<ModelOptions> model_options(int argc, char** argv) {
  ModelOptions o;
  for (int i = 1; i < argc; ++i) {
    if (!o.take(i, argc, argv)) {
      fmt::print(stderr, "usage: {} [--dump DIR] [--preset NAME]\n", argv[0]);
      return std::nullopt;
    }
  }
  return o;
}

// The folder of one run's dumps under `dump` ("" when the example does not dump).
inline std::string dump_dir(const std::string& dump, const std::string& run) {
  return dump.empty() ? dump : dump + "/" + run;
}

struct CheckResult {
  int layers = 0;      // VTA results compared
  int mismatches = 0;  // of which differed
  // Over the VTA results: the share of zeros and of values at the int8 limits (a network whose
  // layers saturate or die would pass a comparison trivially).
  double zero_share = 0, saturated_share = 0;
  bool outputs_equal = false;
  double run_ms = 0, reference_ms = 0;
};

inline CheckResult run_and_check(dlavm::graph::Executor& exec, const dlavm::graph::Function& typed,
                                 std::span<const dlavm::graph::NamedArray> inputs,
                                 std::span<const dlavm::ne::Binding> bindings = {},
                                 const std::string& dump_dir = "") {
  namespace graph = dlavm::graph;
  using clock = std::chrono::steady_clock;
  CheckResult r;
  // the reference takes the module's states (a KV cache) as inputs, as they were before the
  // run, and the bindings the run used (a growing state binds its length)
  std::vector<graph::NamedArray> ref_inputs(inputs.begin(), inputs.end());
  const auto& mod = exec.module();
  std::vector<dlavm::te::NDArray> states;
  for (const auto& st : mod.signature().state)
    states.push_back(exec.state(mod.values()[st.value].param));
  for (std::size_t i = 0; i < states.size(); ++i)
    ref_inputs.push_back({mod.values()[mod.signature().state[i].value].param, states[i]});
  const auto t0 = clock::now();
  const auto out = exec.run(inputs, bindings, {.keep_values = true, .dump_dir = dump_dir});
  const auto t1 = clock::now();
  std::vector<dlavm::ne::Binding> ref_bindings;
  for (const auto& [name, value] : exec.last_run().bindings) ref_bindings.push_back({name, value});
  const auto trace = graph::evaluate_trace(typed, ref_inputs, ref_bindings);
  const auto t2 = clock::now();
  r.run_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  r.reference_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  const graph::NodeNames names(typed);
  std::map<std::string, const dlavm::te::NDArray*> reference;
  for (std::size_t i = 0; i < trace.nodes.size(); ++i)
    reference[names.name(trace.nodes[i])] = trace.values[i].get();
  for (const auto& step : mod.steps()) {
    if (step.kind != graph::ModuleStep::Kind::Vta) continue;
    const auto& node = mod.values()[step.output].node;
    ++r.layers;
    const auto value = exec.value_of(node);
    std::size_t zeros = 0, saturated = 0;
    for (const auto v : value.data()) {
      zeros += v == 0;
      saturated += v == 127 || v == -128;
    }
    r.zero_share += static_cast<double>(zeros) / static_cast<double>(value.size());
    r.saturated_share += static_cast<double>(saturated) / static_cast<double>(value.size());
    if (value != *reference.at(node)) {
      ++r.mismatches;
      fmt::print("layer {} ({}) differs from the host reference\n", node, step.label);
    }
  }
  if (r.layers > 0) {
    r.zero_share /= r.layers;
    r.saturated_share /= r.layers;
  }
  r.outputs_equal = out.size() == trace.results.size();
  for (std::size_t i = 0; r.outputs_equal && i < out.size(); ++i)
    r.outputs_equal = out[i].dtype().is_float()
                          ? dlavm::te::allclose(out[i], trace.results[i], 1e-6, 1e-6)
                          : out[i] == trace.results[i];
  return r;
}

}  // namespace models
