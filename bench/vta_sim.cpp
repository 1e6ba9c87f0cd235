// Functional simulation speed (issue 13). Micro-op throughput of GEMM (int8 MAC/s) and ALU on
// the default 1x16x16 configuration, for each SIMD instruction set this CPU runs and for the
// scalar reference loops; then whole streams built with the library's own API: the conv2d
// gallery program (ResNet-18 14x14x256 -> 256, 3x3), a 262144x27 by 27x32 GEMM with ReLU (rows
// in blocks of 512) and the blocked GEMM gallery program. For each stream: SimDevice::run end
// to end, and its three parts alone: the functional simulator (Simulator::run), the race check
// (check_hazards) and the cycle model (decoding included).
//   vta_sim --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Targets: >= 20 G MAC/s for GEMM micro-ops on one core; hazard check + cycle model no more than
// the functional run.
#include <benchmark/benchmark.h>

#include "../examples/gallery_ops.hpp"
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace {

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace vta = dlavm::vta;

// The instruction words of `s` in the simulator's DRAM, micro-ops relocated: what
// Simulator::run(insn_phys, count) reads, and where SimDevice::run_at places the stream.
vta::StreamPlacement place_stream(vta::SimDevice& dev, const vta::Stream& s) {
  const auto uops = dev.alloc(s.uop_bytes());
  std::vector<std::uint32_t> uop_words(s.uops.begin(), s.uops.end());
  dev.copy_in(uops, std::span<const std::uint32_t>(uop_words));
  std::vector<vta::InsnWord> words(s.insns.size());
  s.relocate(uops.phys / vta::Config::uop_elem_bytes(), words.data());
  std::vector<std::uint64_t> raw;
  for (const auto& w : words) raw.insert(raw.end(), {w.word[0], w.word[1]});
  const auto insns = dev.alloc(raw.size() * sizeof(std::uint64_t));
  dev.copy_in(insns, std::span<const std::uint64_t>(raw));
  return {.insns = insns, .uops = uops};
}

// 1x16x16 GEMM or ALU instructions on a Simulator, decoded once.
struct UopBench {
  vta::Simulator sim;
  std::vector<vta::InsnFields> prog;
  explicit UopBench(const vta::Stream& s, const vta::Config& config = {}) : sim(config) {
    const auto uop_phys = sim.dram().alloc(s.uop_bytes());
    std::vector<vta::InsnWord> words(s.insns.size());
    s.relocate(uop_phys / 4, words.data());
    auto span = sim.dram().allocation(uop_phys);
    for (std::size_t i = 0; i < s.uops.size(); ++i)
      for (int j = 0; j < 4; ++j) span[i * 4 + j] = static_cast<std::byte>(s.uops[i] >> (8 * j));
    prog = vta::decode_all(sim.layout(), words);
  }
};

// Kernels by name: "scalar", "simd" (the best this CPU runs) or one of
// Simulator::simd_targets().
void set_kernels(vta::Simulator& sim, benchmark::State& state, const std::string& kernels) {
  if (kernels == "scalar" || kernels == "simd") {
    sim.set_kernels(kernels == "simd" ? vta::SimKernels::Simd : vta::SimKernels::Scalar);
  } else {
    sim.set_simd_target(kernels);
  }
  state.SetLabel(std::string(sim.kernel_target()));
}

// Registers `fn` once per kernel set: the SIMD targets of this CPU, then the scalar loops;
// `configure` sets each one's arguments.
template <class Fn, class Configure = void (*)(benchmark::internal::Benchmark*)>
int register_per_kernels(
    const char* name, Fn fn, Configure configure = [](benchmark::internal::Benchmark*) {}) {
  auto targets = vta::Simulator::simd_targets();
  targets.push_back("scalar");
  for (const auto& t : targets)
    configure(benchmark::RegisterBenchmark((std::string(name) + "/" + t).c_str(),
                                           [fn, t](benchmark::State& state) { fn(state, t); }));
  return 0;
}

// GEMM micro-ops: 16 micro-ops (src k, wgt k) inside iter_out = 128 (dst += 1, src += 16), the
// pattern of the earlier figures; 2048 micro-ops (524288 MACs) per instruction, 16 instructions
// per run. The 16 micro-ops of an iteration accumulate into one element.
void BM_VtaSimGemm(benchmark::State& state, const std::string& kernels) {
  const vta::Config config;
  vta::Builder b(config);
  vta::UopKernel k;
  k.loop_begin(128, 1, 16, 0);
  for (int i = 0; i < 16; ++i) k.push(0, i, i);
  k.loop_end();
  for (int i = 0; i < 16; ++i) b.gemm(k);
  UopBench u(b.stream());
  std::mt19937 rng(1);
  for (auto& v : u.sim.inp_sram()) v = static_cast<std::int8_t>(rng());
  for (auto& v : u.sim.wgt_sram()) v = static_cast<std::int8_t>(rng());
  set_kernels(u.sim, state, kernels);
  std::uint64_t macs = 0;
  for (auto _ : state) {
    const auto info = u.sim.run(u.prog);
    macs += info.counters.gemm_macs(config);
    benchmark::DoNotOptimize(u.sim.acc_sram().data());
  }
  state.counters["MAC/s"] =
      benchmark::Counter(static_cast<double>(macs), benchmark::Counter::kIsRate);
  state.counters["uops/s"] =
      benchmark::Counter(static_cast<double>(macs / 256), benchmark::Counter::kIsRate);
}
const int gemm_registered = register_per_kernels("BM_VtaSimGemm", BM_VtaSimGemm);

// ALU micro-ops over 16 int32 lanes: a tensor ADD (1024 micro-ops per instruction) and a SHR
// by an immediate, on TVM's simulator's semantics or as a preset's design reads the amount.
void BM_VtaSimAlu(benchmark::State& state, bool shr_imm, const std::string& kernels,
                  const vta::Config& config = {}) {
  vta::Builder b(config);
  vta::UopKernel k;
  k.loop_begin(1024, 1, 1);
  k.push(0, 1024);
  k.loop_end();
  for (int i = 0; i < 16; ++i) {
    if (!shr_imm) {
      b.alu(k, vta::AluOp::Add);
    } else {
      b.alu_imm(k, vta::AluOp::Shr, 3);
    }
  }
  UopBench u(b.stream(), config);
  set_kernels(u.sim, state, kernels);
  std::uint64_t uops = 0;
  for (auto _ : state) uops += u.sim.run(u.prog).counters.alu_uops;
  state.counters["uops/s"] =
      benchmark::Counter(static_cast<double>(uops), benchmark::Counter::kIsRate);
}
const int alu_add_registered = register_per_kernels(
    "BM_VtaSimAluAdd",
    [](benchmark::State& state, const std::string& k) { BM_VtaSimAlu(state, false, k); });
const int alu_shr_registered = register_per_kernels(
    "BM_VtaSimAluShrImm",
    [](benchmark::State& state, const std::string& k) { BM_VtaSimAlu(state, true, k); });
const int alu_shr_pynq_registered = register_per_kernels(
    "BM_VtaSimAluShrImmPynq", [](benchmark::State& state, const std::string& k) {
      BM_VtaSimAlu(state, true, k, vta::preset("pynq"));
    });

// C[M, N] = int8(max(A[M, K] x W[N, K]^T, 0)), rows symbolic and blocked by 512 (as the stream
// test in tests/vta_lower builds it).
struct GemmRelu {
  vta::Env env;
  te::Tensor A, W, A_buf, W_buf, C_buf, R, C;
  te::IterVar ko, ki;
  GemmRelu(ne::Expr rows, int k_tiles, int n_tiles) {
    A = te::placeholder(te::shape(rows, k_tiles, 1, 16), env.inp_dtype, "A");
    W = te::placeholder(te::shape(n_tiles, k_tiles, 16, 16), env.wgt_dtype, "W");
    A_buf = te::compute(
        te::shape(rows, k_tiles, 1, 16), [&](auto... i) { return A(i...); }, "A_buf");
    W_buf = te::compute(
        te::shape(n_tiles, k_tiles, 16, 16), [&](auto... i) { return W(i...); }, "W_buf");
    ko = te::reduce_axis({0, k_tiles}, "ko");
    ki = te::reduce_axis({0, 16}, "ki");
    const auto out = te::shape(rows, n_tiles, 1, 16);
    C_buf = te::compute(
        out,
        [&](auto bo, auto co, auto bi, auto ci) {
          return te::sum(te::cast(env.acc_dtype, A_buf(bo, ko, bi, ki)) *
                             te::cast(env.acc_dtype, W_buf(co, ko, ci, ki)),
                         {ko, ki});
        },
        "C_buf");
    R = te::compute(
        out, [&](auto... i) { return te::max(C_buf(i...), 0); }, "R");
    C = te::compute(
        out, [&](auto... i) { return te::cast(env.inp_dtype, R(i...)); }, "C");
  }
  te::Schedule schedule(int row_block) const {
    auto s = te::create_schedule(C);
    s[A_buf].set_scope(env.inp_scope);
    s[W_buf].set_scope(env.wgt_scope);
    s[C_buf].set_scope(env.acc_scope);
    s[R].set_scope(env.acc_scope);
    auto [outer, inner] = s[C].split(s[C].axis(0), row_block);
    for (const auto& t : {A_buf, W_buf, C_buf, R}) s[t].compute_at(s[C], outer);
    s[C_buf].reorder(
        {ko, s[C_buf].axis(0), s[C_buf].axis(1), s[C_buf].axis(2), s[C_buf].axis(3), ki});
    s[A_buf].pragma(s[A_buf].axis(0), env.dma_copy);
    s[W_buf].pragma(s[W_buf].axis(0), env.dma_copy);
    s[R].pragma(s[R].axis(0), env.alu);
    s[C].pragma(inner, env.dma_copy);
    s[C_buf].tensorize(s[C_buf].axis(2), env.gemm);
    return s;
  }
};

// A SimDevice that keeps the operands a program run allocates and the stream it ran, so that
// the stream can be run again, whole or in parts.
struct KeepDevice : vta::SimDevice {
  using vta::SimDevice::SimDevice;
  vta::Stream stream;
  void free(vta::Buffer) override {}
  vta::RunResult run_at(const vta::Stream& s, const vta::StreamPlacement& at) override {
    stream = s;
    return vta::SimDevice::run_at(s, at);
  }
};

struct StreamCase {
  std::unique_ptr<KeepDevice> dev;
  vta::StreamPlacement at;  // the placed stream, for Simulator::run and SimDevice::run_at
  std::uint64_t macs = 0;
};

StreamCase conv2d_case() {
  const vta::Env env;
  const int h = 14, w = 14, in_c = 256, out_c = 256, k = 3, pad = 1, stride = 1;
  const gallery::Conv2d op(env, h, w, in_c, out_c, k, pad, stride);
  auto s = op.schedule(env, 8, 7, 14);
  const auto prog = vta::build(s, op.args(), env, "conv2d");
  auto data = vta::pack_activation(te::NDArray::random(env.inp_dtype, {1, in_c, h, w}, 7), env);
  auto kernel =
      vta::pack_weight(te::NDArray::random(env.wgt_dtype, {out_c, in_c, k, k}, 8, -8, 8), env);
  te::NDArray res(env.inp_dtype, {1, out_c / env.block_out, op.out_h, op.out_w, 1, env.block_out});
  StreamCase c{std::make_unique<KeepDevice>(env.config), {}, 0};
  const auto run = prog.run(*c.dev, {&data, &kernel, &res});
  c.macs = run.result.counters.gemm_macs(env.config);
  c.at = place_stream(*c.dev, c.dev->stream);
  return c;
}

StreamCase gemm_relu_case() {
  constexpr std::int64_t kRows = 262144;
  GemmRelu g(ne::var("rows", 1, kRows), 2, 2);
  auto s = g.schedule(512);
  const auto prog = vta::build(s, {g.A, g.W, g.C}, g.env, "gemm_relu");
  auto a = vta::pack_matrix(te::NDArray::random(g.env.inp_dtype, {kRows, 27}, 1), g.env);
  auto w = vta::pack_matrix_weight(te::NDArray::random(g.env.inp_dtype, {32, 27}, 3), g.env);
  te::NDArray c_out(g.env.inp_dtype, {kRows, 2, 1, 16});
  StreamCase c{std::make_unique<KeepDevice>(g.env.config), {}, 0};
  const auto run = prog.run(*c.dev, {&a, &w, &c_out}, {{"rows", kRows}});
  c.macs = run.result.counters.gemm_macs(g.env.config);
  c.at = place_stream(*c.dev, c.dev->stream);
  return c;
}

StreamCase blocked_gemm_case() {
  const vta::Env env;
  const int channels = 1024, tiles = channels / 16;
  const gallery::BlockedGemm op(env, channels);
  auto s = op.schedule(env, 256, /*vthreads=*/2);
  const auto prog = vta::build(s, op.args(), env, "blocked_gemm");
  auto d = te::NDArray::random(env.inp_dtype, {1, tiles, 1, 16}, 5);
  auto w = te::NDArray::random(env.wgt_dtype, {tiles, tiles, 16, 16}, 6);
  te::NDArray r(env.inp_dtype, {1, tiles, 1, 16});
  StreamCase c{std::make_unique<KeepDevice>(env.config), {}, 0};
  const auto run = prog.run(*c.dev, {&d, &w, &r});
  c.macs = run.result.counters.gemm_macs(env.config);
  c.at = place_stream(*c.dev, c.dev->stream);
  return c;
}

// Streams: 0 conv2d, 1 the 262144-row GEMM with ReLU, 2 the blocked GEMM gallery program.
StreamCase& stream_case(std::int64_t which) {
  static StreamCase conv = conv2d_case();
  static StreamCase gemm = gemm_relu_case();
  static StreamCase blocked = blocked_gemm_case();
  return which == 0 ? conv : which == 1 ? gemm : blocked;
}

void mac_rate(benchmark::State& state, const StreamCase& c) {
  state.counters["MAC/s"] =
      benchmark::Counter(static_cast<double>(c.macs) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void label(benchmark::State& state, const StreamCase& c) {
  const char* names[] = {"conv2d ", "gemm_relu 262144x27x32 ", "blocked_gemm "};
  state.SetLabel(names[state.range(0)] + std::string(c.dev->simulator().kernel_target()));
}

// What vs_public_sim times: the race check, the run and the cycle model, at a fixed placement
// (SimDevice's own, not KeepDevice's, which copies the stream).
void BM_StreamSimDevice(benchmark::State& state) {
  auto& c = stream_case(state.range(0));
  label(state, c);
  for (auto _ : state) benchmark::DoNotOptimize(c.dev->vta::SimDevice::run_at(c.dev->stream, c.at));
  mac_rate(state, c);
}

// The same with the caches evicted before each run (a 32 MiB sweep outside the timing), as in
// vs_public_sim, where the public simulator runs between dlavm's runs.
void BM_StreamSimDeviceCold(benchmark::State& state) {
  auto& c = stream_case(state.range(0));
  label(state, c);
  std::vector<std::uint8_t> sweep(std::size_t{32} << 20);
  for (auto _ : state) {
    state.PauseTiming();
    for (std::size_t i = 0; i < sweep.size(); i += 64) sweep[i] = static_cast<std::uint8_t>(i);
    benchmark::ClobberMemory();
    state.ResumeTiming();
    benchmark::DoNotOptimize(c.dev->vta::SimDevice::run_at(c.dev->stream, c.at));
  }
  mac_rate(state, c);
}

void BM_StreamFunctional(benchmark::State& state) {
  auto& c = stream_case(state.range(0));
  label(state, c);
  auto& sim = c.dev->simulator();
  const auto count = static_cast<std::uint32_t>(c.dev->stream.insns.size());
  for (auto _ : state) benchmark::DoNotOptimize(sim.run(c.at.insns.phys, count));
  mac_rate(state, c);
}

// BM_StreamFunctional on each kernel set of this CPU (BM_StreamFunctionalOn/AVX2/stream:1),
// the streams' devices set back to the best one after.
void BM_StreamFunctionalOn(benchmark::State& state, const std::string& kernels) {
  auto& c = stream_case(state.range(0));
  auto& sim = c.dev->simulator();
  set_kernels(sim, state, kernels);
  const auto count = static_cast<std::uint32_t>(c.dev->stream.insns.size());
  for (auto _ : state) benchmark::DoNotOptimize(sim.run(c.at.insns.phys, count));
  sim.set_kernels(vta::SimKernels::Simd);
  mac_rate(state, c);
}
const int stream_kernels_registered = register_per_kernels(
    "BM_StreamFunctionalOn", BM_StreamFunctionalOn, [](benchmark::internal::Benchmark* b) {
      b->ArgNames({"stream"})->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
    });

void BM_StreamHazards(benchmark::State& state) {
  auto& c = stream_case(state.range(0));
  label(state, c);
  for (auto _ : state) vta::check_hazards(c.dev->config(), c.dev->stream);
}

// Decoding a stream's words into their fields (vta::decode_all): what SimDevice does once for
// each stream it has not kept, before the check, the run and the cycle model read the fields.
void BM_StreamDecode(benchmark::State& state) {
  auto& c = stream_case(state.range(0));
  label(state, c);
  const auto layout = c.dev->simulator().layout();
  for (auto _ : state) benchmark::DoNotOptimize(vta::decode_all(layout, c.dev->stream.insns));
  state.counters["instructions"] = static_cast<double>(c.dev->stream.insns.size());
}
BENCHMARK(BM_StreamDecode)
    ->ArgNames({"stream"})
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond);

void BM_StreamCycleModel(benchmark::State& state) {
  auto& c = stream_case(state.range(0));
  label(state, c);
  const auto layout = c.dev->simulator().layout();
  for (auto _ : state)
    benchmark::DoNotOptimize(
        c.dev->cycle_model().run(vta::decode_all(layout, c.dev->stream.insns)));
}

#define DLAVM_STREAM_BENCH(fn) \
  BENCHMARK(fn)->ArgNames({"stream"})->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)
DLAVM_STREAM_BENCH(BM_StreamSimDevice);
DLAVM_STREAM_BENCH(BM_StreamSimDeviceCold);
DLAVM_STREAM_BENCH(BM_StreamFunctional);
DLAVM_STREAM_BENCH(BM_StreamHazards);
DLAVM_STREAM_BENCH(BM_StreamCycleModel);

}  // namespace
