// The search: every candidate of a model's tasks (each task's points that pass the check,
// ranked by the analytic estimate: tune/task.hpp) evaluated on a pool of threads, each record
// appended to a log as one JSON line. Records are written in candidate order whatever the
// number of threads, so a run's log, and the best schedules read from it, do not depend on it.
// A resumed run skips the candidates its log already holds for this target (none evaluated
// twice; a killed run loses at most the candidates in flight, which the resumed run evaluates;
// a record of another VTA configuration or strategy revision is not one of this run's, and its
// candidate is evaluated again); a shard evaluates its round-robin slice of the candidates
// (tune/shard.hpp). A sample of the candidates can be checked on a device as well as timed.
//
//   auto tasks = tune::tasks(fn, target);
//   std::ofstream log("model.log", std::ios::app);
//   auto done = tune::read_log("model.log").records;          // resume
//   tune::tune(tasks, target.env, log, done, {.top = 64, .shard = tune::parse_shard("0/4")});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/tune/record.hpp>
#include <dlavm/tune/shard.hpp>
#include <dlavm/tune/task.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <vector>

namespace dlavm::tune {

struct Progress {
  std::size_t done = 0;                     // candidates evaluated by this run
  std::size_t total = 0;                    // candidates this run has to evaluate
  double seconds = 0;                       // since the run started
  std::optional<std::int64_t> best_cycles;  // of the task of the last record, so far
};

struct TuneOptions {
  std::size_t top = 0;        // per task, the candidates of least estimate (0: every one)
  unsigned threads = 0;       // 0: every core (std::thread::hardware_concurrency)
  Shard shard{};              // the slice of the candidates this process evaluates
  double budget_seconds = 0;  // > 0: no candidate is started after this many seconds
  std::function<void(const Progress&)> progress{};  // after each record written
  // > 0 with a device: every verify_every-th candidate of the enumeration (the same in every
  // shard) that ran is also run on `device` and compared with te::evaluate (tune::verify); one
  // that differs is a record with no cycles and the difference as its error. The device runs
  // one candidate at a time.
  std::size_t verify_every = 0;
  vta::Device* device = nullptr;
};

// Evaluates the candidates (see above) and returns the records it appended to `log`.
// `done`: records of earlier runs whose candidates are skipped (those made for env's
// configuration and the tasks' strategy revisions).
std::vector<Record> tune(std::span<const Task> tasks, const vta::Env& env, std::ostream& log,
                         std::span<const Record> done, const TuneOptions& options = {});

}  // namespace dlavm::tune

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tune/tuner-inl.hpp>
#endif
