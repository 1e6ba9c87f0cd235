// Definitions for graph/strategy/workload.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/graph/strategy/least_cost.hpp>
#include <dlavm/graph/strategy/workload.hpp>

#include <fmt/format.h>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>

#include <functional>

namespace dlavm::graph {

DLAVM_INLINE bool operator==(const Workload& a, const Workload& b) {
  if (a.op != b.op || a.args.size() != b.args.size() || !same_type(a.result, b.result) ||
      !(a.attrs == b.attrs) || !(a.epilogue == b.epilogue))
    return false;
  for (std::size_t i = 0; i < a.args.size(); ++i)
    if (!same_type(a.args[i], b.args[i])) return false;
  return true;
}

DLAVM_INLINE std::string to_string(const Workload& w) {
  std::vector<std::string> args;
  for (const auto& t : w.args) args.push_back(fmt::format("{} {}", shape_text(t.shape), t.dtype));
  return fmt::format("{}({}; {}; {})", w.op, fmt::join(args, ", "), w.attrs,
                     w.epilogue == Epilogue{} ? std::string("no epilogue") : to_string(w.epilogue));
}

DLAVM_INLINE std::size_t hash_value(const Workload& w) {
  return std::hash<std::string>{}(to_string(w));
}

DLAVM_INLINE std::int64_t Knobs::at(std::string_view name) const {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return values.at(i);
  raise<ValueError>("knobs: there is no knob '{}' (the knobs: {})", name, fmt::join(names, ", "));
}

DLAVM_INLINE std::int64_t Knobs::get(std::string_view name, std::int64_t fallback) const {
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i)
    if (names[i] == name) return values[i];
  return fallback;
}

DLAVM_INLINE std::string to_string(const Knobs& k) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < k.names.size() && i < k.values.size(); ++i)
    parts.push_back(fmt::format("{} {}", k.names[i], k.values[i]));
  return fmt::format("{}", fmt::join(parts, ", "));
}

DLAVM_INLINE std::size_t KnobSpace::size() const {
  std::size_t n = 1;
  for (const auto& k : knobs) n *= k.values.size();
  return n;
}

DLAVM_INLINE std::vector<std::int64_t> KnobSpace::point(std::size_t index) const {
  std::vector<std::int64_t> values(knobs.size());
  for (std::size_t i = knobs.size(); i-- > 0;) {
    const std::size_t n = knobs[i].values.size();
    values[i] = knobs[i].values[index % n];
    index /= n;
  }
  return values;
}

DLAVM_INLINE Knobs KnobSpace::knobs_of(std::span<const std::int64_t> values) const {
  Knobs k;
  for (const auto& knob : knobs) k.names.push_back(knob.name);
  k.values.assign(values.begin(), values.end());
  return k;
}

DLAVM_INLINE std::optional<std::vector<std::int64_t>> least_cost_point(const KnobSpace& space) {
  const auto points = ranges::views::iota(std::size_t{0}, space.size()) |
                      ranges::views::transform([&](std::size_t i) { return space.point(i); });
  return least_cost(
      points, [&](const std::vector<std::int64_t>& p) { return !space.check(p); },
      [&](const std::vector<std::int64_t>& p) { return space.estimate(p); });
}

DLAVM_INLINE Knobs Chooser::choose(const Workload& w, const KnobSpace& space) const {
  if (auto best = least_cost_point(space)) return space.knobs_of(*best);
  if (space.size() == 0) raise<CapacityError>("{}: its knob space is empty", to_string(w));
  const auto first = space.point(0);
  raise<CapacityError>("{}: none of the {} schedules of its knob space fits (the first, {}: {})",
                       to_string(w), space.size(), to_string(space.knobs_of(first)),
                       space.check(first).value_or("?"));
}

}  // namespace dlavm::graph
