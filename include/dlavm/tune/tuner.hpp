// The search: candidates of a model's tasks proposed in batches by a Search (AutoTVM's Tuner:
// next_batch / update), each batch evaluated on a pool of threads, each record appended to a
// log as one JSON line. Records are written in candidate order whatever the number of threads,
// so a run's log, and the best schedules read from it, do not depend on it. A sample of the
// candidates can be checked on a device as well as timed.
//
// The default search (RankedSearch, when TuneOptions names none) proposes every candidate of
// each task (its points that pass the check, ranked by the analytic estimate: tune/task.hpp),
// the `top` of each, in an order every shard sees alike; a shard keeps its round-robin slice
// (tune/shard.hpp), and a resumed run skips the candidates its log already holds for this
// target (none evaluated twice; a killed run loses at most the candidates in flight, which the
// resumed run evaluates; a record of another VTA configuration or strategy revision is not
// one of this run's, and its candidate is evaluated again).
//
//   auto tasks = tune::tasks(fn, target);
//   std::ofstream log("model.log", std::ios::app);
//   auto done = tune::read_log("model.log").records;          // resume
//   tune::tune(tasks, target.env, log, done, {.top = 64, .shard = tune::parse_shard("0/4")});
//
//   MySearch search(tasks);                                    // a Search of one's own
//   tune::tune(tasks, target.env, log, {}, {.search = &search, .batch = 16});
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

// A candidate of a run: a point of one task's space.
struct Candidate {
  std::size_t task = 0;  // index into the tasks tune() is given
  graph::Knobs knobs{};  // a point of that task's space
  // Its number in the search's enumeration: verification samples every verify_every-th and
  // seeds its inputs with it (the default search numbers all tasks' candidates alike in every
  // shard).
  std::size_t index = 0;
  friend bool operator==(const Candidate&, const Candidate&) = default;
};

// How a run chooses its candidates. tune() asks next_batch(n), evaluates the batch, writes its
// records, passes them to update, and asks again until the batch is empty or the budget is
// spent.
class Search {
 public:
  virtual ~Search() = default;
  // Up to n candidates not yet proposed (empty: the search is over).
  virtual std::vector<Candidate> next_batch(std::size_t n) = 0;
  // The records of the candidates evaluated so far in this batch, in candidate order: all of
  // them, or fewer when the budget stopped the run (there is no next batch then).
  virtual void update(std::span<const Record> records) = 0;
  // How many candidates it proposes in all, for the progress reports; 0 when it cannot tell.
  virtual std::size_t total() const { return 0; }
};

// The default search: every candidate of each task (its points that pass the check) ranked by
// estimate, the `top` of each (0: every one), task after task; of them, those in `shard`
// whose candidate (workload and knobs) has no record in `done` for env's configuration and
// the task's strategy revision. The order does not learn from the measurements: update
// changes nothing. CapacityError (tune::candidates) when a task has no candidate.
class RankedSearch final : public Search {
 public:
  RankedSearch(std::span<const Task> tasks, const vta::Env& env, std::span<const Record> done = {},
               std::size_t top = 0, Shard shard = {});
  DLAVM_INLINE std::vector<Candidate> next_batch(std::size_t n) override;
  DLAVM_INLINE void update(std::span<const Record> records) override;
  std::size_t total() const override { return todo_.size(); }

 private:
  std::vector<Candidate> todo_;
  std::size_t next_ = 0;
};

struct Progress {
  std::size_t done = 0;                     // candidates evaluated by this run
  std::size_t total = 0;                    // candidates this run has to evaluate (0: unknown)
  double seconds = 0;                       // since the run started
  std::optional<std::int64_t> best_cycles;  // of the task of the last record, so far
};

struct TuneOptions {
  std::size_t top = 0;        // per task, the candidates of least estimate (0: every one)
  unsigned threads = 0;       // 0: every core (std::thread::hardware_concurrency)
  Shard shard{};              // the slice of the candidates this process evaluates
  double budget_seconds = 0;  // > 0: no candidate is started after this many seconds
  std::function<void(const Progress&)> progress{};  // after each record written
  // > 0 with a device: every verify_every-th candidate of the enumeration (Candidate::index,
  // the same in every shard) that ran is also run on `device` and compared with te::evaluate
  // (tune::verify); one that differs is a record with no cycles and the difference as its
  // error. The device runs one candidate at a time.
  std::size_t verify_every = 0;
  vta::Device* device = nullptr;
  // The search to run (kept by the caller); none: a RankedSearch of `top`, `shard` and the
  // `done` records, which must be left at their defaults when a search is given.
  Search* search = nullptr;
  std::size_t batch = 0;  // the candidates asked of the search at a time (0: 64 per thread)
};

// Evaluates the candidates the search proposes (see above) and returns the records it
// appended to `log`. `done`: records of earlier runs whose candidates are skipped. ValueError
// when a search proposes more candidates than asked, or a task that is not one of `tasks`.
std::vector<Record> tune(std::span<const Task> tasks, const vta::Env& env, std::ostream& log,
                         std::span<const Record> done, const TuneOptions& options = {});

}  // namespace dlavm::tune

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tune/tuner-inl.hpp>
#endif
