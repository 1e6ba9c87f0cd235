// Definitions for graph/assign_layouts.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/assign_layouts.hpp>
#include <dlavm/graph/partition.hpp>

#include <memory>

namespace dlavm::graph {

namespace detail {

inline Group::Layouts group_layouts(const Group& g, const NodeNames& names, const Target& target) {
  const auto& env = target.env;
  const AnchorStrategy& strategy = *target.strategies.find(g.anchor().name());
  const Workload workload = workload_of(g, names);
  Group::Layouts l;
  for (std::size_t i = 0; i < g.anchor().as<CallNode>()->args.size(); ++i)
    l.inputs.push_back(strategy.arg_layout(workload, env, i));
  const Layout result = strategy.result_layout(workload, env);
  for (const auto& in : g.epilogue.inputs) {
    switch (in.kind) {
      case EpilogueInput::Kind::Channel:
        l.inputs.push_back(Layout{Layout::Kind::Channel, env.batch, env.block_out});
        break;
      case EpilogueInput::Kind::ChannelWeights:
        l.inputs.push_back(Layout{Layout::Kind::ChannelWeights, env.block_out, env.block_in});
        break;
      case EpilogueInput::Kind::Tensor:
        l.inputs.push_back(result);
        break;
    }
  }
  l.output = result;
  if (g.epilogue.int32_result) l.output.planes = Epilogue::kPlanes;
  return l;
}

}  // namespace detail

DLAVM_INLINE Function assign_layouts(const Function& placed, const Target& target) {
  auto part = std::make_shared<Partition>(placement_of(placed, "layout"));
  for (auto& g : part->groups)
    if (g.device == Device::Vta) g.layouts = detail::group_layouts(g, part->names, target);
  return placed.with_placement(std::move(part));
}

}  // namespace dlavm::graph
