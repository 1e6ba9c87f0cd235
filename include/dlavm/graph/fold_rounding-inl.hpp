// Definitions for graph/fold_rounding.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/assign_layouts.hpp>
#include <dlavm/graph/channel_weights.hpp>
#include <dlavm/graph/fold_rounding.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/match_states.hpp>
#include <dlavm/graph/partition.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace dlavm::graph {

namespace detail {

// The rewrites of the fold: bias_add calls given a bias with the rounding constant added, and
// the requantize calls whose rounding that constant was.
struct FoldPlan {
  std::unordered_map<const Node*, Expr> bias;  // bias_add call -> its new bias constant
  std::unordered_set<const Node*> floor;       // requantize calls made to round down
  bool empty() const { return bias.empty(); }
};

// The fold of one VTA group, if it has one: a constant bias (AddChannel step k) followed, with
// only additions between, by the rounding constant of a requantize (an Add step).
inline void plan_fold(const Group& g, FoldPlan& plan) {
  using K = EpilogueStep::Kind;
  const auto& steps = g.epilogue.steps;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (steps[k].kind != K::AddChannel) continue;
    const Expr& bias = g.operands[steps[k].input];
    std::size_t j = k + 1;
    while (j < steps.size() && (steps[j].kind == K::AddChannel || steps[j].kind == K::AddTensor))
      ++j;
    const auto* value = bias.as<ConstantNode>();
    if (value == nullptr || j == steps.size() || steps[j].kind != K::Add) continue;
    // the bias_add reading it, and the first requantize after it (whose rounding is the add)
    std::size_t b = 0;
    while (b < g.calls.size() &&
           !(g.calls[b].name() == "bias_add" && g.calls[b].as<CallNode>()->args[1].same_as(bias)))
      ++b;
    std::size_t r = b;
    while (r < g.calls.size() && g.calls[r].name() != "requantize") ++r;
    if (r == g.calls.size()) continue;
    te::NDArray folded = *value->value;
    for (std::size_t i = 0; i < folded.size(); ++i)
      folded.set_flat(i, folded.data()[i] + steps[j].imm);
    plan.bias[g.calls[b].get()] =
        constant(fmt::format("{}+{}", value->name, steps[j].imm), std::move(folded));
    plan.floor.insert(g.calls[r].get());
    return;
  }
}

class Folder : public ExprMutator<Folder> {
 public:
  explicit Folder(const FoldPlan& plan) : plan_(plan) {}
  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    std::vector<Expr> new_args;
    for (std::size_t i = 0; i < args.size(); ++i) new_args.push_back(args[i]);
    Attrs attrs = call.attrs;
    if (auto it = plan_.bias.find(e.get()); it != plan_.bias.end()) new_args[1] = it->second;
    if (plan_.floor.contains(e.get())) attrs.set("rounding", std::string("floor"));
    return typed_call(call.op(), std::move(new_args), std::move(attrs), e.type(), e.device(),
                      call.result_name);
  }

 private:
  const FoldPlan& plan_;
};

}  // namespace detail

DLAVM_INLINE Function fold_rounding(const Function& placed, const Target& target) {
  const Partition& part = placement_of(placed, "fold_rounding");
  detail::FoldPlan plan;
  for (const auto& g : part.groups)
    if (g.device == Device::Vta) detail::plan_fold(g, plan);
  if (plan.empty()) return placed;
  // placed again; what the passes before this one attached to the placement is made again too,
  // so that the pass may run anywhere after `partition`
  Function folded = place(detail::Folder(plan).mutate(placed), target);
  const bool weighted = std::any_of(part.groups.begin(), part.groups.end(), [](const Group& g) {
    return std::any_of(g.epilogue.inputs.begin(), g.epilogue.inputs.end(), [](const auto& in) {
      return in.kind == EpilogueInput::Kind::ChannelWeights;
    });
  });
  if (weighted) folded = channel_weights(folded, target);
  const bool laid_out = std::any_of(part.groups.begin(), part.groups.end(),
                                    [](const Group& g) { return g.layouts.has_value(); });
  if (laid_out) folded = assign_layouts(folded, target);
  if (!part.held.empty()) folded = match_states(folded, target);
  return folded;
}

}  // namespace dlavm::graph
