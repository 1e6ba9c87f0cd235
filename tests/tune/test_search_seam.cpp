// The search seam: tune() asks a Search for batches (next_batch), evaluates them, writes their
// records in candidate order and hands them back (update), as documented; a search of one's
// own writes exactly the records of what it proposes; the default search proposes what tune()
// evaluated before the seam, in the same order, for any batch size; a search that proposes
// what it should not is an error.
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "small_model.hpp"
#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tune_seam {

using namespace dlavm;

// A search that records the calls tune() makes of it.
class Recording : public tune::Search {
 public:
  std::vector<std::string> calls;
  std::vector<tune::Record> updated;
  void update(std::span<const tune::Record> records) override {
    calls.push_back(fmt::format("update({})", records.size()));
    updated.insert(updated.end(), records.begin(), records.end());
  }
};

// The best estimate of each task, one task per batch however many tune() asks for.
class FirstOfEachTask : public Recording {
 public:
  explicit FirstOfEachTask(std::span<const tune::Task> tasks) {
    for (std::size_t t = 0; t < tasks.size(); ++t)
      proposals.push_back(
          {t, tasks[t].space.knobs_of(tune::candidates(tasks[t].space, 1).front()), t});
  }
  std::vector<tune::Candidate> next_batch(std::size_t n) override {
    calls.push_back(fmt::format("next_batch({})", n));
    if (next == proposals.size()) return {};
    return {proposals[next++]};
  }
  std::vector<tune::Candidate> proposals;
  std::size_t next = 0;
};

// Another search's first `left` candidates.
class StopAfter : public Recording {
 public:
  StopAfter(tune::Search& inner, std::size_t left) : inner_(inner), left_(left) {}
  std::vector<tune::Candidate> next_batch(std::size_t n) override {
    calls.push_back(fmt::format("next_batch({})", n));
    auto batch = inner_.next_batch(std::min(n, left_));
    left_ -= batch.size();
    return batch;
  }
  void update(std::span<const tune::Record> records) override {
    Recording::update(records);
    inner_.update(records);
  }

 private:
  tune::Search& inner_;
  std::size_t left_;
};

// Proposes `batch` once, whatever it is asked.
class Fixed : public tune::Search {
 public:
  explicit Fixed(std::vector<tune::Candidate> batch) : batch_(std::move(batch)) {}
  std::vector<tune::Candidate> next_batch(std::size_t) override {
    return std::exchange(batch_, {});
  }
  void update(std::span<const tune::Record>) override {}

 private:
  std::vector<tune::Candidate> batch_;
};

// A log's lines without their build times: what a run writes the same every time.
std::string without_times(const std::string& log) {
  return std::regex_replace(log, std::regex(R"("build_seconds":[^,]*,)"), "");
}

// The candidates tune() evaluated before the search seam, in its order: each task's `top`
// best estimates, task after task, numbered across the tasks; those of the shard's slice
// without a record in `done`.
std::vector<std::pair<std::string, graph::Knobs>> enumeration(std::span<const tune::Task> tasks,
                                                              std::size_t top, tune::Shard shard,
                                                              std::span<const tune::Record> done) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& r : done) seen.emplace(r.workload, graph::to_string(r.knobs));
  std::vector<std::pair<std::string, graph::Knobs>> out;
  std::size_t index = 0;
  for (const auto& t : tasks)
    for (const auto& p : tune::candidates(t.space, top)) {
      auto knobs = t.space.knobs_of(p);
      if (index++ % shard.count == shard.index && !seen.contains({t.key, graph::to_string(knobs)}))
        out.emplace_back(t.key, std::move(knobs));
    }
  return out;
}

std::vector<std::pair<std::string, graph::Knobs>> candidates_of(
    std::span<const tune::Record> records) {
  std::vector<std::pair<std::string, graph::Knobs>> out;
  for (const auto& r : records) out.emplace_back(r.workload, r.knobs);
  return out;
}

TEST_CASE("a search of one's own: tune() asks, evaluates, writes and updates as documented") {
  const graph::Target target;
  const auto tasks = tune::tasks(tune_test::small_model(), target);
  REQUIRE(tasks.size() == 3);
  FirstOfEachTask first(tasks);
  std::size_t progress = 0;
  std::ostringstream log;
  const auto records = tune::tune(tasks, target.env, log, {},
                                  {.threads = 2,
                                   .progress =
                                       [&](const tune::Progress& p) {
                                         ++progress;
                                         CHECK(p.total == 0);  // the search does not say
                                       },
                                   .search = &first,
                                   .batch = 4});
  CHECK(first.calls == std::vector<std::string>{"next_batch(4)", "update(1)", "next_batch(4)",
                                                "update(1)", "next_batch(4)", "update(1)",
                                                "next_batch(4)"});
  REQUIRE(records.size() == 3);
  CHECK(progress == 3);
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    CHECK(records[t].workload == tasks[t].key);
    CHECK(records[t].knobs == first.proposals[t].knobs);
    CHECK(records[t].cycles.has_value());
  }
  CHECK(first.updated == records);
  std::istringstream in(log.str());
  CHECK(tune::read_log(in, "first.log").records == records);
}

TEST_CASE("a search that stops after N: exactly its records, batch by batch") {
  const graph::Target target;
  const auto tasks = tune::tasks(tune_test::small_model(), target);
  std::ostringstream all_log;
  const auto all = tune::tune(tasks, target.env, all_log, {}, {.top = 4, .threads = 2});
  REQUIRE(all.size() == 12);
  tune::RankedSearch ranked(tasks, target.env, {}, 4);
  CHECK(ranked.total() == 12);
  StopAfter seven(ranked, 7);
  std::ostringstream log;
  const auto records =
      tune::tune(tasks, target.env, log, {}, {.threads = 2, .search = &seven, .batch = 3});
  CHECK(seven.calls == std::vector<std::string>{"next_batch(3)", "update(3)", "next_batch(3)",
                                                "update(3)", "next_batch(3)", "update(1)",
                                                "next_batch(3)"});
  REQUIRE(records.size() == 7);
  CHECK(seven.updated == records);
  CHECK(candidates_of(records) ==
        candidates_of(std::span<const tune::Record>(all).first(records.size())));
  for (std::size_t i = 0; i < records.size(); ++i) CHECK(records[i].cycles == all[i].cycles);
  // the rest, from where it stopped: the same search goes on
  std::ostringstream rest_log;
  const auto rest =
      tune::tune(tasks, target.env, rest_log, {}, {.threads = 1, .search = &ranked, .batch = 2});
  CHECK(candidates_of(rest) == candidates_of(std::span<const tune::Record>(all).subspan(7)));
}

TEST_CASE("the default search: the candidates of the search before the seam, in its order") {
  const graph::Target target;
  const auto tasks = tune::tasks(tune_test::small_model(), target);
  std::ostringstream whole_log;
  const auto whole = tune::tune(tasks, target.env, whole_log, {}, {.top = 5, .threads = 2});
  CHECK(candidates_of(whole) == enumeration(tasks, 5, {}, {}));
  // a shard resumed from two of its records, in batches of any size: the same log
  const std::span<const tune::Record> done(whole.data(), 2);
  const tune::Shard shard{1, 2};
  const auto expected = enumeration(tasks, 5, shard, done);
  REQUIRE(expected.size() >= 5);
  std::string first_log;
  for (const std::size_t batch : {0, 1, 2, 100}) {
    CAPTURE(batch);
    std::ostringstream log;
    std::size_t total = 0;
    const auto records = tune::tune(tasks, target.env, log, done,
                                    {.top = 5,
                                     .threads = 2,
                                     .shard = shard,
                                     .progress = [&](const tune::Progress& p) { total = p.total; },
                                     .batch = batch});
    CHECK(candidates_of(records) == expected);
    CHECK(total == expected.size());
    if (first_log.empty()) first_log = without_times(log.str());
    CHECK(without_times(log.str()) == first_log);
  }
}

TEST_CASE("a search that proposes what it should not is an error, and so are ignored options") {
  const graph::Target target;
  const auto tasks = tune::tasks(tune_test::small_model(), target);
  const auto knobs = tasks[0].space.knobs_of(tune::candidates(tasks[0].space, 1).front());
  std::ostringstream log;
  Fixed two({{0, knobs, 0}, {0, knobs, 1}});
  CHECK_THROWS_WITH_AS(tune::tune(tasks, target.env, log, {}, {.search = &two, .batch = 1}),
                       "tune: the search proposed 2 candidates, asked for at most 1", ValueError);
  Fixed elsewhere({{7, knobs, 0}});
  CHECK_THROWS_WITH_AS(tune::tune(tasks, target.env, log, {}, {.search = &elsewhere}),
                       "tune: the search proposed a candidate of task 7; there are 3 tasks",
                       ValueError);
  auto wrong = knobs;
  wrong.values[0] = 1000;
  Fixed outside({{0, knobs, 0}, {0, wrong, 1}});
  CHECK_THROWS_WITH_AS(tune::tune(tasks, target.env, log, {}, {.threads = 2, .search = &outside}),
                       doctest::Contains("are not a point of its space"), ValueError);
  Fixed fine({{0, knobs, 0}});
  CHECK_THROWS_WITH_AS(tune::tune(tasks, target.env, log, {}, {.top = 3, .search = &fine}),
                       doctest::Contains("top (3), shard (0/1) and the 0 done records"),
                       ValueError);
  const tune::Record done{.workload = tasks[0].key, .knobs = knobs};
  CHECK_THROWS_AS(tune::tune(tasks, target.env, log, std::span(&done, 1), {.search = &fine}),
                  ValueError);
  CHECK(tune::tune(tasks, target.env, log, {}, {.search = &fine}).size() == 1);
}

}  // namespace tune_seam
