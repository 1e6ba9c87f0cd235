// Program::run's dumps replayed: the folder it writes loads back into a runnable stream, and a
// fresh device (its buffers elsewhere) computes the same outputs from it.
#include <dlavm/dlavm.hpp>
#include <dlavm/vta/hw/read.hpp>

#include <doctest/doctest.h>

#include "../../examples/gallery_ops.hpp"
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace te = dlavm::te;
namespace ne = dlavm::ne;
namespace vta = dlavm::vta;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const char* name) : path(fs::temp_directory_path() / name) {
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Runs `prog` on a SimDevice writing a dump, replays the dump on a fresh device whose
// allocations start elsewhere, and returns the replayed image of parameter `out` (which must
// equal the dumped one).
std::vector<std::byte> run_and_replay(const vta::Program& prog, std::vector<te::NDArray*> arrays,
                                      std::vector<ne::Binding> bindings, std::size_t out) {
  TempDir dir("dlavm_test_dump_replay");
  vta::SimDevice dev(prog.env().config);
  const auto run = prog.run(dev, arrays, bindings, {.dump_dir = dir.path.string()});
  CHECK(run.result.finished);
  const auto dump = vta::load_dump(dir.path.string());
  CHECK(dump.stream.insns.size() == run.instructions);
  CHECK(dump.stream.uops.size() == run.uops);
  vta::SimDevice fresh(prog.env().config);
  const auto shift = fresh.alloc(5 * 4096);
  const auto replay = vta::replay(fresh, dump);
  fresh.free(shift);
  CHECK(replay.result.finished);
  CHECK(replay.result.counters == run.result.counters);
  CHECK(replay.result.timing.total_cycles == run.result.timing.total_cycles);
  const auto& name = prog.func().params[out].name();
  std::size_t k = 0;
  while (k < dump.manifest.buffers.size() && dump.manifest.buffers[k].name != name) ++k;
  REQUIRE(k < dump.manifest.buffers.size());
  CHECK(dump.manifest.buffers[k].output);
  CHECK(replay.images[k] == dump.images[k]);
  return replay.images[k];
}

// An int8 array of `shape` from the bytes of a DRAM image.
te::NDArray int8_array(std::span<const std::byte> bytes, std::vector<std::int64_t> shape) {
  te::NDArray a(dlavm::DType::int8(), std::move(shape));
  REQUIRE(a.size() == bytes.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    a.set_flat(i, static_cast<std::int8_t>(std::to_integer<std::uint8_t>(bytes[i])));
  return a;
}

}  // namespace

TEST_CASE("dump replay: a padded convolution with virtual threads") {
  vta::Env env;
  const gallery::Conv2d op(env, 8, 8, 32, 32, 3, 1, 1);
  auto s = op.schedule(env, 1, 4, 8, 1, 2);
  const auto prog = vta::build(s, op.args(), env, "conv2d");
  const auto nchw = te::NDArray::random(env.inp_dtype, {1, 32, 8, 8}, 21);
  const auto oihw = te::NDArray::random(env.wgt_dtype, {32, 32, 3, 3}, 22, -6, 6);
  auto data = vta::pack_activation(nchw, env);
  auto kernel = vta::pack_weight(oihw, env);
  const std::vector<std::int64_t> shape{1, 2, op.out_h, op.out_w, 1, 16};
  te::NDArray res(env.inp_dtype, shape);
  const auto image = run_and_replay(prog, {&data, &kernel, &res}, {}, 2);
  CHECK(vta::unpack_activation(int8_array(image, shape), 1, 32) ==
        gallery::conv2d_reference(nchw, oihw, 1, 1));
}

TEST_CASE("dump replay: the blocked GEMM and a GEMM over a token count") {
  vta::Env env;
  {
    const gallery::BlockedGemm op(env, 256);
    auto s = op.schedule(env, 64, 2);
    const auto prog = vta::build(s, op.args(), env, "blocked_gemm");
    auto d = te::NDArray::random(env.inp_dtype, {1, 16, 1, 16}, 5);
    auto w = te::NDArray::random(env.wgt_dtype, {16, 16, 16, 16}, 6);
    te::NDArray r(env.inp_dtype, {1, 16, 1, 16});
    const auto image = run_and_replay(prog, {&d, &w, &r}, {}, 2);
    CHECK(int8_array(image, {1, 16, 1, 16}) ==
          te::evaluate(op.res, {{op.data, d}, {op.weight, w}}));
  }
  {
    auto rows = ne::var("rows", 1, 256);
    const gallery::Gemm op(env, rows, 2, 3);
    auto s = op.schedule(env, 64);
    const auto prog = vta::build(s, op.args(), env, "token_gemm");
    auto a = te::NDArray::random(env.inp_dtype, {37, 2, 1, 16}, 7);
    auto b = te::NDArray::random(env.wgt_dtype, {3, 2, 16, 16}, 8);
    te::NDArray c(env.inp_dtype, {37, 3, 1, 16});
    const auto image = run_and_replay(prog, {&a, &b, &c}, {{"rows", 37}}, 2);
    CHECK(int8_array(image, {37, 3, 1, 16}) ==
          te::evaluate(op.C, {{op.A, a}, {op.B, b}}, {{"rows", 37}}));
  }
}
