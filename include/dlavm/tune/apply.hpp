// Applying a tuning log: a graph::Chooser that takes each workload's best record (AutoTVM's
// apply_history_best) and falls back to the default choice for workloads the log lacks.
//
//   auto log = tune::read_log("resnet18.log");
//   auto mod = graph::build(fn, target,
//                           {.chooser = std::make_shared<tune::LogChooser>(log.records)});
//
// A best record that does not fit the workload's space now (other knob names, a value outside
// its knob's domain, a point the space's check refuses) is a ValueError naming the workload,
// the knob and the value: the log was made for another version of the strategy.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/tune/record.hpp>

#include <map>
#include <span>
#include <string>

namespace dlavm::tune {

class LogChooser : public graph::Chooser {
 public:
  explicit LogChooser(std::span<const Record> records);
  DLAVM_INLINE graph::Knobs choose(const graph::Workload& w,
                                   const graph::KnobSpace& space) const override;
  // Whether the log has a record that ran for the workload.
  bool has(const graph::Workload& w) const { return best_.count(graph::to_string(w)) > 0; }

 private:
  std::map<std::string, Record, std::less<>> best_;
};

}  // namespace dlavm::tune

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tune/apply-inl.hpp>
#endif
