// Fusion and placement: which calls form one VTA kernel, which run on the host and why, the
// epilogue each group gets, and the errors of the strategies' bad input.
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/graph/strategy.hpp>
#include <dlavm/vta/hw/config.hpp>

#include <doctest/doctest.h>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

namespace partition_test {

const graph::Target& target() {
  static const graph::Target t;
  return t;
}

// The default target without int32 results: what VTA cannot store as int8 stays on the host.
const graph::Target& int8_only() {
  static const graph::Target t = [] {
    graph::Target t;
    t.int32_results = false;
    return t;
  }();
  return t;
}

// The groups of fn, one line each.
std::vector<std::string> groups(const std::vector<graph::Expr>& params,
                                const std::vector<graph::Expr>& results,
                                const graph::Target& t = target()) {
  const auto typed = graph::infer_type(graph::function(params, results), t.ops);
  const auto part = graph::partition(typed, t);
  std::vector<std::string> out;
  for (const auto& g : part.groups) out.push_back(part.describe(g));
  return out;
}

graph::Expr weight(const char* name, std::vector<std::int64_t> shape, DType dtype = DType::int8()) {
  return graph::constant(name, te::NDArray::random(dtype, std::move(shape), 3, -4, 4));
}

graph::Expr image(std::int64_t c = 16, std::int64_t hw = 8) {
  return graph::input("x", {1, c, hw, hw}, DType::int8());
}

}  // namespace partition_test

using namespace partition_test;

TEST_CASE("partition: a convolution with its bias, requantize and relu is one VTA kernel") {
  auto x = image();
  auto y = graph::relu(graph::requantize(
      graph::bias_add(graph::conv2d(x, weight("w", {32, 16, 3, 3}), {.padding = {1, 1, 1, 1}}),
                      weight("b", {32}, DType::int32())),
      {.shift = 6, .rounding = dlavm::host::Rounding::Nearest}));
  CHECK(groups({x}, {y}) ==
        std::vector<std::string>{"vta: %0 conv2d, %1 bias_add, %2 requantize, %3 relu"});
  const auto typed = graph::infer_type(graph::function({x}, {y}), target().ops);
  const auto part = graph::partition(typed, target());
  REQUIRE(part.groups.size() == 1);
  // the rounding constant, the shift, the clamp with the relu's bound folded in
  CHECK(graph::to_string(part.groups[0].epilogue) == "+channel#0, +32, >>6, max 0, min 127");
  CHECK(part.groups[0].operands[0].name() == "b");
}

TEST_CASE("partition: what VTA cannot store or compute stays on the host, with the reason") {
  auto x = image();
  auto w = weight("w", {32, 16, 3, 3});
  SUBCASE("an int32 result with no requantize, without Target::int32_results") {
    CHECK(groups({x}, {graph::conv2d(x, w)}, int8_only()) ==
          std::vector<std::string>{
              "host: %0 conv2d (its int32 result would leave VTA, which stores only int8: "
              "requantize or cast it in a fused epilogue, or build with "
              "Target::int32_results)"});
    // by default it leaves VTA as byte planes
    CHECK(groups({x}, {graph::conv2d(x, w)}) == std::vector<std::string>{"vta: %0 conv2d"});
  }
  SUBCASE("a bias along an axis that is not the channels ends the group before it") {
    auto b = weight("b", {6}, DType::int32());
    auto y = graph::requantize(graph::bias_add(graph::conv2d(x, w), b, {.axis = 2}), {.shift = 4});
    const auto g = groups({x}, {y});
    REQUIRE(g.size() == 3);
    CHECK(g[0] == "vta: %0 conv2d");
    CHECK(g[1] == "host: %1 bias_add (no VTA strategy for 'bias_add')");
    CHECK(groups({x}, {y}, int8_only())[0].starts_with(
        "host: %0 conv2d (its int32 result would leave VTA"));
  }
  SUBCASE("a shift wider than the ALU's shift argument") {
    auto y = graph::requantize(graph::conv2d(x, w), {.shift = 20});
    CHECK(groups({x}, {y})[0] == "vta: %0 conv2d");  // its sums as planes, the shift on the host
    CHECK(groups({x}, {y}, int8_only())[0].starts_with("host: %0 conv2d (its int32 result"));
  }
  SUBCASE("ops without a VTA strategy") {
    auto f = graph::input("f", {2, 8}, DType::float32());
    CHECK(groups({f}, {graph::softmax(f)}) ==
          std::vector<std::string>{"host: %0 softmax (no VTA strategy for 'softmax')"});
  }
  SUBCASE("a convolution over a symbolic batch, height and width runs on VTA") {
    auto n = ne::var("n", 1, 4), h = ne::var("h", 3, 64), wd = ne::var("w", 3, 64);
    auto xs = graph::input("x", {n, 16, h, wd}, DType::int8());
    CHECK(groups({xs}, {graph::requantize(graph::conv2d(xs, w), {.shift = 4})}) ==
          std::vector<std::string>{"vta: %0 conv2d, %1 requantize"});
  }
  SUBCASE("a convolution over a symbolic channel count") {
    auto c = ne::var("c", 1, 16);
    auto xs = graph::input("x", {1, c, 8, 8}, DType::int8());
    auto wc = graph::input("wc", {32, c, 3, 3}, DType::int8());
    CHECK(groups({xs, wc}, {graph::requantize(graph::conv2d(xs, wc), {.shift = 4})})[0] ==
          "host: %0 conv2d (the VTA conv2d strategy needs a constant channel count; input 0 (%x) "
          "dim 1 is `c`)");
  }
  SUBCASE("a pooling over a symbolic width") {
    auto wd = ne::var("w", 3, 64);
    auto xs = graph::input("x", {1, 16, 8, wd}, DType::int8());
    CHECK(groups({xs}, {graph::max_pool2d(xs, {.pool_size = {2, 2}})})[0] ==
          "host: %0 max_pool2d (the VTA max_pool2d strategy needs a constant width; input 0 (%x) "
          "dim 3 is `w`)");
  }
  SUBCASE("float operands") {
    auto f = graph::input("f", {1, 16, 8, 8}, DType::float32());
    auto wf = weight("wf", {8, 16, 1, 1}, DType::float32());
    CHECK(groups({f}, {graph::conv2d(f, wf)})[0] ==
          "host: %0 conv2d (VTA multiplies int8 inputs by int8 weights, the call has float32 and "
          "float32)");
  }
}

TEST_CASE(
    "partition: a residual sum joins the second convolution, its int8 shortcut via "
    "ACC_8BIT") {
  auto x = image();
  auto c1 = graph::relu(graph::requantize(
      graph::conv2d(x, weight("w1", {16, 16, 3, 3}), {.padding = {1, 1, 1, 1}}), {.shift = 6}));
  auto c2 = graph::conv2d(c1, weight("w2", {16, 16, 3, 3}), {.padding = {1, 1, 1, 1}});
  auto y =
      graph::relu(graph::requantize(graph::add(c2, graph::cast(x, DType::int32())), {.shift = 1}));
  CHECK(groups({x}, {y}) ==
        std::vector<std::string>{"vta: %0 conv2d, %1 requantize, %2 relu",
                                 "vta: %3 conv2d, %4 cast, %5 add, %6 requantize, %7 relu"});
  const auto typed = graph::infer_type(graph::function({x}, {y}), target().ops);
  const auto part = graph::partition(typed, target());
  CHECK(graph::to_string(part.groups[1].epilogue) == "+tensor#0(int8), >>1, max 0, min 127");
  CHECK(part.groups[1].operands[0].name() == "x");

  SUBCASE("an int32 operand is loaded as it is") {
    auto s = graph::input("s", {1, 16, 8, 8}, DType::int32());
    auto z = graph::requantize(graph::add(s, c2), {.shift = 1});
    const auto g = groups({x, s}, {z});
    CHECK(g.back() == "vta: %3 conv2d, %4 add, %5 requantize");
  }
  SUBCASE("a cast with another user is computed on the host and loaded as int32") {
    auto cast = graph::cast(x, DType::int32());
    auto z = graph::requantize(graph::add(c2, cast), {.shift = 1});
    const auto g = groups({x}, {z, cast});
    CHECK(g == std::vector<std::string>{"vta: %0 conv2d, %1 requantize, %2 relu",
                                        "host: %4 cast (no VTA strategy for 'cast')",
                                        "vta: %3 conv2d, %5 add, %6 requantize"});
  }
}

TEST_CASE("partition: a value with a second user, or a result, ends its group") {
  auto x = image();
  auto q = graph::requantize(graph::conv2d(x, weight("w", {16, 16, 1, 1})), {.shift = 4});
  SUBCASE("two users") {
    const auto g = groups({x}, {graph::relu(q), graph::clip(q, {.lo = -3, .hi = 3})});
    CHECK(g == std::vector<std::string>{"vta: %0 conv2d, %1 requantize",
                                        "host: %2 relu (no VTA strategy for 'relu')",
                                        "host: %3 clip (no VTA strategy for 'clip')"});
  }
  SUBCASE("a result") {
    const auto g = groups({x}, {graph::relu(q), q});
    CHECK(g == std::vector<std::string>{"vta: %0 conv2d, %1 requantize",
                                        "host: %2 relu (no VTA strategy for 'relu')"});
  }
  SUBCASE("the wrap of a cast to int8 must be the last step") {
    auto y = graph::relu(graph::cast(graph::conv2d(x, weight("w", {16, 16, 1, 1})), DType::int8()));
    CHECK(groups({x}, {y}) ==
          std::vector<std::string>{"vta: %0 conv2d, %1 cast",
                                   "host: %2 relu (no VTA strategy for 'relu')"});
  }
}

TEST_CASE("partition: poolings run on VTA when VTA computes them exactly") {
  auto x = image(16, 8);
  SUBCASE("max pooling with its relu") {
    auto y = graph::relu(
        graph::max_pool2d(x, {.pool_size = {3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}}));
    CHECK(groups({x}, {y}) == std::vector<std::string>{"vta: %0 max_pool2d, %1 relu"});
  }
  SUBCASE("an average over 4 elements is a sum and a shift") {
    CHECK(groups({x}, {graph::avg_pool2d(x, {.pool_size = {2, 2}, .strides = {2, 2}})}) ==
          std::vector<std::string>{"vta: %0 avg_pool2d"});
  }
  SUBCASE("an average over 9 elements, or over the 64 of an 8x8 plane") {
    CHECK(groups({x}, {graph::avg_pool2d(x, {.pool_size = {3, 3}})}) ==
          std::vector<std::string>{
              "host: %0 avg_pool2d (an average over 9 elements divides by 9, which is not a "
              "power of two (VTA's ALU has no divide, only shifts))"});
    CHECK(groups({x}, {graph::global_avg_pool2d(x)}) ==
          std::vector<std::string>{"vta: %0 global_avg_pool2d"});
    auto x7 = image(16, 7);
    CHECK(groups({x7}, {graph::global_avg_pool2d(x7)})[0].starts_with(
        "host: %0 global_avg_pool2d (an average over 49 elements"));
  }
  SUBCASE("an average that does not count its padding") {
    auto y = graph::avg_pool2d(
        x, {.pool_size = {2, 2}, .padding = {1, 1, 0, 0}, .count_include_pad = false});
    CHECK(groups({x}, {y}) ==
          std::vector<std::string>{"host: %0 avg_pool2d (an average that does not count its "
                                   "padding divides each window by another count)"});
  }
  SUBCASE("int32 values") {
    // pooled on VTA only when the result is narrowed in the kernel
    auto xi = graph::input("x", {1, 16, 8, 8}, DType::int32());
    CHECK(groups({xi}, {graph::max_pool2d(xi, {.pool_size = {2, 2}})}) ==
          std::vector<std::string>{"host: %0 max_pool2d (its int32 result would leave VTA, which "
                                   "stores only int8: requantize or cast it in a fused "
                                   "epilogue)"});
    CHECK(
        groups({xi}, {graph::cast(graph::max_pool2d(xi, {.pool_size = {2, 2}}), DType::int8())})[0]
            .starts_with("vta: "));
  }
  SUBCASE("int16 values") {
    auto xs = graph::input("x", {1, 16, 8, 8}, DType::int16());
    CHECK(groups({xs}, {graph::max_pool2d(xs, {.pool_size = {2, 2}})}) ==
          std::vector<std::string>{"host: %0 max_pool2d (VTA pools int8 values (loaded through "
                                   "ACC_8BIT) or int32 ones, the input is int16)"});
  }
  SUBCASE("int8 values on a design without ACC_8BIT") {
    graph::Target pynq;
    pynq.env = vta::Env(vta::preset("pynq"));
    CHECK(groups({x}, {graph::max_pool2d(x, {.pool_size = {2, 2}})}, pynq) ==
          std::vector<std::string>{
              "host: %0 max_pool2d (VTA loads int8 values into the accumulator through LOAD "
              "ACC_8BIT, which the xilinx-hls design does not have "
              "(graph::widen_accumulator_loads gives the pooling an int32 input there))"});
  }
}

TEST_CASE("partition: infer_type with a target prints the placement") {
  auto token = ne::var("token", 1, 128);
  auto x = graph::input("x", {token, 40}, DType::int8());
  auto y = graph::clip(graph::requantize(graph::dense(x, weight("w", {24, 40})), {.shift = 5}),
                       {.lo = 0, .hi = 100});
  const auto fn =
      graph::infer_type(graph::function({x}, {graph::cast(y, DType::float32())}), target());
  CHECK(fmt::format("{}", fn) ==
        "fn (%x: Tensor[(token, 40), int8]) {\n"
        "  %w = constant Tensor[(24, 40), int8]\n"
        "  %0 = vta.dense(%x, %w) /* ret=(token, 24), dtype=int32, device=vta */\n"
        "  %1 = vta.requantize(%0, hi=127, lo=-128, out_dtype=int8, rounding=\"floor\", shift=5) "
        "/* ret=(token, 24), dtype=int8, device=vta */\n"
        "  %2 = vta.clip(%1, hi=100.0, lo=0.0) /* ret=(token, 24), dtype=int8, device=vta */\n"
        "  %3 = host.cast(%2, dtype=float32) /* ret=(token, 24), dtype=float32, device=host */\n"
        "  return %3\n"
        "}");
}

TEST_CASE("partition: with a target, a call neither device runs names both reasons") {
  auto i = graph::input("i", {4, 16}, DType::int8());
  CHECK_THROWS_WITH_AS(
      graph::infer_type(graph::function({i}, {graph::softmax(i)}), target()),
      "%0 (softmax): no device supports this call; host: computes in float32 only, and input 0 "
      "(%i) is int8 (cast it to float32 first); vta: no VTA strategy for 'softmax'",
      dlavm::TypeError);
}

TEST_CASE("partition: a group whose epilogue leaves no room in the accumulator runs on the host") {
  vta::Config small;
  small.log_acc_buff_size = 7;  // 2 accumulator entries
  graph::Target tiny{.env = vta::Env(small)};
  auto x = image(16, 2);
  auto conv = graph::conv2d(x, weight("w", {32, 16, 1, 1}));
  const auto typed = [&](graph::Expr y) {
    return graph::infer_type(graph::function({x}, {y}), tiny.ops);
  };
  // alone, one output tile fits
  auto alone = graph::partition(typed(graph::requantize(conv, {.shift = 4})), tiny);
  CHECK(alone.describe(alone.groups[0]) == "vta: %0 conv2d, %1 requantize");
  // the bias needs an entry per output channel tile (2) next to it
  auto biased =
      graph::partition(typed(graph::requantize(
                           graph::bias_add(conv, weight("b", {32}, DType::int32())), {.shift = 4})),
                       tiny);
  CHECK(biased.describe(biased.groups[0]) ==
        "host: %0 conv2d (with its fused epilogue: even one output tile does not fit: the "
        "accumulator needs 3 entries, it has 2)");
}

TEST_CASE("partition: a symbolic dim without a usable maximum is an error naming the node") {
  auto n = ne::var("n", 1, std::int64_t{1} << 40);
  auto x = graph::input("x", {n, 32}, DType::int8());
  auto y = graph::requantize(graph::dense(x, weight("w", {16, 32})), {.shift = 4});
  CHECK_THROWS_WITH_AS(graph::infer_type(graph::function({x}, {y}), target()),
                       "%0 (dense): input 0 (%x) has n rows, at most 1099511627776: more than "
                       "the 16777216 VTA's buffers are sized for (they are sized for the "
                       "maximum); a symbolic dim needs a smaller maximum (ne::var(\"token\", 1, "
                       "2048))",
                       dlavm::ShapeError);
}

TEST_CASE("epilogue: immediates merge only where that is exact") {
  using K = graph::EpilogueStep::Kind;
  graph::Epilogue e;
  e.imm(K::Add, 3, dlavm::vta::Config{});
  e.imm(K::Add, 4, dlavm::vta::Config{});
  CHECK(graph::to_string(e) == "+7");
  e.imm(K::Add, 32767, dlavm::vta::Config{});  // the sum would not fit the 16-bit immediate
  CHECK(graph::to_string(e) == "+7, +32767");
  e.imm(K::Shr, 2, dlavm::vta::Config{});
  e.imm(K::Max, -5, dlavm::vta::Config{});
  e.imm(K::Min, 9, dlavm::vta::Config{});
  e.imm(K::Max, 0, dlavm::vta::Config{});   // into the clamp: max(-5, 0)
  e.imm(K::Max, 12, dlavm::vta::Config{});  // above the clamp's upper bound: kept
  CHECK(graph::to_string(e) == "+7, +32767, >>2, max 0, min 9, max 12");
  graph::Epilogue f;
  f.imm(K::Min, 9, dlavm::vta::Config{});
  f.imm(K::Max, -5, dlavm::vta::Config{});
  f.imm(K::Min, 4, dlavm::vta::Config{});  // into the clamp: min(9, 4)
  CHECK(graph::to_string(f) == "min 4, max -5");
  CHECK(f.alu_passes() == 2);
}

TEST_CASE("strategies: the registry refuses duplicates and incomplete records") {
  auto s = graph::default_vta_strategies();
  CHECK(s.names() == std::vector<std::string>{"avg_pool2d", "conv2d", "dense", "global_avg_pool2d",
                                              "integer_softmax", "integer_softmax_exp",
                                              "integer_softmax_normalize", "matmul", "max_pool2d"});
  CHECK_THROWS_WITH_AS(s.add(graph::AnchorStrategy{.op = "pool"}),
                       "VTA strategy 'pool': support, arg_layout, result_layout, space and "
                       "declare are all required",
                       dlavm::ValueError);
  auto copy = *graph::default_vta_strategies().find("dense");
  CHECK_THROWS_WITH_AS(s.add(copy), "VTA strategy 'dense' is already registered",
                       dlavm::ValueError);
}

TEST_CASE("partition: grouped convolutions run on VTA where their groups tile whole") {
  auto x = image(48, 1);
  const auto conv = [&](std::int64_t out, std::int64_t groups) {
    return graph::conv2d(x, weight("w", {out, 48 / groups, 3, 3}),
                         {.padding = {1, 1, 1, 1}, .groups = groups});
  };
  const auto placed = [&](graph::Expr y) {
    auto typed = graph::infer_type(graph::function({x}, {y}), target().ops);
    auto part = graph::partition(typed, target());
    return part.describe(part.groups[0]);
  };
  CHECK(placed(conv(48, 48)) == "vta: %0 conv2d");  // depthwise
  CHECK(placed(conv(48, 12)) == "vta: %0 conv2d");  // groups of 4 in, 4 out
  CHECK(placed(conv(96, 48)) ==
        "host: %0 conv2d (groups = 48: a tile's 8 groups read 8 input channels, not a whole "
        "number of 16-channel tiles)");
  CHECK(placed(conv(96, 3)) ==
        "host: %0 conv2d (groups = 3: the groups' 32 output channels do not divide a tile's 16 (a "
        "tile must hold whole groups))");
}
