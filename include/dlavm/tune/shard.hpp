// Shards: a deterministic slice of a tuning run for one of several ordinary processes (a
// Slurm job array, Kubernetes indexed jobs, GNU parallel), each writing its own log; merging
// the logs (tune::merge) gives the single run's records.
//
//   tune::Shard s = tune::parse_shard("3/8");       // the fourth of eight
//   if (s.contains(candidate_index)) ...           // index % 8 == 3
#pragma once

#include <dlavm/core/api.hpp>

#include <cstddef>
#include <string_view>

namespace dlavm::tune {

struct Shard {
  std::size_t index = 0, count = 1;
  // Candidate `i` of the enumeration belongs to this shard: round robin, so that every shard
  // gets its share of each workload.
  bool contains(std::size_t i) const { return i % count == index; }
};

// "i/n" with 0 <= i < n (decimal); ValueError naming the spec otherwise ("3/2", "a/b", "1").
Shard parse_shard(std::string_view spec);

}  // namespace dlavm::tune

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tune/shard-inl.hpp>
#endif
