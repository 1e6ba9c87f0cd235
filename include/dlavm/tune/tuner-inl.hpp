// Definitions for tune/tuner.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/tune/tuner.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace dlavm::tune {

namespace detail {

// A candidate of the run: task and point.
struct Candidate {
  std::size_t task;
  graph::Knobs knobs;
  std::size_t index;  // in the enumeration every shard sees alike
};

}  // namespace detail

DLAVM_INLINE std::vector<Record> tune(std::span<const Task> tasks, const vta::Env& env,
                                      std::ostream& log, std::span<const Record> done,
                                      const TuneOptions& options) {
  using clock = std::chrono::steady_clock;
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
  std::vector<detail::Candidate> todo;
  std::size_t index = 0;
  for (std::size_t t = 0; t < tasks.size(); ++t)
    for (const auto& p : candidates(tasks[t].space, options.top)) {
      auto knobs = tasks[t].space.knobs_of(p);
      if (options.shard.contains(index) && !seen.contains(candidate_key(tasks[t].key, knobs)))
        todo.push_back({t, std::move(knobs), index});
      ++index;
    }
  std::vector<std::optional<Record>> results(todo.size());
  std::mutex mutex, device_mutex;
  std::condition_variable ready;
  const auto verified = [&](const detail::Candidate& c) {
    return options.device != nullptr && options.verify_every > 0 &&
           c.index % options.verify_every == 0;
  };
  std::atomic<std::size_t> next{0};
  std::size_t finished_workers = 0;
  const auto start = clock::now();
  const auto over_budget = [&] {
    return options.budget_seconds > 0 &&
           std::chrono::duration<double>(clock::now() - start).count() > options.budget_seconds;
  };
  const unsigned threads =
      std::max(1u, options.threads != 0 ? options.threads : std::thread::hardware_concurrency());
  std::vector<Record> written;
  {
    std::vector<std::jthread> workers;
    for (unsigned w = 0; w < std::min<std::size_t>(threads, std::max<std::size_t>(todo.size(), 1));
         ++w)
      workers.emplace_back([&] {
        for (;;) {
          const std::size_t i = next.fetch_add(1);
          if (i >= todo.size() || over_budget()) break;
          Record r = evaluate(tasks[todo[i].task], todo[i].knobs, env);
          if (r.cycles && verified(todo[i])) {
            std::lock_guard device_lock(device_mutex);
            std::optional<std::string> why;
            try {
              why = verify(tasks[todo[i].task], todo[i].knobs, env, *options.device, todo[i].index);
            } catch (const Error& e) {
              why = e.what();
            }
            if (why) {  // a schedule that computes something else is no candidate
              r.cycles.reset();
              r.bound_cycles = 0;
              r.error = std::move(*why);
            }
          }
          std::lock_guard lock(mutex);
          results[i] = std::move(r);
          ready.notify_one();
        }
        std::lock_guard lock(mutex);
        ++finished_workers;
        ready.notify_one();
      });
    // this thread writes the records in candidate order as they complete
    std::map<std::string, std::int64_t> best;
    for (std::size_t i = 0; i < todo.size(); ++i) {
      std::unique_lock lock(mutex);
      ready.wait(lock,
                 [&] { return results[i].has_value() || finished_workers == workers.size(); });
      if (!results[i]) break;  // the budget stopped the workers before this candidate
      Record r = std::move(*results[i]);
      results[i].reset();
      lock.unlock();
      append(log, r);
      if (r.cycles) {
        auto [it, inserted] = best.emplace(r.workload, *r.cycles);
        if (!inserted) it->second = std::min(it->second, *r.cycles);
      }
      if (options.progress) {
        const auto b = best.find(r.workload);
        options.progress({i + 1, todo.size(),
                          std::chrono::duration<double>(clock::now() - start).count(),
                          b == best.end() ? std::nullopt : std::optional(b->second)});
      }
      written.push_back(std::move(r));
    }
  }
  return written;
}

}  // namespace dlavm::tune
