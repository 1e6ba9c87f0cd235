// Tuning records and logs: one JSON line per evaluated candidate (TVM's tuning records, one
// per line so that a killed run loses at most the line it was writing), read back with every
// unreadable line skipped and reported, merged across shards, and reduced to the best
// candidates of each workload.
//
// A line of format version 2 (kRecordVersion) says what it was measured for, as AutoTVM's
// records carry their version and target (one line here, broken for reading):
//
//   {"version": 2, "strategy": {"op": "conv2d", "revision": 1},
//    "workload": {"args": [{"dtype": "int8", "shape": [1, 32, 14, 14]}, ...], "attrs": {...},
//                 "epilogue": {"inputs": [], "int32_result": false, "steps": [...]},
//                 "op": "conv2d", "result": {"dtype": "int32", "shape": [1, 32, 14, 14]}},
//    "knobs": {"oc": 2, "h": 7, ...}, "cycles": 123456, "bound_cycles": 120000,
//    "dram_bytes": 802816, "build_seconds": 0.004, "error": "",
//    "target": {"TARGET": "sim", "HW_VER": "0.0.2", "LOG_INP_WIDTH": 3, ..., "LOG_BLOCK": 4, ...}}
//
//   std::ofstream log("conv.log", std::ios::app);
//   tune::append(log, {.workload = tune::workload_key(w), .knobs = knobs,
//                      .target = env.config, .strategy = {"conv2d", 1}, .cycles = 123456});
//   tune::Log l = tune::read_log("conv.log");      // l.warnings: "conv.log:7: ..." per bad line
//   auto top = tune::best(l.records, 3);           // per workload, least cycles first
//
// The workload is a JSON object (graph::Workload's fields; a symbolic dim is its expression as
// ne prints it with each variable's range), and a record's key is that object dumped with its
// keys sorted (workload_key): a change of graph's printer leaves the key alone. `target` is the
// VTA configuration the candidate was timed for (vta_config.json's keys), `strategy` the op's
// strategy and its revision (graph::AnchorStrategy::revision): applying a log (tune/apply.hpp)
// and resuming a search (tune/tuner.hpp) skip records made for another configuration or
// revision. A line of another format version is not read: read_log skips it with one warning
// per version (version 1, without a "version" field, was written before records carried their
// target: tune again). A record whose candidate failed has no cycles and says why in `error`;
// best() never picks it.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/vta/hw/config.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iosfwd>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::tune {

// The format version of the records this dlavm writes and reads.
inline constexpr std::int64_t kRecordVersion = 2;

// The strategy a candidate is a schedule of: its op and revision (graph::AnchorStrategy).
struct StrategyRevision {
  std::string op{};
  int revision = 0;
  friend bool operator==(const StrategyRevision&, const StrategyRevision&) = default;
};

struct Record {
  std::string workload{};                // workload_key(w): the key
  graph::Knobs knobs{};                  // the candidate
  vta::Config target{};                  // the VTA configuration it was timed for
  StrategyRevision strategy{};           // whose schedule it is (strategy.op is the workload's op)
  std::optional<std::int64_t> cycles{};  // on the cycle model; nullopt when it failed
  // The cycle model's roofline bound of the candidate's stream (no schedule of it runs in
  // fewer cycles): what the search could still gain.
  std::int64_t bound_cycles = 0;
  std::int64_t dram_bytes = 0;
  double build_seconds = 0;
  std::string error{};  // why the candidate failed (empty when it ran)
  friend bool operator==(const Record&, const Record&) = default;
};

// The workload as a JSON object dumped with sorted keys, on one line: a record's key, equal
// for equal workloads (a symbolic dim: its printed expression and each variable's range).
std::string workload_key(const graph::Workload& w);

// One JSON object on one line, without the newline. ValueError when r.workload is not a
// workload key (text workload_key did not make).
std::string to_json_line(const Record& r);
// A line of format version 2 back as a record; ParseError naming the field that is wrong (not
// JSON, another format version, a missing or mistyped field, knob values that are not
// integers, a target that is no VTA configuration, a strategy of another op than the
// workload's).
Record parse_record(std::string_view line);

// Appends the record as a line and flushes it: what was appended survives the process.
void append(std::ostream& out, const Record& r);

// A log opened for appending, after cutting a last line that a killed run left without its
// newline (appended to, it would glue the next record onto the partial one and leave a line
// no reader can parse). `repair` says what was cut ("'a.log': cut 37 bytes, a last line
// without its newline"), empty when nothing was. ValueError when the file cannot be opened.
struct AppendLog {
  std::ofstream out;
  std::string repair;
};
AppendLog open_for_append(const std::filesystem::path& path);

struct Log {
  std::vector<Record> records;
  // "<source>:<line>: <what is wrong>", one per skipped line, but one per format version for
  // lines of another version (at the first, with how many there are).
  std::vector<std::string> warnings;
};
// Every readable line of a log (blank lines ignored); ValueError when the file cannot be
// opened.
Log read_log(const std::filesystem::path& path);
Log read_log(std::istream& in, std::string_view source);

// What identifies a candidate of a search (tasks of one target): its workload and its knobs,
// as text.
std::string candidate_key(std::string_view workload, const graph::Knobs& knobs);

// How two VTA configurations differ, by vta_config.json's keys ("LOG_BLOCK_OUT 5 in the log,
// 4 here; ..."), or "" when they are equal.
std::string config_difference(const vta::Config& logged, const vta::Config& here);

// The records of several logs as one run's: a candidate (workload and knobs, for one target
// and strategy revision) evaluated in more than one keeps its first record.
std::vector<Record> merge(std::span<const Log> logs);

// Per workload, its `k` best records that ran: least cycles first; ties go to the knobs that
// print first, then the target and strategy revision, so that the same records in any order
// (merged shards, say) give the same choice. Records of every target count: select a
// target's first (tune::for_target, tune/apply.hpp).
std::map<std::string, std::vector<Record>> best(std::span<const Record> records, std::size_t k);

}  // namespace dlavm::tune

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tune/record-inl.hpp>
#endif
