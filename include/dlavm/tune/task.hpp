// Tuning tasks: a workload of a model with its strategy's knob space, the candidates worth
// evaluating (the points that pass the space's check, ranked by its analytic estimate), and
// the evaluation of one candidate: declare the kernel, build it, instantiate it at the
// workload's maximal dims and time the stream on the cycle model.
//
//   for (const auto& task : tune::tasks(fn, target)) {
//     for (const auto& point : tune::candidates(task.space, 16))     // the 16 best estimates
//       tune::Record r = tune::evaluate(task, task.space.knobs_of(point), target.env);
//   }
//
// A candidate that fails to build (a strategy or lowering error the check did not foresee) is
// a record with its error, not an exception: the search goes on.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/strategy.hpp>
#include <dlavm/graph/target.hpp>
#include <dlavm/tune/record.hpp>
#include <dlavm/vta/hw/device.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlavm::tune {

struct Task {
  graph::Workload workload;
  std::string key;   // workload_key(workload): the log's key (tune/record.hpp)
  std::string name;  // graph::to_string(workload): its key in tuning configs, and in messages
  graph::KnobSpace space;
  const graph::AnchorStrategy* strategy = nullptr;  // in the Target the task was made from
};

// One task per distinct VTA workload of fn placed for target, in the order they first run.
// The tasks point into target.strategies: the target must outlive them.
std::vector<Task> tasks(const graph::Function& fn, const graph::Target& target);

// The points of `space` that pass its check, the `top` of least estimate (all when top is 0),
// in order of estimate (ties in enumeration order). CapacityError when no point passes, naming
// the constraints that removed them (most points first, each with one point's reason).
std::vector<std::vector<std::int64_t>> candidates(const graph::KnobSpace& space,
                                                  std::size_t top = 0);

// Builds and times one candidate (see above): a record stamped with env's configuration and
// the task's strategy revision. Never raises for a candidate that fails to build; ValueError
// when `knobs` is not a point of the task's space (other names, a value outside its knob's
// domain).
Record evaluate(const Task& task, const graph::Knobs& knobs, const vta::Env& env);

// Runs the candidate on `device` at the workload's maximal dims, its inputs random (from
// `seed`), and compares its result with te::evaluate of the kernel's compute: why they differ
// (the first element that does), or nullopt. Errors of the build raise as they would in
// evaluate's; the search calls it on a sample of the candidates that ran (TuneOptions).
std::optional<std::string> verify(const Task& task, const graph::Knobs& knobs, const vta::Env& env,
                                  vta::Device& device, std::uint64_t seed);

}  // namespace dlavm::tune

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tune/task-inl.hpp>
#endif
