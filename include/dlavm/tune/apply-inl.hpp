// Definitions for tune/apply.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/tune/apply.hpp>

#include <fmt/ranges.h>

#include <algorithm>

namespace dlavm::tune {

DLAVM_INLINE LogChooser::LogChooser(std::span<const Record> records) {
  for (auto& [w, rs] : best(records, 1)) best_.emplace(w, rs.front());
}

DLAVM_INLINE graph::Knobs LogChooser::choose(const graph::Workload& w,
                                             const graph::KnobSpace& space) const {
  const auto it = best_.find(graph::to_string(w));
  if (it == best_.end()) return graph::Chooser::choose(w, space);
  const graph::Knobs& k = it->second.knobs;
  std::vector<std::string> names;
  for (const auto& knob : space.knobs) names.push_back(knob.name);
  if (k.names != names)
    raise<ValueError>("tuning log, {}: the record's knobs are [{}], the space's [{}]", it->first,
                      fmt::join(k.names, ", "), fmt::join(names, ", "));
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& domain = space.knobs[i].values;
    if (std::find(domain.begin(), domain.end(), k.values[i]) == domain.end())
      raise<ValueError>("tuning log, {}: knob '{}' is {}, outside its domain [{}]", it->first,
                        names[i], k.values[i], fmt::join(domain, ", "));
  }
  if (auto why = space.check(k.values))
    raise<ValueError>("tuning log, {}: the record's knobs ({}) do not fit: {}", it->first,
                      graph::to_string(k), *why);
  return space.knobs_of(k.values);
}

}  // namespace dlavm::tune
