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

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/builder.hpp>
#include <dlavm/vta/hw/isa.hpp>

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

  void reset();

  // Before emitting the instructions of module `q` that perform `accesses`: requests the
  // tokens that order them after their hazards (pushes on the producers, pops pending on the
  // builder for q's next instruction).
  void before(Builder& b, Queue q, std::span<const RegionAccess> accesses);

  // After emitting: instruction `index` (of module q) performed `accesses`.
  void after(Queue q, std::int64_t index, std::span<const RegionAccess> accesses);

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
  static std::size_t pair(Queue from, Queue to);
  static void raise_need(std::array<std::int64_t, 3>& need, Queue from, std::int64_t at);

  std::vector<SramRegion> regions_;
  std::vector<std::vector<std::uint32_t>> overlaps_;
  std::vector<State> state_;
  std::array<std::int64_t, 9> covered_{};
};

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/dep_tracker-inl.hpp>
#endif
