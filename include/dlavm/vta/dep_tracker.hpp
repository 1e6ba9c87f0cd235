// Dependency tokens from data hazards. VTA's three modules run their queues concurrently; an
// instruction must wait for every earlier instruction of another module that wrote what it
// reads or writes, or read what it writes. The tracker keeps, per on-chip region, the last
// writer and the last reader in each module (stream indices), and before each instruction
// asks for the tokens that cover its hazards:
//   - the producer Y (the latest conflicting instruction of module A) gets push(A -> B),
//   - the instruction X of module B pops it.
// Tokens are counters, so the k-th pop of B from A takes the k-th push of A to B. Every push
// is requested together with its pop, producers are taken in A's program order (a hazard on
// an instruction at or before the last one that already pushed is covered by that push), and
// pops are in B's program order: the k-th pop therefore always matches the k-th push, and
// since every wait points to an earlier instruction of the stream, the program cannot
// deadlock. Regions that never conflict never wait for each other: loads into one buffer of a
// double-buffered pair overlap the GEMMs reading the other.
//
// Load and store never touch the same on-chip memory (loads fill inp/wgt, stores drain acc;
// accumulator loads run on the compute module), so every hazard is between neighbours.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/vta/builder.hpp>
#include <dlavm/vta/isa.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace dlavm::vta {

// An on-chip region: a memory and a range of entries [begin, end).
struct SramRegion {
  MemId memory = MemId::Inp;
  std::int64_t begin = 0, end = 0;
  bool overlaps(const SramRegion& o) const {
    const auto bank = [](MemId m) { return m == MemId::Acc8 ? MemId::Acc : m; };
    return bank(memory) == bank(o.memory) && begin < o.end && o.begin < end;
  }
};

// One access of an instruction: a region (by index in the tracker's table), read or written.
struct RegionAccess {
  std::uint32_t region = 0;
  bool write = false;
};

class DepTracker {
 public:
  DepTracker() = default;
  explicit DepTracker(const std::vector<SramRegion>& regions) : regions_(regions) {
    overlaps_.resize(regions.size());
    for (std::uint32_t a = 0; a < regions.size(); ++a)
      for (std::uint32_t b = 0; b < regions.size(); ++b)
        if (regions[a].overlaps(regions[b])) overlaps_[a].push_back(b);
    reset();
  }

  void reset() {
    state_.assign(regions_.size(), State{});
    covered_.fill(-1);
  }

  // Before emitting the instructions of module `q` that perform `accesses`: requests the
  // tokens that order them after their hazards (pushes on the producers, pops pending on the
  // builder for q's next instruction).
  void before(Builder& b, Queue q, std::span<const RegionAccess> accesses) {
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

  // After emitting: instruction `index` (of module q) performed `accesses`.
  void after(Queue q, std::int64_t index, std::span<const RegionAccess> accesses) {
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

  const std::vector<SramRegion>& regions() const { return regions_; }

 private:
  struct State {
    std::int64_t writer = -1;
    Queue writer_queue = Queue::Compute;
    std::array<std::int64_t, 3> reader{-1, -1, -1};
  };

  static int index(Queue q) { return static_cast<int>(q) - 1; }
  static std::size_t index_of(Queue q) { return static_cast<std::size_t>(q) - 1; }
  // Slot of the directed neighbour pair (from -> to) in covered_.
  static std::size_t pair(Queue from, Queue to) {
    return static_cast<std::size_t>(index(from) * 3 + index(to));
  }
  static void raise_need(std::array<std::int64_t, 3>& need, Queue from, std::int64_t at) {
    need[index_of(from)] = std::max(need[index_of(from)], at);
  }

  std::vector<SramRegion> regions_;
  std::vector<std::vector<std::uint32_t>> overlaps_;
  std::vector<State> state_;
  std::array<std::int64_t, 9> covered_{};
};

}  // namespace dlavm::vta
