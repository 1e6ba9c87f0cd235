// dlavm's functional simulator beside the public one: apache/tvm-vta's simulator driver
// (src/sim/sim_driver.cc), built with g++ -O2 for the default vta_config.json from a fetched
// copy by `make bench-public-sim`. Both run the same streams, interleaved in each iteration
// so that the machine's load falls on both alike:
//   conv2d  the gallery's conv2d (ResNet-18 14x14x256 -> 256, 3x3; 221 instructions)
//   llm     every VTA step of the gallery's LLM layer (float softmax) in a prefill of `token`
//           tokens, run through graph::Executor
// The public simulator is timed in VTADeviceRun alone; dlavm's in SimDevice::run_at, which
// also checks the stream for races and runs the cycle model. Both outputs must be equal.
// Counters: public_ms and dlavm_ms per iteration (thread CPU time), their ratio, instructions.
//   vs_public_sim --benchmark_repetitions=3
#include <dlavm/vta/hw/driver_device.hpp>

#include <benchmark/benchmark.h>

#include "../../examples/gallery_ops.hpp"
#include "../../examples/models.hpp"
#include <cstdint>
#include <ctime>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

namespace te = dlavm::te;
namespace vta = dlavm::vta;
namespace graph = dlavm::graph;
namespace rt = dlavm::runtime;

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + (static_cast<double>(t.tv_nsec) * 1e-9);
}

// The time spent in each simulator and the instructions it ran.
struct Clock {
  double seconds = 0;
  std::uint64_t insns = 0;
};
Clock public_clock;

// The public driver API, VTADeviceRun timed.
struct TimedPublicApi : rt::VtaDriverApi {
  static int device_run(VTADeviceHandle h, vta_phy_addr_t insn, std::uint32_t count,
                        std::uint32_t wait) {
    const double t0 = thread_seconds();
    const int rc = rt::VtaDriverApi::device_run(h, insn, count, wait);
    public_clock.seconds += thread_seconds() - t0;
    public_clock.insns += count;
    return rc;
  }
};
using PublicDevice = vta::DriverDevice<TimedPublicApi>;

// dlavm's SimDevice, run_at timed.
struct TimedSimDevice : vta::SimDevice {
  using vta::SimDevice::SimDevice;
  Clock clock;
  vta::RunResult run_at(const vta::Stream& s, const vta::StreamPlacement& at) override {
    const double t0 = thread_seconds();
    auto r = vta::SimDevice::run_at(s, at);
    clock.seconds += thread_seconds() - t0;
    clock.insns += s.insns.size();
    return r;
  }
};

void report(benchmark::State& state, const Clock& pub, const Clock& ours) {
  const auto n = static_cast<double>(state.iterations());
  state.counters["public_ms"] = pub.seconds * 1e3 / n;
  state.counters["dlavm_ms"] = ours.seconds * 1e3 / n;
  state.counters["ratio"] = pub.seconds / ours.seconds;
  state.counters["instructions"] = static_cast<double>(ours.insns) / n;
  if (pub.insns != ours.insns) state.SkipWithError("the simulators ran different streams");
}

void BM_Conv2d(benchmark::State& state) {
  const vta::Env env;
  const gallery::Conv2d op(env, 14, 14, 256, 256, 3, 1, 1);
  auto s = op.schedule(env, 8, 7, 14);
  const auto prog = vta::build(s, op.args(), env, "conv2d");
  auto data = vta::pack_activation(te::NDArray::random(env.inp_dtype, {1, 256, 14, 14}, 7), env);
  auto kernel =
      vta::pack_weight(te::NDArray::random(env.wgt_dtype, {256, 256, 3, 3}, 8, -8, 8), env);
  const std::vector<std::int64_t> out = {1, 256 / env.block_out, op.out_h, op.out_w,
                                         1, env.block_out};
  PublicDevice pub(env.config);
  TimedSimDevice ours(env.config);
  public_clock = {};
  for (auto _ : state) {
    te::NDArray res_pub(env.inp_dtype, out), res_ours(env.inp_dtype, out);
    prog.run(pub, {&data, &kernel, &res_pub});
    prog.run(ours, {&data, &kernel, &res_ours});
    if (!(res_pub == res_ours)) state.SkipWithError("the outputs differ");
  }
  report(state, public_clock, ours.clock);
}
BENCHMARK(BM_Conv2d)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LlmPrefill(benchmark::State& state) {
  const std::int64_t tokens = state.range(0);
  const models::LlmLayer net(512, 8, 2048, 2048, 2048, 21, models::llm::Softmax::Float);
  const graph::Target target;
  const auto mod = graph::build(net.function(), target, {.name = "llm_layer"});
  const auto x = te::NDArray::random(dlavm::DType::int8(), {1, tokens, 512}, 5);
  PublicDevice pub(target.env.config);
  TimedSimDevice ours(target.env.config);
  graph::Executor on_pub(mod, pub), on_ours(mod, ours);
  public_clock = {};
  for (auto _ : state) {
    on_pub.reset_state();
    on_ours.reset_state();
    const auto a = on_pub.run({{"x", x}}, {{"token", tokens}});
    const auto b = on_ours.run({{"x", x}}, {{"token", tokens}});
    if (!(a.at(0) == b.at(0))) state.SkipWithError("the outputs differ");
  }
  report(state, public_clock, ours.clock);
}
BENCHMARK(BM_LlmPrefill)
    ->ArgName("token")
    ->Arg(256)
    ->Arg(2048)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

#if defined(__x86_64__)
// The floor under any AVX2 GEMM kernel: vpmaddwd, the widest exact int8 x int8 product AVX2
// has (16 per instruction), issued back to back into eight independent sums.
__attribute__((target("avx2"))) void BM_VpmaddwdPeak(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx2")) return state.SkipWithError("no AVX2");
    // eight sums of eight different products in named variables (an array would live in
    // memory), 14 registers in all: none spills
#define DLAVM_EIGHT(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define DLAVM_DECLARE(i) __m256i sum##i = _mm256_setzero_si256();
#define DLAVM_MADD(i) \
  sum##i = _mm256_add_epi32(sum##i, _mm256_madd_epi16(a[(i) % 4], (i) < 4 ? b : c));
#define DLAVM_KEEP(i) benchmark::DoNotOptimize(sum##i);
  DLAVM_EIGHT(DLAVM_DECLARE)
  const __m256i a[4] = {_mm256_set1_epi16(1), _mm256_set1_epi16(2), _mm256_set1_epi16(5),
                        _mm256_set1_epi16(7)};
  __m256i b = _mm256_set1_epi16(3), c = _mm256_set1_epi16(-4);
  constexpr std::int64_t kRounds = 4096;
  for (auto _ : state) {
    for (std::int64_t r = 0; r < kRounds; ++r) {
      DLAVM_EIGHT(DLAVM_MADD)
      asm volatile("" : "+x"(b), "+x"(c));  // new operands every round: nothing to hoist
    }
  }
  DLAVM_EIGHT(DLAVM_KEEP)
#undef DLAVM_EIGHT
#undef DLAVM_DECLARE
#undef DLAVM_MADD
#undef DLAVM_KEEP
  const auto n = static_cast<double>(state.iterations()) * kRounds * 8;
  state.counters["vpmaddwd/s"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
  state.counters["MAC/s"] = benchmark::Counter(n * 16, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_VpmaddwdPeak);
#endif

}  // namespace
