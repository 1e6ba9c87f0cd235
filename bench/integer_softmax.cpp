// The integer softmax on VTA's ALU (graph::integer_softmax_stages, issue 22's I-BERT option):
// a block of K keys x 16 rows loaded into the accumulator (ACC_8BIT), normalized and stored.
// Timed: the run on SimDevice. Counters: the instructions of the stream (and its ALU ones), the
// ALU micro-ops and the cycles the simulator's timing model counts, per block.
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

}  // namespace
