// Definitions for dlavm/vta/hw/dep_tracker.hpp (see core/api.hpp).
#pragma once

#include <dlavm/vta/hw/dep_tracker.hpp>

namespace dlavm::vta {

DLAVM_INLINE void DepTracker::reset() {
  state_.assign(regions_.size(), State{});
  covered_.fill(-1);
}

DLAVM_INLINE void DepTracker::before(Builder& b, Queue q, std::span<const RegionAccess> accesses) {
  std::array<std::int64_t, 3> need{-1, -1, -1};
  for (const auto& acc : accesses) {
    for (const auto r : overlaps_[acc.region]) {
      const auto& s = state_[r];
      if (s.writer >= 0 && s.writer_queue != q) raise_need(need, s.writer_queue, s.writer);
      if (acc.write)
        for (int m = 0; m < 3; ++m)
          if (s.reader[m] >= 0 && m != index(q))
            raise_need(need, static_cast<Queue>(m + 1), s.reader[m]);
    }
  }
  for (int m = 0; m < 3; ++m) {
    if (need[m] < 0) continue;
    const auto from = static_cast<Queue>(m + 1);
    if ((from == Queue::Load && q == Queue::Store) || (from == Queue::Store && q == Queue::Load))
      raise<ScheduleError>(
          "dependency tokens: instruction #{} of the {} module conflicts with #{} of the {} "
          "module, which share no token queue",
          b.size(), runtime::queue_name(q), need[m], runtime::queue_name(from));
    auto& covered = covered_[pair(from, q)];
    if (need[m] <= covered) continue;
    b.set_push(static_cast<std::size_t>(need[m]), q);
    b.dep_pop(from, q);
    covered = need[m];
  }
}

DLAVM_INLINE void DepTracker::after(Queue q, std::int64_t index,
                                    std::span<const RegionAccess> accesses) {
  for (const auto& acc : accesses) {
    auto& s = state_[acc.region];
    if (acc.write) {
      // Later accesses wait for this write, which itself waited for the earlier readers.
      s = State{};
      s.writer = index;
      s.writer_queue = q;
    } else {
      s.reader[index_of(q)] = index;
    }
  }
}

DLAVM_INLINE std::size_t DepTracker::pair(Queue from, Queue to) {
  return static_cast<std::size_t>(index(from) * 3 + index(to));
}

DLAVM_INLINE void DepTracker::raise_need(std::array<std::int64_t, 3>& need, Queue from,
                                         std::int64_t at) {
  need[index_of(from)] = std::max(need[index_of(from)], at);
}

}  // namespace dlavm::vta
