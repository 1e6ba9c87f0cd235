// Models built for the VTA designs boards run (vta::preset): lowering emits only what the
// design has, and each stream runs bit-exact on the simulator acting as that design, which
// refuses what the design would run wrong.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include "../../examples/models.hpp"
#include <string>

namespace variants_test {

using namespace dlavm;

// Every stream of a built module, checked against the design and counted per memory type.
struct StreamScan {
  int acc8_loads = 0, vta_steps = 0;
};
StreamScan scan(const graph::Module& mod, const vta::Config& config) {
  StreamScan s;
  for (const auto& step : mod.steps()) {
    if (step.kind != graph::ModuleStep::Kind::Vta) continue;
    ++s.vta_steps;
    const std::vector<std::uint64_t> phys(step.program->func().params.size(), 0x100000);
    const auto stream = step.program->instantiate({}, phys);
    const auto insns = vta::decode_all(config.layout(), stream.insns);
    CHECK_MESSAGE(vta::stream_feature_problem(config, insns) == "", step.label);
    for (const auto& f : insns)
      s.acc8_loads += f.opcode == runtime::Opcode::Load && f.memory_type == runtime::MemId::Acc8;
  }
  return s;
}

TEST_CASE("variants: ResNet-18 built for each preset runs bit-exact on the simulator as it") {
  const models::ResNet18 net(32);
  const auto data = te::NDArray::random(DType::int8(), {1, 3, 32, 32}, 1);
  const graph::NamedArray inputs[] = {{"data", data}};
  const auto reference =
      graph::evaluate(graph::infer_type(net.function(), graph::Target{}), inputs);
  for (const auto name : {"sim", "pynq", "de10nano"}) {
    CAPTURE(name);
    graph::Target target;
    target.env = vta::Env(vta::preset(name));
    const auto mod = graph::build(net.function(), target);
    const auto s = scan(mod, target.env.config);
    if (target.env.config.variant.load_acc8) {
      CHECK(s.acc8_loads > 0);
    } else {
      CHECK(s.acc8_loads == 0);
    }
    vta::SimDevice dev(target.env.config);
    graph::Executor exec(mod, dev);
    CHECK(exec.run(inputs)[0] == reference[0]);
  }
}

}  // namespace variants_test

namespace variants_test {

TEST_CASE("widen_accumulator_loads: int8 pools on a design without ACC_8BIT pool an int32 copy") {
  auto x = graph::input("x", {1, 16, 8, 8}, DType::int8());
  auto y = graph::relu(
      graph::max_pool2d(x, {.pool_size = {3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}}));
  auto z = graph::avg_pool2d(y, {.pool_size = {2, 2}});
  const auto fn = graph::function({x}, {z});
  graph::Target sim, pynq;
  pynq.env = vta::Env(vta::preset("pynq"));
  const auto typed = graph::infer_type(fn, sim.ops);
  // TVM's simulator has ACC_8BIT: the same function
  CHECK(fmt::format("{}", graph::widen_accumulator_loads(typed, sim)) == fmt::format("{}", typed));
  const auto widened = graph::widen_accumulator_loads(typed, pynq);
  const auto text = fmt::format("{}", widened);
  CAPTURE(text);
  CHECK(text.find("%0 = host.cast(%x, dtype=int32)") != std::string::npos);
  CHECK(text.find("%1 = host.max_pool2d(%0, ") != std::string::npos);
  CHECK(text.find("%2 = host.cast(%1, dtype=int8)") != std::string::npos);
  int casts = 0;
  for (auto at = text.find(".cast("); at != std::string::npos; at = text.find(".cast(", at + 1))
    ++casts;
  CHECK(casts == 4);  // two pools, each widened and narrowed
  // the same values, on the host and built for the board
  const auto a = te::NDArray::random(DType::int8(), {1, 16, 8, 8}, 9);
  const graph::NamedArray in[] = {{"x", a}};
  const auto want = graph::evaluate(typed, in);
  CHECK(graph::evaluate(widened, in)[0] == want[0]);
  const auto mod = graph::build(fn, pynq);
  vta::SimDevice dev(pynq.env.config);
  graph::Executor exec(mod, dev);
  CHECK(exec.run(in)[0] == want[0]);
  int vta_steps = 0;
  for (const auto& s : mod.steps()) vta_steps += s.kind == graph::ModuleStep::Kind::Vta;
  CHECK(vta_steps == 2);  // both pools on VTA
  // a function without pools, or with an average VTA cannot take (over 9 elements), is
  // returned as it is
  const auto x3 = graph::input("x", {1, 16, 3, 3}, DType::int8());
  for (const auto& f : {graph::function({x}, {graph::relu(x)}),
                        graph::function({x3}, {graph::global_avg_pool2d(x3)})}) {
    const auto plain = graph::infer_type(f, sim.ops);
    CHECK(fmt::format("{}", graph::widen_accumulator_loads(plain, pynq)) ==
          fmt::format("{}", plain));
  }
}

}  // namespace variants_test
