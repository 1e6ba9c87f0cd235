// The tuning run of `dlavm tune`: a model's VTA kernels searched on the cycle model, one JSON
// line per candidate appended to a log that a killed run's --resume continues (tune/tuner.hpp,
// tune/record.hpp).
#pragma once

#include <dlavm/core/file.hpp>
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <unistd.h>
#include <vector>

namespace dlavm_tools {

struct TuneCommand {
  std::string log;      // the log appended to (required)
  bool resume = false;  // continue a log that holds records
  std::string config;   // a knob-space file (tune::read_config) narrowing the search
  dlavm::tune::TuneOptions options = {};
};

inline void print_warnings(std::span<const std::string> warnings) {
  for (const auto& w : warnings) fmt::print(stderr, "warning: {}\n", w);
}

// "  120/5000 candidates  340/s  best 1234567 cycles  00:14 left", rewritten in place.
inline void progress_line(const dlavm::tune::Progress& p) {
  const double rate = p.seconds > 0 ? static_cast<double>(p.done) / p.seconds : 0;
  const auto left = rate > 0 && p.total >= p.done
                        ? static_cast<long>(static_cast<double>(p.total - p.done) / rate)
                        : 0;
  fmt::print(stderr, "\r{:>7}/{} candidates  {:.0f}/s  best {} cycles  {:02}:{:02} left   ", p.done,
             p.total, rate, p.best_cycles ? fmt::format("{}", *p.best_cycles) : "-", left / 60,
             left % 60);
  if (p.done == p.total) fmt::print(stderr, "\n");
}

// Tunes fn's VTA kernels into c.log; `label` names the model in the summary line.
inline int tune_command(const dlavm::graph::Function& fn, const std::string& label,
                        const dlavm::graph::Target& target, TuneCommand c) {
  namespace tune = dlavm::tune;
  if (c.log.empty()) throw dlavm::ValueError("tune: --log FILE is required");
  std::vector<tune::Record> done;
  if (dlavm::not_a_file(c.log))
    throw dlavm::ValueError(fmt::format("tune: --log '{}' is not a regular file", c.log));
  std::error_code ec;
  const bool exists =
      std::filesystem::exists(c.log, ec) && std::filesystem::file_size(c.log, ec) > 0;
  if (exists && !c.resume)
    throw dlavm::ValueError(fmt::format(
        "tune: '{}' holds records already: --resume continues it, or remove it", c.log));
  // what --resume would continue must be a tuning log: a file of something else is left as it is
  std::optional<tune::Log> log;
  if (exists) {
    log = tune::read_log(c.log);
    if (log->records.empty())
      throw dlavm::ValueError(fmt::format(
          "tune: '{}' is not a tuning log (no line of it is a record); it is left as it is",
          c.log));
  }
  // a record a killed run left half written is cut before anything is appended (and the log
  // read again only then: the cut line may have parsed as a record)
  auto appended = tune::open_for_append(c.log);
  if (!appended.repair.empty()) {
    fmt::print(stderr, "warning: {}\n", appended.repair);
    if (exists) log = tune::read_log(c.log);
  }
  if (exists) {
    print_warnings(log->warnings);
    // the records of another configuration or strategy revision: their candidates run again
    auto mine = tune::for_target(log->records, target);
    print_warnings(mine.warnings);
    done = std::move(mine.records);
  }
  auto tasks = tune::tasks(fn, target);
  if (!c.config.empty())
    for (const auto& w : tune::restrict(tasks, tune::read_config(c.config)))
      fmt::print(stderr, "warning: {}\n", w);
  if (isatty(STDERR_FILENO)) c.options.progress = progress_line;
  dlavm::vta::SimDevice simulator(target.env.config);
  c.options.device = &simulator;
  const auto written = tune::tune(tasks, target.env, appended.out, done, c.options);
  const auto failed = std::count_if(written.begin(), written.end(),
                                    [](const tune::Record& r) { return !r.cycles; });
  fmt::print("{}: {} workloads, {} candidates evaluated, {} failed ({} in the log before)\n", label,
             tasks.size(), written.size(), failed, done.size());
  return 0;
}

}  // namespace dlavm_tools
