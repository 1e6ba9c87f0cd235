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

using runtime::RegionAccess;
using runtime::SramRegion;

// The host's runtime::DepTracker (runtime/writer.hpp) over a vector of regions; a hazard
// between modules that share no token queue raises ScheduleError.
class DepTracker {
 public:
  DepTracker() : tracker_(nullptr, nullptr, 0) {}
  explicit DepTracker(std::vector<SramRegion> regions)
      : regions_(std::move(regions)),
        states_(regions_.size()),
        tracker_(regions_.data(), states_.data(), regions_.size()) {}
  DepTracker(const DepTracker&) = delete;
  DepTracker& operator=(const DepTracker&) = delete;

  void reset() { tracker_.reset(); }

  // Before emitting the instructions of module `q` that perform `accesses`: requests the
  // tokens that order them after their hazards (pushes on the producers, pops pending on the
  // builder for q's next instruction).
  void before(Builder& b, Queue q, std::span<const RegionAccess> accesses);

  // After emitting: instruction `index` (of module q) performed `accesses`.
  void after(Queue q, std::int64_t index, std::span<const RegionAccess> accesses) {
    tracker_.after(q, index, accesses.data(), accesses.size());
  }

  const std::vector<SramRegion>& regions() const { return regions_; }
  runtime::DepTracker& tracker() { return tracker_; }

 private:
  std::vector<SramRegion> regions_;
  std::vector<runtime::RegionState> states_;
  runtime::DepTracker tracker_;
};

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/dep_tracker-inl.hpp>
#endif
