// vta::detail::repeated_runs: where a sequence of statements repeats the same code, so that
// the generated replay (vta/codegen.hpp) prints such a run once, in a loop (the integer
// softmax's quotient bits: twelve kernels a bit, in the same rows bit after bit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dlavm::vta::detail {

// A run of `count` (3 or more: two print hardly longer than a loop of two) times the same
// `length` statements, from statement `first` of a sequence.
struct Run {
  std::size_t first = 0, length = 0, count = 0;
  bool operator==(const Run&) const = default;
};

// The runs in a sequence of statements' code (empty: a statement no run holds), leftmost
// first, each the one that covers the most statements from where it starts (of those that
// cover as many, the one of the shortest block), of blocks of at most kLongestRun statements
// (so that the search compares about kLongestRun codes a statement where neighbours differ,
// kLongestRun^2 at most).
inline constexpr std::size_t kLongestRun = 64;
inline std::vector<Run> repeated_runs(std::span<const std::string> code) {
  const auto same = [&](std::size_t a, std::size_t b, std::size_t length) {
    for (std::size_t j = 0; j < length; ++j)
      if (code[a + j].empty() || code[a + j] != code[b + j]) return false;
    return true;
  };
  std::vector<Run> runs;
  for (std::size_t first = 0; first < code.size();) {
    Run best;
    for (std::size_t length = 1; length <= kLongestRun && first + (3 * length) <= code.size();
         ++length) {
      std::size_t count = 1;
      while (first + ((count + 1) * length) <= code.size() &&
             same(first, first + (count * length), length))
        ++count;
      if (count >= 3 && count * length > best.length * best.count) best = {first, length, count};
    }
    if (best.count == 0) {
      ++first;
      continue;
    }
    runs.push_back(best);
    first += best.length * best.count;
  }
  return runs;
}

}  // namespace dlavm::vta::detail
