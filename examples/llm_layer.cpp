// One decoder layer of an LLM (d_model 512, 8 heads, FFN 2048) in int8 with a KV cache, built
// once for a symbolic token count (1 to 2048) after a symbolic number of cached positions
// (last_token, 0 to 2047): prefills of 1, 17 and 2048 tokens, each from an empty cache and
// followed by decode steps of one token while the cache grows. The projections, the FFN and
// the attention matmuls (over last_token + token positions) run on VTA; the layer norms and the
// softmax run in float32 on the host. Every run is checked against the host reference end to
// end and layer by layer (the reference takes the cache as it was before the run). Last, the
// same layer with the integer-only softmax on VTA's ALU (models::llm::Softmax::Integer, one
// kernel, IntegerSplit, two, and IntegerDeferred, the exponentials alone with the context
// normalized on the host) runs a prefill and decode steps next to the float32 one: how far its
// probabilities and outputs move, and the VTA cycles of a prefill of 2048 tokens.
//   llm_layer [--prefill N ...] [--decode STEPS] [--dump DIR] [--preset NAME]
//     --prefill: the prefill lengths (default 1 17 2048); --decode: decode steps after each
//     prefill that leaves room (default 3)
//     DIR: every VTA step's stream, micro-ops and DRAM images with a manifest of their
//     addresses, one folder per run and step (replayable by VTA's functional simulator)
#include "model_check.hpp"
#include "models.hpp"
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

// The layer with an integer-only softmax (`how`: graph::integer_softmax, or its halves
// integer_softmax_exp and _normalize; I-BERT's exponential by shifts and a polynomial) against
// the float32 one, on the same weights and inputs: a prefill of
// 17 tokens and 3 decode steps. Prints how many probabilities and outputs differ and by how much;
// false when a run of the integer layer differs from its own host reference. `float_cycles`:
// the float32 layer's VTA cycles for a prefill of 2,048 tokens from an empty cache, 0 until a
// run measured them (they depend on the dims alone, not on the values).
bool compare_softmax(dlavm::graph::Executor& float_exec, const dlavm::graph::Target& target,
                     models::llm::Softmax how, std::uint64_t& float_cycles) {
  namespace graph = dlavm::graph;
  namespace te = dlavm::te;
  const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21, how);
  const bool deferred = how == models::llm::Softmax::IntegerDeferred;
  const char* name = deferred                                    ? "IntegerDeferred"
                     : how == models::llm::Softmax::IntegerSplit ? "IntegerSplit"
                                                                 : "Integer";
  const auto typed = graph::infer_type(net.function(), target);
  const auto mod = graph::build(typed, target, {.name = "llm_layer_int"});
  graph::Executor exec(mod, float_exec.device());
  float_exec.reset_state();
  std::int64_t probs = 0, probs_differ = 0, probs_max = 0, outs = 0, outs_differ = 0, outs_max = 0;
  bool ok = true;
  std::uint64_t seed = 900;
  std::int64_t positions = 0;
  for (const std::int64_t tokens : {17, 1, 1, 1}) {
    positions += tokens;
    const auto x = te::NDArray::random(dlavm::DType::int8(), {1, tokens, 512}, seed++);
    const graph::NamedArray inputs[] = {{"x", x}};
    const dlavm::ne::Binding bindings[] = {{"token", tokens}};
    const auto want = float_exec.run(inputs, bindings, {.keep_values = true}).at(0);
    const auto check = models::run_and_check(exec, typed, inputs, bindings);
    ok = ok && check.mismatches == 0 && check.outputs_equal;
    const auto count = [](const te::NDArray& a, const te::NDArray& b, std::int64_t& n,
                          std::int64_t& differ, std::int64_t& largest) {
      for (std::size_t i = 0; i < a.size(); ++i) {
        const auto d = std::abs(a.data()[i] - b.data()[i]);
        n += 1;
        differ += d != 0;
        largest = std::max(largest, d);
      }
    };
    // (IntegerDeferred computes no probabilities)
    if (!deferred)
      count(exec.value_of("probs"), float_exec.value_of("probs"), probs, probs_differ, probs_max);
    count(exec.value_of("down"), want, outs, outs_differ, outs_max);  // the layer's output
  }
  // where the softmax ran: the VTA step of the last decode step
  for (std::size_t i = 0; i < mod.steps().size(); ++i) {
    const auto& s = mod.steps()[i];
    if (s.kind != graph::ModuleStep::Kind::Vta || !s.workload.op.starts_with("integer_softmax"))
      continue;
    const auto& r = exec.last_run().steps[i];
    fmt::print(
        "\n{} runs on VTA's ALU ({}: {} per chunk): {} instructions, {} cycles at the last "
        "decode step ({} positions)\n",
        s.workload.op, s.label, s.tiling, r.instructions, r.cycles, positions);
  }
  fmt::print(
      "\nthe integer-only softmax ({}) against the float32 one (a prefill of 17 tokens, 3 "
      "decode steps):\n",
      name);
  if (deferred)
    fmt::print("  probabilities: none (the context of the exponentials, normalized on the host)\n");
  else
    fmt::print("  probabilities (int8, units of 1/127): {} of {} differ ({:.2f}%), by at most {}\n",
               probs_differ, probs,
               100.0 * static_cast<double>(probs_differ) / static_cast<double>(probs), probs_max);
  fmt::print(
      "  layer outputs (int8): {} of {} differ ({:.2f}%), by at most {}\n  integer layer runs "
      "{} its host reference\n",
      outs_differ, outs, 100.0 * static_cast<double>(outs_differ) / static_cast<double>(outs),
      outs_max, ok ? "equal" : "DIFFERENT from");
  // the VTA cycles of a prefill of 2,048 tokens, both layers (the integer softmax's passes
  // skip the chunks of keys each query sees none of)
  const auto x = te::NDArray::random(dlavm::DType::int8(), {1, 2048, 512}, seed++);
  const graph::NamedArray inputs[] = {{"x", x}};
  const dlavm::ne::Binding bindings[] = {{"token", 2048}};
  exec.reset_state();
  exec.run(inputs, bindings);
  if (float_cycles == 0) {
    float_exec.reset_state();
    float_exec.run(inputs, bindings);
    float_cycles = float_exec.last_run().vta_cycles;
  }
  std::uint64_t softmax_cycles = 0;
  for (std::size_t i = 0; i < mod.steps().size(); ++i)
    if (mod.steps()[i].workload.op.starts_with("integer_softmax"))
      softmax_cycles += exec.last_run().steps[i].cycles;
  const auto integer = exec.last_run().vta_cycles, floating = float_cycles;
  fmt::print(
      "  a prefill of 2048 tokens: {} VTA cycles with the integer softmax ({} of them the "
      "softmax), {} with the float32 one on the host ({:.1f}x)\n",
      integer, softmax_cycles, floating,
      static_cast<double>(integer) / static_cast<double>(floating));
  return ok;
}

}  // namespace

int main(int argc, char** argv) try {
  models::ModelOptions opts;
  std::vector<std::int64_t> prefills;
  std::int64_t decode_steps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (opts.take(i, argc, argv)) {
      continue;
    } else if (arg == "--decode" && i + 1 < argc) {
      decode_steps = std::stoll(argv[++i]);
    } else if (arg == "--prefill" && i + 1 < argc) {
      while (i + 1 < argc && argv[i + 1][0] != '-') prefills.push_back(std::stoll(argv[++i]));
    } else {
      fmt::print(stderr,
                 "usage: {} [--prefill N ...] [--decode STEPS] [--dump DIR] [--preset NAME]\n",
                 argv[0]);
      return 2;
    }
  }
  if (prefills.empty()) prefills = {1, 17, 2048};
  namespace graph = dlavm::graph;
  namespace te = dlavm::te;
  namespace vta = dlavm::vta;
  const models::LlmLayer net;
  const graph::Target target = opts.target();
  const auto fn = net.function();
  const auto typed = graph::infer_type(fn, target);
  fmt::print("{}\n", typed);
  const auto start = std::chrono::steady_clock::now();
  auto mod = graph::build(fn, target, {.name = "llm_layer"});
  const double build_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}\nbuilt once in {:.0f} ms\n\n", mod, build_ms);
  vta::SimDevice dev(target.env.config);
  // the integer softmax of a 2,048-token prefill executes more micro-ops in one run than the
  // simulator's default budget allows (a guard against runaway streams)
  dev.set_work_budget(std::uint64_t{1} << 32);
  graph::Executor exec(mod, dev);
  bool ok = true;
  std::uint64_t seed = 500;
  std::uint64_t float_cycles = 0;  // a prefill of 2,048 tokens' (compare_softmax)
  const auto step = [&](std::int64_t tokens, const std::string& what) {
    const auto x = te::NDArray::random(dlavm::DType::int8(), {1, tokens, 512}, seed++);
    const graph::NamedArray inputs[] = {{"x", x}};
    const dlavm::ne::Binding bindings[] = {{"token", tokens}};  // last_token: the cache's length
    const auto last = exec.state("k_cache").shape()[2];
    const auto check =
        models::run_and_check(exec, typed, inputs, bindings,
                              models::dump_dir(opts.dump, fmt::format("{}_{}", what, last)));
    std::uint64_t dram = 0;
    for (const auto& s : exec.last_run().steps) dram += s.dram_bytes;
    fmt::print(
        "{:<8} token {:>4}, last_token {:>4}: {:>9} VTA cycles, {:>9} DRAM bytes, {} VTA layers "
        "checked, {} differ, outputs {}, run {:.1f} ms\n",
        what, tokens, last, exec.last_run().vta_cycles, dram, check.layers, check.mismatches,
        check.outputs_equal ? "equal" : "DIFFERENT", check.run_ms);
    ok = ok && check.layers == 8 && check.mismatches == 0 && check.outputs_equal;
    if (tokens == 2048 && last == 0) float_cycles = exec.last_run().vta_cycles;
  };
  for (const std::int64_t prefill : prefills) {
    exec.reset_state();
    step(prefill, "prefill");
    for (std::int64_t d = 0; d < decode_steps && prefill + d < 2048; ++d) step(1, "decode");
  }
  fmt::print("\nthe last run:\n{}\n", exec.summary());
  for (const auto how : {models::llm::Softmax::Integer, models::llm::Softmax::IntegerSplit,
                         models::llm::Softmax::IntegerDeferred})
    ok = compare_softmax(exec, target, how, float_cycles) && ok;
  if (!ok) {
    fmt::print("FAIL: llm_layer differs from the host reference\n");
    return 1;
  }
  fmt::print("PASS: llm_layer equals the host reference for every prefill and decode step\n");
  return 0;
} catch (const dlavm::Error& e) {
  fmt::print(stderr, "error: {}\n", e.what());
  return 1;
}
