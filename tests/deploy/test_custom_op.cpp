// An operator added through the public API alone (custom_op.hpp: an OpRecord with attributes,
// a type rule, a host kernel and a firmware kernel; nothing in include/ edited) is typed,
// placed, run by the executor, planned and emitted for firmware; test_firmware.cpp runs the
// emitted header (model "custom_op") against the executor. Its firmware kernel's support rule
// refuses by name.
#include <doctest/doctest.h>

#include "../vta/temp_dir.hpp"
#include "custom_op.hpp"
#include <algorithm>
#include <fstream>
#include <sstream>

namespace custom_op_test {

using namespace dlavm;
namespace graph = dlavm::graph;
namespace deploy = dlavm::deploy;

TEST_CASE("custom op: type rule, host kernel and firmware kernel through the public API") {
  const auto target = custom_op::target();
  const auto typed = graph::infer_type(custom_op::model(), target);
  const auto text = fmt::format("{}", typed);
  CHECK(text.find("host.gain(%1, gain=3, offset=-5)") != std::string::npos);
  // the executor runs its host kernel between the VTA steps: against a hand-computed reference
  vta::SimDevice dev;
  graph::Executor exec(graph::build(typed, target, {.name = "custom"}), dev);
  const auto x = te::NDArray::random(DType::int8(), {3, 32}, 21);
  exec.run({{"x", x}}, {{"batch", 3}}, {.keep_values = true});
  const auto h = exec.value_of("%1");
  const auto g = exec.value_of("%2");
  for (std::size_t i = 0; i < h.size(); ++i)
    CHECK(g.data()[i] == std::clamp<std::int64_t>(h.data()[i] * 3 - 5, -128, 127));
  // planned for firmware: the step calls the user's kernel, its arguments as data
  const auto plan = deploy::plan_firmware(exec.module(), {.includes = {"custom_kernels.hpp"}});
  const auto call = std::find_if(plan.run.begin(), plan.run.end(), [](const auto& s) {
    return s.kind == deploy::PlannedStep::Kind::Call && s.call.function == "custom_kernels::gain";
  });
  REQUIRE(call != plan.run.end());
  REQUIRE(call->call.args.size() == 5);
  CHECK(call->call.args[3].value == 3);
  CHECK(call->call.args[4].value == -5);
  const auto header = deploy::header_text(plan);
  CHECK(header.find("#include \"custom_kernels.hpp\"\n") != std::string::npos);
  CHECK(header.find("custom_kernels::gain(s.template at<std::int8_t>(") != std::string::npos);
  CHECK(header.find(", (d0 * 32), 3, -5);") != std::string::npos);
  // a gain its firmware kernel does not take: refused at emit, naming the step and why
  const dlavm_test::TempDir dir("dlavm_custom_op");
  const auto big = graph::build(custom_op::model(5000), target, {.name = "big"});
  CHECK_THROWS_WITH_AS(deploy::emit(big, dir.str()),
                       "deploy::emit: module 'big', step %2 gain: a gain of 5000 has no "
                       "firmware kernel (|gain| <= 1000)",
                       dlavm::ValueError);
  // a kernel whose call reads what the step does not have is refused at planning, by name
  const auto refused = [&](graph::FirmwareCall call, const std::string& why) {
    auto bad = custom_op::gain_op();
    bad.firmware.call = [call](const graph::FirmwareStep&) { return call; };
    graph::Target t;
    t.ops.add(bad);
    const auto m = graph::build(custom_op::model(), t, {.name = "bad"});
    CHECK_THROWS_WITH_AS(deploy::plan_firmware(m),
                         ("deploy::emit: module 'bad', step %2 gain: " + why).c_str(),
                         dlavm::ValueError);
  };
  using A = graph::FirmwareArg;
  refused({"k", {A::input(1), A::output()}},
          "op 'gain''s firmware kernel reads input 1 of a step with 1");
  refused({"k", {A::aggregate("S", {A::typed(2, 0)})}},
          "op 'gain''s firmware kernel reads input 2 of a step with 1");
  refused({"k", {A::local("shape")}},
          "op 'gain''s firmware kernel reads the local 'shape', which it does not declare");
  refused({"", {}}, "op 'gain''s firmware kernel names no function");
  // arrays of two types are declared apart
  auto two = custom_op::gain_op();
  two.firmware.call = [](const graph::FirmwareStep&) {
    return graph::FirmwareCall{
        "k",
        {A::local("a"), A::local("b")},
        {{"a", "std::int64_t", true, {A::integer(1)}}, {"b", "float", true, {A::real(0.5)}}}};
  };
  graph::Target t2;
  t2.ops.add(two);
  const auto two_text = deploy::header_text(
      deploy::plan_firmware(graph::build(custom_op::model(), t2, {.name = "two"})));
  CHECK(two_text.find("{ const std::int64_t a[] = {1}; const float b[] = {0x1p-1f}; k(a, b); }") !=
        std::string::npos);
  // an op without a firmware kernel is refused, listing those that have one
  auto op = custom_op::gain_op();
  op.firmware = {};
  graph::Target without;
  without.ops.add(op);
  const auto none = graph::build(custom_op::model(), without, {.name = "none"});
  try {
    deploy::plan_firmware(none);
    FAIL("planned a step without a firmware kernel");
  } catch (const dlavm::ValueError& e) {
    const std::string what = e.what();
    CHECK(what.starts_with(
        "deploy::emit: module 'none', step %2 gain: op 'gain' has no firmware "
        "kernel (firmware runs abs, acos, acosh, add, argmax, argmin, asin, asinh, atan, "
        "atanh, avg_pool2d, batch_norm,"));
  }
}

}  // namespace custom_op_test
