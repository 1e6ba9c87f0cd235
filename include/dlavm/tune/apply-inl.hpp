// Definitions for tune/apply.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/tune/apply.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace dlavm::tune {

namespace detail {

// Why a record does not apply to `target` (the text its group's warning gives), or nullopt.
inline std::optional<std::string> not_for(const Record& r, const graph::Target& target) {
  if (r.target != target.env.config)
    return fmt::format("for another VTA configuration ({})",
                       config_difference(r.target, target.env.config));
  const auto* strategy = target.strategies.find(r.strategy.op);
  if (strategy == nullptr) return fmt::format("of op '{}' (no VTA strategy here)", r.strategy.op);
  if (strategy->revision != r.strategy.revision)
    return fmt::format("of {}'s strategy revision {} (revision {} here: its schedule changed)",
                       r.strategy.op, r.strategy.revision, strategy->revision);
  return std::nullopt;
}

}  // namespace detail

DLAVM_INLINE Log for_target(std::span<const Record> records, const graph::Target& target) {
  Log out;
  std::vector<std::pair<std::string, std::size_t>> skipped;  // why, how many: in log order
  for (const auto& r : records) {
    auto why = detail::not_for(r, target);
    if (!why) {
      out.records.push_back(r);
      continue;
    }
    const auto group = std::find_if(skipped.begin(), skipped.end(),
                                    [&](const auto& g) { return g.first == *why; });
    if (group == skipped.end())
      skipped.emplace_back(std::move(*why), 1);
    else
      ++group->second;
  }
  for (const auto& [why, n] : skipped)
    out.warnings.push_back(
        fmt::format("tuning log: {} record{} {} skipped", n, n == 1 ? "" : "s", why));
  return out;
}

DLAVM_INLINE LogChooser::LogChooser(std::span<const Record> records, const graph::Target& target) {
  auto mine = for_target(records, target);
  for (auto& [w, rs] : best(mine.records, 1)) best_.emplace(w, rs.front());
  warnings_ = std::move(mine.warnings);
}

DLAVM_INLINE graph::Knobs LogChooser::choose(const graph::Workload& w,
                                             const graph::KnobSpace& space) const {
  const auto it = best_.find(workload_key(w));
  if (it == best_.end()) return graph::Chooser::choose(w, space);
  const graph::Knobs& k = it->second.knobs;
  const auto name = graph::to_string(w);
  std::vector<std::string> names;
  for (const auto& knob : space.knobs) names.push_back(knob.name);
  if (k.names != names)
    raise<ValueError>(
        "tuning log, {}: the record's knobs are [{}], the space's [{}] (a strategy whose knobs "
        "change must bump its revision)",
        name, fmt::join(k.names, ", "), fmt::join(names, ", "));
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& domain = space.knobs[i].values;
    if (std::find(domain.begin(), domain.end(), k.values[i]) == domain.end())
      raise<ValueError>("tuning log, {}: knob '{}' is {}, outside its domain [{}]", name, names[i],
                        k.values[i], fmt::join(domain, ", "));
  }
  if (auto why = space.check(k.values))
    raise<ValueError>("tuning log, {}: the record's knobs ({}) do not fit: {}", name,
                      graph::to_string(k), *why);
  return space.knobs_of(k.values);
}

}  // namespace dlavm::tune
