// Definitions for graph/place.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops/quantize.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/strategy.hpp>

#include <fmt/format.h>

#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace dlavm::graph {

DLAVM_INLINE Workload workload_of(const Group& g, const NodeNames& names) {
  const Expr& anchor = g.anchor();
  const TypeCall typing = typing_of(anchor, names);
  return workload_of(AnchorCall{anchor.name(), typing, anchor.type()}, g.epilogue);
}

namespace detail {

// The rewrites of the fold (graph/place.hpp): bias_add calls given a bias with the rounding
// constant added, and the requantize calls whose rounding that constant was.
struct FoldPlan {
  std::unordered_map<const Node*, Expr> bias;  // bias_add call -> its new bias constant
  std::unordered_set<const Node*> floor;       // requantize calls made to round down
  bool empty() const { return bias.empty(); }
};

// In each VTA group, a constant bias followed, with only additions between, by the rounding
// constant of a requantize: one fold per group.
inline FoldPlan plan_folds(const Partition& part) {
  using K = EpilogueStep::Kind;
  FoldPlan plan;
  for (const auto& g : part.groups) {
    if (g.device != Device::Vta) continue;
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
      break;
    }
  }
  return plan;
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

class Placer : public ExprMutator<Placer> {
 public:
  explicit Placer(const Partition& part) : part_(part) {}
  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    const Group* g = part_.group_of(e);
    const Device device = g != nullptr ? g->device : Device::Host;
    std::vector<Expr> new_args;
    for (std::size_t i = 0; i < args.size(); ++i) new_args.push_back(args[i]);
    return typed_call(call.op(), std::move(new_args), call.attrs, e.type(), device,
                      call.result_name);
  }
  // The partition over the placed function's nodes.
  Partition moved(const Partition& part, const Function& placed) const {
    Partition out;
    out.config = part.config;
    out.names = NodeNames(placed);
    for (const auto& g : part.groups) {
      Group h = g;
      for (auto& c : h.calls) c = result_of(c);
      for (auto& o : h.operands) o = result_of(o);
      for (const auto& c : h.calls) out.group_index[c.get()] = out.groups.size();
      out.groups.push_back(std::move(h));
    }
    return out;
  }

 private:
  const Partition& part_;
};

// A call neither device runs: a TypeError with each device's reason.
inline void check_placed(const Partition& part, const Target& target) {
  for (const auto& g : part.groups) {
    if (g.device != Device::Host) continue;
    for (const auto& c : g.calls) {
      if (c.device() != Device::Any) continue;  // the host runs it
      const TypeCall typing = typing_of(c, part.names);
      const auto why = target.ops.at(c.name()).host_support(typing);
      raise<TypeError>("{}: no device supports this call; host: {}; vta: {}", typing.label,
                       why.value_or("?"), g.note);
    }
  }
}

}  // namespace detail

DLAVM_INLINE Function infer_type(const Function& fn, const Target& target, const Attrs& global) {
  Function typed = detail::infer_types(fn, target.ops, global, detail::HostSupport::Defer);
  Partition part = partition(typed, target);
  if (const auto plan = detail::plan_folds(part); !plan.empty()) {
    typed = detail::Folder(plan).mutate(typed);
    part = partition(typed, target);
  }
  detail::check_placed(part, target);
  detail::Placer placer(part);
  const Function placed = placer.mutate(typed);
  return placed.with_placement(std::make_shared<const Partition>(placer.moved(part, placed)));
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
