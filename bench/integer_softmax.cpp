// The integer softmax on VTA's ALU (graph::integer_softmax_stages, issue 22's I-BERT option):
// a block of K keys x 16 rows loaded into the accumulator (ACC_8BIT), normalized and stored.
// Timed: the run on SimDevice. Counters: the instructions of the stream (and its ALU ones), the
// ALU micro-ops and the cycles the simulator's timing model counts, per block. And the graph
// strategy's kernel at the gallery's prefill (BM_IntegerSoftmaxKernel): its cycles by kind.
//   cmake --build build --target integer_softmax && build/bench/integer_softmax
#include <dlavm/dlavm.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

namespace {

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

void BM_IntegerSoftmaxBlock(benchmark::State& state) {
  const std::int64_t keys = state.range(0), lanes = 16;
  const vta::Env env;
  const auto data = te::placeholder(te::shape(keys, lanes), DType::int8(), "data");
  const auto scores = te::compute(
      te::shape(keys, lanes), [&](auto k, auto l) { return te::cast(env.acc_dtype, data(k, l)); },
      "scores");
  const auto st = graph::integer_softmax_stages(scores, host::integer_exp_for(0.125), "sm");
  const auto res = te::compute(
      te::shape(keys, lanes),
      [&](auto k, auto l) { return te::cast(env.out_dtype, st.result(k, l)); }, "res");
  auto s = te::create_schedule(res);
  s[scores].set_scope(env.acc_scope);
  s[scores].pragma(s[scores].axis(0), env.dma_copy);
  for (const auto& t : st.alu) {
    s[t].set_scope(env.acc_scope);
    s[t].pragma(s[t].axis(0), env.alu);
  }
  s[res].pragma(s[res].axis(0), env.dma_copy);
  const auto prog = vta::build(s, {data, res}, env, "integer_softmax");
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(DType::int8(), {keys, lanes}, 5);
  te::NDArray r(DType::int8(), {keys, lanes});
  vta::RunResult run;
  for (auto _ : state) run = prog.run(dev, {&a, &r}).result;
  const auto stream = prog.instantiate({}, std::vector<std::uint64_t>{0x100000, 0x800000});
  std::size_t alu = 0;
  for (std::size_t i = 0; i < stream.insns.size(); ++i)
    alu += vta::decode(env.config.layout(), stream.insns[i], i).opcode == vta::Opcode::Alu;
  state.counters["stages"] = static_cast<double>(st.alu.size());
  state.counters["insns"] = static_cast<double>(stream.insns.size());
  state.counters["alu_insns"] = static_cast<double>(alu);
  state.counters["alu_uops"] = static_cast<double>(run.counters.alu_uops);
  state.counters["cycles"] = static_cast<double>(run.timing.total_cycles);
}
BENCHMARK(BM_IntegerSoftmaxBlock)->Arg(16)->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond);

// An integer softmax kernel lowered as the graph lowers it (its masked work skipped), a DRAM
// address for each of its arguments, and its kept chunks.
struct LoweredSoftmax {
  vta::Program prog;
  std::vector<std::uint64_t> phys;
  std::int64_t kept_chunks = 0;
};
LoweredSoftmax lower_softmax(const vta::Env& env, const graph::IntegerSoftmaxShape& shape,
                             std::int64_t chunk) {
  const graph::IntegerSoftmaxKernel kernel(env, shape, chunk, "sm");
  auto s = kernel.schedule();
  auto rewrite = kernel.skip_masked_work(s);
  graph::VtaKernel declared{std::move(s),       kernel.args(),     "", 0, 0,
                            std::move(rewrite), kernel.constants()};
  std::vector<std::uint64_t> phys;
  for (std::size_t k = 0; k < declared.args.size(); ++k) phys.push_back((k + 1) << 28);
  return {vta::Program(env, graph::lower_kernel(declared, env, "sm")), std::move(phys),
          kernel.kept_chunks()};
}

// The graph strategy's kernel (graph::IntegerSoftmaxKernel, in the chunks the strategy
// chooses: 128 keys for these causal prefills from the start, 256 for the one that is not) at N
// keys, N queries and C lanes (range 3: the gallery's 8 heads, or 3), causal (range 1) or not, in G
// lane groups (range 2: 16 / C queries side by side, as the strategy packs them), the whole softmax
// or one of its halves (range 4: 0 whole, 1 the exponentials, 2 the normalization), in chunks of
// range 5 keys where it is not 0 (docs/performance.md's chunk tables; a chunk that does not fit
// skips with the kernel's error): where its
// cycles go. Timed: instantiating the stream; the cycle model then runs it once. Counters: the
// stream's cycles, the compute module's cycles waiting for a token, its floor
// (graph::softmax_floor: the least any stream computing the same arithmetic spends on the compute
// module) and their ratio, ALU micro-ops, GEMM resets and accumulator-load bytes, and each of them
// per key and lane tile the passes compute (`entries`: each block's chunks that hold a key one of
// its queries sees, times the chunk: what passes 1 and 2 run over, and pass 3 over all but the
// skipped chunks).
void BM_IntegerSoftmaxKernel(benchmark::State& state) {
  const std::int64_t n = state.range(0), groups = state.range(2), lanes = state.range(3);
  const bool causal = state.range(1) != 0;
  const graph::Target target;
  const auto& env = target.env;
  const std::int64_t products = (n + groups - 1) / groups;
  const graph::IntegerSoftmaxShape shape{
      .products = products,
      .keys = n,
      .lanes = lanes,
      .queries = causal ? n : 0,
      .fixed = host::integer_exp_for(0.125),
      .groups = groups,
      .part = static_cast<graph::IntegerSoftmaxPart>(state.range(4))};
  const std::int64_t chunk =
      state.range(5) != 0 ? state.range(5)
                          : graph::Chooser().choose({}, graph::knob_space(env, shape)).values.at(0);
  if (const auto why = graph::check_chunk(env, shape, chunk)) {
    state.SkipWithError(why->c_str());  // (the loop then runs no iteration: not entered)
    return;
  }
  const auto [prog, phys, kept_chunks] = lower_softmax(env, shape, chunk);
  vta::Stream stream;
  for (auto _ : state) stream = prog.instantiate({}, phys);
  const auto insns = vta::decode_all(env.config.layout(), stream.insns);
  const auto report = vta::CycleModel(env.config).run(insns);
  std::uint64_t resets = 0;
  for (const auto& i : insns)
    if (i.opcode == vta::Opcode::Gemm && i.reset_reg)
      resets += std::uint64_t{i.iter_out} * i.iter_in * (i.uop_end - i.uop_bgn);
  // the floor (graph::softmax_floor) of each block, in cycles of the compute module: its ALU
  // micro-ops at the model's cycles a micro-op (the lesser of its register and immediate
  // figures), its GEMM micro-ops at the model's, its accumulator loads at the bus's bytes a
  // cycle
  const auto params = vta::CycleParams::for_config(env.config);
  std::int64_t entries = 0;
  double floor_cycles = 0;
  for (std::int64_t p = 0; p < products; ++p) {
    const std::int64_t seen = causal ? std::min(n, (p + 1) * groups) : n;
    entries += (seen + chunk - 1) / chunk * chunk;
    const auto floor = graph::softmax_floor(env, shape.part, shape.fixed, seen);
    floor_cycles +=
        static_cast<double>(floor.alu_uops) *
            static_cast<double>(
                std::min(params.alu_cycles_per_uop, params.alu_imm_cycles_per_uop)) +
        static_cast<double>(floor.acc_load_bytes) /
            static_cast<double>(params.bus_bytes_per_cycle) +
        static_cast<double>(floor.gemm_uops) / static_cast<double>(params.gemm_uops_per_cycle);
  }
  const auto per_entry = [&](std::uint64_t v) {
    return static_cast<double>(v) / static_cast<double>(entries);
  };
  state.counters["chunk"] = static_cast<double>(chunk);
  state.counters["kept_chunks"] = static_cast<double>(kept_chunks);
  state.counters["cycles"] = static_cast<double>(report.total_cycles);
  // (the compute module's cycles waiting for a token: for the store module to have read a
  // buffer it writes again, mostly)
  state.counters["compute_stall"] = static_cast<double>(report.module(vta::Queue::Compute).stall);
  state.counters["floor_cycles"] = floor_cycles;
  state.counters["floor_share"] = floor_cycles / static_cast<double>(report.total_cycles);
  state.counters["insns"] = static_cast<double>(insns.size());
  state.counters["alu_uops"] = static_cast<double>(report.counters.alu_uops);
  state.counters["entries"] = static_cast<double>(entries);
  state.counters["cycles_per_entry"] = per_entry(report.total_cycles);
  state.counters["alu_uops_per_entry"] = per_entry(report.counters.alu_uops);
  state.counters["resets_per_entry"] = per_entry(resets);
  state.counters["acc_bytes_per_entry"] = per_entry(report.counters.acc_load_bytes);
}
void IntegerSoftmaxKernelArgs(benchmark::internal::Benchmark* b) {
  for (const auto& args : std::vector<std::vector<std::int64_t>>{{256, 0, 1, 8, 0},
                                                                 {2048, 1, 1, 8, 0},
                                                                 {2048, 1, 2, 8, 0},
                                                                 {2048, 1, 2, 8, 1},
                                                                 {2048, 1, 2, 8, 2},
                                                                 {2048, 1, 1, 3, 0},
                                                                 {2048, 1, 5, 3, 0},
                                                                 {2048, 1, 5, 3, 1},
                                                                 {2048, 1, 5, 3, 2}}) {
    auto chosen = args;
    chosen.push_back(0);
    b->Args(chosen);
  }
  // the chunk tables: the gallery's two queries a tile, each part in each chunk
  for (std::int64_t part = 0; part < 3; ++part)
    for (std::int64_t chunk = 32; chunk <= 512; chunk *= 2) b->Args({2048, 1, 2, 8, part, chunk});
}
BENCHMARK(BM_IntegerSoftmaxKernel)
    ->Apply(IntegerSoftmaxKernelArgs)
    ->ArgNames({"keys", "causal", "groups", "lanes", "part", "chunk"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// The gallery's decode-step kernel (the firmware's LLM layer: up to 16 tokens, two queries of 8
// heads a tile, after up to 2,047 cached keys, the chunk the estimate chooses; a causal softmax
// of so few queries runs in uniform tiles) at (token, last_token) = (range 0, range 1), the whole
// softmax or one of its halves (range 2, as BM_IntegerSoftmaxKernel's range 4). Timed:
// instantiating the stream; the cycle model then runs it once. Counters: its cycles and
// instructions, and the chunk.
void BM_IntegerSoftmaxDecodeStep(benchmark::State& state) {
  const graph::Target target;
  const auto& env = target.env;
  const auto token = dlavm::ne::var("token", 1, 16);
  const auto last = dlavm::ne::var("last_token", 0, 2047);
  const graph::IntegerSoftmaxShape shape{
      .products = dlavm::ne::simplify(dlavm::ne::ceildiv(token, 2)),
      .keys = dlavm::ne::Expr(last) + token,
      .lanes = 8,
      .queries = token,
      .fixed = host::integer_exp_for(0.125),
      .groups = 2,
      .part = static_cast<graph::IntegerSoftmaxPart>(state.range(2))};
  const std::int64_t chunk =
      graph::Chooser().choose({}, graph::knob_space(env, shape)).values.at(0);
  const auto [prog, phys, kept_chunks] = lower_softmax(env, shape, chunk);
  const dlavm::ne::Binding bindings[] = {{"token", state.range(0)}, {"last_token", state.range(1)}};
  vta::Stream stream;
  for (auto _ : state) stream = prog.instantiate(bindings, phys);
  const auto insns = vta::decode_all(env.config.layout(), stream.insns);
  state.counters["chunk"] = static_cast<double>(chunk);
  state.counters["cycles"] =
      static_cast<double>(vta::CycleModel(env.config).run(insns).total_cycles);
  state.counters["insns"] = static_cast<double>(insns.size());
}
BENCHMARK(BM_IntegerSoftmaxDecodeStep)
    ->ArgsProduct({{1}, {2047}, {0, 1, 2}})
    ->ArgsProduct({{16}, {2032, 0}, {0, 1, 2}})
    ->ArgNames({"token", "last", "part"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
