// Definitions for graph/partition.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/strategy.hpp>

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <unordered_set>

namespace dlavm::graph {

DLAVM_INLINE const Group* Partition::group_of(const Expr& e) const {
  auto it = group_index.find(e.get());
  return it == group_index.end() ? nullptr : &groups[it->second];
}

DLAVM_INLINE std::string Partition::describe(const Group& g) const {
  std::vector<std::string> calls;
  for (const auto& c : g.calls) calls.push_back(fmt::format("{} {}", names.name(c), c.name()));
  std::string out = fmt::format("{}: {}", device_name(g.device), fmt::join(calls, ", "));
  if (!g.note.empty()) out += fmt::format(" ({})", g.note);
  return out;
}

DLAVM_INLINE Workload workload_of(const Group& g, const NodeNames& names) {
  const Expr& anchor = g.anchor();
  const TypeCall typing = typing_of(anchor, names);
  return workload_of(AnchorCall{anchor.name(), typing, anchor.type()}, g.epilogue);
}

DLAVM_INLINE TypeCall typing_of(const Expr& call, const NodeNames& names) {
  const auto& c = *call.as<CallNode>();
  TypeCall t;
  t.label = names.label(call);
  t.attrs = c.attrs;
  for (const auto& a : c.args) {
    t.arg_names.push_back(names.name(a));
    t.arg_types.push_back(a.type());
  }
  return t;
}

namespace detail {

// A VTA group while it is being grown: its calls, and its value's state in the accumulator.
struct OpenGroup {
  Group group;
  const AnchorStrategy* strategy = nullptr;
  FusionState state;
};

class Partitioner {
 public:
  Partitioner(const Function& fn, const Target& target)
      : fn_(fn), target_(target), names_(fn), order_(post_order(fn.roots())) {
    for (const auto& e : order_)
      if (const auto* c = e.as<CallNode>())
        for (const auto& a : c->args) ++users_[a.get()];
    for (const auto& r : fn.roots()) ++users_[r.get()];
  }

  Partition run() {
    for (const auto& e : order_)
      if (e.kind() == NodeKind::Call && !member_.contains(e.get())) visit_call(e);
    return finish();
  }

 private:
  void visit_call(const Expr& e) {
    const auto& call = *e.as<CallNode>();
    if (extend(e, call)) return;
    const auto* strategy = target_.strategies.find(call.op());
    if (strategy == nullptr) {
      const std::string* why = target_.strategies.host_reason(call.op());
      host_note_[e.get()] = why ? *why : fmt::format("no VTA strategy for '{}'", call.op());
      return;
    }
    const TypeCall typing = typing_of(e, names_);
    const AnchorCall anchor{call.op(), typing, e.type()};
    if (auto why = strategy->support(anchor, target_.env, Epilogue{})) {
      host_note_[e.get()] = *why;
      return;
    }
    OpenGroup g;
    g.group.device = Device::Vta;
    g.group.calls.push_back(e);
    g.strategy = strategy;
    const Layout result = strategy->result_layout(workload_of(anchor, {}), target_.env);
    g.state.channel_axis =
        result.kind == Layout::Kind::Matrix || result.kind == Layout::Kind::BatchedMatrix
            ? e.type().ndim() - 1
            : 1;
    g.state.logical = e.type().dtype;
    open_.push_back(std::move(g));
    const std::size_t index = open_.size() - 1;
    tail_[e.get()] = index;
    member_[e.get()] = index;
  }

  // Whether argument a of some call is the last call of an open VTA group that may grow.
  std::optional<std::size_t> growable(const Expr& a) const {
    auto it = tail_.find(a.get());
    if (it == tail_.end() || users_.at(a.get()) != 1) return std::nullopt;
    for (const auto& r : fn_.roots())
      if (r.same_as(a)) return std::nullopt;
    if (open_[it->second].state.wrapped) return std::nullopt;
    return it->second;
  }

  // Joins call `e` to the group of one of its arguments, if that group's epilogue rule for
  // the op accepts it.
  bool extend(const Expr& e, const CallNode& call) {
    const EpilogueRule* rule = target_.strategies.epilogue_rule(call.op());
    if (rule == nullptr) return false;
    for (std::size_t i = 0; i < call.args.size(); ++i) {
      const auto g = growable(call.args[i]);
      if (!g) continue;
      if (!fuse(open_[*g], e, call, i, *rule)) continue;
      tail_.erase(call.args[i].get());
      tail_[e.get()] = *g;
      member_[e.get()] = *g;
      open_[*g].group.calls.push_back(e);
      return true;
    }
    return false;
  }

  // Applies the rule to a copy of the group's state and commits it when the call fuses.
  bool fuse(OpenGroup& g, const Expr& e, const CallNode& call, std::size_t chain,
            const EpilogueRule& rule) {
    FusionState next = g.state;
    next.absorbed.clear();
    next.wrapped = false;
    const std::string label = names_.label(e);
    const FusionCall fc{call, e, chain, label, target_.env, [this](const Expr& c) {
                          return !member_.contains(c.get()) && users_.at(c.get()) == 1;
                        }};
    if (!rule(next, fc)) return false;
    for (const auto& a : next.absorbed) {
      member_[a.get()] = index_of(g);
      g.group.calls.push_back(a);
    }
    g.state = std::move(next);
    return true;
  }

  std::size_t index_of(const OpenGroup& g) const {
    return static_cast<std::size_t>(&g - open_.data());
  }

  // Why a grown group cannot run as one VTA kernel: a result VTA does not store, or an
  // epilogue whose operands no longer fit the accumulator next to one output tile.
  std::optional<std::string> why_not_stored(const OpenGroup& g) const {
    if (g.state.logical != target_.env.out_dtype && !g.state.epilogue.int32_result)
      return fmt::format(
          "its {} result would leave VTA, which stores only {}: requantize or cast it in a fused "
          "epilogue{}",
          g.state.logical, target_.env.out_dtype,
          g.state.logical == target_.env.acc_dtype && g.strategy->int32_results
              ? ", or build with Target::int32_results"
              : "");
    const Expr& anchor = g.group.calls.front();
    const TypeCall typing = typing_of(anchor, names_);
    const AnchorCall call{anchor.name(), typing, anchor.type()};
    if (auto why = g.strategy->support(call, target_.env, g.state.epilogue))
      return fmt::format("with its fused epilogue: {}", *why);
    return std::nullopt;
  }

  // Dissolves the groups VTA cannot run, then orders every group by its last call.
  Partition finish() {
    Partition part;
    part.names = names_;
    part.config = target_.env.config;
    part.int32_results = target_.int32_results;
    std::vector<bool> valid(open_.size());
    for (auto& g : open_)
      g.state.epilogue.int32_result = target_.int32_results && g.strategy->int32_results &&
                                      g.state.logical == target_.env.acc_dtype;
    for (std::size_t g = 0; g < open_.size(); ++g) {
      const auto why = why_not_stored(open_[g]);
      valid[g] = !why;
      if (why)
        for (const auto& c : open_[g].group.calls) host_note_[c.get()] = *why;
    }
    for (const auto& e : order_) {
      if (e.kind() != NodeKind::Call) continue;
      auto m = member_.find(e.get());
      if (m != member_.end() && valid[m->second]) {
        auto& g = open_[m->second];
        if (!e.same_as(g.group.calls.back())) continue;  // the group runs at its result
        g.group.epilogue = std::move(g.state.epilogue);
        g.group.operands = std::move(g.state.operands);
        for (const auto& c : g.group.calls) part.group_index[c.get()] = part.groups.size();
        part.groups.push_back(sorted(std::move(g.group)));
        continue;
      }
      Group h;
      h.device = Device::Host;
      h.calls.push_back(e);
      if (auto n = host_note_.find(e.get()); n != host_note_.end()) h.note = n->second;
      part.group_index[e.get()] = part.groups.size();
      part.groups.push_back(std::move(h));
    }
    return part;
  }

  // The anchor first, then the other calls in post-order (an absorbed cast before its add,
  // even when post-order puts it before the anchor), the result last.
  Group sorted(Group g) const {
    std::unordered_set<const Node*> in;
    for (std::size_t i = 1; i < g.calls.size(); ++i) in.insert(g.calls[i].get());
    std::vector<Expr> calls{g.calls.front()};
    for (const auto& e : order_)
      if (in.contains(e.get())) calls.push_back(e);
    g.calls = std::move(calls);
    return g;
  }

  const Function& fn_;
  const Target& target_;
  NodeNames names_;
  std::vector<Expr> order_;
  std::unordered_map<const Node*, int> users_;
  std::vector<OpenGroup> open_;
  std::unordered_map<const Node*, std::size_t> tail_;    // last call of an open group
  std::unordered_map<const Node*, std::size_t> member_;  // every call of a group
  std::unordered_map<const Node*, std::string> host_note_;
};

}  // namespace detail

DLAVM_INLINE Partition partition(const Function& fn, const Target& target) {
  return detail::Partitioner(fn, target).run();
}

namespace detail {

// Rebuilds each call with its group's device.
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
    out.int32_results = part.int32_results;
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

// A call neither device runs: a TypeError with each device's reason. A call typing placed on
// the host (Device::Host) runs there; one it left unplaced, or a pass placed on VTA before, is
// asked again.
inline void check_placed(const Partition& part, const Target& target) {
  for (const auto& g : part.groups) {
    if (g.device != Device::Host) continue;
    for (const auto& c : g.calls) {
      const OpRecord& op = target.ops.at(c.name());
      if (c.device() == Device::Host || !op.host_support) continue;
      const TypeCall typing = typing_of(c, part.names);
      if (const auto why = op.host_support(typing))
        raise<TypeError>("{}: no device supports this call; host: {}; vta: {}", typing.label, *why,
                         g.note);
    }
  }
}

}  // namespace detail

DLAVM_INLINE Function place(const Function& typed, const Target& target) {
  const Partition part = partition(typed, target);
  detail::check_placed(part, target);
  detail::Placer placer(part);
  const Function placed = placer.mutate(typed);
  return placed.with_placement(std::make_shared<const Partition>(placer.moved(part, placed)));
}

DLAVM_INLINE void require_layouts(const Partition& part, std::string_view who) {
  for (const auto& g : part.groups)
    if (g.device == Device::Vta && !g.layouts)
      raise<ValueError>(
          "{}: VTA group {} has no layouts; run the 'layout' pass before it "
          "(graph::default_passes())",
          who, part.names.name(g.output()));
}

DLAVM_INLINE const Partition& placement_of(const Function& fn, std::string_view pass) {
  if (!fn.placement())
    raise<ValueError>(
        "graph pass '{}': the function is not placed; run the 'partition' pass before it "
        "(graph::default_passes())",
        pass);
  return *fn.placement();
}

}  // namespace dlavm::graph
