// The LLM decoder layer of the gallery (examples/models.hpp: d_model 512, 8 heads, FFN 2048,
// token 1..2048 after last_token 0..2047 cached positions). Targets (issue 22): build once in
// under 500 ms; instantiate every VTA step for a new (token, last_token) in under 50 us; a
// decode step (token 1) on SimDevice in under 50 ms, its DRAM traffic within 1.2x of the
// minimum (weights read once, the cache read once); at a prefill of 2048 tokens every VTA
// matmul at 80% or more of its roofline bound on the cycle model.
#include <benchmark/benchmark.h>

#include "../examples/models.hpp"
#include <algorithm>
#include <chrono>
#include <memory>
#include <span>
#include <sys/resource.h>
#include <vector>

namespace {

namespace graph = dlavm::graph;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

// range 0: the softmax (models::llm::Softmax: float32 on the host, integers on VTA)
void BM_BuildLlmLayer(benchmark::State& state) {
  const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21,
                             static_cast<models::llm::Softmax>(state.range(0)));
  const graph::Target target;
  const auto fn = net.function();
  for (auto _ : state) benchmark::DoNotOptimize(graph::build(fn, target, {.name = "llm_layer"}));
}
BENCHMARK(BM_BuildLlmLayer)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Instantiates the streams of the VTA steps `which` takes, at fixed DRAM addresses, and hands
// each to `keep` (by default, dropped); returns their instructions.
template <class Which, class Keep = void (*)(vta::Stream&&)>
std::size_t instantiate(
    const graph::Module& mod, std::span<const dlavm::ne::Binding> bindings, Which which,
    Keep keep = [](vta::Stream&& s) { benchmark::DoNotOptimize(s); }) {
  std::size_t insns = 0;
  for (const auto& s : mod.steps()) {
    if (s.kind != graph::ModuleStep::Kind::Vta || !which(s)) continue;
    const std::vector<std::uint64_t> phys(s.inputs.size() + 1, 0x1000000);
    auto stream = s.program->instantiate(bindings, phys);
    insns += stream.insns.size();
    keep(std::move(stream));
  }
  return insns;
}

// Every VTA step's stream for (token, last_token): what a run does before its first step when
// every dim is new. Range 2: the softmax (1: integers, on VTA).
void BM_InstantiateLlmLayer(benchmark::State& state) {
  const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21,
                             static_cast<models::llm::Softmax>(state.range(2)));
  const auto mod = graph::build(net.function(), graph::Target{}, {.name = "llm_layer"});
  const dlavm::ne::Binding bindings[] = {{"token", state.range(0)}, {"last_token", state.range(1)}};
  std::size_t insns = 0;
  for (auto _ : state) insns = instantiate(mod, bindings, [](const auto&) { return true; });
  state.counters["instructions"] = static_cast<double>(insns);
}
BENCHMARK(BM_InstantiateLlmLayer)
    ->Args({1, 0, 0})
    ->Args({1, 17, 0})
    ->Args({1, 2047, 0})
    ->Args({17, 0, 0})
    ->Args({2048, 0, 0})
    ->Args({1, 0, 1})
    ->Args({1, 2047, 1})
    ->Args({17, 0, 1})
    ->Unit(benchmark::kMicrosecond);

// The race check SimDevice runs on a stream before its first run (vta::check_hazards), over
// every VTA step's stream of a 2,048-token prefill, decoded and checked; range 0: the softmax
// (1: integers, on VTA, a stream of 0.91 M instructions). `instructions` counts the streams'
// instructions.
void BM_CheckHazardsLlmPrefill(benchmark::State& state) {
  const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21,
                             static_cast<models::llm::Softmax>(state.range(0)));
  const graph::Target target;
  const auto mod = graph::build(net.function(), target, {.name = "llm_layer"});
  const dlavm::ne::Binding bindings[] = {{"token", 2048}, {"last_token", 0}};
  std::vector<vta::Stream> streams;
  const std::size_t insns = instantiate(
      mod, bindings, [](const auto&) { return true; },
      [&](vta::Stream&& s) { streams.push_back(std::move(s)); });
  for (auto _ : state)
    for (const auto& stream : streams) vta::check_hazards(target.env.config, stream);
  state.counters["instructions"] = static_cast<double>(insns);
}
BENCHMARK(BM_CheckHazardsLlmPrefill)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("integer_softmax")
    ->Unit(benchmark::kMillisecond);

// A decode step's integer softmax at (token 1, last_token 2,047) and the step before's at
// 2,046, as a generation loop's device meets them: their streams (1,691 instructions each,
// micro-ops placed at 0) and their decodes.
struct SoftmaxDecodeSteps {
  SoftmaxDecodeSteps() {
    const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21, models::llm::Softmax::Integer);
    const auto mod = graph::build(net.function(), target, {.name = "llm_layer"});
    for (const std::int64_t last : {2046, 2047}) {
      const dlavm::ne::Binding bindings[] = {{"token", 1}, {"last_token", last}};
      instantiate(
          mod, bindings, [](const auto& s) { return s.workload.op == "integer_softmax"; },
          [&](vta::Stream&& s) {
            progs.push_back(vta::decode_all(target.env.config.layout(), s.insns));
            streams.push_back(std::move(s));
          });
    }
  }
  bool valid() const { return progs.size() == 2; }
  graph::Target target;
  std::vector<vta::Stream> streams;  // the step before's, this step's
  std::vector<std::vector<vta::InsnFields>> progs;
};

// The race check of the step's stream, decoded: the whole stream (range 0: 0), the entries its
// accesses add to the step before's (vta::check_hazards_like, 1), and those given what the step
// before's check kept (its clocks and accesses: detail::check_hazards_proving, as SimDevice
// checks a generation loop's steps, 2).
void BM_CheckHazardsDecodeStep(benchmark::State& state) {
  const SoftmaxDecodeSteps steps;
  if (!steps.valid()) return state.SkipWithError("not one integer softmax step");
  const auto& config = steps.target.env.config;
  const vta::DecodedStream before{steps.progs[0], steps.streams[0].uops},
      now{steps.progs[1], steps.streams[1].uops};
  vta::detail::HazardProof before_proof, proof;
  vta::detail::check_hazards_proving(config, before, nullptr, nullptr, &before_proof);
  bool added_alone = false;
  for (auto _ : state) {
    if (state.range(0) == 0)
      vta::check_hazards(config, now.prog, now.uops, 0);
    else if (state.range(0) == 1)
      added_alone = vta::check_hazards_like(config, now, before);
    else
      added_alone = vta::detail::check_hazards_proving(config, now, &before, &before_proof, &proof)
                        .added_alone;
  }
  if (state.range(0) != 0 && !added_alone) state.SkipWithError("checked whole");
  state.counters["instructions"] = static_cast<double>(now.prog.size());
}
BENCHMARK(BM_CheckHazardsDecodeStep)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("like")
    ->Unit(benchmark::kMicrosecond);

// The step's words decoded: each (range 0: 0, vta::decode_all) or, the step before's kept
// decoded as a device keeps the streams it proved, from its decode where their words agree (1).
void BM_DecodeDecodeStep(benchmark::State& state) {
  const SoftmaxDecodeSteps steps;
  if (!steps.valid()) return state.SkipWithError("not one integer softmax step");
  const auto layout = steps.target.env.config.layout();
  vta::detail::DecodedStreams kept;
  if (state.range(0) == 1) kept.insert(steps.streams[0], 0, steps.progs[0]);
  const auto& s = steps.streams[1];
  for (auto _ : state) benchmark::DoNotOptimize(kept.decode(layout, s.insns, s, 0));
  state.counters["instructions"] = static_cast<double>(s.insns.size());
}
BENCHMARK(BM_DecodeDecodeStep)->Arg(0)->Arg(1)->ArgName("like")->Unit(benchmark::kMicrosecond);

// What a decode step instantiates when its new position starts a new tile of keys: the two
// attention matmuls (every other stream is reused, graph::Module keeps it per packed shape).
void BM_InstantiateDecodeMatmuls(benchmark::State& state) {
  const models::LlmLayer net;
  const auto mod = graph::build(net.function(), graph::Target{}, {.name = "llm_layer"});
  const dlavm::ne::Binding bindings[] = {{"token", 1}, {"last_token", state.range(0)}};
  std::size_t insns = 0;
  for (auto _ : state)
    insns = instantiate(mod, bindings,
                        [](const graph::ModuleStep& s) { return s.op.starts_with("matmul"); });
  state.counters["instructions"] = static_cast<double>(insns);
}
BENCHMARK(BM_InstantiateDecodeMatmuls)->Arg(16)->Arg(256)->Arg(2047)->Unit(benchmark::kMicrosecond);

// What a decode step at (token 1, last_token = range 0) instantiates after the step before it,
// as graph::Executor does: the VTA steps whose operands' packed shapes changed (range 1: the
// softmax, 1: integers on VTA, whose stream changes with every key), each stream rewritten in
// place where its shape stays (vta::Program::reinstantiate), else written anew. Iterations
// alternate between the two positions, so that each rewrites the last one's streams.
void BM_InstantiateDecodeStep(benchmark::State& state) {
  const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21,
                             static_cast<models::llm::Softmax>(state.range(1)));
  const auto mod = graph::build(net.function(), graph::Target{}, {.name = "llm_layer"});
  const std::int64_t last = state.range(0);
  const dlavm::ne::Binding before[] = {{"token", 1}, {"last_token", last - 1}};
  const dlavm::ne::Binding now[] = {{"token", 1}, {"last_token", last}};
  const auto shapes = [&](const graph::ModuleStep& s, std::span<const dlavm::ne::Binding> b) {
    std::vector<std::int64_t> key;
    for (std::size_t i = 0; i <= s.inputs.size(); ++i)
      for (const auto& d : mod.values()[i < s.inputs.size() ? s.inputs[i] : s.output].shape)
        key.push_back(dlavm::ne::eval(d, b));
    return key;
  };
  struct Step {
    const graph::ModuleStep* step;
    std::vector<std::uint64_t> phys;
    vta::Stream stream;
    vta::StreamTape tape;
  };
  std::vector<Step> changed;  // the steps whose shapes differ, at `before`
  for (const auto& s : mod.steps())
    if (s.kind == graph::ModuleStep::Kind::Vta && shapes(s, before) != shapes(s, now)) {
      Step c{&s, std::vector<std::uint64_t>(s.inputs.size() + 1, 0x1000000), {}, {}};
      c.stream = s.program->instantiate(before, c.phys, c.tape);
      changed.push_back(std::move(c));
    }
  std::size_t insns = 0, rewritten = 0, iteration = 0;
  for (auto _ : state) {
    const std::span<const dlavm::ne::Binding> to = iteration++ % 2 == 0 ? now : before;
    insns = rewritten = 0;
    for (auto& c : changed) {
      if (c.step->program->reinstantiate(c.stream, c.tape, to))
        ++rewritten;
      else
        c.stream = c.step->program->instantiate(to, c.phys, c.tape);
      insns += c.stream.insns.size();
      benchmark::DoNotOptimize(c.stream);
    }
  }
  state.counters["instructions"] = static_cast<double>(insns);
  state.counters["steps"] = static_cast<double>(changed.size());
  state.counters["rewritten"] = static_cast<double>(rewritten);
}
BENCHMARK(BM_InstantiateDecodeStep)
    ->ArgsProduct({{2046, 2047}, {0, 1, 2, 3}})
    ->ArgNames({"last_token", "integer_softmax"})
    ->Unit(benchmark::kMicrosecond);

// One decode step after last_token cached positions (range 0), the softmax in float32 on the
// host or in integers on VTA (range 1: models::llm::Softmax). The DRAM minimum: the
// constants VTA reads (packed weights and biases) once, and the keys and values of every
// position once (the integer softmax adds its own traffic: the scores read three times, the
// probabilities written, counted apart as softmax_dram_bytes).
// One decode step (token 1), timed: its wall time and its host steps' time added to the sums
// (the host steps' share of a step's wall time).
struct DecodeClock {
  double host_seconds = 0, run_seconds = 0;
  void step(graph::Executor& exec, const graph::Module& mod, const te::NDArray& x) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(exec.run({{"x", x}}, {{"token", 1}}));
    run_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t i = 0; i < mod.steps().size(); ++i)
      if (mod.steps()[i].kind != graph::ModuleStep::Kind::Vta)
        host_seconds += exec.last_run().steps[i].host_seconds;
  }
  double host_share() const { return host_seconds / run_seconds; }
};

void BM_DecodeStepLlmLayer(benchmark::State& state) {
  const auto softmax = static_cast<models::llm::Softmax>(state.range(1));
  const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21, softmax);
  const graph::Target target;
  auto mod = graph::build(net.function(), target, {.name = "llm_layer"});
  const std::int64_t last = state.range(0);
  const auto cache = te::NDArray::random(DType::int8(), {1, 8, last, 64}, 3);
  const auto x = te::NDArray::random(DType::int8(), {1, 1, 512}, 4);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  const auto reset = [&] {
    exec.set_state("k_cache", cache);
    exec.set_state("v_cache", cache);
  };
  reset();
  exec.run({{"x", x}}, {{"token", 1}});  // the streams for these bindings, once
  DecodeClock clock;
  for (auto _ : state) {
    state.PauseTiming();  // back to last_token cached positions
    reset();
    state.ResumeTiming();
    clock.step(exec, mod, x);
  }
  state.counters["host_share"] = clock.host_share();
  std::int64_t minimum = 2 * 8 * (last + 1) * 64;
  for (const auto& s : mod.steps())
    if (s.kind == graph::ModuleStep::Kind::Vta)
      for (const auto in : s.inputs)
        if (mod.values()[in].constant) minimum += mod.values()[in].storage.bytes;
  std::uint64_t data = 0, cycles = 0, softmax_data = 0, softmax_cycles = 0;
  for (std::size_t i = 0; i < mod.steps().size(); ++i) {
    const auto& s = mod.steps()[i];
    if (s.kind != graph::ModuleStep::Kind::Vta) continue;
    const auto& r = exec.last_run().steps[i];
    const bool is_softmax = s.workload.op.starts_with("integer_softmax");
    (is_softmax ? softmax_data : data) += r.data_bytes;
    (is_softmax ? softmax_cycles : cycles) += r.cycles;
  }
  state.counters["vta_cycles"] = static_cast<double>(cycles + softmax_cycles);
  state.counters["dram_bytes"] = static_cast<double>(data);
  state.counters["dram_vs_minimum"] = static_cast<double>(data) / static_cast<double>(minimum);
  if (softmax != models::llm::Softmax::Float) {
    state.counters["softmax_cycles"] = static_cast<double>(softmax_cycles);
    state.counters["softmax_dram_bytes"] = static_cast<double>(softmax_data);
  }
}
BENCHMARK(BM_DecodeStepLlmLayer)
    ->ArgsProduct({{0, 17, 2047}, {0, 1}})
    ->ArgNames({"last_token", "integer_softmax"})
    ->Unit(benchmark::kMillisecond);

// The process's minor page faults so far: the new pages it took.
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// A new device and executor for the gallery's layer, then its first decode step (token 1 after
// no cached position): what a server pays to start serving the model. The memory plan sizes the
// device's DRAM at the dims' maxima (2,048 tokens); `dram_bytes` counts it, `page_faults` the
// host pages the iteration took (minor faults: new pages, the device's DRAM among them).
// Range 0: the softmax (1: integers, on VTA).
void BM_StartLlmLayer(benchmark::State& state) {
  const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21,
                             static_cast<models::llm::Softmax>(state.range(0)));
  const graph::Target target;
  const auto mod = graph::build(net.function(), target, {.name = "llm_layer"});
  const auto x = te::NDArray::random(DType::int8(), {1, 1, 512}, 4);
  long faults = 0;
  std::uint64_t dram = 0;
  for (auto _ : state) {
    const long before = minor_faults();
    vta::SimDevice dev(target.env.config);
    graph::Executor exec(mod, dev);
    benchmark::DoNotOptimize(exec.run({{"x", x}}, {{"token", 1}}));
    dram = dev.simulator().dram().in_use();
    faults += minor_faults() - before;
  }
  state.counters["dram_bytes"] = static_cast<double>(dram);
  state.counters["page_faults"] =
      static_cast<double>(faults) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_StartLlmLayer)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("integer_softmax")
    ->Unit(benchmark::kMillisecond);

// A prefill of 2,048 tokens on the host and the simulator, run again after a first run: the
// executor's steady state, as a server sees it for each new prompt of that length. Range 0:
// the softmax (0: float32 on the host, 1: integers on VTA). `page_faults` counts the minor
// faults of a run: the host steps' arrays (int64 an element for integers: the float path's
// scores and probabilities are 256 MiB each) taken as new pages where te's block cache did not
// keep a freed block of their size.
void BM_PrefillRunLlmLayer(benchmark::State& state) {
  const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21,
                             static_cast<models::llm::Softmax>(state.range(0)));
  const graph::Target target;
  const auto mod = graph::build(net.function(), target, {.name = "llm_layer"});
  const auto x = te::NDArray::random(DType::int8(), {1, 2048, 512}, 5);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  dev.set_work_budget(std::uint64_t{1} << 32);
  exec.run({{"x", x}}, {{"token", 2048}});  // the streams and the blocks, once
  long faults = 0;
  for (auto _ : state) {
    exec.reset_state();
    const long before = minor_faults();
    benchmark::DoNotOptimize(exec.run({{"x", x}}, {{"token", 2048}}));
    faults += minor_faults() - before;
  }
  state.counters["page_faults"] =
      static_cast<double>(faults) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PrefillRunLlmLayer)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("integer_softmax")
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

// The float softmax's host step in that prefill: host::softmax over the 8 heads' causal scores
// [8, 2,048, 2,048] (random, the keys after each query -infinity, as host::causal_mask leaves
// them).
void BM_HostSoftmaxLlmScores(benchmark::State& state) {
  const auto scores =
      dlavm::host::causal_mask(te::NDArray::random_float({8, 2048, 2048}, 6, -8.0, 8.0));
  for (auto _ : state) benchmark::DoNotOptimize(dlavm::host::softmax(scores));
  state.SetItemsProcessed(state.iterations() * 8 * 2048 * 2048);
}
BENCHMARK(BM_HostSoftmaxLlmScores)->Unit(benchmark::kMillisecond);

// A decode step's append of one position to a KV cache of the gallery's layer, [1, 8, positions,
// 64] int8 packed in 16 x 16 tiles, held at 2,040 positions: range 0 the keys (positions along a
// tile's rows, the 64 dims along its columns: runs of 16 bytes), 1 the values (positions along
// the columns: each position a byte every 16). Not committed, so every iteration writes the same
// position; take_written's ranges are what the executor then copies to the device.
void BM_AppendKvCache(benchmark::State& state) {
  const bool values = state.range(0) == 1;
  graph::AppendedState held(
      dlavm::DType::int8(), {1, 8, 0, 64}, 2,
      values ? std::vector<std::int64_t>{0, 1, 2, 3} : std::vector<std::int64_t>{0, 1, 3, 2},
      {graph::Layout::Kind::MatmulWeight, 16, 16}, values ? "v" : "k");
  held.reserve(2048);
  held.assign(te::NDArray::random(dlavm::DType::int8(), {1, 8, 2040, 64}, 1));
  held.take_written();
  const auto row = te::NDArray::random(dlavm::DType::int8(), {1, 8, 1, 64}, 2);
  const auto bytes = vta::dram_bytes(row);
  const std::int64_t shape[] = {1, 8, 1, 64};
  std::size_t ranges = 0;
  for (auto _ : state) {
    held.append(bytes, shape);
    ranges = held.take_written().size();
    benchmark::DoNotOptimize(ranges);
  }
  state.counters["ranges"] = static_cast<double>(ranges);
}
BENCHMARK(BM_AppendKvCache)->Arg(0)->Arg(1)->ArgName("values")->Unit(benchmark::kMicrosecond);

// The gallery's layer (range 0 of the benchmark: its softmax) for 16 decode steps in a row
// from 2,031 cached positions: its module, a random cache and a token's input.
struct DecodeRun {
  static constexpr std::int64_t kFirst = 2031, kSteps = 16;
  explicit DecodeRun(std::int64_t softmax)
      : net(512, 8, 2048, 2048, 2048, 21, static_cast<models::llm::Softmax>(softmax)),
        mod(graph::build(net.function(), target, {.name = "llm_layer"})) {}
  void set_cache(graph::Executor& exec) const {
    exec.set_state("k_cache", cache);
    exec.set_state("v_cache", cache);
  }
  const models::LlmLayer net;
  const graph::Target target;
  const graph::Module mod;
  const te::NDArray cache = te::NDArray::random(DType::int8(), {1, 8, kFirst, 64}, 3);
  const te::NDArray x = te::NDArray::random(DType::int8(), {1, 1, 512}, 4);
};

// 16 decode steps in a row from 2,031 cached positions to 2,047 (the cache set outside the
// timing before the first), the same 16 in every iteration on one device, whose streams are
// then proven and decoded once (BM_GenerateLlmLayer runs them as a generation loop does): the
// host steps' share of their wall time (`host_share`) and their time a step
// (`host_us_per_step`), where BM_DecodeStepLlmLayer, which sets the cache
// before every step, has each step's KV append copy the whole cache to the device. Range 0:
// the softmax (1: integers, on VTA; 2: the same in two kernels,
// models::llm::Softmax::IntegerSplit; 3: the exponentials on VTA, the context normalized on the
// host, IntegerDeferred).
void BM_DecodeRunLlmLayer(benchmark::State& state) {
  const DecodeRun run(state.range(0));
  vta::SimDevice dev(run.target.env.config);
  graph::Executor exec(run.mod, dev);
  DecodeClock clock;
  for (auto _ : state) {
    state.PauseTiming();
    run.set_cache(exec);
    state.ResumeTiming();
    for (std::int64_t step = 0; step < DecodeRun::kSteps; ++step) clock.step(exec, run.mod, run.x);
  }
  state.counters["host_share"] = clock.host_share();
  const auto steps = static_cast<double>(state.iterations() * DecodeRun::kSteps);
  state.counters["ms_per_step"] = clock.run_seconds * 1e3 / steps;
  state.counters["host_us_per_step"] = clock.host_seconds * 1e6 / steps;
}
BENCHMARK(BM_DecodeRunLlmLayer)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->ArgName("integer_softmax")
    ->Unit(benchmark::kMillisecond);

// 16 decode steps in a row at positions no step ran before (from 2,031 cached positions to
// 2,047), as a generation loop runs them: BM_DecodeRunLlmLayer repeats the same 16 positions on
// one device, whose proven streams then skip their race check and decode; here each iteration
// has a new device and executor (made outside the timing), so that every stream that changes
// with the position is instantiated, decoded and proven (vta::check_hazards) in its step.
// `checks` counts the race checks a step runs. Range 0: the softmax (1: integers, on VTA).
void BM_GenerateLlmLayer(benchmark::State& state) {
  const DecodeRun run(state.range(0));
  std::size_t checks = 0;
  double seconds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto dev = std::make_unique<vta::SimDevice>(run.target.env.config);
    auto exec = std::make_unique<graph::Executor>(run.mod, *dev);
    run.set_cache(*exec);
    state.ResumeTiming();
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t step = 0; step < DecodeRun::kSteps; ++step)
      benchmark::DoNotOptimize(exec->run({{"x", run.x}}, {{"token", 1}}));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.PauseTiming();
    checks += dev->hazard_checks();
    exec.reset();
    dev.reset();
    state.ResumeTiming();
  }
  const auto steps = static_cast<double>(state.iterations() * DecodeRun::kSteps);
  state.counters["checks"] = static_cast<double>(checks) / steps;
  state.counters["ms_per_step"] = seconds * 1e3 / steps;
}
BENCHMARK(BM_GenerateLlmLayer)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("integer_softmax")
    ->Unit(benchmark::kMillisecond);

// A prefill of 2048 tokens on the simulator (one run): the least share of its roofline bound
// over the VTA matmuls (Q.K^T, probabilities.V) and over all VTA steps. Range 0: the softmax
// (1: integers, on VTA, 2: in two kernels, 3: the exponentials alone, the context normalized on
// the host; its VTA cycles counted apart as softmax_cycles); range
// 1: the heads, of 64 dims each (8: the gallery's layer; 3: d_model 192, whose integer softmax
// fills 15 lanes with 5 queries).
void BM_PrefillLlmLayer(benchmark::State& state) {
  const std::int64_t heads = state.range(1), d_model = 64 * heads;
  const models::LlmLayer net(d_model, heads, 4 * d_model, 2048, 2048, 21,
                             static_cast<models::llm::Softmax>(state.range(0)));
  const graph::Target target;
  auto mod = graph::build(net.function(), target, {.name = "llm_layer"});
  const auto x = te::NDArray::random(DType::int8(), {1, 2048, d_model}, 5);
  vta::SimDevice dev(target.env.config);
  graph::Executor exec(mod, dev);
  // the integer softmax's step alone runs about 2^28 ALU micro-ops: 2048 queries x 2048 keys
  dev.set_work_budget(std::uint64_t{1} << 32);
  for (auto _ : state) {
    exec.reset_state();
    benchmark::DoNotOptimize(exec.run({{"x", x}}, {{"token", 2048}}));
  }
  double matmul = 1, all = 1;
  std::uint64_t softmax_cycles = 0;
  for (std::size_t i = 0; i < mod.steps().size(); ++i) {
    const auto& s = mod.steps()[i];
    if (s.kind != graph::ModuleStep::Kind::Vta) continue;
    const auto& r = exec.last_run().steps[i];
    if (s.workload.op.starts_with("integer_softmax")) {
      softmax_cycles += r.cycles;
      continue;  // ALU-bound: no GEMM roofline
    }
    const double share = static_cast<double>(r.roofline_cycles) / static_cast<double>(r.cycles);
    all = std::min(all, share);
    if (s.op.starts_with("matmul")) matmul = std::min(matmul, share);
  }
  state.counters["matmul_roofline_min"] = matmul;
  state.counters["vta_roofline_min"] = all;
  state.counters["vta_cycles"] = static_cast<double>(exec.last_run().vta_cycles);
  if (softmax_cycles > 0) state.counters["softmax_cycles"] = static_cast<double>(softmax_cycles);
}
BENCHMARK(BM_PrefillLlmLayer)
    ->Args({0, 8})
    ->Args({1, 8})
    ->Args({2, 8})
    ->Args({3, 8})
    ->Args({0, 3})
    ->Args({1, 3})
    ->Args({2, 3})
    ->Args({3, 3})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
