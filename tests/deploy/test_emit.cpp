// deploy::emit in-process: what the files hold, the options, and what it refuses (the node and
// the op named).
#include <doctest/doctest.h>

#include "../vta/temp_dir.hpp"
#include "models.hpp"
#include <fstream>
#include <iterator>

namespace emit_test {

using namespace dlavm;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST_CASE("emit: the files, their headers and the options") {
  const dlavm_test::TempDir dir("dlavm_emit");
  auto mod = graph::build(models::Mlp().function(), graph::Target{}, {.name = "mlp"});
  const auto r = deploy::emit(mod, dir.str(), {.ns = "fw_mlp", .debug = true});
  // the files are named as the namespace (two namespaces in one folder keep their files)
  CHECK(r.header == dir.str() + "/fw_mlp.hpp");
  CHECK(r.weights == dir.str() + "/fw_mlp.weights.bin");
  CHECK(deploy::emit(mod, dir.str()).header == dir.str() + "/mlp.hpp");
  CHECK(r.replayed_steps == 3);
  CHECK(r.static_streams == 0);
  const auto header = slurp(r.header);
  CHECK(header.find("namespace fw_mlp {") != std::string::npos);
  CHECK(header.find("#include <dlavm/runtime/session.hpp>") != std::string::npos);
  CHECK(header.find("#include <dlavm/graph") == std::string::npos);
  CHECK(header.find("if (batch < 1 || batch > 256) return ModelStatus::DimOutOfRange;") !=
        std::string::npos);
  CHECK(header.find("s.log(\"step 1: ") != std::string::npos);  // debug
  CHECK(header.find("dlavm::runtime::softmax(") != std::string::npos);
  // the weights file: its header names the model, its payload is the weight region
  const auto w = slurp(r.weights);
  runtime::FileHeader h;
  REQUIRE(runtime::check_model_file(reinterpret_cast<const std::uint8_t*>(w.data()), w.size(),
                                    runtime::FileKind::Weights,
                                    runtime::ConfigId{{3, 3, 5, 3, 0, 4, 4, 15, 15, 18, 17, 6}},
                                    h) == runtime::ModelStatus::Ok);
  CHECK(std::string(h.name) == "mlp");
  CHECK(static_cast<std::int64_t>(h.payload_bytes) ==
        r.plan.region(graph::RegionKind::Weight).bytes);
  // without debug, no step lines; lite joins ResNet's consecutive VTA steps into one stream
  auto net = graph::build(models::ResNet18(32).function(), graph::Target{}, {.name = "net"});
  const auto plain = deploy::emit(net, dir.str(), {});
  CHECK(slurp(plain.header).find("s.log(") == std::string::npos);
  std::size_t vta_steps = 0;
  for (const auto& s : net.steps()) vta_steps += s.kind == graph::ModuleStep::Kind::Vta;
  CHECK(plain.static_streams == vta_steps);
  const auto lite = deploy::emit(net, dir.str(), {.lite = true});
  // (two: the convolutions and poolings, then the classifier after the host's flatten)
  CHECK(lite.static_streams == 2);
  // one FINISH instead of one per step: fewer instructions
  CHECK(lite.static_instructions < plain.static_instructions);
  const auto i = slurp(lite.insts);
  REQUIRE(runtime::check_model_file(reinterpret_cast<const std::uint8_t*>(i.data()), i.size(),
                                    runtime::FileKind::Insts,
                                    runtime::ConfigId{{3, 3, 5, 3, 0, 4, 4, 15, 15, 18, 17, 6}},
                                    h) == runtime::ModelStatus::Ok);
  CHECK(h.queue_insns[0] + h.queue_insns[1] + h.queue_insns[2] == lite.static_instructions);
  CHECK(h.uop_words > 0);
}

TEST_CASE("emit: ops without firmware kernels and unwritable places are refused by name") {
  const dlavm_test::TempDir dir("dlavm_emit_refused");
  const auto fails = [&](const graph::Function& fn, const std::string& what,
                         const graph::Target& target = {}) {
    auto mod = graph::build(fn, target, {.name = "m"});
    try {
      deploy::emit(mod, dir.str());
      FAIL("emit accepted ", what);
    } catch (const dlavm::Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  auto x = graph::input("x", {2, 3, 4}, DType::int8());
  fails(graph::function({x}, {graph::concat({x, x}, {.axis = 1})}),
        "module 'm', step %0 concat: op 'concat' has no firmware kernel");
  // a broadcast over more dims than runtime::binary_broadcast walks (of one shape: any rank)
  auto deep = graph::input("deep", {2, 1, 1, 1, 1, 1, 1, 1, 3}, DType::int8());
  auto row = graph::input("row", {3}, DType::int8());
  fails(graph::function({deep, row}, {graph::sub(deep, row)}),
        "'sub' broadcasting over 9 dims has no firmware kernel (8 at most)");
  auto rows = graph::input("rows", {4, 16}, DType::int8());
  // a growing state (a KV cache) something besides a matmul reads: the firmware copies whole
  // state buffers, and appends only to a cache held packed
  auto last = ne::var("last_token", 0, 9);
  auto cache = graph::state_input("k_cache", {last, 16}, DType::int8());
  auto keys = graph::concat({cache, rows}, {.axis = 0});
  fails(graph::function({rows}, {graph::cast(keys, DType::int32())}, {{cache, keys}}),
        "state %k_cache grows along `last_token`; the firmware header keeps states of constant "
        "shape, or a growing state that only VTA matmuls read (held packed, appended to in "
        "place)");
  // a state that starts at a minimum of positions: Executor::run starts it there, the
  // firmware's open() empty
  auto from_one = ne::var("held", 1, 9);
  auto held = graph::state_input("held", {from_one, 16}, DType::int8());
  auto more = graph::concat({held, rows}, {.axis = 0});
  fails(graph::function({rows}, {graph::cast(more, DType::int32())}, {{held, more}}),
        "state %held grows along `held` of minimum 1; the firmware header starts every state "
        "empty (0 positions): give the dim minimum 0");
}

TEST_CASE("emit: an int64 bound of INT64_MIN is a literal the compiler takes") {
  // -9223372036854775808LL is unsigned's 2^63 negated: C++ has no literal for INT64_MIN
  const dlavm_test::TempDir dir("dlavm_emit_min");
  auto x = graph::input("x", {4}, DType::int64());
  auto mod = graph::build(graph::function({x}, {graph::clip(x, {.lo = -1e30, .hi = 5})}),
                          graph::Target{}, {.name = "lowest"});
  const auto header = slurp(deploy::emit(mod, dir.str()).header);
  CHECK(header.find("std::int64_t((-9223372036854775807LL - 1))") != std::string::npos);
  CHECK(header.find("9223372036854775808") == std::string::npos);
  CHECK(header.find("std::int64_t(5LL)") != std::string::npos);
}

TEST_CASE("emit: a missing directory is an error naming the file") {
  auto mod = graph::build(models::Mlp().function(), graph::Target{}, {.name = "mlp"});
  CHECK_THROWS_WITH_AS(deploy::emit(mod, "/nonexistent/dir"),
                       doctest::Contains("cannot write '/nonexistent/dir/mlp.hpp'"),
                       dlavm::ValueError);
}

}  // namespace emit_test
