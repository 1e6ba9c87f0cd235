// Records for another target: a log tuned for another VTA configuration (another block, another
// SRAM size) or for another revision of a strategy is skipped by LogChooser, with one warning
// per group naming what differs, and the default schedules are built; a resumed search does not
// count the candidates of such records as done.
#include <dlavm/graph.hpp>
#include <dlavm/tune.hpp>

#include <doctest/doctest.h>

#include "small_model.hpp"
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace tune_targets {

using namespace dlavm;

// Per task of the small model, a point that passes the check and is not the default choice,
// as a record of `target` that ran in 1 cycle: a log that, applied, changes every schedule.
std::vector<tune::Record> other_choices(std::span<const tune::Task> tasks,
                                        const graph::Target& target) {
  std::vector<tune::Record> out;
  for (const auto& t : tasks) {
    const auto all = tune::candidates(t.space);
    REQUIRE(all.size() >= 2);
    tune::Record r{.workload = t.key,
                   .knobs = t.space.knobs_of(all[1]),
                   .target = target.env.config,
                   .strategy = {t.strategy->op, t.strategy->revision},
                   .cycles = 1};
    out.push_back(std::move(r));
  }
  return out;
}

// The knobs each VTA step of the module was built with.
std::vector<graph::Knobs> step_knobs(const graph::Module& m) {
  std::vector<graph::Knobs> out;
  for (const auto& s : m.steps())
    if (s.kind == graph::ModuleStep::Kind::Vta) out.push_back(s.knobs);
  return out;
}

TEST_CASE("LogChooser skips a log of another VTA configuration, naming the field that differs") {
  const graph::Target target;
  const auto fn = tune_test::small_model();
  const auto tasks = tune::tasks(fn, target);
  REQUIRE(tasks.size() == 3);
  const auto mine = other_choices(tasks, target);
  const auto defaults = step_knobs(graph::build(fn, target));
  // this target's log: every schedule is the log's
  const auto own = std::make_shared<tune::LogChooser>(mine, target);
  CHECK(own->warnings().empty());
  const auto tuned = step_knobs(graph::build(fn, target, {.chooser = own}));
  REQUIRE(tuned.size() == tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    CHECK(tuned[i] == mine[i].knobs);
    CHECK(tuned[i] != defaults[i]);
  }
  // the same knobs measured with BLOCK_OUT 32, or with a larger input SRAM
  auto block = mine, sram = mine;
  for (auto& r : block) r.target.log_block_out = 5;
  for (auto& r : sram) r.target.log_inp_buff_size = 16;
  const auto skipped = std::make_shared<tune::LogChooser>(block, target);
  CHECK(skipped->warnings() ==
        std::vector<std::string>{"tuning log: 3 records for another VTA configuration "
                                 "(LOG_BLOCK_OUT 5 in the log, 4 here) skipped"});
  for (const auto& t : tasks) CHECK_FALSE(skipped->has(t.workload));
  CHECK(step_knobs(graph::build(fn, target, {.chooser = skipped})) == defaults);
  // mixed: the records of this target apply, the others are counted per configuration
  std::vector<tune::Record> mixed = {block[0], sram[0], sram[1], mine[2]};
  const auto partly = std::make_shared<tune::LogChooser>(mixed, target);
  CHECK(partly->warnings() ==
        std::vector<std::string>{
            "tuning log: 1 record for another VTA configuration (LOG_BLOCK_OUT 5 in the log, 4 "
            "here) skipped",
            "tuning log: 2 records for another VTA configuration (LOG_INP_BUFF_SIZE 16 in the "
            "log, 15 here) skipped"});
  const auto built = step_knobs(graph::build(fn, target, {.chooser = partly}));
  CHECK(built == std::vector<graph::Knobs>{defaults[0], defaults[1], mine[2].knobs});
  // a record of this target wins over a faster one of another
  block[0].cycles = 0;
  const std::vector<tune::Record> both = {block[0], mine[0]};
  CHECK(tune::LogChooser(both, target).choose(tasks[0].workload, tasks[0].space) == mine[0].knobs);
}

TEST_CASE("LogChooser skips the records of another strategy revision or of an op without one") {
  const graph::Target target;
  const auto tasks = tune::tasks(tune_test::small_model(), target);
  auto log = other_choices(tasks, target);
  for (auto& r : log) r.strategy.revision = 2;  // the log's strategies are newer
  auto unknown = log[0];
  unknown.strategy.op = "conv3d";  // and a record of an op this target has no strategy for
  log.push_back(unknown);
  const tune::LogChooser chooser(log, target);
  CHECK(chooser.warnings() ==
        std::vector<std::string>{
            "tuning log: 2 records of conv2d's strategy revision 2 (revision 1 here: its "
            "schedule changed) skipped",
            "tuning log: 1 record of dense's strategy revision 2 (revision 1 here: its schedule "
            "changed) skipped",
            "tuning log: 1 record of op 'conv3d' (no VTA strategy here) skipped"});
  for (const auto& t : tasks) {
    CHECK_FALSE(chooser.has(t.workload));
    CHECK(chooser.choose(t.workload, t.space) == graph::Chooser().choose(t.workload, t.space));
  }
  // for_target: the records that apply, in log order, and the same warnings
  auto mixed = log;
  mixed.insert(mixed.begin() + 1, other_choices(tasks, target)[1]);
  const auto selected = tune::for_target(mixed, target);
  CHECK(selected.records == std::vector<tune::Record>{other_choices(tasks, target)[1]});
  CHECK(selected.warnings.size() == 3);
}

TEST_CASE("a resumed search counts as done only the records of its own target and revision") {
  const graph::Target target;
  const auto tasks = tune::tasks(tune_test::small_model(), target);
  std::ostringstream first_log;
  const auto first = tune::tune(tasks, target.env, first_log, {}, {.top = 3, .threads = 2});
  REQUIRE(first.size() == 9);
  for (std::size_t i = 0; i < first.size(); ++i) {  // 3 per task, task after task
    CHECK(first[i].target == target.env.config);
    CHECK(first[i].strategy == tune::StrategyRevision{tasks[i / 3].workload.op, 1});
  }
  // the same candidates done on another configuration, or for another revision: not done
  auto elsewhere = first, older = first;
  for (auto& r : elsewhere) r.target.log_acc_buff_size = 16;
  for (auto& r : older) r.strategy.revision = 0;
  for (const auto* done : {&elsewhere, &older}) {
    std::ostringstream log;
    const auto again = tune::tune(tasks, target.env, log, *done, {.top = 3, .threads = 2});
    REQUIRE(again.size() == first.size());
    for (std::size_t i = 0; i < first.size(); ++i) {
      CHECK(again[i].knobs == first[i].knobs);
      CHECK(again[i].cycles == first[i].cycles);
    }
  }
  // half of them done here, the other half elsewhere: the other half runs again
  std::vector<tune::Record> half(first.begin(), first.begin() + 4);
  half.insert(half.end(), elsewhere.begin() + 4, elsewhere.end());
  std::ostringstream log;
  const auto rest = tune::tune(tasks, target.env, log, half, {.top = 3, .threads = 2});
  REQUIRE(rest.size() == 5);
  CHECK(rest.front().knobs == first[4].knobs);
  // all done here: nothing to do
  std::ostringstream none;
  CHECK(tune::tune(tasks, target.env, none, first, {.top = 3, .threads = 2}).empty());
}

}  // namespace tune_targets
