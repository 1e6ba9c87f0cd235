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

}  // namespace model_dump_test
