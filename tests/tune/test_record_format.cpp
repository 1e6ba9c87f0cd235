// Tuning records of format version 2: a line carries its version, its target (the VTA
// configuration) and its strategy's revision, and its workload as a JSON object whose sorted
// dump is the record's key; every field is checked, with a ParseError naming it; lines of
// another format version are skipped by read_log with one warning per version saying what to
// do; merge keeps the records of different targets apart.
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "small_model.hpp"
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tune_format {

using namespace dlavm;
using J = nlohmann::ordered_json;
using Step = graph::EpilogueStep::Kind;

// A workload with a field of each kind: symbolic dims (a variable, an expression of it), an
// attribute of each kind, an epilogue with each kind of step and of input.
graph::Workload rich_workload(const ne::Var& rows) {
  graph::Epilogue ep;
  const vta::Config c;
  ep.add_channel(DType::int32());  // step 0, input 0
  ep.add_tensor(DType::int8());    // step 1, input 1
  ep.imm(Step::Add, 3, c);         // step 2
  ep.imm(Step::Shr, 8, c);
  ep.imm(Step::Max, 0, c);
  ep.imm(Step::Min, 127, c);
  graph::Attrs attrs{{"units", std::int64_t{32}},
                     {"alpha", 0.5},
                     {"layout", "NC"},
                     {"strides", {1, 1}},
                     {"out_dtype", DType::int32()},
                     {"scales", std::vector<double>{0.5, 2.0}}};
  return {.op = "dense",
          .args = {{{rows * 4, 64}, DType::int8()}, {{32, 64}, DType::int8()}},
          .result = {{rows * 4, 32}, DType::int32()},
          .attrs = std::move(attrs),
          .epilogue = std::move(ep)};
}

tune::Record rich_record() {
  vta::Config config;
  config.target = "pynq";
  config.log_block_out = 5;  // BLOCK_OUT 32: vta_config.json's LOG_BLOCK_IN / LOG_BLOCK_OUT
  tune::Record r;
  r.workload = tune::workload_key(rich_workload(ne::var("rows", 1, 128)));
  r.knobs = {{"rows", "n", "threads"}, {2, 1, 2}};
  r.target = config;
  r.strategy = {"dense", 3};
  r.cycles = 5000;
  r.bound_cycles = 4000;
  r.dram_bytes = 8192;
  r.build_seconds = 0.125;
  return r;
}

// The rich record's line with `edit` applied to its JSON.
std::string edited(const std::function<void(J&)>& edit) {
  auto j = J::parse(tune::to_json_line(rich_record()));
  edit(j);
  return j.dump();
}

// Whether every object in j lists its keys in sorted order.
bool keys_sorted(const J& j) {
  if (j.is_object()) {
    std::string last;
    for (const auto& [key, value] : j.items()) {
      if (key < last || !keys_sorted(value)) return false;
      last = key;
    }
  }
  if (j.is_array())
    for (const auto& v : j)
      if (!keys_sorted(v)) return false;
  return true;
}

TEST_CASE("a v2 record survives its line: version, target, strategy, the workload an object") {
  const auto r = rich_record();
  const auto line = tune::to_json_line(r);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(tune::parse_record(line) == r);
  const auto j = J::parse(line);
  CHECK(j.at("version") == 2);
  CHECK(j.at("strategy") == J::parse(R"({"op": "dense", "revision": 3})"));
  // the target: vta_config.json's keys, as an object
  CHECK(j.at("target").at("TARGET") == "pynq");
  CHECK(j.at("target").at("LOG_BLOCK_IN") == 4);
  CHECK(j.at("target").at("LOG_BLOCK_OUT") == 5);
  CHECK(j.at("target").at("LOG_ACC_BUFF_SIZE") == 17);
  // the workload: symbolic dims as their expression and their variables' ranges
  const auto& w = j.at("workload");
  REQUIRE(w.is_object());
  CHECK(w.at("op") == "dense");
  CHECK(w.at("args").at(0).at("shape") == J::parse(R"([{"expr": "rows*4",
                                                         "vars": {"rows": [1, 128]}}, 64])"));
  CHECK(w.at("result").at("dtype") == "int32");
  CHECK(w.at("attrs") == J::parse(R"({"alpha": 0.5, "layout": "NC", "out_dtype": {"dtype":
      "int32"}, "scales": {"floats": [0.5, 2.0]}, "strides": [1, 1], "units": 32})"));
  CHECK(w.at("epilogue").at("steps").at(1) == J::parse(R"({"input": 1, "kind": "add_tensor"})"));
  CHECK(w.at("epilogue").at("steps").at(3) == J::parse(R"({"imm": 8, "kind": "shr"})"));
  CHECK(w.at("epilogue").at("inputs").at(0) ==
        J::parse(R"({"dtype": "int32", "kind": "channel"})"));
  // the line's key order does not matter: the record's key is the sorted dump
  J reversed = J::object();
  for (const char* key : {"result", "op", "epilogue", "attrs", "args"}) reversed[key] = w.at(key);
  CHECK(tune::parse_record(edited([&](J& l) { l["workload"] = reversed; })).workload == r.workload);
  // a failed candidate: no cycles, its error
  auto failed = r;
  failed.cycles.reset();
  failed.error = "CapacityError: \"quoted\"";
  CHECK(tune::parse_record(tune::to_json_line(failed)) == failed);
  // a workload that is not a key is refused when written
  auto bad = r;
  bad.workload = "dense((1, 64) int8)";
  CHECK_THROWS_WITH_AS(tune::to_json_line(bad), doctest::Contains("is not a workload key"),
                       ValueError);
  // nor one whose strategy is not of its workload's op (it would not read back)
  auto other = r;
  other.strategy = {"conv2d", 1};
  CHECK_THROWS_WITH_AS(tune::to_json_line(other),
                       "tuning record: its strategy is of op 'conv2d' (revision 1), its workload "
                       "of op \"dense\"; a record names the strategy of its workload's op",
                       ValueError);
  other.strategy = {};
  CHECK_THROWS_AS(tune::to_json_line(other), ValueError);
}

TEST_CASE("every field of a v2 line is checked: a ParseError names the one that is wrong") {
  const struct {
    std::function<void(J&)> edit;
    const char* message;
  } cases[] = {
      {[](J& j) { j["version"] = "2"; }, "field 'version' is \"2\", not a format version"},
      {[](J& j) { j["version"] = 0; }, "field 'version' is 0, not a format version"},
      {[](J& j) { j.erase("version"); },
       "format version 1 (no \"version\" field): written by a "
       "dlavm before records carried their target; tune again"},
      {[](J& j) { j["version"] = 3; }, "format version 3: written by a newer dlavm"},
      {[](J& j) { j.erase("target"); }, "field 'target' is missing"},
      {[](J& j) { j["target"] = "sim"; }, "field 'target' is \"sim\", not a VTA configuration"},
      {[](J& j) { j["target"].erase("LOG_BATCH"); }, "field 'target': missing key 'LOG_BATCH'"},
      {[](J& j) { j["target"]["LOG_BATCH"] = "0"; },
       "field 'target': key 'LOG_BATCH' must be an integer"},
      {[](J& j) { j["target"]["LOG_BLOCK_OUT"] = 9; },
       "field 'target': LOG_BLOCK_OUT = 9 is out of range"},
      {[](J& j) { j.erase("strategy"); }, "field 'strategy' is missing"},
      {[](J& j) { j["strategy"] = 1; }, "field 'strategy' is 1, not an object"},
      {[](J& j) { j["strategy"].erase("op"); }, "field 'strategy.op' is missing"},
      {[](J& j) { j["strategy"]["op"] = "conv2d"; },
       "field 'strategy.op' is \"conv2d\", not the workload's op \"dense\""},
      {[](J& j) { j["strategy"].erase("revision"); }, "field 'strategy.revision' is missing"},
      {[](J& j) { j["strategy"]["revision"] = "1"; },
       "field 'strategy.revision' is \"1\", not a revision"},
      {[](J& j) { j["strategy"]["revision"] = std::int64_t{1} << 40; },
       "field 'strategy.revision' is 1099511627776, not a revision"},
      {[](J& j) { j["workload"] = "dense((1, 64) int8)"; },
       "field 'workload' is \"dense((1, 64) int8)\", not an object"},
      {[](J& j) { j["workload"].erase("op"); }, "field 'workload.op' is missing"},
      {[](J& j) { j["workload"]["args"] = J::object(); },
       "field 'workload.args' is {}, not an array"},
      {[](J& j) { j["workload"]["args"][0]["shape"][1] = -1; },
       "field 'workload.args[0].shape[1]' is -1, not a dim"},
      {[](J& j) {
         j["workload"]["args"][0]["shape"][0]["vars"]["rows"] = {5, 1};
       },
       "field 'workload.args[0].shape[0].vars.rows' is [5,1], not a range"},
      {[](J& j) { j["workload"]["args"][0]["shape"][0]["expr"] = ""; },
       "field 'workload.args[0].shape[0].expr' is \"\", not an expression"},
      {[](J& j) { j["workload"]["args"][0]["shape"][0].erase("vars"); },
       "field 'workload.args[0].shape[0].vars' is missing"},
      {[](J& j) { j["workload"]["args"][1]["dtype"] = "int7x"; },
       "field 'workload.args[1].dtype' is \"int7x\", not a dtype"},
      {[](J& j) { j["workload"].erase("result"); }, "field 'workload.result' is missing"},
      {[](J& j) { j["workload"]["attrs"]["out_dtype"]["dtype"] = 8; },
       "field 'workload.attrs.out_dtype.dtype' is 8, not a dtype"},
      {[](J& j) { j["workload"]["attrs"]["strides"][1] = 1.5; },
       "field 'workload.attrs.strides' is [1,1.5], not a list of integers"},
      {[](J& j) { j["workload"]["attrs"]["scales"]["floats"][0] = "a"; },
       "field 'workload.attrs.scales.floats' is [\"a\",2.0], not a list of numbers"},
      {[](J& j) { j["workload"]["attrs"]["units"] = nullptr; },
       "field 'workload.attrs.units' is null, not an attribute"},
      {[](J& j) { j["workload"]["epilogue"]["steps"][2]["kind"] = "mul"; },
       "field 'workload.epilogue.steps[2].kind' is \"mul\", not one of add, shr, max, min"},
      {[](J& j) { j["workload"]["epilogue"]["steps"][0]["input"] = 2; },
       "field 'workload.epilogue.steps[0].input' is 2, not the index of one of the 2 inputs"},
      {[](J& j) { j["workload"]["epilogue"]["steps"][3].erase("imm"); },
       "field 'workload.epilogue.steps[3].imm' is missing"},
      {[](J& j) { j["workload"]["epilogue"]["inputs"][1]["kind"] = "plane"; },
       "field 'workload.epilogue.inputs[1].kind' is \"plane\", not one of channel, tensor"},
      {[](J& j) { j["workload"]["epilogue"]["int32_result"] = 0; },
       "field 'workload.epilogue.int32_result' is 0, not true or false"},
      {[](J& j) { j["workload"].erase("epilogue"); }, "field 'workload.epilogue' is missing"},
      {[](J& j) { j["knobs"] = J::array(); }, "field 'knobs' is [], not an object"},
      {[](J& j) { j["cycles"] = -5; }, "field 'cycles' is -5, not a count or null"},
      {[](J& j) { j.erase("cycles"); }, "field 'cycles' is missing"},
      {[](J& j) { j["dram_bytes"] = 1.5; }, "field 'dram_bytes' is 1.5, not a count"},
      {[](J& j) { j["build_seconds"] = "0"; }, "field 'build_seconds' is \"0\", not a number"},
      {[](J& j) { j["error"] = 3; }, "field 'error' is 3, not a string"},
  };
  for (const auto& c : cases) {
    const auto line = edited(c.edit);
    CAPTURE(line);
    CHECK_THROWS_WITH_AS(tune::parse_record(line), doctest::Contains(c.message), ParseError);
  }
  // the edits themselves leave a readable line when undone
  CHECK_NOTHROW(tune::parse_record(edited([](J&) {})));
}

TEST_CASE("read_log skips lines of another format version: one warning per version, at its first") {
  const auto v2 = tune::to_json_line(rich_record());
  // what dlavm wrote before records carried their version and target
  const std::string v1 =
      R"x({"workload": "dense((4, 64) int8, (32, 64) int8; units=32; no epilogue)", )x"
      R"("knobs": {"rows": 1}, "cycles": 9, "bound_cycles": 8, "dram_bytes": 0, )"
      R"("build_seconds": 0.1, "error": ""})";
  const auto v3 = edited([](J& j) { j["version"] = 3; });
  std::stringstream log;
  log << v2 << "\n" << v1 << "\n" << v2 << "\n" << v1 << "\n" << v3 << "\n{\n" << v1 << "\n";
  const auto l = tune::read_log(log, "run.log");
  CHECK(l.records.size() == 2);
  REQUIRE(l.warnings.size() == 3);
  CHECK(l.warnings[0] ==
        "run.log:2: format version 1 (no \"version\" field): written by a dlavm before records "
        "carried their target; tune again (this dlavm reads version 2); this line and 2 more of "
        "version 1 skipped");
  CHECK(l.warnings[1] ==
        "run.log:5: format version 3: written by a newer dlavm (this one reads version 2); read it "
        "with that dlavm, or tune again; line skipped");
  CHECK(l.warnings[2] == "run.log:6: not a JSON object; line skipped");
}

TEST_CASE("workload_key: sorted JSON of the workload, not graph's printed text") {
  const graph::Workload conv{.op = "conv2d",
                             .args = {{{1, 32, 14, 14}, DType::int8()}},
                             .result = {{1, 32, 14, 14}, DType::int32()},
                             .attrs = {{"groups", std::int64_t{1}}, {"padding", {1, 1, 1, 1}}},
                             .epilogue = {.steps = {{.kind = Step::Shr, .imm = 8}}, .inputs = {}}};
  const auto key = tune::workload_key(conv);
  // the format pinned by hand: no printer of graph's in it
  CHECK(
      key ==
      R"({"args":[{"dtype":"int8","shape":[1,32,14,14]}],"attrs":{"groups":1,"padding":[1,1,1,1]},)"
      R"("epilogue":{"inputs":[],"int32_result":false,"steps":[{"imm":8,"kind":"shr"}]},)"
      R"("op":"conv2d","result":{"dtype":"int32","shape":[1,32,14,14]}})");
  const auto rich = tune::workload_key(rich_workload(ne::var("rows", 1, 128)));
  CHECK(keys_sorted(J::parse(rich)));
  // equal workloads (another variable of the same name and range): equal keys
  CHECK(tune::workload_key(rich_workload(ne::var("rows", 1, 128))) == rich);
  CHECK(tune::workload_key(rich_workload(ne::var("rows", 1, 64))) != rich);
  // any other attribute or epilogue: another key
  const auto with = [&](const std::function<void(graph::Workload&)>& edit) {
    auto w = conv;
    edit(w);
    return tune::workload_key(w);
  };
  const std::vector<std::string> others = {
      with([](graph::Workload& w) { w.attrs.set("groups", std::int64_t{2}); }),
      with([](graph::Workload& w) { w.attrs.set("groups", 1.0); }),
      with([](graph::Workload& w) { w.attrs.set("layout", DType::int8()); }),
      with([](graph::Workload& w) { w.attrs.set("layout", std::string("int8")); }),
      with([](graph::Workload& w) { w.attrs.set("padding", std::vector<std::int64_t>{}); }),
      with([](graph::Workload& w) { w.attrs.set("padding", std::vector<double>{}); }),
      with([](graph::Workload& w) { w.epilogue.steps[0].imm = 7; }),
      with([](graph::Workload& w) { w.epilogue.steps[0].kind = Step::Add; }),
      with([](graph::Workload& w) { w.epilogue.int32_result = true; }),
      with([](graph::Workload& w) { w.epilogue.add_channel(); }),
      with([](graph::Workload& w) { w.result.dtype = DType::int8(); }),
      with([](graph::Workload& w) { w.op = "conv2d_transpose"; }),
  };
  std::set<std::string> distinct(others.begin(), others.end());
  distinct.insert(key);
  CHECK(distinct.size() == others.size() + 1);
  // a model's workloads, typed twice: the same keys, one per workload
  const graph::Target target;
  const auto a = tune::tasks(tune_test::small_model(), target);
  const auto b = tune::tasks(tune_test::small_model(), target);
  REQUIRE(a.size() == b.size());
  std::set<std::string> keys;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].key == b[i].key);
    CHECK(a[i].key == tune::workload_key(a[i].workload));
    CHECK(a[i].name == graph::to_string(a[i].workload));
    keys.insert(a[i].key);
  }
  CHECK(keys.size() == a.size());
}

TEST_CASE("merge keeps the records of a candidate for different targets apart") {
  const auto r = rich_record();
  auto elsewhere = r;
  elsewhere.target = vta::Config{};
  auto revised = r;
  revised.strategy.revision = 4;
  tune::Log a, b;
  a.records = {r, elsewhere};
  b.records = {r, revised, elsewhere};
  const tune::Log both[] = {a, b};
  const auto merged = tune::merge(both);
  CHECK(merged == std::vector<tune::Record>{r, elsewhere, revised});
  CHECK(tune::config_difference(r.target, elsewhere.target) ==
        "TARGET \"pynq\" in the log, \"sim\" here; LOG_BLOCK_OUT 5 in the log, 4 here");
  CHECK(tune::config_difference(r.target, r.target) == "");
}

}  // namespace tune_format
