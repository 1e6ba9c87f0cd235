// Applying a tuning log: a graph::Chooser that takes each workload's best record (AutoTVM's
// apply_history_best) among the records made for the target it builds for, and falls back to
// the default choice for workloads the log lacks.
//
//   auto log = tune::read_log("resnet18.log");
//   auto chooser = std::make_shared<tune::LogChooser>(log.records, target);
//   for (const auto& w : chooser->warnings()) fmt::print(stderr, "warning: {}\n", w);
//   auto mod = graph::build(fn, target, {.chooser = chooser});
//
// A record made for another VTA configuration (its "target") or for another revision of its
// op's strategy (graph::AnchorStrategy::revision), or of an op the target has no strategy
// for, is skipped: nothing of it is applied, and one warning per group of such records says
// how many there are and why ("tuning log: 12 records for another VTA configuration
// (LOG_BLOCK_OUT 5 in the log, 4 here) skipped"). A best record of the target's own that
// does not fit the workload's space now (other knob names, a value outside its knob's domain,
// a point the space's check refuses) is a ValueError naming the workload, the knob and the
// value: the strategy changed without a new revision.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/graph/target.hpp>
#include <dlavm/tune/record.hpp>

#include <map>
#include <span>
#include <string>
#include <vector>

namespace dlavm::tune {

// The records made for `target` (its VTA configuration, and the revision of the strategy of
// each record's op), in log order; a warning per group of the others (see above).
Log for_target(std::span<const Record> records, const graph::Target& target);

class LogChooser : public graph::Chooser {
 public:
  // The best record of each workload among those for `target` (for_target).
  LogChooser(std::span<const Record> records, const graph::Target& target);
  DLAVM_INLINE graph::Knobs choose(const graph::Workload& w,
                                   const graph::KnobSpace& space) const override;
  // Whether the log has a record for the target that ran for the workload.
  bool has(const graph::Workload& w) const { return best_.count(workload_key(w)) > 0; }
  // One line per group of records skipped (another configuration, another revision).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::map<std::string, Record, std::less<>> best_;
  std::vector<std::string> warnings_;
};

}  // namespace dlavm::tune

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tune/apply-inl.hpp>
#endif
