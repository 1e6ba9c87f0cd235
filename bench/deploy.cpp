// Deployment: firmware instantiation (the generated replays writing a stream for a new dim
// value, no device run), emitting ResNet-18, and its memory plan against the lower bound.
#include <benchmark/benchmark.h>

#include "../examples/models.hpp"
#include "bench_llm.hpp"
#include "bench_llm_int.hpp"
#include "bench_mlp.hpp"
#include "token_gemm.hpp"
#include <algorithm>
#include <filesystem>
#include <vector>

namespace {

namespace rt = dlavm::runtime;

// Buffers for one replayed stream in host memory (the firmware's would be its insts and uop
// regions).
struct Buffers {
  std::vector<rt::InsnWord> insns;
  std::vector<std::uint32_t> uops, relocs;
  std::vector<rt::KernelSlot> kernels, resident;
  std::vector<std::uint32_t> kernel_index;
  std::vector<rt::UopOp> ops;
  std::vector<rt::RegionState> states;
  Buffers(std::size_t n_insns, std::size_t n_uops, std::size_t n_ops, std::size_t regions)
      : insns(n_insns),
        uops(n_uops),
        relocs(n_insns),
        kernels(n_insns),
        resident(n_insns),
        kernel_index(rt::KernelTables::index_size(n_insns, n_insns)),
        ops(n_ops),
        states(regions) {}
};

// `Layout`: the generated header's WriterLayout, as the firmware's session uses it.
template <class Layout, class Fn>
std::size_t replay_once(Fn fn, Buffers& b, const rt::SramRegion* regions, std::size_t nregions,
                        const std::uint64_t* phys, const std::int64_t* dims, std::uint32_t depth,
                        const rt::ElemBytes& elem) {
  rt::SpanStorage st(b.insns.data(), b.insns.size(), b.uops.data(), b.uops.size(), b.relocs.data(),
                     {b.kernels.data(), b.resident.data(), b.kernel_index.data(), b.kernels.size(),
                      b.resident.size()});
  rt::StreamWriter<rt::SpanStorage, Layout> w({}, depth, st);
  rt::Replay<rt::SpanStorage, Layout> r(w, depth, elem, regions, b.states.data(), nregions, phys,
                                        {b.ops.data(), b.ops.size()});
  if (!fn(r, dims) || !w.finish()) return 0;
  return st.insn_count();
}

// The token GEMM's replay for `token` rows (what BM_InstantiateTokenGemm does on the host).
template <class Program>
void BM_FirmwareTokenGemm(benchmark::State& state) {
  namespace g = token_gemm;
  Buffers b(Program::kInsns, Program::kUops, Program::kMaxOps, std::size(Program::kRegions));
  const std::uint64_t phys[] = {0x100000, 0x200000, 0x300000};
  const std::int64_t dims[] = {state.range(0)};
  std::size_t insns = 0;
  for (auto _ : state) {
    insns = replay_once<g::WriterLayout>(
        [](auto& r, const std::int64_t* d) { return Program::replay(r, d); }, b, Program::kRegions,
        std::size(Program::kRegions), phys, dims, g::kUopDepth, g::kElemBytes);
    benchmark::DoNotOptimize(b.insns.data());
  }
  if (insns == 0) state.SkipWithError("replay failed");
  state.counters["instructions"] = static_cast<double>(insns);
}
// The generated namespaces as types, for the template.
template <int Block>
struct TokenGemm;
#define TOKEN_GEMM(n)                                                     \
  template <>                                                             \
  struct TokenGemm<n> {                                                   \
    static constexpr auto& kRegions = token_gemm::block##n::kRegions;     \
    static constexpr std::size_t kInsns = token_gemm::block##n::kInsns;   \
    static constexpr std::size_t kUops = token_gemm::block##n::kUops;     \
    static constexpr std::size_t kMaxOps = token_gemm::block##n::kMaxOps; \
    template <class R>                                                    \
    static bool replay(R& r, const std::int64_t* d) {                     \
      return token_gemm::block##n::replay(r, d);                          \
    }                                                                     \
  };
TOKEN_GEMM(64)
TOKEN_GEMM(512)
#undef TOKEN_GEMM
BENCHMARK(BM_FirmwareTokenGemm<TokenGemm<64>>)
    ->Arg(1)
    ->Arg(37)
    ->Arg(2048)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FirmwareTokenGemm<TokenGemm<512>>)
    ->Arg(1)
    ->Arg(37)
    ->Arg(2048)
    ->Unit(benchmark::kMicrosecond);

// The MLP's three dense layers replayed for a new batch: all of the firmware's instantiation.
void BM_FirmwareMlp(benchmark::State& state) {
  namespace m = bench_mlp;
  Buffers b(4096, 4096, 64, 16);
  std::uint64_t phys[8] = {};
  const std::int64_t dims[] = {state.range(0)};
  std::size_t insns = 0;
  for (auto _ : state) {
    insns = 0;
#define BENCH_REPLAY(step)                                                                        \
  for (std::size_t k = 0; k < std::size(m::step::kParams); ++k) phys[k] = m::step::kParams[k];    \
  insns += replay_once<m::WriterLayout>(                                                          \
      [](auto& r, const std::int64_t* d) { return m::step::replay(r, d); }, b, m::step::kRegions, \
      std::size(m::step::kRegions), phys, dims, m::kUopDepth, m::kElemBytes);
    BENCH_MLP_STEPS(BENCH_REPLAY)
#undef BENCH_REPLAY
    benchmark::DoNotOptimize(b.insns.data());
  }
  state.counters["instructions"] = static_cast<double>(insns);
}
BENCHMARK(BM_FirmwareMlp)->Arg(1)->Arg(37)->Arg(256)->Unit(benchmark::kMicrosecond);

// A run of the firmware example's LLM decoder layer (d_model 512, 8 heads, FFN 2048, a cache of
// 2048 positions, at most 16 tokens a run) replayed for (token, last_token): its VTA steps, the
// projections, Q.K^T, probabilities.V and the FFN (the softmax and the layer norms run on the
// host and are not timed here). A decode step at the full cache, (1, 2047), and a run of 16
// tokens after 2,032 positions are the largest dims. `Integer`: the same layer with
// llm::Softmax::Integer, whose softmax is one more VTA step.
template <bool Integer>
void BM_FirmwareLlmLayer(benchmark::State& state) {
  Buffers b(Integer ? 65536 : 8192, Integer ? 65536 : 8192, 64, 64);
  std::uint64_t phys[8] = {};
  const std::int64_t dims[] = {state.range(0), state.range(1), state.range(1)};
  std::size_t insns = 0;
  bool failed = false;
  for (auto _ : state) {
    insns = 0;
#define BENCH_REPLAY(m, step)                                                                  \
  for (std::size_t k = 0; k < std::size(m::step::kParams); ++k) phys[k] = m::step::kParams[k]; \
  if (const auto n = replay_once<m::WriterLayout>(                                             \
          [](auto& r, const std::int64_t* d) { return m::step::replay(r, d); }, b,             \
          m::step::kRegions, std::size(m::step::kRegions), phys, dims, m::kUopDepth,           \
          m::kElemBytes);                                                                      \
      n == 0)                                                                                  \
    failed = true;                                                                             \
  else                                                                                         \
    insns += n;
#define BENCH_REPLAY_FLOAT(step) BENCH_REPLAY(bench_llm, step)
#define BENCH_REPLAY_INTEGER(step) BENCH_REPLAY(bench_llm_int, step)
    if constexpr (Integer) {
      BENCH_LLM_INT_STEPS(BENCH_REPLAY_INTEGER)
    } else {
      BENCH_LLM_STEPS(BENCH_REPLAY_FLOAT)
    }
#undef BENCH_REPLAY_INTEGER
#undef BENCH_REPLAY_FLOAT
#undef BENCH_REPLAY
    benchmark::DoNotOptimize(b.insns.data());
  }
  if (failed) state.SkipWithError("a step's replay failed");
  state.counters["instructions"] = static_cast<double>(insns);
}
BENCHMARK(BM_FirmwareLlmLayer<false>)
    ->Args({1, 0})
    ->Args({1, 2047})
    ->Args({16, 0})
    ->Args({16, 2032})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FirmwareLlmLayer<true>)
    ->Args({1, 0})
    ->Args({1, 2047})
    ->Args({16, 2032})
    ->Unit(benchmark::kMicrosecond);

// Each VTA step of that layer alone, float and integer, at the largest dims: where a run's
// time goes (the integer layer's step18 is its softmax).
template <class Layout, class Fn>
void llm_step(benchmark::State& state, Fn fn, const rt::SramRegion* regions, std::size_t nregions,
              const std::uint64_t* params, std::size_t nparams, std::uint32_t depth,
              const rt::ElemBytes& elem) {
  Buffers b(65536, 65536, 64, 64);
  std::uint64_t phys[8] = {};
  std::copy(params, params + nparams, phys);
  const std::int64_t dims[] = {state.range(0), state.range(1), state.range(1)};
  std::size_t insns = 0;
  for (auto _ : state) {
    insns = replay_once<Layout>(fn, b, regions, nregions, phys, dims, depth, elem);
    benchmark::DoNotOptimize(b.insns.data());
  }
  if (insns == 0) state.SkipWithError("the step's replay failed");
  state.counters["instructions"] = static_cast<double>(insns);
}
const bool llm_steps_registered = [] {
#define BENCH_STEP(m, layer, step)                                                       \
  benchmark::RegisterBenchmark(                                                          \
      "BM_FirmwareLlmStep<" layer ">/" #step,                                            \
      [](benchmark::State& state) {                                                      \
        llm_step<m::WriterLayout>(                                                       \
            state, [](auto& r, const std::int64_t* d) { return m::step::replay(r, d); }, \
            m::step::kRegions, std::size(m::step::kRegions), m::step::kParams,           \
            std::size(m::step::kParams), m::kUopDepth, m::kElemBytes);                   \
      })                                                                                 \
      ->Args({1, 2047})                                                                  \
      ->Args({16, 2032})                                                                 \
      ->Unit(benchmark::kMicrosecond);
#define BENCH_STEP_FLOAT(step) BENCH_STEP(bench_llm, "float", step)
#define BENCH_STEP_INTEGER(step) BENCH_STEP(bench_llm_int, "integer", step)
  BENCH_LLM_STEPS(BENCH_STEP_FLOAT)
  BENCH_LLM_INT_STEPS(BENCH_STEP_INTEGER)
#undef BENCH_STEP_INTEGER
#undef BENCH_STEP_FLOAT
#undef BENCH_STEP
  return true;
}();

const dlavm::graph::Module& resnet18() {
  static const auto mod = dlavm::graph::build(models::ResNet18(224).function(),
                                              dlavm::graph::Target{}, {.name = "resnet18"});
  return mod;
}

void BM_EmitResNet18(benchmark::State& state) {
  const auto& mod = resnet18();
  const auto dir = std::filesystem::temp_directory_path() / "dlavm_bench_emit";
  std::filesystem::create_directories(dir);
  dlavm::deploy::EmitResult r;
  for (auto _ : state) r = dlavm::deploy::emit(mod, dir.string(), {.lite = state.range(0) != 0});
  state.counters["header_bytes"] = static_cast<double>(r.header_bytes);
  state.counters["instructions"] = static_cast<double>(r.static_instructions);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_EmitResNet18)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_PlanResNet18(benchmark::State& state) {
  const auto& mod = resnet18();
  dlavm::graph::MemoryPlan plan;
  for (auto _ : state) plan = dlavm::graph::plan_memory(mod);
  const auto runtime = plan.region(dlavm::graph::RegionKind::Runtime).bytes;
  state.counters["runtime_bytes"] = static_cast<double>(runtime);
  state.counters["live_peak"] = static_cast<double>(plan.live_peak);
  state.counters["ratio"] = static_cast<double>(runtime) / static_cast<double>(plan.live_peak);
}
BENCHMARK(BM_PlanResNet18)->Unit(benchmark::kMillisecond);

}  // namespace
