// The graph passes as data: the pipeline printed as docs/graph.md shows it, run with a hook
// after each pass and with passes disabled, and each pass alone: its output checked against
// hand-derived expectations and against graph::evaluate, and its precondition refused by name.
// match_states matches the structure of a state's update: custom ops that only declare
// concat_axis and permutation are matched as concat and transpose are.
#include <dlavm/graph.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace passes_test {

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

// conv2d + bias_add + requantize(nearest) + relu over a 1x16x6x6 image.
graph::Function conv_block() {
  auto x = graph::input("x", {1, 16, 6, 6}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 3, 3}, 3, -4, 4));
  auto b = graph::constant("b", te::NDArray::random(DType::int32(), {16}, 4, -300, 300));
  auto y = graph::bias_add(graph::conv2d(x, w, {.padding = {1, 1, 1, 1}}), b);
  y = graph::relu(graph::requantize(y, {.shift = 6, .rounding = dlavm::host::Rounding::Nearest}));
  return graph::function({x}, {y});
}

// scores = (q wq) . keys^T over a KV cache of keys, the cache appended by `append` and read
// through `permute` (the graph's concat and transpose, or custom ops under other names).
struct CacheModel {
  ne::Var token = ne::var("token", 1, 6);
  ne::Var last = ne::var("last_token", 0, 9);
  graph::Expr q = graph::input("q", {2, token, 20}, DType::int8());
  graph::Expr k = graph::input("k", {2, token, 20}, DType::int8());
  graph::Expr cache = graph::state_input("k_cache", {2, last, 20}, DType::int8());
  graph::Function fn;
  CacheModel(const std::string& append, const std::string& permute) : fn(make(append, permute)) {}

 private:
  graph::Function make(const std::string& append, const std::string& permute) const {
    auto keys = graph::call(append, {cache, k}, {{"axis", std::int64_t{1}}});
    auto wq = graph::constant("wq", te::NDArray::random(DType::int8(), {20, 20}, 8));
    auto scores =
        graph::matmul(graph::requantize(graph::dense(q, wq), {.shift = 5}),
                      graph::call(permute, {keys}, {{"perm", std::vector<std::int64_t>{0, 2, 1}}}));
    return graph::function({q, k}, {scores}, {{cache, keys}});
  }
};

// The text block after the line that introduces the pipeline in docs/graph.md.
std::string documented_pipeline() {
  std::ifstream in(std::filesystem::path(DLAVM_SOURCE_DIR) / "docs" / "graph.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const auto intro = s.find("`graph::to_string(graph::default_passes())`:");
  REQUIRE(intro != std::string::npos);
  const auto begin = s.find("```text\n", intro) + 8;
  return s.substr(begin, s.find("```", begin) - begin);
}

TEST_CASE("passes: the default pipeline, printed as docs/graph.md shows it") {
  const auto passes = graph::default_passes();
  std::vector<std::string> names;
  for (const auto& p : passes) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{
                     "fold_batch_norm", "fold_scale_shift", "recognize_layer_norm",
                     "recognize_gelu", "recognize_hard_swish", "fake_quantization_to_integer",
                     "type", "widen_accumulator_loads", "partition", "fold_rounding",
                     "channel_weights", "layout", "match_states"});
  CHECK(graph::to_string(passes) == documented_pipeline());
}

TEST_CASE("passes: run_passes calls `after` per pass, skips disabled ones, names unknown ones") {
  const graph::Target target;
  const auto fn = conv_block();
  std::vector<std::string> seen;
  const auto all = graph::run_passes(
      fn, target, graph::default_passes(),
      {.after = [&](const graph::Pass& p, const graph::Function& f) {
        seen.push_back(p.name);
        // placed from the partition on
        CHECK((p.name.starts_with("fold_batch_norm") || p.name == "fold_scale_shift" ||
               p.name.starts_with("recognize_") || p.name == "fake_quantization_to_integer" ||
               p.name == "type" || p.name == "widen_accumulator_loads") ==
              (f.placement() == nullptr));
      }});
  CHECK(seen.size() == 13);
  CHECK(fmt::format("{}", all) == fmt::format("{}", graph::infer_type(fn, target)));
  // without the fold the requantize rounds to nearest itself, and computes the same
  const auto unfolded =
      graph::run_passes(fn, target, graph::default_passes(), {.disabled = {"fold_rounding"}});
  const auto text = fmt::format("{}", unfolded);
  CHECK(text.find("rounding=\"nearest\"") != std::string::npos);
  CHECK(text.find("%\"b+32\"") == std::string::npos);
  const auto a = te::NDArray::random(DType::int8(), {1, 16, 6, 6}, 5);
  vta::SimDevice dev;
  const auto mod = graph::build(unfolded, target);
  CHECK(mod.steps()[1].epilogue != graph::build(all, target).steps()[1].epilogue);
  CHECK(graph::Executor(mod, dev).run({{"x", a}})[0] == graph::evaluate(all, {{"x", a}})[0]);
  CHECK_THROWS_WITH_AS(
      graph::run_passes(fn, target, graph::default_passes(), {.disabled = {"fold"}}),
      "run_passes: no pass 'fold' to disable (the pipeline: fold_batch_norm, fold_scale_shift, "
      "recognize_layer_norm, recognize_gelu, recognize_hard_swish, "
      "fake_quantization_to_integer, type, widen_accumulator_loads, partition, "
      "fold_rounding, channel_weights, layout, match_states)",
      dlavm::ValueError);
}

TEST_CASE("passes: build runs BuildOptions::passes on a function not placed yet") {
  const graph::Target target;
  auto passes = graph::default_passes();
  std::erase_if(passes, [](const graph::Pass& p) { return p.name == "fold_rounding"; });
  const auto unfolded = graph::build(conv_block(), target, {.passes = passes});
  const auto folded = graph::build(conv_block(), target);
  // the rounding stays an ALU step of its own: one epilogue step more
  CHECK(unfolded.steps()[1].epilogue != folded.steps()[1].epilogue);
  CHECK(unfolded.steps()[1].epilogue.find("+32") != std::string::npos);
  const auto a = te::NDArray::random(DType::int8(), {1, 16, 6, 6}, 7);
  vta::SimDevice dev;
  CHECK(graph::Executor(unfolded, dev).run({{"x", a}})[0] ==
        graph::Executor(folded, dev).run({{"x", a}})[0]);
  CHECK_THROWS_WITH_AS(graph::build(conv_block(), target, {.passes = {graph::default_passes()[0]}}),
                       "build: the function is not placed: its passes lacked 'partition' "
                       "(graph::default_passes())",
                       dlavm::ValueError);
}

TEST_CASE("passes: fold_rounding after layout and match_states keeps what they attached") {
  graph::Target target;
  target.int32_results = true;
  auto passes = graph::default_passes();
  const auto at = std::find_if(passes.begin(), passes.end(),
                               [](const graph::Pass& p) { return p.name == "fold_rounding"; });
  std::rotate(at, at + 1, passes.end());  // fold_rounding last
  REQUIRE(passes.back().name == "fold_rounding");
  // a convolution whose rounding folds: its layouts are made again
  const auto conv = conv_block();
  const auto reordered = graph::run_passes(conv, target, passes);
  REQUIRE(reordered.placement()->groups.size() == 1);
  CHECK(reordered.placement()->groups[0].layouts.has_value());
  CHECK(fmt::format("{}", reordered).find("%\"b+32\"") != std::string::npos);
  CHECK(fmt::format("{}", graph::build(reordered, target)) ==
        fmt::format("{}", graph::build(conv, target)));
  // a KV cache read by scores whose query projection's rounding folds: still held packed
  const auto token = ne::var("token", 1, 6);
  const auto last = ne::var("last_token", 0, 9);
  auto q = graph::input("q", {2, token, 16}, DType::int8());
  auto k = graph::input("k", {2, token, 16}, DType::int8());
  auto cache = graph::state_input("k_cache", {2, last, 16}, DType::int8());
  auto keys = graph::concat({cache, k}, {.axis = 1});
  auto wq = graph::constant("wq", te::NDArray::random(DType::int8(), {16, 16}, 8));
  auto bq = graph::constant("bq", te::NDArray::random(DType::int32(), {16}, 9, -50, 50));
  auto proj = graph::requantize(graph::bias_add(graph::dense(q, wq), bq, {.axis = -1}),
                                {.shift = 5, .rounding = dlavm::host::Rounding::Nearest});
  auto scores = graph::matmul(proj, graph::transpose(keys, {.perm = {0, 2, 1}}));
  const auto fn = graph::function({q, k}, {scores}, {{cache, keys}});
  const auto matched = graph::run_passes(fn, target, passes);
  CHECK(fmt::format("{}", matched).find("%\"bq+16\"") != std::string::npos);
  CHECK(matched.placement()->held.size() == 1);
  CHECK(graph::build(matched, target).signature().state[0].packed.has_value());
}

// The pipeline's passes up to and including `last`.
graph::Function run_until(const graph::Function& fn, const graph::Target& target,
                          std::string_view last) {
  auto passes = graph::default_passes();
  std::size_t n = 0;
  while (passes[n].name != last) ++n;
  passes.resize(n + 1);
  return graph::run_passes(fn, target, passes);
}

TEST_CASE("passes: type and partition alone") {
  const graph::Target target;
  const auto typed = run_until(conv_block(), target, "type");
  CHECK(typed.placement() == nullptr);
  for (const auto& e : graph::post_order(typed.roots())) {
    CHECK(e.has_type());
    if (e.kind() == graph::NodeKind::Call) CHECK(e.device() == graph::Device::Host);
  }
  const auto placed = graph::place(typed, target);
  REQUIRE(placed.placement() != nullptr);
  const auto& part = *placed.placement();
  REQUIRE(part.groups.size() == 1);
  CHECK(part.describe(part.groups[0]) == "vta: %0 conv2d, %1 bias_add, %2 requantize, %3 relu");
  CHECK_FALSE(part.groups[0].layouts.has_value());  // the layout pass's
  for (const auto& e : graph::post_order(placed.roots()))
    if (e.kind() == graph::NodeKind::Call) CHECK(e.device() == graph::Device::Vta);
  CHECK_THROWS_AS(graph::place(conv_block(), target), dlavm::ValueError);  // not typed
}

TEST_CASE("passes: fold_rounding alone adds the rounding to the bias, computing the same") {
  const graph::Target target;
  const auto placed = run_until(conv_block(), target, "partition");
  const auto folded = graph::fold_rounding(placed, target);
  const auto text = fmt::format("{}", folded);
  CHECK(text.find("bias_add(%0, %\"b+32\"") != std::string::npos);  // 2^(6-1)
  CHECK(text.find("rounding=\"floor\"") != std::string::npos);
  REQUIRE(folded.placement() != nullptr);  // placed again
  CHECK(folded.placement()->groups[0].epilogue.steps.size() + 1 ==
        placed.placement()->groups[0].epilogue.steps.size());
  const auto* b = [&] {
    for (const auto& e : graph::post_order(folded.roots()))
      if (e.name() == "b+32") return e.as<graph::ConstantNode>();
    return static_cast<const graph::ConstantNode*>(nullptr);
  }();
  REQUIRE(b != nullptr);
  const auto original = te::NDArray::random(DType::int32(), {16}, 4, -300, 300);
  for (std::size_t i = 0; i < 16; ++i) CHECK(b->value->data()[i] == original.data()[i] + 32);
  for (std::uint64_t seed = 1; seed < 4; ++seed) {
    const auto a = te::NDArray::random(DType::int8(), {1, 16, 6, 6}, seed);
    CHECK(graph::evaluate(folded, {{"x", a}})[0] == graph::evaluate(placed, {{"x", a}})[0]);
  }
  // nothing to fold: the function itself
  CHECK(graph::fold_rounding(folded, target).roots()[0].same_as(folded.roots()[0]));
  CHECK_THROWS_WITH_AS(graph::fold_rounding(run_until(conv_block(), target, "type"), target),
                       "graph pass 'fold_rounding': the function is not placed; run the "
                       "'partition' pass before it (graph::default_passes())",
                       dlavm::ValueError);
}

TEST_CASE("passes: layout alone gives each VTA group its strategy's layouts") {
  const graph::Target target;
  const auto placed = run_until(conv_block(), target, "fold_rounding");
  const auto laid_out = graph::assign_layouts(placed, target);
  const auto& g = laid_out.placement()->groups.at(0);
  REQUIRE(g.layouts.has_value());
  std::vector<std::string> inputs;
  for (const auto& l : g.layouts->inputs) inputs.push_back(graph::to_string(l));
  CHECK(inputs ==
        std::vector<std::string>{"activation[1x16]", "conv_weight[16x16]", "channel[1x16]"});
  CHECK(graph::to_string(g.layouts->output) == "activation[1x16]");
  // with int32 results, the result as four byte planes
  graph::Target wide;
  wide.int32_results = true;
  auto x = graph::input("x", {1, 16, 4, 4}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {16, 16, 1, 1}, 1));
  const auto sums = graph::assign_layouts(
      run_until(graph::function({x}, {graph::conv2d(x, w)}), wide, "fold_rounding"), wide);
  CHECK(graph::to_string(sums.placement()->groups.at(0).layouts->output) ==
        "activation[1x16, 4 planes]");
  // build refuses a placement without layouts, naming the pass
  CHECK_THROWS_WITH_AS(graph::build(placed, target),
                       "build: VTA group %3 has no layouts; run the 'layout' pass before it "
                       "(graph::default_passes())",
                       dlavm::ValueError);
}

TEST_CASE("passes: match_states alone, by the structure of the update, not op names") {
  graph::Target target;
  target.int32_results = true;  // the scores leave VTA as int32
  // custom ops that move data as concat and transpose do, declaring so in their records
  auto append = *target.ops.find("concat");
  append.name = "append_rows";
  target.ops.add(append);
  auto permute = *target.ops.find("transpose");
  permute.name = "permute_dims";
  target.ops.add(permute);
  // and one that concatenates without saying so
  auto opaque = *target.ops.find("concat");
  opaque.name = "opaque_concat";
  opaque.concat_axis = nullptr;
  target.ops.add(opaque);
  for (const auto& row : std::vector<std::tuple<std::string, std::string, bool>>{
           {"concat", "transpose", true},
           {"append_rows", "permute_dims", true},
           {"opaque_concat", "transpose", false}}) {
    // (not bindings: CAPTURE reads its argument in a lambda, which cannot capture a binding in
    // Clang before 16)
    const std::string& a = std::get<0>(row);
    const std::string& p = std::get<1>(row);
    const bool held = std::get<2>(row);
    CAPTURE(a);
    const CacheModel m(a, p);
    const auto laid_out = run_until(m.fn, target, "layout");
    CHECK(laid_out.placement()->held.empty());
    const auto matched = graph::match_states(laid_out, target);
    REQUIRE(matched.placement()->held.size() == (held ? 1u : 0u));
    if (held) {
      const auto& h = matched.placement()->held[0];
      CHECK(h.state == 0);
      CHECK(h.perm == std::vector<std::int64_t>{0, 2, 1});
      CHECK(graph::to_string(h.layout) == "matmul_weight[16x16]");
      CHECK(h.read.name() == p);
    }
    // built and run: held packed (an append step) or not, the same scores as the reference
    const auto mod = graph::build(matched, target);
    CHECK(mod.signature().state[0].packed.has_value() == held);
    vta::SimDevice dev;
    graph::Executor exec(mod, dev);
    te::NDArray cache(DType::int8(), {2, 0, 20});
    for (const std::int64_t tokens : {3, 1}) {
      const auto q = te::NDArray::random(DType::int8(), {2, tokens, 20}, 10 + tokens);
      const auto out = exec.run({{"q", q}, {"k", q}}, {{"token", tokens}});
      const graph::NamedArray ref_in[] = {{"q", q}, {"k", q}, {"k_cache", cache}};
      const ne::Binding rb[] = {{"token", tokens}, {"last_token", cache.shape()[1]}};
      const auto trace = graph::evaluate_trace(matched, ref_in, rb, target.ops);
      CHECK(out[0] == trace.results[0]);
      cache = trace.value_of(matched.state()[0].next);
      CHECK(exec.state("k_cache") == cache);
    }
  }
  const CacheModel m("concat", "transpose");
  CHECK_THROWS_WITH_AS(graph::match_states(run_until(m.fn, target, "fold_rounding"), target),
                       "graph pass 'match_states': VTA group %1 has no layouts; run the 'layout' "
                       "pass before it (graph::default_passes())",
                       dlavm::ValueError);
}

}  // namespace passes_test
