// Definitions for tune/tuner.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/tune/tuner.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace dlavm::tune {

DLAVM_INLINE RankedSearch::RankedSearch(std::span<const Task> tasks, const vta::Env& env,
                                        std::span<const Record> done, std::size_t top,
                                        Shard shard) {
  // a record is one of this run's when it was made for env's configuration and the revision
  // of the task's strategy
  std::map<std::string_view, StrategyRevision> revisions;
  for (const auto& t : tasks)
    if (t.strategy != nullptr)
      revisions.emplace(t.key, StrategyRevision{t.strategy->op, t.strategy->revision});
  std::set<std::string> seen;
  for (const auto& r : done) {
    const auto it = revisions.find(r.workload);
    if (it != revisions.end() && r.strategy == it->second && r.target == env.config)
      seen.insert(candidate_key(r.workload, r.knobs));
  }
  // the enumeration every shard sees alike; the shard keeps its slice, resume drops what is done
  std::size_t index = 0;
  for (std::size_t t = 0; t < tasks.size(); ++t)
    for (const auto& p : candidates(tasks[t].space, top)) {
      auto knobs = tasks[t].space.knobs_of(p);
      if (shard.contains(index) && !seen.contains(candidate_key(tasks[t].key, knobs)))
        todo_.push_back({t, std::move(knobs), index});
      ++index;
    }
}

DLAVM_INLINE std::vector<Candidate> RankedSearch::next_batch(std::size_t n) {
  const std::size_t end = next_ + std::min(n, todo_.size() - next_);
  std::vector<Candidate> out(todo_.begin() + static_cast<std::ptrdiff_t>(next_),
                             todo_.begin() + static_cast<std::ptrdiff_t>(end));
  next_ = end;
  return out;
}

// The ranking is fixed before the first measurement: nothing to learn.
DLAVM_INLINE void RankedSearch::update(std::span<const Record>) {}

namespace detail {

// What a run carries from batch to batch.
struct Run {
  using clock = std::chrono::steady_clock;
  clock::time_point start = clock::now();
  std::size_t total = 0;                     // the search's total (0: unknown)
  std::map<std::string, std::int64_t> best;  // per workload, the least cycles so far
  std::vector<Record> written;
  double seconds() const { return std::chrono::duration<double>(clock::now() - start).count(); }
  bool over_budget(const TuneOptions& o) const {
    return o.budget_seconds > 0 && seconds() > o.budget_seconds;
  }
};

// The candidate evaluated, and run on the device too when it is in verification's sample: a
// schedule that computes something else is no candidate.
inline Record evaluate_candidate(const Task& task, const Candidate& c, const vta::Env& env,
                                 const TuneOptions& options, std::mutex& device_mutex) {
  Record r = evaluate(task, c.knobs, env);
  if (!r.cycles || options.device == nullptr || options.verify_every == 0 ||
      c.index % options.verify_every != 0)
    return r;
  std::lock_guard device_lock(device_mutex);
  std::optional<std::string> why;
  try {
    why = verify(task, c.knobs, env, *options.device, c.index);
  } catch (const Error& e) {
    why = e.what();
  }
  if (why) {
    r.cycles.reset();
    r.bound_cycles = 0;
    r.error = std::move(*why);
  }
  return r;
}

// Appends a record to the log, and reports the progress.
inline void write(Record r, std::ostream& log, const TuneOptions& options, Run& run) {
  append(log, r);
  if (r.cycles) {
    auto [it, inserted] = run.best.emplace(r.workload, *r.cycles);
    if (!inserted) it->second = std::min(it->second, *r.cycles);
  }
  if (options.progress) {
    const auto b = run.best.find(r.workload);
    options.progress({run.written.size() + 1, run.total, run.seconds(),
                      b == run.best.end() ? std::nullopt : std::optional(b->second)});
  }
  run.written.push_back(std::move(r));
}

// Evaluates a batch on `threads` workers while this thread writes the records in candidate
// order as they complete. Returns how many it wrote: all, or fewer when the budget stopped
// the workers. What a worker throws (an error of ours that is no failed candidate) stops the
// workers, and this thread rethrows it when it reaches that candidate.
inline std::size_t run_batch(std::span<const Task> tasks, std::span<const Candidate> batch,
                             const vta::Env& env, std::ostream& log, const TuneOptions& options,
                             unsigned threads, Run& run) {
  std::vector<std::optional<Record>> results(batch.size());
  std::vector<std::exception_ptr> thrown(batch.size());
  std::mutex mutex, device_mutex;
  std::condition_variable ready;
  std::atomic<std::size_t> next{0};
  std::size_t finished_workers = 0, written = 0;
  const auto work = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= batch.size() || run.over_budget(options)) break;
      std::optional<Record> r;
      std::exception_ptr e;
      try {
        r = evaluate_candidate(tasks[batch[i].task], batch[i], env, options, device_mutex);
      } catch (...) {
        e = std::current_exception();
        next = batch.size();
      }
      std::lock_guard lock(mutex);
      results[i] = std::move(r);
      thrown[i] = e;
      ready.notify_one();
    }
    std::lock_guard lock(mutex);
    ++finished_workers;
    ready.notify_one();
  };
  std::vector<std::jthread> workers;
  for (unsigned w = 0; w < std::min<std::size_t>(threads, batch.size()); ++w)
    workers.emplace_back(work);
  for (; written < batch.size(); ++written) {
    std::unique_lock lock(mutex);
    ready.wait(lock, [&] {
      return results[written] || thrown[written] || finished_workers == workers.size();
    });
    if (thrown[written]) std::rethrow_exception(thrown[written]);
    if (!results[written]) {  // the budget stopped the workers before this candidate
      // every worker has finished (the wait's condition): a candidate after this one whose
      // evaluation threw is not lost with the records that are
      lock.unlock();
      workers.clear();
      for (const auto& e : thrown)
        if (e) std::rethrow_exception(e);
      break;
    }
    Record r = std::move(*results[written]);
    results[written].reset();
    lock.unlock();
    write(std::move(r), log, options, run);
  }
  return written;
}

// The search a run drives: the options' own, or `fallback` made as the default.
inline Search& search_of(std::span<const Task> tasks, const vta::Env& env,
                         std::span<const Record> done, const TuneOptions& options,
                         std::optional<RankedSearch>& fallback) {
  if (options.search == nullptr)
    return fallback.emplace(tasks, env, done, options.top, options.shard);
  if (options.top != 0 || options.shard.count != 1 || !done.empty())
    raise<ValueError>(
        "tune: TuneOptions::search is given, so top ({}), shard ({}/{}) and the {} done records, "
        "which make the default search, would be ignored; give them to the search instead",
        options.top, options.shard.index, options.shard.count, done.size());
  return *options.search;
}

// A batch the search proposed, checked against what tune() was asked for.
inline void check_batch(std::span<const Candidate> batch, std::size_t asked, std::size_t tasks) {
  if (batch.size() > asked)
    raise<ValueError>("tune: the search proposed {} candidates, asked for at most {}", batch.size(),
                      asked);
  for (const auto& c : batch)
    if (c.task >= tasks)
      raise<ValueError>("tune: the search proposed a candidate of task {}; there are {} tasks",
                        c.task, tasks);
}

}  // namespace detail

DLAVM_INLINE std::vector<Record> tune(std::span<const Task> tasks, const vta::Env& env,
                                      std::ostream& log, std::span<const Record> done,
                                      const TuneOptions& options) {
  detail::Run run;
  std::optional<RankedSearch> fallback;
  Search& search = detail::search_of(tasks, env, done, options, fallback);
  run.total = search.total();
  const unsigned threads =
      std::max(1u, options.threads != 0 ? options.threads : std::thread::hardware_concurrency());
  const std::size_t asked = options.batch != 0 ? options.batch : std::size_t{64} * threads;
  while (!run.over_budget(options)) {
    const auto batch = search.next_batch(asked);
    if (batch.empty()) break;
    detail::check_batch(batch, asked, tasks.size());
    const std::size_t first = run.written.size();
    const std::size_t n = detail::run_batch(tasks, batch, env, log, options, threads, run);
    search.update(std::span<const Record>(run.written).subspan(first, n));
    if (n < batch.size()) break;  // the budget is spent
  }
  return std::move(run.written);
}

}  // namespace dlavm::tune
