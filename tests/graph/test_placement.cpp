// One placement, as data: infer_type(fn, target) attaches the partition it prints and build
// uses it; the fold of rounding constants shows in the printed calls; fusion asks the
// target's epilogue rules; workloads, knob spaces and the Chooser.
#include <dlavm/graph.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include "../../examples/models.hpp"
#include <unordered_set>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

namespace placement_test {

graph::Expr weight(const char* name, std::vector<std::int64_t> shape, DType dtype = DType::int8()) {
  return graph::constant(name, te::NDArray::random(dtype, std::move(shape), 3, -4, 4));
}

// conv2d + bias_add + requantize(nearest) + relu over a 1x16x6x6 image.
graph::Function conv_block() {
  auto x = graph::input("x", {1, 16, 6, 6}, DType::int8());
  auto y = graph::bias_add(graph::conv2d(x, weight("w", {16, 16, 3, 3}), {.padding = {1, 1, 1, 1}}),
                           weight("b", {16}, DType::int32()));
  y = graph::relu(graph::requantize(y, {.shift = 6, .rounding = dlavm::host::Rounding::Nearest}));
  return graph::function({x}, {y});
}

}  // namespace placement_test

TEST_CASE("placement: the printed function carries its partition, with the rounding folded") {
  const graph::Target target;
  const auto fn = placement_test::conv_block();
  const auto placed = graph::infer_type(fn, target);
  REQUIRE(placed.placement() != nullptr);
  const auto& part = *placed.placement();
  REQUIRE(part.groups.size() == 1);
  CHECK(part.describe(part.groups[0]) == "vta: %0 conv2d, %1 bias_add, %2 requantize, %3 relu");
  // the rounding constant 32 joined the bias: the calls printed are the calls that run
  CHECK(fmt::format("{}", placed) ==
        "fn (%x: Tensor[(1, 16, 6, 6), int8]) {\n"
        "  %w = constant Tensor[(16, 16, 3, 3), int8]\n"
        "  %0 = vta.conv2d(%x, %w, dilations=[1, 1], groups=1, padding=[1, 1, 1, 1], strides=[1, "
        "1]) /* "
        "ret=(1, 16, 6, 6), dtype=int32, device=vta */\n"
        "  %\"b+32\" = constant Tensor[(16), int32]\n"
        "  %1 = vta.bias_add(%0, %\"b+32\", axis=1) /* ret=(1, 16, 6, 6), dtype=int32, "
        "device=vta */\n"
        "  %2 = vta.requantize(%1, hi=127, lo=-128, out_dtype=int8, rounding=\"floor\", shift=6) "
        "/* ret=(1, 16, 6, 6), dtype=int8, device=vta */\n"
        "  %3 = vta.relu(%2) /* ret=(1, 16, 6, 6), dtype=int8, device=vta */\n"
        "  return %3\n"
        "}");
  CHECK(graph::to_string(part.groups[0].epilogue) == "+channel#0 (gemm), >>6, max 0, min 127");
  CHECK(part.groups[0].operands[0].name() == "b+32");
  // the group's nodes are the placed function's nodes
  CHECK(part.groups[0].output().same_as(placed.results()[0]));
  // and the folded function computes what the original does
  const auto a = te::NDArray::random(DType::int8(), {1, 16, 6, 6}, 9);
  CHECK(graph::evaluate(placed, {{"x", a}})[0] ==
        graph::evaluate(graph::infer_type(fn, target.ops), {{"x", a}})[0]);
  // the module runs the epilogue printed: no separate rounding add
  auto mod = graph::build(placed, target);
  CHECK(mod.steps()[1].epilogue == "+channel#0 (gemm), >>6, max 0, min 127");
  vta::SimDevice dev;
  CHECK(graph::Executor(mod, dev).run({{"x", a}})[0] == graph::evaluate(placed, {{"x", a}})[0]);
}

TEST_CASE("placement: build uses the placement the function carries, not a second one") {
  // placed by a target without a conv2d strategy, the convolution stays on the host even when
  // built with the default target (same VTA configuration)
  graph::Target no_conv;
  no_conv.strategies = graph::VtaStrategies();
  for (const auto& name : graph::default_vta_strategies().names())
    if (name != "conv2d") no_conv.strategies.add(*graph::default_vta_strategies().find(name));
  for (auto& [op, rule] : graph::default_epilogue_rules())
    no_conv.strategies.add_epilogue(op, rule);
  const auto placed = graph::infer_type(placement_test::conv_block(), no_conv);
  CHECK(placed.placement()->describe(placed.placement()->groups[0]) ==
        "host: %0 conv2d (no VTA strategy for 'conv2d')");
  const auto mod = graph::build(placed, graph::Target{});
  for (const auto& step : mod.steps()) CHECK(step.kind != graph::ModuleStep::Kind::Vta);
  // an unplaced function is placed by build itself
  const auto own = graph::build(placement_test::conv_block(), graph::Target{});
  CHECK(own.steps()[1].kind == graph::ModuleStep::Kind::Vta);
  // a mutation drops the placement (the nodes changed)
  struct Identity : graph::ExprMutator<Identity> {};
  CHECK(Identity().mutate(placed).placement() == nullptr);
}

TEST_CASE("placement: fusion asks the target's epilogue rules by op name") {
  // a custom element-wise op: y = x >> 2, which VTA's ALU does as one SHR step
  graph::Target target;
  target.ops.add({.name = "shr2",
                  .type_rule = [](const graph::TypeCall& c) { return c.type(0); },
                  .host_kernel =
                      [](graph::HostArgs a, const graph::Attrs&) {
                        te::NDArray y = *a[0];
                        for (std::size_t i = 0; i < y.size(); ++i) y.set_flat(i, y.data()[i] >> 2);
                        return y;
                      }});
  auto x = graph::input("x", {1, 16, 4, 4}, DType::int8());
  auto y = graph::cast(
      graph::call("shr2", {graph::conv2d(x, placement_test::weight("w", {16, 16, 1, 1}))}),
      DType::int8());
  const auto fn = graph::function({x}, {y});
  // without a rule the int32 result would leave VTA: everything on the host
  CHECK(graph::infer_type(fn, target).placement()->groups.size() == 3);
  target.strategies.add_epilogue("shr2", [](graph::FusionState& s, const graph::FusionCall& c) {
    if (s.logical != c.env.acc_dtype) return false;
    s.epilogue.imm(graph::EpilogueStep::Kind::Shr, 2, c.env.config);
    return true;
  });
  const auto placed = graph::infer_type(fn, target);
  const auto& part = *placed.placement();
  REQUIRE(part.groups.size() == 1);
  CHECK(part.describe(part.groups[0]) == "vta: %0 conv2d, %1 shr2, %2 cast");
  CHECK(graph::to_string(part.groups[0].epilogue) == ">>2");
  auto mod = graph::build(placed, target);
  vta::SimDevice dev;
  const auto a = te::NDArray::random(DType::int8(), {1, 16, 4, 4}, 2);
  const std::vector<graph::NamedArray> inputs{{"x", a}};
  CHECK(graph::Executor(mod, dev).run(inputs)[0] ==
        graph::evaluate(placed, inputs, {}, target.ops)[0]);
  CHECK_THROWS_WITH_AS(
      target.strategies.add_epilogue("shr2", graph::default_epilogue_rules()[0].second),
      "epilogue rule for 'shr2' is already registered", dlavm::ValueError);
}

TEST_CASE("workloads: a model's VTA kernels as data, each distinct one once") {
  const models::ResNet18 net(32);
  const graph::Target target;
  const auto fn = net.function();
  const auto all = graph::group_workloads(graph::infer_type(fn, target));
  const auto distinct = graph::workloads(fn, target);
  CHECK(all.size() == 23);  // 20 convolutions, 2 poolings, the classifier's dense layer
  CHECK(distinct.size() < all.size());
  std::unordered_set<graph::Workload> set(all.begin(), all.end());
  CHECK(set.size() == distinct.size());
  // equal workloads print alike and hash alike; the text names op, shapes, attributes, epilogue
  const auto& first = distinct.front();
  CHECK(graph::to_string(first).starts_with(
      "conv2d((1, 3, 32, 32) int8, (64, 3, 7, 7) int8; "
      "dilations=[1, 1], groups=1, padding=[3, 3, 3, 3], strides=[2, 2]; "
      "+channel#0 (gemm), >>"));
  graph::Workload copy = first;
  CHECK(copy == first);
  CHECK(std::hash<graph::Workload>{}(copy) == std::hash<graph::Workload>{}(first));
  copy.epilogue.imm(graph::EpilogueStep::Kind::Min, 50, target.env.config);
  CHECK_FALSE(copy == first);
  // a module's steps keep their workload and the knobs chosen for it
  auto mod = graph::build(fn, target);
  std::size_t vta_steps = 0;
  for (const auto& step : mod.steps()) {
    if (step.kind != graph::ModuleStep::Kind::Vta) continue;
    CHECK(step.workload == all[vta_steps]);
    CHECK_FALSE(step.knobs.values.empty());
    ++vta_steps;
  }
  CHECK(vta_steps == all.size());
}

TEST_CASE("knob spaces: enumeration, names, and the default choice equals the default tiling") {
  const vta::Env env;
  const graph::Conv2dShape shape{.batch = 1,
                                 .in_channels = 64,
                                 .height = 14,
                                 .width = 14,
                                 .out_channels = 64,
                                 .kernel = {3, 3},
                                 .padding = {1, 1, 1, 1}};
  graph::Epilogue e;
  e.add_channel();
  e.imm(graph::EpilogueStep::Kind::Shr, 8, env.config);
  const auto space = graph::knob_space(env, shape, e);
  REQUIRE(space.knobs.size() == 6);
  CHECK(space.knobs[0].name == "oc");
  CHECK(space.knobs[4].values == std::vector<std::int64_t>{2, 1});
  CHECK(space.knobs[5].values == std::vector<std::int64_t>{0, 1});
  // the last knob varies fastest
  CHECK(space.point(0) == std::vector<std::int64_t>{1, 1, 1, 1, 2, 0});
  CHECK(space.point(1) == std::vector<std::int64_t>{1, 1, 1, 1, 2, 1});
  // divisors of 4, 14, 14, 4 tiles; 2 threads; 2 splits
  CHECK(space.size() == 3 * 4 * 4 * 3 * 2 * 2);
  const auto knobs = graph::Chooser().choose(graph::Workload{.op = "conv2d"}, space);
  CHECK(graph::Conv2dTiling::of(knobs) == graph::default_conv2d_tiling(env, shape, e));
  CHECK(graph::to_string(knobs).starts_with("oc "));
  CHECK_THROWS_WITH_AS(knobs.at("rows"),
                       "knobs: there is no knob 'rows' (the knobs: oc, h, w, "
                       "ic, threads, split)",
                       dlavm::ValueError);
  // a space where nothing fits
  graph::KnobSpace none = space;
  none.check = [](std::span<const std::int64_t>) { return std::optional<std::string>("too big"); };
  CHECK_THROWS_WITH_AS(graph::Chooser().choose(graph::Workload{.op = "conv2d"}, none),
                       doctest::Contains("none of the 576 schedules of its knob space fits (the "
                                         "first, oc 1, h 1, w 1, ic 1, threads 2, split 0: too "
                                         "big)"),
                       dlavm::CapacityError);
}
