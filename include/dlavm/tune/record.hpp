// Tuning records and logs: one JSON line per evaluated candidate (TVM's tuning records, one
// per line so that a killed run loses at most the line it was writing), read back with every
// unreadable line skipped and reported, merged across shards, and reduced to the best
// candidates of each workload.
//
//   {"workload": "conv2d((1, 64, 56, 56) int8, ...)", "knobs": {"oc": 2, "h": 7, ...},
//    "cycles": 123456, "bound_cycles": 120000, "dram_bytes": 802816, "build_seconds": 0.004,
//    "error": ""}
//
//   std::ofstream log("conv.log", std::ios::app);
//   tune::append(log, {.workload = to_string(w), .knobs = knobs, .cycles = 123456});
//   tune::Log l = tune::read_log("conv.log");      // l.warnings: "conv.log:7: ..." per bad line
//   auto top = tune::best(l.records, 3);           // per workload, least cycles first
//
// A record whose candidate failed has no cycles and says why in `error`; best() never picks it.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/strategy/workload.hpp>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::tune {

struct Record {
  std::string workload{};                // graph::to_string(Workload): the key
  graph::Knobs knobs{};                  // the candidate
  std::optional<std::int64_t> cycles{};  // on the cycle model; nullopt when it failed
  // The cycle model's roofline bound of the candidate's stream (no schedule of it runs in
  // fewer cycles): what the search could still gain. 0 in logs written before it was recorded.
  std::int64_t bound_cycles = 0;
  std::int64_t dram_bytes = 0;
  double build_seconds = 0;
  std::string error{};  // why the candidate failed (empty when it ran)
  friend bool operator==(const Record&, const Record&) = default;
};

// One JSON object on one line, without the newline.
std::string to_json_line(const Record& r);
// A line back as a record; ParseError saying what is wrong (not JSON, a missing or mistyped
// field, knob values that are not integers).
Record parse_record(std::string_view line);

// Appends the record as a line and flushes it: what was appended survives the process.
void append(std::ostream& out, const Record& r);

struct Log {
  std::vector<Record> records;
  std::vector<std::string> warnings;  // "<source>:<line>: <what is wrong>", one per skipped line
};
// Every readable line of a log (blank lines ignored); ValueError when the file cannot be
// opened.
Log read_log(const std::filesystem::path& path);
Log read_log(std::istream& in, std::string_view source);

// What identifies a candidate across logs and runs: its workload and its knobs, as text.
std::string candidate_key(std::string_view workload, const graph::Knobs& knobs);

// The records of several logs as one run's: a candidate (workload and knobs) evaluated in more
// than one keeps its first record.
std::vector<Record> merge(std::span<const Log> logs);

// Per workload, its `k` best records that ran: least cycles first, ties in log order.
std::map<std::string, std::vector<Record>> best(std::span<const Record> records, std::size_t k);

}  // namespace dlavm::tune

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tune/record-inl.hpp>
#endif
