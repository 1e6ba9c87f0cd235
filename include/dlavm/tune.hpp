// tune layer: schedule search on top of the graph layer's workloads and knob spaces: tasks
// and their candidates (pruned by the space's check, ranked by its estimate), evaluated on the
// cycle model by a pool of threads; tuning records as JSON lines (logs that survive a killed
// run, read back with bad lines reported, resumed), shards of a run for a cluster's job array
// and their merge, tuning configs (knob spaces as JSON, to narrow a search), and applying a
// log to graph::build through a Chooser.
//
//   auto log = dlavm::tune::read_log("model.log");
//   auto mod = graph::build(fn, target,
//                           {.chooser = std::make_shared<dlavm::tune::LogChooser>(log.records)});
#pragma once

#include <dlavm/tune/apply.hpp>
#include <dlavm/tune/config.hpp>
#include <dlavm/tune/record.hpp>
#include <dlavm/tune/shard.hpp>
#include <dlavm/tune/task.hpp>
#include <dlavm/tune/tuner.hpp>
