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
//   // a stream like one proven before, at the entries its accesses add (SimDevice does this)
//   vta::check_hazards_like(config, {prog, stream.uops, base}, {proven_prog, proven.uops, base});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/isa.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
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
// consecutive entries in the same state: each run's first entry and its state, in order,
// covering [0, depth). Accesses are ranges, so a stream keeps few runs, and an access costs
// the runs it overlaps rather than its entries. The runs are a sorted vector, not a tree: an
// access splits or merges a few runs near each other, which a vector moves in place where a
// tree allocates and frees nodes (the check of the LLM layer's integer prefill, 0.9 M
// instructions: see docs/performance.md).
class EntryRuns {
 public:
  struct State {
    std::int64_t writer = -1;  // instruction index
    std::array<std::int64_t, 3> reader{-1, -1, -1};
    // (field by field: the defaulted comparison of the array is a call to memcmp)
    friend bool operator==(const State& a, const State& b) {
      return a.writer == b.writer && a.reader[0] == b.reader[0] && a.reader[1] == b.reader[1] &&
             a.reader[2] == b.reader[2];
    }
  };

  explicit EntryRuns(std::int64_t depth) : depth_(depth) { runs_.push_back({0, State{}}); }

  // fn(first entry, state) for the runs of [begin, end) inside the memory, in order.
  template <class Fn>
  void each(std::int64_t begin, std::int64_t end, Fn&& fn) const {
    const auto lo = std::max<std::int64_t>(begin, 0), hi = std::min(end, depth_);
    if (lo >= hi) return;
    for (std::size_t r = holding(lo); r < runs_.size() && runs_[r].first < hi; ++r)
      fn(std::max(runs_[r].first, lo), runs_[r].state);
  }

  std::size_t run_count() const { return runs_.size(); }
  std::int64_t depth() const { return depth_; }

  // Instruction i writes [begin, end), or module m's instruction i reads it.
  void write(std::int64_t begin, std::int64_t end, std::int64_t i) {
    update(begin, end, [&](std::size_t first, std::size_t& last) {
      runs_[first].state = State{};
      runs_[first].state.writer = i;
      runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(first + 1),
                  runs_.begin() + static_cast<std::ptrdiff_t>(last));
      last = first + 1;
    });
  }
  void read(std::int64_t begin, std::int64_t end, std::size_t m, std::int64_t i) {
    update(begin, end, [&](std::size_t first, std::size_t& last) {
      for (std::size_t r = first; r < last; ++r) runs_[r].state.reader[m] = i;
    });
  }

 private:
  struct Run {
    std::int64_t first;
    State state;
  };

  // The run holding entry e, in [0, depth). Most lookups find the run the last one found, or
  // the one after it (an instruction's check and record look up the same entries, and a
  // stream walks its buffers): those two are tried before the binary search.
  std::size_t holding(std::int64_t e) const {
    const std::size_t h = last_;
    if (h < runs_.size() && runs_[h].first <= e) {
      if (h + 1 == runs_.size() || e < runs_[h + 1].first) return h;
      if (h + 2 == runs_.size() || e < runs_[h + 2].first) return last_ = h + 1;
    }
    const auto after = std::upper_bound(runs_.begin(), runs_.end(), e,
                                        [](std::int64_t v, const Run& r) { return v < r.first; });
    return last_ = static_cast<std::size_t>(after - runs_.begin()) - 1;
  }

  // The run starting at entry e, split off the run holding it.
  std::size_t split(std::int64_t e) {
    const std::size_t r = holding(e);
    if (runs_[r].first == e) return r;
    runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(r + 1), Run{e, runs_[r].state});
    return r + 1;
  }

  // change(first, last) on the whole runs [first, last) of [begin, end) (a change that drops
  // runs moves `last`), then merges equal neighbours from the run before to the run after.
  template <class Change>
  void update(std::int64_t begin, std::int64_t end, Change&& change) {
    const auto lo = std::max<std::int64_t>(begin, 0), hi = std::min(end, depth_);
    if (lo >= hi) return;
    const std::size_t first = split(lo);
    std::size_t last = hi < depth_ ? split(hi) : runs_.size();
    change(first, last);
    const std::size_t from = first == 0 ? 0 : first - 1;
    const std::size_t to = std::min(last, runs_.size() - 1);  // the run after, if any
    std::size_t kept = from;
    for (std::size_t r = from + 1; r <= to; ++r)
      if (!(runs_[r].state == runs_[kept].state) && ++kept != r) runs_[kept] = runs_[r];
    runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(kept + 1),
                runs_.begin() + static_cast<std::ptrdiff_t>(to + 1));
  }

  std::int64_t depth_;
  std::vector<Run> runs_;
  mutable std::size_t last_ = 0;  // the run the last lookup found (a hint, checked when read)
};

// An instruction's module and dependency flags, as bits: two streams of as many instructions
// with the same bits instruction by instruction have the same happens-before order
// (check_hazards_like).
inline std::uint32_t token_bits(const InsnFields& f) {
  return static_cast<std::uint32_t>(runtime::queue_of(f)) | std::uint32_t{f.pop_prev_dep} << 2 |
         std::uint32_t{f.pop_next_dep} << 3 | std::uint32_t{f.push_prev_dep} << 4 |
         std::uint32_t{f.push_next_dep} << 5;
}
inline bool same_tokens(const InsnFields& f, const InsnFields& g) {
  return token_bits(f) == token_bits(g);
}

}  // namespace detail

void check_hazards(const Config& config, const Stream& stream);
// The same for a stream already decoded (as placed: its LOAD UOPs read `uops` from micro-op
// `uop_base` of DRAM on), so that a device decodes once for the check, the run and the model.
void check_hazards(const Config& config, std::span<const InsnFields> prog,
                   std::span<const std::uint32_t> uops, std::uint64_t uop_base);

// A stream decoded as placed, as check_hazards takes it.
struct DecodedStream {
  std::span<const InsnFields> prog;
  std::span<const std::uint32_t> uops;
  std::uint64_t uop_base = 0;
};

// check_hazards of `stream` given `proven`, a stream check_hazards passed: where the two have
// as many instructions, each of the same module and dependency flags (detail::same_tokens: the
// same happens-before order), an access of `stream` that `proven` made too (the same entry, by
// the same instruction, reading or writing) races with nothing, and only the entries that
// `stream`'s accesses add are checked (a decode step's stream after the one before: the keys of
// its last chunk); the result, and the message of a race, are those of check_hazards. Where the
// tokens differ, or the added entries are more than 4,096 or in more than 64 ranges, the whole
// stream is checked. Returns whether it checked the added entries alone.
bool check_hazards_like(const Config& config, const DecodedStream& stream,
                        const DecodedStream& proven);

namespace detail {

// What a race check computed of a stream it proved, kept so that the check of a stream like it
// (check_hazards_like) need not compute it again: each instruction's module, place among its
// module's and vector clock (shared: a stream with the same tokens has the same ones), and its
// accesses.
struct HazardProof {
  struct Clocks {
    std::vector<std::array<std::int64_t, 3>> done;
    std::vector<std::int64_t> seq;
    std::vector<std::uint8_t> module;
  };
  std::shared_ptr<const Clocks> clocks;
  std::vector<Access> accesses;      // instruction i's: [first[i], first[i + 1])
  std::vector<std::uint32_t> first;  // one more than the instructions; empty: no proof
  // (shared clocks counted in each proof that holds them)
  std::size_t bytes() const {
    const std::size_t n = first.empty() ? 0 : first.size() - 1;
    return accesses.capacity() * sizeof(Access) + first.capacity() * sizeof(std::uint32_t) +
           n * (sizeof(std::array<std::int64_t, 3>) + sizeof(std::int64_t) + 1);
  }
};

// What check_hazards_proving did: whether it checked the added entries alone (as
// check_hazards_like returns), and given proven's proof.
struct ProvingCheck {
  bool added_alone = false;
  bool read_proof = false;
};

// check_hazards of `stream` where `proven` is null, else check_hazards_like given `proven`
// and, where not null, its proof (from this function, read where the micro-ops, their base and
// every LOAD UOP are proven's); `stream`'s proof into `proof` where not null (not
// `proven_proof`).
ProvingCheck check_hazards_proving(const Config& config, const DecodedStream& stream,
                                   const DecodedStream* proven, const HazardProof* proven_proof,
                                   HazardProof* proof);

}  // namespace detail

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/hazards-inl.hpp>
#endif
