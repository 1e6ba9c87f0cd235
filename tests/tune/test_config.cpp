// Tuning configs: a model's spaces written out and read back unchanged; an op's entry and a
// workload's entry narrowing the candidates to what they list; and every malformed config, knob
// or value refused with the file, the line and the knob.
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "small_model.hpp"
#include <algorithm>
#include <string>

namespace tune_config {

using namespace dlavm;

using tune_test::small_model;

const graph::Knob& knob(const tune::Task& t, std::string_view name) {
  return *std::find_if(t.space.knobs.begin(), t.space.knobs.end(),
                       [&](const graph::Knob& k) { return k.name == name; });
}

TEST_CASE("tuning config: a model's spaces round-trip, and the whole space narrows nothing") {
  const graph::Target target;
  auto tasks = tune::tasks(small_model(), target);
  REQUIRE(tasks.size() == 3);
  const auto text = tune::to_json(tune::config_of(tasks));
  const auto back = tune::parse_config(text, "spaces.json");
  REQUIRE(back.workloads.size() == tasks.size());
  CHECK(back.ops.empty());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    CHECK(back.workloads[i].key == tasks[i].name);
    REQUIRE(back.workloads[i].knobs.size() == tasks[i].space.knobs.size());
    for (std::size_t k = 0; k < tasks[i].space.knobs.size(); ++k) {
      CHECK(back.workloads[i].knobs[k].name == tasks[i].space.knobs[k].name);
      CHECK(back.workloads[i].knobs[k].values == tasks[i].space.knobs[k].values);
      CHECK(back.workloads[i].knob_lines[k] > back.workloads[i].line);
    }
  }
  // one knob per line: the lines read are the lines written
  CHECK(back.workloads[0].line == 4);
  CHECK(back.workloads[0].knob_lines[0] == 5);
  CHECK(tune::to_json(back) == text);
  const auto before = tasks;
  CHECK(tune::restrict(tasks, back).empty());
  for (std::size_t i = 0; i < tasks.size(); ++i)
    for (std::size_t k = 0; k < tasks[i].space.knobs.size(); ++k)
      CHECK(tasks[i].space.knobs[k].values == before[i].space.knobs[k].values);
}

TEST_CASE("tuning config: an op's entry and a workload's entry narrow the candidates") {
  const graph::Target target;
  auto tasks = tune::tasks(small_model(), target);
  const auto conv0 = tasks[0].name;
  const auto config = tune::parse_config(fmt::format(R"({{
  "ops": {{"conv2d": {{"threads": [2], "h": [7, 2, 1], "strided": [0]}}}},
  "workloads": {{{}: {{"h": [7, 14], "ic": [1]}}}}
}})",
                                                     nlohmann::json(conv0).dump()));
  const auto dense_before = tasks[2].space.knobs;
  CHECK(tune::restrict(tasks, config).empty());
  // conv0: the op's entry kept h 1, 2, 7 of 1, 2, 7, 14; its own entry then 7 (14 was gone)
  CHECK(knob(tasks[0], "threads").values == std::vector<std::int64_t>{2});
  CHECK(knob(tasks[0], "h").values == std::vector<std::int64_t>{7});
  CHECK(knob(tasks[0], "ic").values == std::vector<std::int64_t>{1});
  // conv1 (7 rows): h 1 and 7, in the domain's order; conv0 has no `strided` knob
  CHECK(knob(tasks[1], "strided").values == std::vector<std::int64_t>{0});
  CHECK(knob(tasks[1], "h").values == std::vector<std::int64_t>{1, 7});
  CHECK(knob(tasks[1], "threads").values == std::vector<std::int64_t>{2});
  // the dense layer is another op
  for (std::size_t k = 0; k < dense_before.size(); ++k)
    CHECK(tasks[2].space.knobs[k].values == dense_before[k].values);
  for (const auto& p : tune::candidates(tasks[0].space)) {
    const auto k = tasks[0].space.knobs_of(p);
    CHECK(k.at("threads") == 2);
    CHECK(k.at("h") == 7);
    CHECK(k.at("ic") == 1);
  }
  // entries for workloads and ops the model lacks are reported, not errors
  auto again = tune::tasks(small_model(), target);
  const auto unused = tune::restrict(again, tune::parse_config(R"j({
  "ops": {"max_pool2d": {"c": [1]}},
  "workloads": {"conv2d(elsewhere)": {"h": [1]}}
})j",
                                                               "other.json"));
  REQUIRE(unused.size() == 2);
  CHECK(unused[0] == "other.json:2: op 'max_pool2d' has no workload here");
  CHECK(unused[1] == "other.json:3: no workload 'conv2d(elsewhere)' here");
}

TEST_CASE("tuning config: malformed text, unknown knobs and values outside a domain") {
  const auto parse_error = [](std::string_view text) {
    try {
      (void)tune::parse_config(text, "cfg.json");
    } catch (const ParseError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(parse_error("{\n  \"ops\": {\n    \"conv2d\": {\"h\": [1 2]}\n  }\n}")
            .starts_with("cfg.json:3: not JSON: "));
  CHECK(parse_error("{\n  \"ops\": {},\n  \"op\": {}\n}") ==
        "cfg.json:3: unknown field 'op' (a tuning config has 'ops' and 'workloads')");
  CHECK(parse_error("{\n  \"ops\": {\n    \"conv2d\": {\n      \"threads\": 2\n    }\n  }\n}") ==
        "cfg.json:4: conv2d: knob 'threads' is 2, not a non-empty array of integers");
  CHECK(parse_error("{\"workloads\": {\"w\": {\"h\": []}}}") ==
        "cfg.json:1: w: knob 'h' is [], not a non-empty array of integers");
  CHECK(parse_error("{\"workloads\": {\"w\": {\"h\": [1.5]}}}") ==
        "cfg.json:1: w: knob 'h' is [1.5], not a non-empty array of integers");
  CHECK(parse_error("{\n  \"ops\": [1]\n}") == "cfg.json:2: 'ops' is array, not an object");
  CHECK(parse_error("[]") ==
        "cfg.json:1: a tuning config is an object with 'ops' and 'workloads', not array");
  CHECK_THROWS_WITH_AS(tune::read_config("/nonexistent/cfg.json"),
                       "tuning config '/nonexistent/cfg.json' cannot be opened", ValueError);

  const graph::Target target;
  const auto restrict_error = [&](const std::string& text) {
    auto tasks = tune::tasks(small_model(), target);
    try {
      (void)tune::restrict(tasks, tune::parse_config(text, "cfg.json"));
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(restrict_error("{\n  \"ops\": {\"conv2d\": {\n    \"hh\": [1]}}}") ==
        "cfg.json:3: conv2d: 'hh' is not a knob of conv2d's space (oc, h, w, ic, threads, "
        "split)");
  CHECK(restrict_error("{\"ops\": {\"conv2d\": {\n\"threads\": [3, 2]}}}") ==
        "cfg.json:2: conv2d: knob 'threads' = 3 is in the domain of none of its workloads");
  // 14-row blocks: conv0 has them, conv1 (7 rows) keeps nothing
  CHECK(restrict_error("{\"ops\": {\"conv2d\": {\"h\": [14]}}}")
            .starts_with("cfg.json:1: conv2d: knob 'h' keeps none of [14] for conv2d((1, 32, 14, "
                         "14) int8, (64, 32, 1, 1) int8;"));
  const auto conv0 = nlohmann::json(tune::tasks(small_model(), target)[0].name).dump();
  CHECK(restrict_error(fmt::format("{{\"workloads\": {{\n{}: {{\n\"h\": [7, 5]}}}}}}", conv0))
            .ends_with(": knob 'h' = 5 is outside its domain (1, 2, 7, 14)"));
  CHECK(restrict_error(fmt::format("{{\"workloads\": {{\n{}: {{\n\"h\": [7, 5]}}}}}}", conv0))
            .starts_with("cfg.json:3: conv2d((1, 32, 14, 14) int8"));
}

TEST_CASE("tune candidates: a space nothing passes names the constraints that removed it") {
  const graph::Target target;
  auto tasks = tune::tasks(small_model(), target);
  // conv0 has two output channel tiles: one block of both leaves one block for two threads
  tune::restrict(tasks, tune::parse_config(
                            R"({"ops": {"conv2d": {"oc": [2], "threads": [2], "split": [0]}}})"));
  const auto points = tasks[0].space.size();
  const auto expected = fmt::format(
      "none of the {} points of the knob space passes its check: {} "
      "removed by the constraint of (oc 2, h 1, w 1, ic 1, threads 2, split 0: 2 virtual threads "
      "do not divide the 1 output channel blocks)",
      points, points);
  CHECK_THROWS_WITH_AS(tune::candidates(tasks[0].space), doctest::Contains(expected.c_str()),
                       CapacityError);
  // two constraints, the one that removed more points first
  auto mixed = tune::tasks(small_model(), target);
  tune::restrict(mixed, tune::parse_config(R"({"ops": {"conv2d": {"threads": [2]}}})"));
  auto space = mixed[0].space;
  space.check = [](std::span<const std::int64_t> v) -> std::optional<std::string> {
    if (v[1] < 14) return fmt::format("a block of {} rows is too small", v[1]);
    return fmt::format("{} input tiles are too many", v[3]);
  };
  try {
    (void)tune::candidates(space);
    FAIL("no error");
  } catch (const CapacityError& e) {
    const std::string what = e.what();
    const auto small = what.find("rows is too small");
    const auto many = what.find("input tiles are too many");
    CHECK(small != std::string::npos);
    CHECK(many != std::string::npos);
    CHECK(small < many);
  }
}

}  // namespace tune_config
