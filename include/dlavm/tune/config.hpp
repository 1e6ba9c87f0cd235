// Tuning configs: a search's knob spaces as JSON, written out to be edited and read back (the
// configuration files of seed 003's kernel tuner, AutoTVM's config spaces as data). A config
// narrows the spaces the strategies give: for every workload of an op, or for one workload
// (its printed form, graph::to_string: Task::name), each listed knob keeps only the listed values
// of its domain; knobs not listed keep all of theirs.
//
//   {
//     "ops": {"conv2d": {"threads": [2]}},
//     "workloads": {"conv2d((1, 64, 56, 56) int8, ...)": {"h": [7, 14, 28, 56]}}
//   }
//
//   auto tasks = tune::tasks(fn, target);
//   std::ofstream("spaces.json") << tune::to_json(tune::config_of(tasks));   // every space
//   ... edit ...
//   auto unused = tune::restrict(tasks, tune::read_config("spaces.json"));
//
// An op's entry applies to workloads whose domains differ (a 7-row layer has no 14-row
// block) and whose knobs may too (conv2d's `strided`): its values are intersected with each
// domain of the workloads that have the knob, and only a knob none has, a value no workload of
// the op has, or a knob left with no value, is an error. A workload's entry must name values of
// that workload's domain. Every error names the file, the line and the knob.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/tune/task.hpp>

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::tune {

struct ConfigEntry {
  std::string key{};                 // an op ("conv2d") or a workload's key
  std::vector<graph::Knob> knobs{};  // the values each listed knob keeps, in the config's order
  std::size_t line = 0;              // where the entry's key is in its file (0: not read)
  std::vector<std::size_t> knob_lines{};  // where each knob's key is (empty: not read)
};

struct TuningConfig {
  std::string source = "<config>";  // the file it was read from, for messages
  std::vector<ConfigEntry> ops{};
  std::vector<ConfigEntry> workloads{};
};

// A config from JSON text; ParseError "<source>:<line>: <what is wrong>" for text that is not
// JSON, an unknown field, a knob whose values are not a non-empty array of integers.
TuningConfig parse_config(std::string_view text, std::string_view source = "<config>");
// The same from a file; ValueError when it cannot be opened.
TuningConfig read_config(const std::filesystem::path& path);

// Pretty JSON, one knob per line: what parse_config reads back equal (lines aside).
std::string to_json(const TuningConfig& config);

// The whole space of every task, by workload: a starting point to edit.
TuningConfig config_of(std::span<const Task> tasks);

// Narrows each task's space by the config (see above). Returns "<source>:<line>: ..." for
// each entry that matched no task (a config written for another model); ValueError naming
// the file, line, workload and knob for a knob the space does not have or a value outside
// its domain.
std::vector<std::string> restrict(std::span<Task> tasks, const TuningConfig& config);

}  // namespace dlavm::tune

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tune/config-inl.hpp>
#endif
