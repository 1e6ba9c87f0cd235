// Growing states (a KV cache): a state whose length is the variable last_token, appended to by
// each run and attended over on VTA (Q.K^T with N = last_token + token); the module binds
// last_token to what it holds, refuses a binding that disagrees and a run the cache is too
// small for, and starts over on reset_state.
#include <dlavm/graph.hpp>
#include <dlavm/host/transform.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include <optional>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;

namespace {

// scores[h, i, j] = (q wq)[h, i, :] . keys[h, j, :] over the cache and the new keys; the cache
// grows by the new keys.
struct CacheModel {
  ne::Var token = ne::var("token", 1, 6);
  ne::Var last = ne::var("last_token", 0, 9);
  graph::Expr q = graph::input("q", {2, token, 20}, DType::int8());
  graph::Expr k = graph::input("k", {2, token, 20}, DType::int8());
  graph::Expr cache = graph::state_input("k_cache", {2, last, 20}, DType::int8());
  graph::Expr keys = graph::concat({cache, k}, {.axis = 1});
  graph::Expr wq = graph::constant("wq", te::NDArray::random(DType::int8(), {20, 20}, 8));
  graph::Expr scores = graph::matmul(graph::requantize(graph::dense(q, wq), {.shift = 5}),
                                     graph::transpose(keys, {.perm = {0, 2, 1}}));
  graph::Function fn = graph::function({q, k}, {scores}, {{cache, keys}});
};

}  // namespace

TEST_CASE("kv cache: each run appends to the state and attends over it on VTA") {
  const CacheModel m;
  graph::Target target;
  target.int32_results = true;
  const auto typed = graph::infer_type(m.fn, target);
  auto mod = graph::build(m.fn, target, {.name = "cache"});
  std::int64_t vta_steps = 0;
  for (const auto& s : mod.steps()) vta_steps += s.kind == graph::ModuleStep::Kind::Vta;
  CHECK(vta_steps == 2);  // the projection of q, and Q.K^T
  vta::SimDevice dev;
  graph::Executor exec(mod, dev);
  CHECK(exec.state("k_cache").shape() == std::vector<std::int64_t>{2, 0, 20});
  // prefill 4 tokens, then decode 1 at a time up to the capacity, last_token's maximum + 1
  std::vector<te::NDArray> keys_so_far;
  std::int64_t held = 0;
  std::uint64_t seed = 1;
  for (const std::int64_t tokens : {4, 1, 1, 1, 1, 1, 1}) {
    CAPTURE(held);
    const auto q = te::NDArray::random(DType::int8(), {2, tokens, 20}, seed++);
    const auto k = te::NDArray::random(DType::int8(), {2, tokens, 20}, seed++);
    const te::NDArray before = exec.state("k_cache");
    const graph::NamedArray inputs[] = {{"q", q}, {"k", k}};
    const ne::Binding b[] = {{"token", tokens}};  // last_token: the state gives it
    const auto out = exec.run(inputs, b).at(0);
    // the reference executor takes the state as an input
    const graph::NamedArray ref_inputs[] = {{"q", q}, {"k", k}, {"k_cache", before}};
    const ne::Binding rb[] = {{"token", tokens}, {"last_token", held}};
    const auto ref = graph::evaluate(typed, ref_inputs, rb);
    CHECK(out == ref.at(0));
    CHECK(out.shape() == std::vector<std::int64_t>{2, tokens, held + tokens});
    held += tokens;
    // the state is every key so far, in order
    const auto& now = exec.state("k_cache");
    REQUIRE(now.shape() == std::vector<std::int64_t>{2, held, 20});
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t d = 0; d < 20; ++d)
          CHECK(now.at({h, held - tokens + t, d}) == k.at({h, t, d}));
    // a stream depends on the packed shapes of its operands: the projection's on token, Q.K^T's
    // on token and the tiles of keys (one for any last_token here); a decode step after another
    // reuses both
    for (std::size_t i = 0; i < mod.steps().size(); ++i)
      if (mod.steps()[i].kind == graph::ModuleStep::Kind::Vta)
        CHECK(exec.last_run().steps[i].instantiated == (held - tokens <= 4));
    const auto& binding = exec.last_run().bindings;
    CHECK(std::find(binding.begin(), binding.end(),
                    std::pair<std::string, std::int64_t>{"last_token", held - tokens}) !=
          binding.end());
  }
  CHECK(held == 10);  // full: last_token's maximum 9, plus one
  const auto q = te::NDArray::random(DType::int8(), {2, 1, 20}, 99);
  const graph::NamedArray inputs[] = {{"q", q}, {"k", q}};
  const ne::Binding one[] = {{"token", 1}};
  CHECK_THROWS_WITH_AS(exec.run(inputs, one),
                       "module 'cache': state 'k_cache' is full: it holds 10 along dim 1, and a "
                       "run starts from at most 9 (`last_token`'s maximum); reset_state() to "
                       "start over, or build with a larger maximum",
                       dlavm::CapacityError);
  exec.reset_state();
  CHECK(exec.state("k_cache").shape() == std::vector<std::int64_t>{2, 0, 20});
  const ne::Binding wrong[] = {{"token", 1}, {"last_token", 3}};
  CHECK_THROWS_WITH_AS(exec.run(inputs, wrong),
                       "module 'cache': state 'k_cache' holds 0 along dim 1 (`last_token`), but "
                       "the bindings give last_token = 3; leave last_token out (the state gives "
                       "it), or set_state / reset_state first",
                       dlavm::ValueError);
  // a prefill too long for the cache is refused before it runs; the state is untouched
  exec.set_state("k_cache", te::NDArray::random(DType::int8(), {2, 8, 20}, 5));
  const auto q3 = te::NDArray::random(DType::int8(), {2, 3, 20}, 6);
  const graph::NamedArray inputs3[] = {{"q", q3}, {"k", q3}};
  const ne::Binding three[] = {{"token", 3}};
  CHECK_THROWS_WITH_AS(exec.run(inputs3, three),
                       "module 'cache': state 'k_cache' would hold 11 along dim 1 (`token + "
                       "last_token`) after this run, and it holds at most 10 (last_token's "
                       "maximum 9 + 1): a cache too small for this run; reset_state() to start "
                       "over, or build with a larger maximum",
                       dlavm::CapacityError);
  CHECK(exec.state("k_cache").shape() == std::vector<std::int64_t>{2, 8, 20});
  CHECK_THROWS_WITH_AS(
      exec.set_state("k_cache", te::NDArray(DType::int8(), {2, 11, 20})),
      "module 'cache': state 'k_cache' is int8[2, last_token in [0, 9], 20] (an array of 0 to "
      "10 along last_token), the array is int8[2, 11, 20]",
      dlavm::ShapeError);
}

TEST_CASE("kv cache: a next value shorter than its growing state is a type error") {
  auto last = ne::var("last_token", 0, 9);
  auto cache = graph::state_input("c", {last, 4}, DType::int8());
  auto x = graph::input("x", {3, 4}, DType::int8());
  CHECK_THROWS_WITH_AS(graph::infer_type(graph::function({x}, {x}, {{cache, x}}), graph::Target{}),
                       "infer_type: state %c is Tensor[(last_token, 4), int8] but its next value "
                       "%x is Tensor[(3, 4), int8]",
                       dlavm::TypeError);
}

TEST_CASE("kv cache: a cache only VTA matmuls read is held packed, appended to in place") {
  const CacheModel m;
  graph::Target target;
  target.int32_results = true;
  auto mod = graph::build(m.fn, target, {.name = "cache"});
  // no step concatenates or transposes the whole cache: one append writes the new keys
  std::size_t appends = 0;
  for (const auto& s : mod.steps()) {
    appends += s.kind == graph::ModuleStep::Kind::Append;
    CHECK(s.op != "concat");
    CHECK(s.op != "transpose");
  }
  CHECK(appends == 1);
  const auto st = mod.signature().state.at(0);
  REQUIRE(st.packed.has_value());
  CHECK(st.perm == std::vector<std::int64_t>{0, 2, 1});
  CHECK(mod.to_string().find("next %k_cache = %k_cache with %k appended, held as "
                             "%3:matmul_weight[16x16]") != std::string::npos);
  // the cache region holds the packed keys at capacity: 2 products x 1 tile of 16 positions x
  // 2 tiles of 16 features, 256 bytes each; the state's own slot, the firmware's counters
  CHECK(mod.plan().buffers[*st.packed].bytes == 2 * 1 * 2 * 256);
  CHECK(mod.plan().buffers[st.value].bytes == 24);
  // set_state packs, state() unpacks
  vta::SimDevice dev;
  graph::Executor exec(mod, dev);
  const auto keys = te::NDArray::random(DType::int8(), {2, 7, 20}, 11);
  exec.set_state("k_cache", keys);
  CHECK(exec.state("k_cache") == keys);
  const auto q = te::NDArray::random(DType::int8(), {2, 2, 20}, 12);
  const graph::NamedArray inputs[] = {{"q", q}, {"k", q}};
  const ne::Binding b[] = {{"token", 2}};
  const auto out = exec.run(inputs, b).at(0);
  const graph::NamedArray ref_inputs[] = {{"q", q}, {"k", q}, {"k_cache", keys}};
  const ne::Binding rb[] = {{"token", 2}, {"last_token", 7}};
  CHECK(out == graph::evaluate(graph::infer_type(m.fn, target), ref_inputs, rb).at(0));
  const te::NDArray* parts[] = {&keys, &q};
  CHECK(exec.state("k_cache") == dlavm::host::concat(parts, {.axis = 1}));
  // set_state puts the packed cache on the device at once; once the device is gone, the
  // executor's states are still set (on the host: the sanitizers would see a write to freed
  // memory)
  std::optional<graph::Executor> outlives;
  {
    vta::SimDevice gone;
    outlives.emplace(mod, gone);
  }
  outlives->set_state("k_cache", keys);
  CHECK(outlives->state("k_cache") == keys);
  outlives->reset_state();
  CHECK(outlives->state("k_cache").shape() == std::vector<std::int64_t>{2, 0, 20});
}

TEST_CASE("kv cache: a cache whose concatenation something else reads stays an array") {
  // the keys so far are also a result: the whole concatenation is needed on the host
  const CacheModel m;
  const auto fn = graph::function({m.q, m.k}, {m.scores, m.keys}, {{m.cache, m.keys}});
  graph::Target target;
  target.int32_results = true;
  auto mod = graph::build(fn, target, {.name = "cache"});
  bool concat = false;
  for (const auto& s : mod.steps()) {
    CHECK(s.kind != graph::ModuleStep::Kind::Append);
    concat = concat || s.op == "concat";
  }
  CHECK(concat);
  CHECK_FALSE(mod.signature().state.at(0).packed.has_value());
  vta::SimDevice dev;
  graph::Executor exec(mod, dev);
  te::NDArray held(DType::int8(), {2, 0, 20});
  std::int64_t last = 0;
  for (const std::int64_t tokens : {3, 1, 1}) {
    const auto q = te::NDArray::random(DType::int8(), {2, tokens, 20}, 20 + tokens);
    const auto k = te::NDArray::random(DType::int8(), {2, tokens, 20}, 30 + tokens);
    const graph::NamedArray inputs[] = {{"q", q}, {"k", k}};
    const ne::Binding b[] = {{"token", tokens}};
    const auto out = exec.run(inputs, b);
    const graph::NamedArray ref_inputs[] = {{"q", q}, {"k", k}, {"k_cache", held}};
    const ne::Binding rb[] = {{"token", tokens}, {"last_token", last}};
    const auto ref = graph::evaluate(graph::infer_type(fn, target), ref_inputs, rb);
    CHECK(out.at(0) == ref.at(0));
    CHECK(out.at(1) == ref.at(1));
    held = ref.at(1);
    last += tokens;
    CHECK(exec.state("k_cache") == held);
  }
}
