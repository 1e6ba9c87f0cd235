// The conv2d strategy's knobs beyond the block sizes, run: virtual threads over the row blocks
// and strided 1x1 kernels that load their whole window. Every such candidate of random small
// convolutions (and a sample of the others) runs on the simulator equal to te::evaluate of its
// compute (tune::verify), and the checks prune the points the knobs make meaningless.
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include <random>

namespace tune_knobs {

using namespace dlavm;

graph::Function one_conv(std::int64_t c, std::int64_t o, std::int64_t h, std::int64_t w,
                         std::int64_t k, const host::Conv2dParams& p, std::uint64_t seed) {
  auto x = graph::input("x", {1, c, h, w}, DType::int8());
  auto wt = graph::constant("w", te::NDArray::random(DType::int8(), {o, c, k, k}, seed, -8, 8));
  return graph::function({x}, {graph::requantize(graph::conv2d(x, wt, p), {.shift = 6})});
}

// Checks the candidates of fn's conv2d task that use the knobs (all of them) and every
// `sample`-th other one; returns how many used them.
std::size_t check_candidates(const graph::Function& fn, std::size_t sample, vta::Device& device) {
  const graph::Target target;
  const auto tasks = tune::tasks(fn, target);
  REQUIRE(tasks.size() == 1);
  const auto& task = tasks[0];
  std::size_t with_knobs = 0, index = 0;
  for (const auto& p : tune::candidates(task.space)) {
    const auto knobs = task.space.knobs_of(p);
    const bool uses = knobs.get("split", 0) == 1 || knobs.get("strided", 1) == 0;
    if (!uses && index++ % sample != 0) continue;
    with_knobs += uses;
    CAPTURE(graph::to_string(knobs));
    CHECK(tune::verify(task, knobs, target.env, device, index) == std::nullopt);
  }
  return with_knobs;
}

TEST_CASE("conv2d knobs: threads over rows and whole strided windows compute the convolution") {
  const graph::Target target;
  vta::SimDevice sim(target.env.config);
  // the projections of ResNet-18 in small: 1x1 stride 2, both ways of loading
  CHECK(check_candidates(one_conv(32, 32, 8, 8, 1, {.strides = {2, 2}}, 1), 4, sim) > 0);
  // random shapes
  std::mt19937_64 rng(2024);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  std::size_t used = 0;
  const int trials = DLAVM_TEST_SANITIZED ? 3 : 12;
  for (int trial = 0; trial < trials; ++trial) {
    CAPTURE(trial);
    const std::int64_t k = pick(1, 3), s = pick(1, 2);
    const bool strided_1x1 = trial % 3 == 0;
    host::Conv2dParams p{.strides = {s, strided_1x1 ? 2 : s}};
    if (!strided_1x1) p.padding = {pick(0, k - 1), pick(0, k - 1), pick(0, k - 1), pick(0, k - 1)};
    used += check_candidates(one_conv(pick(1, 40), pick(1, 40), pick(4, 14), pick(4, 14),
                                      strided_1x1 ? 1 : k, p, static_cast<std::uint64_t>(trial)),
                             16, sim);
  }
  CHECK(used > (DLAVM_TEST_SANITIZED ? 4 : 20));
}

TEST_CASE("conv2d knobs: the space prunes what the knobs make meaningless") {
  const vta::Env env;
  const graph::Conv2dShape shape{.batch = 1,
                                 .in_channels = 32,
                                 .height = 8,
                                 .width = 8,
                                 .out_channels = 64,
                                 .kernel = {3, 3},
                                 .padding = {1, 1, 1, 1}};
  const graph::Epilogue e;
  // blocks of 8 columns and 1 input tile throughout
  const auto check = [&](std::int64_t oc, std::int64_t h, std::int64_t threads,
                         std::int64_t split) {
    const graph::Conv2dTiling t{.oc_block = oc,
                                .h_block = h,
                                .w_block = 8,
                                .ic_block = 1,
                                .vthreads = threads,
                                .split = split};
    return graph::check_tiling(env, shape, e, t).value_or("fits");
  };
  CHECK(check(1, 4, 1, 1) == "one thread splits nothing");
  // two channel blocks: the threads split them, not the rows
  CHECK(check(2, 4, 2, 1) ==
        "the 2 output channel blocks split between the 2 threads: rows only where they cannot");
  // 8 rows in blocks of 4: 2 row blocks for 2 threads; in blocks of 8, one
  CHECK(check(4, 4, 2, 1) == "fits");
  CHECK(check(4, 8, 2, 1) == "2 virtual threads do not divide the 1 row blocks");
  CHECK(check(1, 8, 1, 2) == "split 2 is neither 0 (output channel blocks) nor 1 (rows)");
  // a symbolic height: its row blocks are not a count threads can divide
  auto symbolic = shape;
  symbolic.height = ne::var("h", 1, 8);
  CHECK(graph::check_tiling(
            env, symbolic, e,
            {.oc_block = 4, .h_block = 4, .w_block = 8, .ic_block = 1, .vthreads = 2, .split = 1})
            .value_or("fits") == "threads over a symbolic number of row blocks");
  // only a strided 1x1 kernel has the strided knob
  const auto names = [](const graph::KnobSpace& s) {
    std::vector<std::string> out;
    for (const auto& k : s.knobs) out.push_back(k.name);
    return out;
  };
  CHECK(names(graph::knob_space(env, shape, e)) ==
        std::vector<std::string>{"oc", "h", "w", "ic", "threads", "split"});
  auto projection = shape;
  projection.kernel = {1, 1};
  projection.strides = {2, 2};
  projection.padding = {0, 0, 0, 0};
  CHECK(names(graph::knob_space(env, projection, e)) ==
        std::vector<std::string>{"oc", "h", "w", "ic", "threads", "split", "strided"});
  // the whole window: (block - 1) x stride + 1 rows and columns per input tile, not block
  graph::Conv2dTiling t{.oc_block = 1, .h_block = 2, .w_block = 4, .ic_block = 1, .vthreads = 1};
  CHECK(graph::footprint(env, projection, e, t).inp == 2 * 4 * 1);
  t.strided = 0;
  CHECK(graph::footprint(env, projection, e, t).inp == 3 * 7 * 1);
}

}  // namespace tune_knobs
