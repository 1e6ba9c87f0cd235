// Tuning records, logs, shards and applying a log to graph::build: round trips, corrupted lines
// skipped with a warning naming the line, shards that partition a run and merge back into it,
// and a LogChooser that builds the logged schedule (same results on the simulator) or refuses
// a record that no longer fits the space.
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "../vta/temp_dir.hpp"
#include <algorithm>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

namespace tune_records {

using namespace dlavm;

// A convolution over `channels` channels: distinct keys for distinct channel counts.
std::string conv_key(std::int64_t channels) {
  const graph::Workload w{
      .op = "conv2d",
      .args = {{{1, channels, 8, 8}, DType::int8()}, {{channels, channels, 3, 3}, DType::int8()}},
      .result = {{1, channels, 8, 8}, DType::int32()},
      .attrs = {{"strides", {1, 1}}}};
  return tune::workload_key(w);
}

tune::Record record(std::int64_t channels, std::vector<std::int64_t> values,
                    std::optional<std::int64_t> cycles) {
  tune::Record r;
  r.workload = conv_key(channels);
  r.strategy = {"conv2d", 1};
  r.knobs.names = {"oc", "h"};
  r.knobs.values = std::move(values);
  r.cycles = cycles;
  if (cycles) r.bound_cycles = *cycles - 34;
  r.dram_bytes = 4096;
  r.build_seconds = 0.25;
  if (!cycles) r.error = "CapacityError: too large";
  return r;
}

// The line of a record that ran, with `edit` applied to its JSON.
std::string edited(const std::function<void(nlohmann::ordered_json&)>& edit) {
  auto j = nlohmann::ordered_json::parse(tune::to_json_line(record(16, {2, 7}, 1234)));
  edit(j);
  return j.dump();
}

TEST_CASE("a record survives its JSON line; wrong lines say what is wrong") {
  auto quoted = record(32, {1, 1}, std::nullopt);
  quoted.error = "CapacityError: \"quoted\"\nand a second line";
  for (const auto& r : {record(16, {2, 7}, 1234), quoted}) {
    const std::string line = tune::to_json_line(r);
    CHECK(line.find('\n') == std::string::npos);
    CHECK(tune::parse_record(line) == r);
  }
  using J = nlohmann::ordered_json;
  CHECK_THROWS_WITH_AS(tune::parse_record("{"), "not a JSON object", ParseError);
  CHECK_THROWS_WITH_AS(tune::parse_record(edited([](J& j) { j.erase("workload"); })),
                       "field 'workload' is missing", ParseError);
  CHECK_THROWS_WITH_AS(tune::parse_record(edited([](J& j) { j["knobs"]["oc"] = 1.5; })),
                       "knob 'oc' is 1.5, not an integer", ParseError);
  CHECK_THROWS_WITH_AS(tune::parse_record(edited([](J& j) { j["cycles"] = nullptr; })),
                       "a record without cycles must say why in 'error'", ParseError);
  CHECK_THROWS_WITH_AS(tune::parse_record(edited([](J& j) { j["bound_cycles"] = -1; })),
                       "field 'bound_cycles' is -1, not a count", ParseError);
  CHECK_THROWS_WITH_AS(tune::parse_record(edited([](J& j) { j.erase("bound_cycles"); })),
                       "field 'bound_cycles' is missing", ParseError);
}

TEST_CASE("a log keeps its good lines and names each bad one; best() ranks by cycles") {
  std::stringstream log;
  tune::append(log, record(16, {1, 1}, 300));
  log << tune::to_json_line(record(16, {3, 3}, 200)).substr(0, 80) << "\n";  // cut by a kill
  tune::append(log, record(16, {2, 2}, 100));
  log << "\n";
  tune::append(log, record(32, {1, 2}, std::nullopt));
  tune::append(log, record(16, {4, 4}, 100));
  const auto l = tune::read_log(log, "run.log");
  CHECK(l.records.size() == 4);
  REQUIRE(l.warnings.size() == 1);
  CHECK(l.warnings[0].rfind("run.log:2: ", 0) == 0);
  const auto top = tune::best(l.records, 2);
  const auto a = conv_key(16);
  REQUIRE(top.count(a) == 1);
  CHECK(top.count(conv_key(32)) == 0);  // it never ran
  REQUIRE(top.at(a).size() == 2);
  CHECK(top.at(a)[0].knobs.values == std::vector<std::int64_t>{2, 2});  // ties in log order
  CHECK(top.at(a)[1].knobs.values == std::vector<std::int64_t>{4, 4});
  CHECK_THROWS_AS(tune::read_log(std::filesystem::path("/nonexistent/x.log")), ValueError);
}

TEST_CASE("best() chooses among equal cycles by the records, not their order") {
  std::vector<tune::Record> records;
  for (std::int64_t i = 0; i < 6; ++i) records.push_back(record(16, {i, 5 - i}, i < 4 ? 500 : 700));
  const auto want = tune::best(records, 2);
  REQUIRE(want.size() == 1);
  std::mt19937 rng(7);
  for (int n = 0; n < 20; ++n) {
    std::shuffle(records.begin(), records.end(), rng);
    CHECK(tune::best(records, 2) == want);
  }
  // of the four at 500 cycles, the knobs that print first
  std::vector<std::string> tied;
  for (const auto& r : records)
    if (*r.cycles == 500) tied.push_back(graph::to_string(r.knobs));
  std::ranges::sort(tied);
  CHECK(graph::to_string(want.begin()->second.at(0).knobs) == tied[0]);
  CHECK(graph::to_string(want.begin()->second.at(1).knobs) == tied[1]);
}

TEST_CASE("open_for_append cuts a last line without its newline, and only that") {
  const dlavm_test::TempDir dir("tune_append");
  const auto path = dir.path / "cut.log";
  const auto r = record(16, {1, 2}, 900);
  {
    std::ofstream out(path);
    tune::append(out, r);
    const auto line = tune::to_json_line(r);
    out << line.substr(0, line.size() / 3);  // the kill
  }
  {
    auto log = tune::open_for_append(path);
    CHECK(log.repair.find("cut.log': cut ") != std::string::npos);
    tune::append(log.out, record(16, {3, 4}, 800));
  }
  const auto back = tune::read_log(path);
  CHECK(back.warnings.empty());
  CHECK(back.records.size() == 2);
  // a whole log, an empty one and a new file are left as they are
  for (const bool exists : {true, false}) {
    const auto other = dir.path / (exists ? "whole.log" : "new.log");
    if (exists) std::ofstream(other) << tune::to_json_line(r) << '\n';
    auto log = tune::open_for_append(other);
    CHECK(log.repair.empty());
  }
  CHECK(tune::read_log(dir.path / "whole.log").records.size() == 1);
  CHECK_THROWS_AS(tune::open_for_append(dir.path / "no" / "such" / "dir.log"), dlavm::ValueError);
}

TEST_CASE("shards partition a run, and their merged logs are the single run's") {
  CHECK(tune::parse_shard("3/8").index == 3);
  CHECK(tune::parse_shard("0/1").count == 1);
  for (const char* bad : {"3/2", "2/2", "0/0", "a/b", "1", "-1/2", "1/2/3", "", "/", "1/ 2"}) {
    const std::string quoted = std::string("'") + bad + "'";
    CHECK_THROWS_WITH_AS(tune::parse_shard(bad), doctest::Contains(quoted.c_str()), ValueError);
  }
  std::vector<tune::Record> single;
  for (std::int64_t i = 0; i < 23; ++i)
    single.push_back(record(i % 3 == 0 ? 16 : 32, {i, i % 5}, 1000 - (i * 37) % 200));
  for (std::size_t n = 1; n <= 5; ++n) {
    std::vector<tune::Log> logs(n);
    for (std::size_t i = 0; i < single.size(); ++i) {
      int owners = 0;
      for (std::size_t s = 0; s < n; ++s) {
        const tune::Shard shard{s, n};
        if (!shard.contains(i)) continue;
        ++owners;
        std::stringstream text;
        tune::append(text, single[i]);
        logs[s].records.push_back(tune::read_log(text, "shard").records.at(0));
      }
      CHECK(owners == 1);
    }
    const auto merged = tune::merge(logs);
    CHECK(merged.size() == single.size());
    CHECK(tune::best(merged, 3) == tune::best(single, 3));
  }
  // a candidate in two logs (a resumed shard) counts once
  tune::Log a, b;
  a.records = {single[0], single[1]};
  b.records = {single[1], single[2]};
  const tune::Log both[] = {a, b};
  CHECK(tune::merge(both).size() == 3);
}

// A convolution whose knob space has more than one schedule that fits.
graph::Function small_conv() {
  auto x = graph::input("x", {1, 32, 14, 14}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {32, 32, 3, 3}, 7));
  auto y = graph::requantize(graph::conv2d(x, w, {.padding = {1, 1, 1, 1}}), {.shift = 8});
  return graph::function({x}, {y});
}

TEST_CASE("LogChooser builds the logged schedule, falls back to the default, refuses misfits") {
  const graph::Target target;
  const auto fn = small_conv();
  const auto ws = graph::workloads(fn, target);
  REQUIRE(ws.size() == 1);
  const auto& strategy = *target.strategies.find(ws[0].op);
  const auto space = strategy.space(ws[0], target.env);
  const auto chosen = graph::Chooser().choose(ws[0], space);
  // another point that fits
  std::optional<std::vector<std::int64_t>> other;
  for (std::size_t i = 0; i < space.size() && !other; ++i) {
    const auto p = space.point(i);
    if (p != chosen.values && !space.check(p)) other = p;
  }
  REQUIRE(other.has_value());
  tune::Record r;
  r.workload = tune::workload_key(ws[0]);
  r.knobs = space.knobs_of(*other);
  r.target = target.env.config;
  r.strategy = {"conv2d", 1};
  r.cycles = 1;
  const std::vector<tune::Record> log = {r};
  auto logged =
      graph::build(fn, target, {.chooser = std::make_shared<tune::LogChooser>(log, target)});
  auto plain = graph::build(fn, target);
  const auto vta_step = [](const graph::Module& m) -> const graph::ModuleStep& {
    for (const auto& s : m.steps())
      if (s.kind == graph::ModuleStep::Kind::Vta) return s;
    FAIL("no VTA step");
    return m.steps().front();
  };
  CHECK(vta_step(logged).knobs == r.knobs);
  CHECK(vta_step(plain).knobs == chosen);
  vta::SimDevice d1(target.env.config), d2(target.env.config);
  const auto x = te::NDArray::random(DType::int8(), {1, 32, 14, 14}, 3);
  CHECK(graph::Executor(logged, d1).run({{"x", x}}).at(0) ==
        graph::Executor(plain, d2).run({{"x", x}}).at(0));
  // a workload the log lacks: the default
  const tune::LogChooser empty(std::vector<tune::Record>{}, target);
  CHECK_FALSE(empty.has(ws[0]));
  CHECK(empty.choose(ws[0], space) == chosen);
  // a value outside its knob's domain, and knobs of another strategy
  auto bad = r;
  bad.knobs.values[0] = 999;
  const std::vector<tune::Record> bad_log = {bad};
  CHECK_THROWS_WITH_AS(tune::LogChooser(bad_log, target).choose(ws[0], space),
                       doctest::Contains("is 999, outside its domain"), ValueError);
  auto renamed = r;
  renamed.knobs.names[0] = "rows";
  const std::vector<tune::Record> renamed_log = {renamed};
  CHECK_THROWS_WITH_AS(tune::LogChooser(renamed_log, target).choose(ws[0], space),
                       doctest::Contains("the record's knobs are [rows"), ValueError);
}

}  // namespace tune_records
