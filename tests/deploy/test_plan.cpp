// deploy::plan_firmware: the firmware plan as data, checked without compiling C++. Each step of
// a module becomes one statement of run(), in order: VTA steps a static stream (joined with the
// ones before it under lite) or a replay, host steps the call their op record's firmware kernel
// gives, layout steps the emitter's own kernels; the insts and uop regions hold a slot per
// static stream and one replay slot; the header printed from the plan is the one emit writes.
#include <doctest/doctest.h>

#include "../vta/temp_dir.hpp"
#include "models.hpp"
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace plan_test {

using namespace dlavm;
namespace graph = dlavm::graph;
namespace deploy = dlavm::deploy;
using Kind = deploy::PlannedStep::Kind;

// The function of each call step, by the module step's op ("pack", "unpack", "append" for the
// layout steps).
std::map<std::string, std::string> calls_by_op(const deploy::FirmwarePlan& p) {
  std::map<std::string, std::string> out;
  for (const auto& s : p.run) {
    if (s.kind != Kind::Call) continue;
    const auto& step = p.module.steps()[s.step];
    const std::string op = step.kind == graph::ModuleStep::Kind::Host     ? step.op
                           : step.kind == graph::ModuleStep::Kind::Append ? "append"
                           : step.kind == graph::ModuleStep::Kind::Pack   ? "pack"
                                                                          : "unpack";
    out[op] = s.call.function;
  }
  return out;
}

TEST_CASE("plan: every step a statement, host ops the calls of their records") {
  graph::Target int8_only;  // the dense layer's int32 sums on the host: its firmware kernel
  int8_only.int32_results = false;
  const auto mod = graph::build(deploy_models::host_ops(), int8_only, {.name = "host_ops"});
  const auto plan = deploy::plan_firmware(mod);
  // by default the sums leave VTA as byte planes, which the firmware reassembles
  const auto planes = calls_by_op(deploy::plan_firmware(
      graph::build(deploy_models::host_ops(), graph::Target{}, {.name = "host_ops"})));
  CHECK(planes.count("dense") == 0);
  CHECK(planes.at("unpack") == "dlavm::runtime::unpack_tiled_planes");
  REQUIRE(plan.run.size() == mod.steps().size());
  for (std::size_t i = 0; i < plan.run.size(); ++i) {
    CHECK(plan.run[i].step == i);
    CHECK((plan.run[i].kind == Kind::Call) ==
          (mod.steps()[i].kind != graph::ModuleStep::Kind::Vta));
  }
  const auto calls = calls_by_op(plan);
  const std::map<std::string, std::string> expected = {
      {"add", "dlavm::runtime::binary<dlavm::runtime::Binary::Add>"},
      {"mul", "dlavm::runtime::binary<dlavm::runtime::Binary::Mul>"},
      {"bias_add", "dlavm::runtime::bias_add"},
      {"cast", "dlavm::runtime::cast"},
      {"clip", "dlavm::runtime::clip"},
      {"dense", "dlavm::runtime::dense"},
      {"flatten", "dlavm::runtime::copy"},
      {"reshape", "dlavm::runtime::copy"},
      {"relu", "dlavm::runtime::relu"},
      {"requantize", "dlavm::runtime::requantize"},
      {"softmax", "dlavm::runtime::softmax"}};
  for (const auto& entry : expected) {
    const auto& op = entry.first;  // (not a binding: Clang 14's CAPTURE cannot read one)
    const auto& function = entry.second;
    CAPTURE(op);
    REQUIRE(calls.count(op) == 1);
    CHECK(calls.at(op) == function);
  }
  // a symbolic batch: the dims are run()'s argument n
  REQUIRE(plan.dims.size() == 1);
  CHECK(plan.dims[0].var.name() == "n");
  CHECK(plan.param_dims == 1);
  // the softmax over the last of [n, 5]: outer n, extent 5, inner 1, as dims
  for (const auto& s : plan.run)
    if (s.kind == Kind::Call && s.call.function == "dlavm::runtime::softmax") {
      REQUIRE(s.call.args.size() == 5);
      CHECK(fmt::format("{}", ne::simplify(s.call.args[2].expr)) == "n");
      CHECK(fmt::format("{}", ne::simplify(s.call.args[3].expr)) == "5");
      CHECK(fmt::format("{}", ne::simplify(s.call.args[4].expr)) == "1");
    }
}

TEST_CASE("plan: data movement ops call their kernels, shapes as local arrays of dims") {
  const auto mod =
      graph::build(deploy_models::transform_ops(), graph::Target{}, {.name = "transform_ops"});
  const auto plan = deploy::plan_firmware(mod);
  std::map<std::string, int> functions;
  for (const auto& s : plan.run)
    if (s.kind == Kind::Call) ++functions[s.call.function];
  CHECK(functions["dlavm::runtime::strided_slice"] == 3);
  CHECK(functions["dlavm::runtime::take"] == 2);
  CHECK(functions["dlavm::runtime::tile"] == 2);  // broadcast_to and tile
  CHECK(functions["dlavm::runtime::resize2d_nearest"] == 2);
  CHECK(functions["dlavm::runtime::resize2d_linear"] == 2);
  const auto local = [](const graph::FirmwareCall& c, const std::string& name) {
    std::vector<std::string> items;
    for (const auto& l : c.locals)
      if (l.name == name)
        for (const auto& i : l.items) items.push_back(fmt::format("{}", ne::simplify(i.expr)));
    return fmt::format("[{}]", fmt::join(items, ", "));
  };
  int reversed = 0;
  for (const auto& s : plan.run) {
    if (s.kind != Kind::Call) continue;
    const auto& c = s.call;
    if (c.function == "dlavm::runtime::strided_slice" && local(c, "step") == "[1, 1, -1, 2]") {
      // the symbolic rows from the last, every other column from 1
      CHECK(local(c, "shape") == "[1, 3, n, 4]");
      CHECK(local(c, "start") == "[0, 0, n - 1, 1]");
      CHECK(local(c, "out") == "[1, 3, n, 2]");
      ++reversed;
    }
    if (c.function == "dlavm::runtime::take" && c.args[1].kind == graph::FirmwareArg::Kind::Input) {
      // (x, indices, y, outer, extent, inner, count)
      REQUIRE(c.args.size() == 7);
      CHECK(c.args[1].index == 1);
    }
  }
  CHECK(reversed == 1);
}

TEST_CASE("plan: the math ops call runtime's kernels by kind, with their shapes as locals") {
  const auto mod = graph::build(deploy_models::math_ops(), graph::Target{}, {.name = "math"});
  const auto plan = deploy::plan_firmware(mod);
  std::set<std::string> functions;
  std::set<std::string> reduced_patterns;  // of the reduce<Maximum> calls
  for (const auto& s : plan.run) {
    if (s.kind != Kind::Call) continue;
    const auto& c = s.call;
    functions.insert(c.function);
    const auto items = [&](std::size_t local) {
      std::vector<std::string> out;
      for (const auto& a : c.locals.at(local).items)
        out.push_back(a.kind == graph::FirmwareArg::Kind::Bool ? (a.value != 0 ? "R" : "K")
                                                               : fmt::format("{}", a.expr));
      return fmt::format("{}", fmt::join(out, " "));
    };
    if (c.function == "dlavm::runtime::binary_broadcast<dlavm::runtime::Binary::Pow>") {
      // s [n, 4, 6] to the power of a scalar: the shapes aligned to the result's 3 dims
      REQUIRE(c.locals.size() == 3);
      CHECK(items(0) == "n 4 6");
      CHECK(items(1) == "n 4 6");
      CHECK(items(2) == "1 1 1");
      CHECK(c.args.back().value == 3);
    }
    if (c.function == "dlavm::runtime::reduce<dlavm::runtime::Reduce::Maximum>") {
      REQUIRE(c.locals.size() == 2);
      CHECK(items(0) == "n 4 6");
      reduced_patterns.insert(items(1));
    }
    if (c.function == "dlavm::runtime::unary<dlavm::runtime::Unary::HardSigmoid>") {
      REQUIRE(c.args.size() == 5);  // x, y, elements, alpha, beta
      CHECK(c.args[3].number == doctest::Approx(0.3));
      CHECK(c.args[4].number == doctest::Approx(0.4));
    }
  }
  // every kind, by its enumerator: the model uses each (the emitted header compiles them)
  for (const auto& op : host::kUnaryOps)
    CHECK_MESSAGE(functions.count(fmt::format("dlavm::runtime::unary<dlavm::runtime::Unary::{}>",
                                              op.enumerator)) == 1,
                  op.name);
  for (const auto& op : host::kBinaryOps) {
    const auto same =
        fmt::format("dlavm::runtime::binary<dlavm::runtime::Binary::{}>", op.enumerator);
    const auto broadcast =
        fmt::format("dlavm::runtime::binary_broadcast<dlavm::runtime::Binary::{}>", op.enumerator);
    CHECK_MESSAGE(functions.count(same) + functions.count(broadcast) >= 1, op.name);
  }
  for (const auto& op : host::kReduceOps)
    CHECK_MESSAGE(functions.count(fmt::format("dlavm::runtime::reduce<dlavm::runtime::Reduce::{}>",
                                              op.enumerator)) == 1,
                  op.name);
  CHECK(functions.count("dlavm::runtime::log_softmax") == 1);
  // the float maximum over the symbolic dim and the last; the int32 one over the middle dim
  CHECK(reduced_patterns == std::set<std::string>{"R K R", "K R K"});
}

TEST_CASE("plan: the boolean ops call runtime's kernels by kind, broadcasts with their shapes") {
  const auto mod = graph::build(deploy_models::logic_ops(), graph::Target{}, {.name = "logic"});
  const auto plan = deploy::plan_firmware(mod);
  std::set<std::string> functions;
  int where_broadcasts = 0, inf_calls = 0, arg_calls = 0;
  for (const auto& s : plan.run) {
    if (s.kind != Kind::Call) continue;
    const auto& c = s.call;
    functions.insert(c.function);
    if (c.function == "dlavm::runtime::where_broadcast") {
      // (cond, a, b, y, shape, c_shape, a_shape, b_shape, rank): the locals in that order
      REQUIRE(c.locals.size() == 4);
      CHECK(c.locals[1].name == "c_shape");
      CHECK(c.locals[3].name == "b_shape");
      CHECK(c.args.back().value == 3);
      ++where_broadcasts;
    }
    if (c.function == "dlavm::runtime::float_class<dlavm::runtime::FloatClass::Inf>") {
      REQUIRE(c.args.size() == 5);  // x, y, elements, detect_positive, detect_negative
      CHECK(c.args[3].kind == graph::FirmwareArg::Kind::Bool);
      ++inf_calls;
    }
    if (c.function.starts_with("dlavm::runtime::arg_reduce<")) {
      REQUIRE(c.args.size() == 6);  // x, y, outer, extent, inner, select_last
      CHECK(c.args[5].kind == graph::FirmwareArg::Kind::Bool);
      ++arg_calls;
    }
  }
  for (const auto& op : host::kCompareOps) {
    const auto same =
        fmt::format("dlavm::runtime::compare<dlavm::runtime::Compare::{}>", op.enumerator);
    const auto broadcast = fmt::format(
        "dlavm::runtime::compare_broadcast<dlavm::runtime::Compare::{}>", op.enumerator);
    CHECK_MESSAGE(functions.count(same) + functions.count(broadcast) >= 1, op.name);
  }
  for (const auto& op : host::kLogicalOps) {
    const auto same =
        fmt::format("dlavm::runtime::logical<dlavm::runtime::Logical::{}>", op.enumerator);
    const auto broadcast = fmt::format(
        "dlavm::runtime::logical_broadcast<dlavm::runtime::Logical::{}>", op.enumerator);
    CHECK_MESSAGE(functions.count(same) + functions.count(broadcast) >= 1, op.name);
  }
  for (const auto& op : host::kFloatClassOps)
    CHECK_MESSAGE(
        functions.count(fmt::format("dlavm::runtime::float_class<dlavm::runtime::FloatClass::{}>",
                                    op.enumerator)) == 1,
        op.name);
  for (const auto& op : host::kArgReduceOps)
    CHECK_MESSAGE(
        functions.count(fmt::format("dlavm::runtime::arg_reduce<dlavm::runtime::ArgReduce::{}>",
                                    op.enumerator)) == 1,
        op.name);
  // both forms of each broadcasting family
  for (const char* f : {"dlavm::runtime::where",
                        "dlavm::runtime::compare_broadcast<"
                        "dlavm::runtime::Compare::Greater>",
                        "dlavm::runtime::compare<dlavm::runtime::Compare::NotEqual>",
                        "dlavm::runtime::logical_broadcast<dlavm::runtime::Logical::And>",
                        "dlavm::runtime::logical<dlavm::runtime::Logical::And>"})
    CHECK_MESSAGE(functions.count(f) == 1, f);
  CHECK(where_broadcasts == 2);
  CHECK(inf_calls == 3);
  CHECK(arg_calls == 5);
}

TEST_CASE("plan: static streams, joined under lite, and the replayed steps' slot") {
  const auto mod = graph::build(models::ResNet18(32).function(), graph::Target{}, {.name = "r"});
  const auto one = deploy::plan_firmware(mod);
  const auto lite = deploy::plan_firmware(mod, {.lite = true});
  std::size_t vta = 0, runs = 0;  // VTA steps, and runs of consecutive ones
  for (std::size_t i = 0; i < mod.steps().size(); ++i)
    if (mod.steps()[i].kind == graph::ModuleStep::Kind::Vta) {
      ++vta;
      runs += i == 0 || mod.steps()[i - 1].kind != graph::ModuleStep::Kind::Vta;
    }
  CHECK(one.streams.size() == vta);  // every dim static: nothing replayed
  CHECK(one.replayed.empty());
  CHECK(lite.streams.size() == runs);
  std::size_t joined = 0, statics = 0;
  for (const auto& s : lite.run) {
    joined += s.kind == Kind::Joined;
    statics += s.kind == Kind::Static;
  }
  CHECK(statics == runs);
  CHECK(joined == vta - runs);
  // each stream its slot in the insts region, one after the other
  std::uint64_t at = lite.memory.region(graph::RegionKind::Insts).base;
  for (const auto& g : lite.streams) {
    CHECK(g.insn_addr == at);
    at += g.stream.insn_bytes();
  }
  CHECK(at <= lite.memory.region(graph::RegionKind::Insts).end());
  // the MLP's batch is symbolic: its VTA steps replay into one slot, as large as the largest
  const auto mlp = graph::build(models::Mlp().function(), graph::Target{}, {.name = "mlp"});
  const auto p = deploy::plan_firmware(mlp);
  CHECK(p.streams.empty());
  CHECK(p.replayed.size() == 3);
  std::int64_t largest = 0;
  for (auto i : p.replayed)
    largest = std::max(largest, mlp.steps()[i].program->stream_bound().insns);
  CHECK(p.workspace.insns == largest);
  CHECK(p.memory.region(graph::RegionKind::Insts).bytes >= largest * 16);
}

TEST_CASE("plan: layout steps and a KV cache's append are the emitter's own calls") {
  const auto mod =
      graph::build(models::LlmLayer(64, 4, 128, 32).function(), graph::Target{}, {.name = "llm"});
  const auto plan = deploy::plan_firmware(mod);
  const auto calls = calls_by_op(plan);
  CHECK(calls.at("pack") == "dlavm::runtime::pack_tiled");
  CHECK(calls.at("unpack") == "dlavm::runtime::unpack_tiled");
  CHECK(calls.at("append") == "dlavm::runtime::append_packed");
  for (const auto& s : plan.run) {
    if (s.kind != Kind::Call || s.call.function != "dlavm::runtime::append_packed") continue;
    // the packed bytes, the new rows, their count, the state's counters, the state's shape
    REQUIRE(s.call.args.size() == 5);
    CHECK(s.call.args[0].kind == graph::FirmwareArg::Kind::Bytes);
    CHECK(s.call.args[3].kind == graph::FirmwareArg::Kind::Address);
    REQUIRE(s.call.locals.size() == 1);
    CHECK_FALSE(s.call.locals[0].array);
    CHECK(s.call.locals[0].type == "dlavm::runtime::PackedStateShape");
  }
  // the cache's growing dim is a dim of the plan, not an argument of run()
  REQUIRE(plan.dims.size() == 3);
  CHECK(plan.param_dims == 1);
  CHECK(plan.dims[1].state.has_value());
}

TEST_CASE("plan: the header printed from the plan is the one emit writes") {
  const dlavm_test::TempDir dir("dlavm_plan");
  const auto mod = graph::build(models::Mlp().function(), graph::Target{}, {.name = "mlp"});
  const auto r = deploy::emit(mod, dir.str(), {.ns = "m", .debug = true});
  std::ifstream in(r.header);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == deploy::header_text(deploy::plan_firmware(mod, {.ns = "m", .debug = true})));
}

}  // namespace plan_test
