// Definitions for graph/pass.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/pass.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace dlavm::graph {

DLAVM_INLINE Function run_passes(const Function& fn, const Target& target,
                                 std::span<const Pass> passes, const PassOptions& options) {
  for (const auto& name : options.disabled)
    if (std::none_of(passes.begin(), passes.end(), [&](const Pass& p) { return p.name == name; })) {
      std::vector<std::string_view> names;
      for (const auto& p : passes) names.push_back(p.name);
      raise<ValueError>("run_passes: no pass '{}' to disable (the pipeline: {})", name,
                        fmt::join(names, ", "));
    }
  for (const auto& p : passes)
    if (!p.run) raise<ValueError>("run_passes: pass '{}' has no function", p.name);
  Function f = fn;
  for (const auto& p : passes) {
    if (std::find(options.disabled.begin(), options.disabled.end(), p.name) !=
        options.disabled.end())
      continue;
    f = p.run(f, target);
    if (options.after) options.after(p, f);
  }
  return f;
}

DLAVM_INLINE std::string to_string(std::span<const Pass> passes) {
  std::size_t width = 0;
  for (const auto& p : passes) width = std::max(width, p.name.size());
  std::string out;
  for (std::size_t i = 0; i < passes.size(); ++i)
    out += fmt::format("{:>3}. {:<{}}  {}\n", i + 1, passes[i].name, width, passes[i].summary);
  return out;
}

}  // namespace dlavm::graph
