// The firmware deploy::emit generates, compiled into this test (gen/gen_firmware.cpp writes it
// at build time) and run through the VTA driver C API over the simulator
// (examples/firmware/sim_driver.cpp): every model's outputs equal graph::Executor::run's for
// every dim value (states carried from run to run), with the static streams placed from the
// header or from the insts file; and every bad file or dim gets its error code.
#include <doctest/doctest.h>

#include "firmware_models.hpp"
#include "mlp.weights.hpp"  // EmitOptions::weights_array
#include "models.hpp"
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

namespace firmware_test {

using namespace dlavm;
using firmware_models::Session;
using firmware_models::Status;

std::vector<std::uint8_t> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return {std::istreambuf_iterator<char>(f), {}};
}
std::string dir() { return DLAVM_FIRMWARE_DIR; }

// An array's bytes as firmware holds it.
std::vector<std::uint8_t> bytes_of(const te::NDArray& a) {
  if (!a.dtype().is_float()) return vta::dram_bytes(a);
  const auto f = a.fdata();
  const auto* p = reinterpret_cast<const std::uint8_t*>(f.data());
  return {p, p + f.size() * sizeof(float)};
}

const firmware_models::Entry& entry(const std::string& name) {
  for (const auto& e : firmware_models::kModels)
    if (name == e.name) return e;
  FAIL("no model ", name);
  return firmware_models::kModels[0];
}

TEST_CASE("firmware: every emitted model equals Executor::run, run after run") {
  const auto cases = deploy_models::cases();
  REQUIRE(cases.size() == std::size(firmware_models::kModels));
  int compared = 0;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto& k = cases[c];
    const auto& e = entry(k.name);
    CAPTURE(k.name);
    const auto mod = graph::build(k.fn, k.target, {.name = k.name});
    // the simulator acting as the design the model is built for
    vta::SimDevice dev(k.target.env.config);
    graph::Executor exec(mod, dev);
    Session s;
    REQUIRE(e.open(s) == Status::Ok);
    const auto weights = read(dir() + "/" + k.name + ".weights.bin");
    REQUIRE(e.load_params(s, weights.data(), weights.size()) == Status::Ok);
    if (c % 2 == 0) {
      REQUIRE(e.prepare(s) == Status::Ok);
    } else {
      const auto insts = read(dir() + "/" + k.name + ".insts.bin");
      REQUIRE(e.prepare_file(s, insts.data(), insts.size()) == Status::Ok);
    }
    std::vector<std::string> log;
    s.set_log([](const char* line,
                 void* ctx) { static_cast<std::vector<std::string>*>(ctx)->push_back(line); },
              &log);
    for (std::size_t r = 0; r < k.values.size(); ++r) {
      const std::int64_t v = k.values[r];
      CAPTURE(v);
      std::vector<ne::Binding> bind;
      if (!k.dim.empty()) bind.push_back({k.dim, v});
      std::vector<graph::NamedArray> in;
      std::vector<te::NDArray> arrays;
      for (const auto& p : k.fn.params()) {
        std::vector<std::int64_t> shape;
        for (const auto& d : p.type().shape) shape.push_back(ne::eval(d, bind));
        arrays.push_back(te::NDArray::random(p.type().dtype, shape, 31 * r + c));
      }
      std::vector<std::vector<std::uint8_t>> written;
      for (std::size_t i = 0; i < arrays.size(); ++i) {
        in.push_back({k.fn.params()[i].name(), arrays[i]});
        written.push_back(bytes_of(arrays[i]));
        std::memcpy(e.input(s, i), written.back().data(), written.back().size());
      }
      const auto expected = exec.run(in, bind);
      const std::int64_t dims[] = {v};
      REQUIRE(e.run(s, dims) == Status::Ok);
      for (std::size_t o = 0; o < expected.size(); ++o) {
        const auto b = bytes_of(expected[o]);
        CHECK(std::memcmp(e.output(s, o), b.data(), b.size()) == 0);
        ++compared;
      }
      // the run left its inputs as written (PlanOptions::reuse_inputs is off), so a second
      // run on them gives the same outputs (a stateless model's)
      for (std::size_t i = 0; i < written.size(); ++i)
        CHECK(std::memcmp(e.input(s, i), written[i].data(), written[i].size()) == 0);
      if (mod.signature().state.empty()) {
        REQUIRE(e.run(s, dims) == Status::Ok);
        for (std::size_t o = 0; o < expected.size(); ++o) {
          const auto b = bytes_of(expected[o]);
          CHECK(std::memcmp(e.output(s, o), b.data(), b.size()) == 0);
        }
      }
    }
    // the MLP, emitted with debug, logs a line per step and per transfer of each stream
    const auto lines = [&](std::string_view what) {
      return std::count_if(log.begin(), log.end(),
                           [&](const std::string& l) { return l.find(what) != std::string::npos; });
    };
    const bool vta = std::any_of(mod.steps().begin(), mod.steps().end(), [](const auto& st) {
      return st.kind == graph::ModuleStep::Kind::Vta;
    });
    // only a header emitted with debug logs (the MLP's)
    const bool debug = k.emit.debug;
    CHECK((lines(" LOAD ") > 0) == (vta && debug));
    CHECK((lines(" STORE OUT ") > 0) == (vta && debug));
    if (k.name == "mlp") {
      CHECK(log.front() == "step 0: pack %x:matrix[1x16]");
      // two runs per value: stateless
      CHECK(lines("step ") == static_cast<long>(mod.steps().size() * k.values.size() * 2));
    } else {
      CHECK(lines("step ") == 0);
    }
  }
  MESSAGE(compared, " outputs of ", cases.size(), " models equal Executor::run's byte for byte");
}

TEST_CASE("firmware: bad files, dims and calls get error codes, and nothing runs") {
  const auto& e = entry("mlp");
  const auto good = read(dir() + "/mlp.weights.bin");
  const auto insts = read(dir() + "/resnet.insts.bin");
  Session s;
  const std::int64_t batch[] = {4};
  CHECK(e.run(s, batch) == Status::NotLoaded);  // nothing open: no memory touched
  REQUIRE(e.open(s) == Status::Ok);
  CHECK(e.run(s, batch) == Status::NotLoaded);
  const auto load = [&](std::vector<std::uint8_t> f) {
    return e.load_params(s, f.data(), f.size());
  };
  auto bad = good;
  bad[200] ^= 1;  // a payload byte
  CHECK(load(bad) == Status::BadChecksum);
  bad = good;
  bad.resize(good.size() - 1);
  CHECK(load(bad) == Status::Truncated);
  CHECK(load({good.begin(), good.begin() + 50}) == Status::Truncated);
  bad = good;
  bad[0] = 'X';
  CHECK(load(bad) == Status::BadMagic);
  bad = good;
  bad[8] = 1;  // version 1
  CHECK(load(bad) == Status::BadVersion);
  bad = good;
  bad[64] ^= 1;  // the name: covered by the checksum
  CHECK(load(bad) == Status::BadChecksum);
  bad = good;
  bad[33] = 1;  // a weights file that counts instructions
  CHECK(load(bad) == Status::BadHeader);
  bad = good;
  bad[16 + 5] = 5;  // log_block_in
  CHECK(load(bad) == Status::WrongConfig);
  CHECK(load(read(dir() + "/resnet.weights.bin")) == Status::WrongModel);
  CHECK(e.load_params(s, insts.data(), insts.size()) == Status::BadMagic);  // an insts file
  CHECK(e.run(s, batch) == Status::NotLoaded);
  REQUIRE(load(good) == Status::Ok);
  CHECK(e.prepare_file(s, insts.data(), insts.size()) == Status::WrongModel);
  REQUIRE(e.prepare(s) == Status::Ok);
  const std::int64_t out_of_range[] = {257}, zero[] = {0};
  CHECK(e.run(s, out_of_range) == Status::DimOutOfRange);
  CHECK(e.run(s, zero) == Status::DimOutOfRange);
  CHECK(e.run(s, batch) == Status::Ok);
  CHECK(std::string(runtime::status_name(Status::BadChecksum)).find("checksum") !=
        std::string::npos);
}

TEST_CASE("firmware: a session another model opened gets WrongModel, nullptr and 0") {
  // every header shares one Session type: the calls and accessors check whose memory it holds
  const auto& mlp_entry = entry("mlp");
  const auto& llm_entry = entry("llm_layer");
  Session s;
  CHECK(mlp::input_x(s) == nullptr);  // nothing open
  CHECK(llm_layer::state_k_cache_length(s) == 0);
  REQUIRE(mlp_entry.open(s) == Status::Ok);
  const auto weights = read(dir() + "/mlp.weights.bin");
  REQUIRE(mlp_entry.load_params(s, weights.data(), weights.size()) == Status::Ok);
  REQUIRE(mlp_entry.prepare(s) == Status::Ok);
  CHECK(mlp::input_x(s) != nullptr);
  const std::int64_t one[] = {1};
  const auto llm_weights = read(dir() + "/llm_layer.weights.bin");
  CHECK(llm_entry.load_params(s, llm_weights.data(), llm_weights.size()) == Status::WrongModel);
  CHECK(llm_entry.prepare(s) == Status::WrongModel);
  CHECK(llm_entry.run(s, one) == Status::WrongModel);
  CHECK(llm_layer::input_x(s) == nullptr);
  CHECK(llm_layer::output_0(s) == nullptr);
  CHECK(llm_layer::state_k_cache_packed(s) == nullptr);
  CHECK(llm_layer::state_k_cache_length(s) == 0);
  CHECK(llm_entry.input(s, 0) == nullptr);
  CHECK(mlp_entry.run(s, one) == Status::Ok);  // its own model still runs
}

TEST_CASE("firmware: byte counts are 0 for a dim run() refuses") {
  // mlp's batch is in [1, 256]: a copy sized by input_x_bytes before run() writes nothing
  static_assert(mlp::input_x_bytes(256) > 0);
  static_assert(mlp::input_x_bytes(257) == 0);
  CHECK(mlp::input_x_bytes(1) > 0);
  CHECK(mlp::input_x_bytes(0) == 0);
  CHECK(mlp::input_x_bytes(-1) == 0);
  CHECK(mlp::input_x_bytes(std::int64_t{1} << 58) == 0);  // no overflow on the way
  CHECK(mlp::output_0_bytes(257) == 0);
  CHECK(mlp::output_0_bytes(256) == mlp::output_0_bytes(128) * 2);
}

TEST_CASE("firmware: a KV cache too small for a run is refused, and the cache is unchanged") {
  // llm_layer holds at most 32 positions (last_token in [0, 31]); the cache starts empty
  const auto& e = entry("llm_layer");
  Session s;
  REQUIRE(e.open(s) == Status::Ok);
  const auto weights = read(dir() + "/llm_layer.weights.bin");
  REQUIRE(e.load_params(s, weights.data(), weights.size()) == Status::Ok);
  REQUIRE(e.prepare(s) == Status::Ok);
  const std::int64_t thirty[] = {30}, three[] = {3}, two[] = {2}, one[] = {1};
  REQUIRE(e.run(s, thirty) == Status::Ok);
  CHECK(llm_layer::state_k_cache_length(s) == 30);
  CHECK(e.run(s, three) == Status::DimOutOfRange);  // 33 positions
  CHECK(llm_layer::state_k_cache_length(s) == 30);
  CHECK(e.run(s, two) == Status::Ok);  // 32: full
  CHECK(llm_layer::state_v_cache_length(s) == 32);
  CHECK(e.run(s, one) == Status::DimOutOfRange);
  CHECK(llm_layer::state_k_cache_length(s) == 32);
}

}  // namespace firmware_test

namespace firmware_test {

TEST_CASE("firmware: a generated header keeps no mutable static storage (run() is reentrant)") {
  // what run() works in is the caller's Workspace: the header holds constants only
  std::size_t headers = 0, workspaces = 0;
  for (const auto& c : deploy_models::cases()) {
    CAPTURE(c.name);
    std::ifstream in(dir() + "/" + c.name + ".hpp");
    REQUIRE(in.good());
    ++headers;
    for (std::string line; std::getline(in, line);) {
      line = line.substr(0, line.find("//"));  // code, not comments
      const auto at = line.find("static ");
      if (at != std::string::npos)
        CHECK_MESSAGE(line.compare(at, 17, "static constexpr ") == 0, line);
      workspaces += line.starts_with("struct Workspace {") ? 1 : 0;
      if (line.starts_with("inline dlavm::runtime::ModelStatus run("))
        CHECK(line.find("Session& s, Workspace&") != std::string::npos);
    }
  }
  CHECK(workspaces == headers);
}

TEST_CASE("firmware: weights emitted as a C array are the weights file, and load as it does") {
  const auto file = read(dir() + "/mlp.weights.bin");
  REQUIRE(sizeof mlp::kWeightsFile == file.size());
  CHECK(std::memcmp(mlp::kWeightsFile, file.data(), file.size()) == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(mlp::kWeightsFile) % 16 == 0);
  static_assert(
      std::is_same_v<decltype(mlp::kWeightsFile), const std::uint8_t[sizeof mlp::kWeightsFile]>);
  const auto& e = entry("mlp");
  Session s;
  REQUIRE(e.open(s) == Status::Ok);
  CHECK(e.load_params(s, mlp::kWeightsFile, sizeof mlp::kWeightsFile) == Status::Ok);
  CHECK(e.prepare(s) == Status::Ok);
  // a model emitted without the option has no array file
  std::ifstream other(dir() + "/resnet.weights.hpp");
  CHECK_FALSE(other.good());
}

}  // namespace firmware_test
