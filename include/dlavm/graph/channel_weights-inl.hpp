// Definitions for graph/channel_weights.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/assign_layouts.hpp>
#include <dlavm/graph/channel_weights.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/strategy.hpp>

#include <algorithm>
#include <memory>

namespace dlavm::graph {

namespace detail {

// Whether the GEMM core's weights can add every value of `operand`.
inline bool weighable(const Expr& operand, const vta::Env& env) {
  const auto* c = operand.as<ConstantNode>();
  if (c == nullptr) return false;
  const std::int64_t bound = channel_weights_bound(env.block_in);
  const auto values = c->value->data();
  return std::all_of(values.begin(), values.end(),
                     [&](std::int64_t v) { return v >= -bound && v <= bound; });
}

}  // namespace detail

DLAVM_INLINE Function channel_weights(const Function& placed, const Target& target) {
  const Partition& part = placement_of(placed, "channel_weights");
  auto out = std::make_shared<Partition>(part);
  bool changed = false;
  for (auto& g : out->groups) {
    if (g.device != Device::Vta) continue;
    const AnchorStrategy* strategy = target.strategies.find(g.anchor().name());
    if (strategy == nullptr || !strategy->channel_weights) continue;
    Epilogue e = g.epilogue;
    for (std::size_t k = 0; k < e.inputs.size(); ++k)
      if (e.inputs[k].kind == EpilogueInput::Kind::Channel &&
          detail::weighable(g.operands[k], target.env))
        e.inputs[k].kind = EpilogueInput::Kind::ChannelWeights;
    if (e == g.epilogue || check_epilogue(target.env, e)) continue;
    const TypeCall typing = typing_of(g.anchor(), out->names);
    if (strategy->support(AnchorCall{g.anchor().name(), typing, g.anchor().type()}, target.env, e))
      continue;
    g.epilogue = std::move(e);
    changed = true;
  }
  if (!changed) return placed;
  Function weighted = placed.with_placement(std::move(out));
  const bool laid_out = std::any_of(part.groups.begin(), part.groups.end(),
                                    [](const Group& g) { return g.layouts.has_value(); });
  return laid_out ? assign_layouts(weighted, target) : weighted;
}

}  // namespace dlavm::graph
