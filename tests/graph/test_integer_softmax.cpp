// The integer softmax's stages (graph/strategy/integer_softmax.hpp) lowered onto VTA's ALU and
// run on the simulator: every probability equals runtime::integer_softmax's (the host
// reference, tested against hand-derived rows and the float softmax in tests/host), for blocks
// of random scores and of edge rows; te::evaluate of the stages agrees too.
#include <dlavm/dlavm.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace runtime = dlavm::runtime;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

namespace integer_softmax_test {

// int8 scores [keys, lanes] -> the accumulator (VTA's ACC_8BIT load) -> the stages -> int8.
struct Block {
  vta::Env env;
  te::Tensor data, scores, res;
  graph::IntegerSoftmaxStages stages;

  Block(std::int64_t keys, std::int64_t lanes, double scale) {
    data = te::placeholder(te::shape(keys, lanes), DType::int8(), "data");
    scores = te::compute(
        te::shape(keys, lanes), [&](auto k, auto l) { return te::cast(env.acc_dtype, data(k, l)); },
        "scores");
    stages = graph::integer_softmax_stages(scores, host::integer_exp_for(scale), "sm");
    res = te::compute(
        te::shape(keys, lanes),
        [&](auto k, auto l) { return te::cast(env.out_dtype, stages.result(k, l)); }, "res");
  }

  vta::Program build() const {
    auto s = te::create_schedule(res);
    s[scores].set_scope(env.acc_scope);
    s[scores].pragma(s[scores].axis(0), env.dma_copy);
    for (const auto& t : stages.alu) {
      s[t].set_scope(env.acc_scope);
      s[t].pragma(s[t].axis(0), env.alu);
    }
    s[res].pragma(s[res].axis(0), env.dma_copy);
    return vta::build(s, {data, res}, env, "integer_softmax");
  }
};

// runtime::integer_softmax over the keys (dim 0) of a [keys, lanes] block.
te::NDArray reference(const te::NDArray& a, double scale) {
  te::NDArray y(DType::int8(), a.shape());
  runtime::integer_softmax(a.data().data(), y.data().data(), 1, a.shape()[0], a.shape()[1],
                           host::integer_exp_for(scale));
  return y;
}

}  // namespace integer_softmax_test

using namespace integer_softmax_test;

TEST_CASE("integer softmax on VTA's ALU: every probability equals the host reference") {
  struct Case {
    std::int64_t keys, lanes;
    double scale;
    std::int64_t lo, hi;
  };
  for (const auto& c :
       {Case{1, 16, 0.125, -128, 127}, Case{5, 16, 0.125, -128, 127}, Case{40, 32, 0.125, -20, 20},
        Case{64, 16, 0.05, -128, 127}, Case{17, 16, 0.3, 90, 127}}) {
    CAPTURE(c.keys);
    CAPTURE(c.lanes);
    CAPTURE(c.scale);
    const Block b(c.keys, c.lanes, c.scale);
    const auto prog = b.build();
    vta::SimDevice dev(b.env.config);
    auto a = te::NDArray::random(DType::int8(), {c.keys, c.lanes},
                                 static_cast<std::uint64_t>(c.keys * 31 + c.lanes), c.lo, c.hi);
    // edge rows in lane 0 and 1: all keys equal; one maximum over the int8 minimum
    for (std::int64_t k = 0; k < c.keys; ++k) {
      a.set({k, 0}, 77);
      a.set({k, 1}, k == c.keys / 2 ? 127 : -128);
    }
    const auto want = reference(a, c.scale);
    te::NDArray r(DType::int8(), {c.keys, c.lanes});
    const auto run = prog.run(dev, {&a, &r});
    CHECK(run.result.finished);
    std::int64_t differ = 0, nonzero = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      differ += r.data()[i] != want.data()[i];
      nonzero += want.data()[i] != 0;
    }
    CHECK(differ == 0);
    CHECK(nonzero >= c.lanes);  // every row has its maximum's probability
    CHECK(te::evaluate(b.res, {{b.data, a}}) == want);
  }
}

TEST_CASE(
    "integer softmax on VTA's ALU: blocks of a leading dim, one block in the accumulator at "
    "a time") {
  // 8 blocks of 64 keys: every stage computed at the block loop, so that one block's buffers
  // are live at a time (all eight at once would not fit the accumulator)
  const std::int64_t blocks = 8, keys = 64, lanes = 16;
  const double scale = 0.125;
  const vta::Env env;
  const auto data = te::placeholder(te::shape(blocks, keys, lanes), DType::int8(), "data");
  const auto scores = te::compute(
      te::shape(blocks, keys, lanes),
      [&](auto b, auto k, auto l) { return te::cast(env.acc_dtype, data(b, k, l)); }, "scores");
  const auto st = graph::integer_softmax_stages(scores, host::integer_exp_for(scale), "sm");
  REQUIRE(st.result.shape().size() == 3);
  const auto res = te::compute(
      te::shape(blocks, keys, lanes),
      [&](auto b, auto k, auto l) { return te::cast(env.out_dtype, st.result(b, k, l)); }, "res");
  auto s = te::create_schedule(res);
  const auto block = s[res].axis(0);
  s[scores].set_scope(env.acc_scope);
  s[scores].compute_at(s[res], block);
  s[scores].pragma(s[scores].axis(0), env.dma_copy);
  for (const auto& t : st.alu) {
    s[t].set_scope(env.acc_scope);
    s[t].compute_at(s[res], block);
    s[t].pragma(s[t].axis(0), env.alu);
  }
  s[res].pragma(s[res].axis(1), env.dma_copy);
  const auto prog = vta::build(s, {data, res}, env, "integer_softmax_blocks");
  vta::SimDevice dev(env.config);
  auto a = te::NDArray::random(DType::int8(), {blocks, keys, lanes}, 91);
  te::NDArray want(DType::int8(), {blocks, keys, lanes});
  runtime::integer_softmax(a.data().data(), want.data().data(), blocks, keys, lanes,
                           host::integer_exp_for(scale));
  te::NDArray r(DType::int8(), {blocks, keys, lanes});
  const auto run = prog.run(dev, {&a, &r});
  CHECK(run.result.finished);
  CHECK(r == want);
  CHECK(te::evaluate(res, {{data, a}}) == want);
  // the stages need a block of keys and lanes
  CHECK_THROWS_WITH_AS(
      graph::integer_softmax_stages(te::placeholder(te::shape(16), DType::int32(), "flat"),
                                    host::integer_exp_for(scale), "sm"),
      doctest::Contains("scores 'flat' have 1 dims"), dlavm::ShapeError);
}
