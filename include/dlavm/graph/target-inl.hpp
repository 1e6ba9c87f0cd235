// Definitions for graph/target.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/target.hpp>

namespace dlavm::graph {

namespace detail {

DLAVM_INLINE TypedPartition type_and_partition(const Function& fn, const Target& target,
                                               const Attrs& global) {
  TypedPartition out{infer_types(fn, target.ops, global, HostSupport::Defer), {}};
  out.partition = partition(out.fn, target);
  for (const auto& g : out.partition.groups) {
    if (g.device != Device::Host) continue;
    for (const auto& c : g.calls) {
      if (c.device() != Device::Any) continue;  // the host runs it
      const TypeCall typing = typing_of(c, out.partition.names);
      const auto why = target.ops.at(c.name()).host_support(typing);
      raise<TypeError>("{}: no device supports this call; host: {}; vta: {}", typing.label,
                       why.value_or("?"), g.note);
    }
  }
  return out;
}

}  // namespace detail

DLAVM_INLINE Function infer_type(const Function& fn, const Target& target, const Attrs& global) {
  const auto typed = detail::type_and_partition(fn, target, global);
  return place(typed.fn, typed.partition);
}

}  // namespace dlavm::graph
