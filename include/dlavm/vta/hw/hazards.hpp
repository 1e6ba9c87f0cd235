// A race detector for instruction streams: proves that the dependency tokens order every pair
// of conflicting on-chip accesses (one of them a write) made by different modules the way the
// stream's order does. The simulator and the boards run the three modules concurrently, so a
// missing token is a race that may or may not show in one run's results; this check does not
// depend on timing.
//
// Happens-before comes from the modules' program order and the token queues (the k-th pop of
// a queue takes the k-th push), computed as vector clocks. Accesses are the entries each
// instruction touches: LOAD the padded box it writes, STORE the accumulator rows it reads,
// GEMM and ALU the range spanned by their micro-ops and loop factors (an over-approximation
// for kernels with gaps, which only makes the check stricter).
//
//   vta::check_hazards(config, stream);   // raises DeviceError naming both instructions
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace dlavm::vta {

namespace detail {

struct Access {
  int memory;  // 0 inp, 1 wgt, 2 acc, 3 uop
  std::int64_t begin, end;
  bool write;
};

inline const char* hazard_mem_name(int m) {
  constexpr const char* names[] = {"input", "weight", "accumulator", "micro-op"};
  return names[m];
}

// The last writer and the last reader per module of every entry of one memory, as runs of
// consecutive entries in the same state: the first entry of each run -> its state, the runs
// covering [0, depth). Accesses are ranges, so a stream keeps few runs, and an access costs
// the runs it overlaps rather than its entries.
class EntryRuns {
 public:
  struct State {
    std::int64_t writer = -1;  // instruction index
    std::array<std::int64_t, 3> reader{-1, -1, -1};
    friend bool operator==(const State&, const State&) = default;
  };

  explicit EntryRuns(std::int64_t depth) : depth_(depth) { runs_.emplace(0, State{}); }

  // fn(first entry, state) for the runs of [begin, end) inside the memory, in order.
  template <class Fn>
  void each(std::int64_t begin, std::int64_t end, Fn&& fn) const {
    const auto lo = std::max<std::int64_t>(begin, 0), hi = std::min(end, depth_);
    if (lo >= hi) return;
    for (auto it = std::prev(runs_.upper_bound(lo)); it != runs_.end() && it->first < hi; ++it)
      fn(std::max(it->first, lo), it->second);
  }

  std::size_t run_count() const { return runs_.size(); }

  // Instruction i writes [begin, end), or module m's instruction i reads it.
  void write(std::int64_t begin, std::int64_t end, std::int64_t i) {
    update(begin, end, [&](Map::iterator first, Map::iterator last) {
      first->second = State{};
      first->second.writer = i;
      runs_.erase(std::next(first), last);
    });
  }
  void read(std::int64_t begin, std::int64_t end, std::size_t m, std::int64_t i) {
    update(begin, end, [&](Map::iterator first, Map::iterator last) {
      for (auto it = first; it != last; ++it) it->second.reader[m] = i;
    });
  }

 private:
  using Map = std::map<std::int64_t, State>;

  // The run starting at entry e, split off the run holding it.
  Map::iterator split(std::int64_t e) {
    const auto it = std::prev(runs_.upper_bound(e));
    return it->first == e ? it : runs_.emplace_hint(std::next(it), e, it->second);
  }

  // change(first, last) on the whole runs of [begin, end), then merges equal neighbours.
  template <class Change>
  void update(std::int64_t begin, std::int64_t end, Change&& change) {
    const auto lo = std::max<std::int64_t>(begin, 0), hi = std::min(end, depth_);
    if (lo >= hi) return;
    const auto first = split(lo);
    const auto last = hi < depth_ ? split(hi) : runs_.end();
    const auto before = first == runs_.begin() ? first : std::prev(first);
    change(first, last);
    for (auto it = before;;) {
      const auto next = std::next(it);
      if (next == runs_.end()) break;
      const bool stop = next == last;
      if (next->second == it->second) {
        runs_.erase(next);
      } else {
        it = next;
      }
      if (stop) break;
    }
  }

  std::int64_t depth_;
  Map runs_;
};

}  // namespace detail

void check_hazards(const Config& config, const Stream& stream);
// The same for a stream already decoded (as placed: its LOAD UOPs read `uops` from micro-op
// `uop_base` of DRAM on), so that a device decodes once for the check, the run and the model.
void check_hazards(const Config& config, std::span<const InsnFields> prog,
                   std::span<const std::uint32_t> uops, std::uint64_t uop_base);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/hazards-inl.hpp>
#endif
