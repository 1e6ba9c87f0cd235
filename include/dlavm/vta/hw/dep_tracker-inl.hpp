// Definitions for dlavm/vta/hw/dep_tracker.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/dep_tracker.hpp>

namespace dlavm::vta {

DLAVM_INLINE void DepTracker::before(Builder& b, Queue q, std::span<const RegionAccess> accesses) {
  if (tracker_.before(b.writer(), q, accesses.data(), accesses.size())) return;
  if (tracker_.unordered() >= 0) {
    const auto& e = b.writer().error();
    raise<ScheduleError>(
        "dependency tokens: instruction #{} of the {} module conflicts with #{} of the {} "
        "module, which share no token queue",
        b.size(), runtime::queue_name(q), tracker_.unordered(), runtime::queue_name(e.from));
  }
  b.check("dep_pop");
}

}  // namespace dlavm::vta
