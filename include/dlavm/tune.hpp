// tune layer: schedule search on top of the graph layer's workloads and knob spaces: tasks
// and their candidates (pruned by the space's check, ranked by its estimate), proposed in
// batches by a search (the default, or one's own through tune::Search) and evaluated on the
// cycle model by a pool of threads; tuning records as versioned JSON lines stamped with their
// VTA configuration and strategy revision (logs that survive a killed run, read back with bad
// lines reported, resumed), shards of a run for a cluster's job array and their merge, tuning
// configs (knob spaces as JSON, to narrow a search), and applying a log to graph::build
// through a Chooser that skips the records of another target.
//
//   auto log = dlavm::tune::read_log("model.log");
//   auto chooser = std::make_shared<dlavm::tune::LogChooser>(log.records, target);
//   auto mod = graph::build(fn, target, {.chooser = chooser});
#pragma once

#include <dlavm/tune/apply.hpp>
#include <dlavm/tune/config.hpp>
#include <dlavm/tune/record.hpp>
#include <dlavm/tune/shard.hpp>
#include <dlavm/tune/task.hpp>
#include <dlavm/tune/tuner.hpp>
