// Definitions for graph/place.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/pass.hpp>
#include <dlavm/graph/pipeline.hpp>
#include <dlavm/graph/place.hpp>

#include <unordered_set>

namespace dlavm::graph {

DLAVM_INLINE Function infer_type(const Function& fn, const Target& target, const Attrs& global) {
  // no function-wide options are defined yet: any key is unknown
  normalize_attrs({}, global, "infer_type: global attributes");
  return run_passes(fn, target, default_passes());
}

DLAVM_INLINE std::vector<Workload> group_workloads(const Function& placed) {
  if (!placed.placement())
    raise<ValueError>(
        "graph::group_workloads: the function is not placed; run graph::infer_type(fn, target)");
  const Partition& part = *placed.placement();
  std::vector<Workload> out;
  for (const auto& g : part.groups)
    if (g.device == Device::Vta) out.push_back(workload_of(g, part.names));
  return out;
}

DLAVM_INLINE std::vector<Workload> workloads(const Function& fn, const Target& target) {
  std::vector<Workload> out;
  std::unordered_set<Workload> seen;
  for (auto& w : group_workloads(infer_type(fn, target)))
    if (seen.insert(w).second) out.push_back(std::move(w));
  return out;
}

}  // namespace dlavm::graph
