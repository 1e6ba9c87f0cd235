// The race detector's entry state (detail::EntryRuns in vta/hw/hazards.hpp) against a plain
// array of per-entry states: seeded random reads and writes, including ranges that overhang
// the memory at either end, must leave every entry in the same state, with neighbouring runs
// always different (runs split and merge back).
#include <dlavm/vta.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace vta = dlavm::vta;
using Runs = vta::detail::EntryRuns;

// Two entry states alike, field by field (not through State's own comparison, which the runs
// merge by).
bool alike(const Runs::State& a, const Runs::State& b) {
  return a.writer == b.writer && a.reader == b.reader;
}

TEST_CASE("hazards: entry runs match per-entry states under random reads and writes") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    const std::int64_t depth = 1 + static_cast<std::int64_t>(rng() % 64);
    Runs runs(depth);
    std::vector<Runs::State> naive(static_cast<std::size_t>(depth));
    for (std::int64_t i = 0; i < 400; ++i) {
      const auto a = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(depth + 8)) - 4;
      const auto b = a + static_cast<std::int64_t>(rng() % 12);
      const auto m = static_cast<std::size_t>(rng() % 3);
      const bool write = rng() % 3 == 0;
      if (write) {
        runs.write(a, b, i);
      } else {
        runs.read(a, b, m, i);
      }
      for (auto e = std::max<std::int64_t>(a, 0); e < std::min(b, depth); ++e) {
        auto& st = naive[static_cast<std::size_t>(e)];
        if (write) {
          st = Runs::State{};
          st.writer = i;
        } else {
          st.reader[m] = i;
        }
      }
      // Every entry, through the runs that cover it.
      std::int64_t next = 0;
      bool same = true;
      std::size_t visited = 0;
      const Runs::State* prev = nullptr;
      bool maximal = true;
      runs.each(0, depth, [&](std::int64_t first, const Runs::State& st) {
        same = same && first == next;
        if (prev) maximal = maximal && !alike(*prev, st);
        prev = &st;
        ++visited;
        next = first;
        while (next < depth && alike(naive[static_cast<std::size_t>(next)], st)) ++next;
      });
      CHECK(same);
      CHECK(next == depth);
      CHECK(maximal);
      CHECK(visited == runs.run_count());
    }
  }
}

TEST_CASE("hazards: a range read reports the runs it overlaps from its first entry") {
  Runs runs(16);
  runs.write(0, 16, 0);
  runs.read(4, 8, 1, 1);
  std::vector<std::int64_t> firsts;
  runs.each(2, 10, [&](std::int64_t e, const Runs::State&) { firsts.push_back(e); });
  CHECK(firsts == std::vector<std::int64_t>{2, 4, 8});
  CHECK(runs.run_count() == 3);
  runs.read(0, 4, 1, 1);
  runs.read(8, 16, 1, 1);
  CHECK(runs.run_count() == 1);  // all entries alike again: one run
}
