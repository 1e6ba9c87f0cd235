// A module run with dump_dir writes every VTA step as a dump (stream, micro-ops, DRAM images,
// manifest); each replays on a fresh simulator to the output the module computed.
#include <dlavm/vta/hw/read.hpp>

#include <doctest/doctest.h>

#include "../vta/temp_dir.hpp"
#include "random_graphs.hpp"
#include <filesystem>

namespace model_dump_test {

using namespace dlavm;

TEST_CASE("module dump: every VTA step replays on a fresh simulator to the same output") {
  const dlavm_test::TempDir dir("dlavm_model_dump");
  const auto n = ne::var("batch", 1, 4);
  auto x = graph::input("x", {n, 16, 8, 8}, DType::int8());
  auto w0 = graph::constant("w0", te::NDArray::random(DType::int8(), {32, 16, 3, 3}, 1, -8, 8));
  auto w1 = graph::constant("w1", te::NDArray::random(DType::int8(), {16, 32, 1, 1}, 2, -8, 8));
  auto y =
      graph::relu(graph::requantize(graph::conv2d(x, w0, {.padding = {1, 1, 1, 1}}), {.shift = 6}));
  auto z = graph::requantize(graph::conv2d(y, w1), {.shift = 5});
  const auto fn = graph::function({x}, {z});
  auto mod = graph::build(fn, graph::Target{});
  vta::SimDevice dev;
  const auto a = te::NDArray::random(DType::int8(), {3, 16, 8, 8}, 4);
  graph::Executor(mod, dev).run({{"x", a}}, {{"batch", 3}}, {.dump_dir = dir.str()});
  int steps = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    CAPTURE(entry.path().string());
    const auto dump = vta::load_dump(entry.path().string());
    vta::SimDevice fresh(dump.manifest.config);
    const auto replayed = vta::replay(fresh, dump);
    REQUIRE(replayed.result.finished);
    for (std::size_t k = 0; k < dump.manifest.buffers.size(); ++k)
      if (dump.manifest.buffers[k].output) {
        CHECK(replayed.images[k] == dump.images[k]);
        CHECK(!dump.images[k].empty());
      }
    ++steps;
  }
  std::size_t vta_steps = 0;
  for (const auto& s : mod.steps()) vta_steps += s.kind == graph::ModuleStep::Kind::Vta;
  CHECK(steps == static_cast<int>(vta_steps));
  CHECK(steps == 2);
}

TEST_CASE("module dump: a step's output slot holding earlier bytes replays byte for byte") {
  // a run at batch 4, then one at batch 2 dumped: each output slot (sized for batch 4) still
  // holds the first run's bytes past what batch 2 writes. The dump records them as the
  // output's initial image, so that any simulator reproduces the whole output file.
  const dlavm_test::TempDir dir("dlavm_model_dump_stale");
  const auto n = ne::var("batch", 1, 4);
  auto x = graph::input("x", {n, 16, 8, 8}, DType::int8());
  auto w0 = graph::constant("w0", te::NDArray::random(DType::int8(), {16, 16, 3, 3}, 5, -8, 8));
  auto w1 = graph::constant("w1", te::NDArray::random(DType::int8(), {16, 16, 1, 1}, 6, -8, 8));
  auto y = graph::requantize(graph::conv2d(x, w0, {.padding = {1, 1, 1, 1}}), {.shift = 6});
  const auto fn = graph::function({x}, {graph::requantize(graph::conv2d(y, w1), {.shift = 5})});
  auto mod = graph::build(fn, graph::Target{});
  vta::SimDevice dev;
  graph::Executor exec(mod, dev);
  const auto four = te::NDArray::random(DType::int8(), {4, 16, 8, 8}, 7);
  const auto two = te::NDArray::random(DType::int8(), {2, 16, 8, 8}, 8);
  exec.run({{"x", four}}, {{"batch", 4}});
  exec.run({{"x", two}}, {{"batch", 2}}, {.dump_dir = dir.str()});
  int steps = 0, stale = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    CAPTURE(entry.path().string());
    const auto dump = vta::load_dump(entry.path().string());
    vta::SimDevice fresh(dump.manifest.config);
    const auto replayed = vta::replay(fresh, dump);
    REQUIRE(replayed.result.finished);
    for (std::size_t k = 0; k < dump.manifest.buffers.size(); ++k) {
      const auto& b = dump.manifest.buffers[k];
      if (!b.output) {
        CHECK(b.initial_file.empty());
        continue;
      }
      REQUIRE(dump.initial_images[k].size() == b.bytes);
      CHECK(replayed.images[k] == dump.images[k]);
      // the stale bytes: nonzero bytes the run left as they were
      const auto& before = dump.initial_images[k];
      for (std::size_t i = 0; i < before.size(); ++i)
        if (before[i] != std::byte{0} && before[i] == dump.images[k][i] && i >= before.size() / 2) {
          ++stale;
          break;
        }
    }
    ++steps;
  }
  CHECK(steps == 2);
  CHECK(stale == 2);  // both outputs hold batch 4's second half: what replaying zeros would lose
}

}  // namespace model_dump_test

namespace model_dump_test {

TEST_CASE("module dump: an initial image is an output's, read back from the manifest") {
  vta::Manifest m;
  m.buffers = {{"x", 0x1000, 256, DType::int8(), false, "x.bin"},
               {"y", 0x2000, 256, DType::int8(), true, "y.bin", "y.initial.bin"}};
  const auto back = vta::read_manifest(m.to_json(), "test");
  CHECK(back == m);
  CHECK(back.buffers[1].initial_file == "y.initial.bin");
  m.buffers[0].initial_file = "x.initial.bin";  // an input with one
  CHECK_THROWS_WITH_AS(
      m.validate("m.json"),
      "m.json: buffer 'x' is an input with an initial image; only outputs have one", ParseError);
  m.buffers[0].initial_file.clear();
  m.buffers[1].initial_file = "x.bin";  // a file named twice
  CHECK_THROWS_AS(m.validate("m.json"), ParseError);
}

}  // namespace model_dump_test
