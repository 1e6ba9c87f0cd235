// Definitions for graph/partition.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/ops/elementwise.hpp>
#include <dlavm/graph/ops/quantize.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/strategy.hpp>
#include <dlavm/host/elementwise.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/vta/lower/inject_alu.hpp>

#include <fmt/format.h>

#include <algorithm>
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

// A VTA group while it is being grown: its calls, its epilogue, and the state of the value
// its last call produces in the accumulator.
struct OpenGroup {
  Group group;
  const AnchorStrategy* strategy = nullptr;
  Layout result_layout;
  std::size_t channel_axis = 1;  // the result's axis of output channels
  DType logical;                 // the dtype the last call's value has in the graph
  bool wrapped = false;          // after cast(x, int8): the store's wrap must come last
};

class Partitioner {
 public:
  Partitioner(const Function& fn, const Target& target)
      : fn_(fn), target_(target), names_(fn), order_(post_order(fn.results())) {
    for (const auto& e : order_)
      if (const auto* c = e.as<CallNode>())
        for (const auto& a : c->args) ++users_[a.get()];
    for (const auto& r : fn.results()) ++users_[r.get()];
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
      host_note_[e.get()] = fmt::format("no VTA strategy for '{}'", call.op());
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
    g.result_layout = strategy->result_layout(anchor, target_.env);
    g.channel_axis = g.result_layout.kind == Layout::Kind::Matrix ? e.type().ndim() - 1 : 1;
    g.logical = e.type().dtype;
    open_.push_back(std::move(g));
    const std::size_t index = open_.size() - 1;
    tail_[e.get()] = index;
    member_[e.get()] = index;
  }

  // Whether argument a of some call is the last call of an open VTA group that may grow.
  std::optional<std::size_t> growable(const Expr& a) const {
    auto it = tail_.find(a.get());
    if (it == tail_.end() || users_.at(a.get()) != 1) return std::nullopt;
    for (const auto& r : fn_.results())
      if (r.same_as(a)) return std::nullopt;
    if (open_[it->second].wrapped) return std::nullopt;
    return it->second;
  }

  bool extend(const Expr& e, const CallNode& call) {
    for (std::size_t i = 0; i < call.args.size(); ++i) {
      const auto g = growable(call.args[i]);
      if (!g) continue;
      if (!fuse(open_[*g], e, call, i)) continue;
      tail_.erase(call.args[i].get());
      tail_[e.get()] = *g;
      member_[e.get()] = *g;
      open_[*g].group.calls.push_back(e);
      return true;
    }
    return false;
  }

  // What a group becomes with one more call, built on a copy and committed when it fuses.
  struct Growth {
    Epilogue epilogue;
    std::vector<Expr> operands;
    std::vector<Expr> absorbed;  // calls that join with it (a residual operand's cast)
    DType logical;
    bool wrapped = false;
  };
  using K = EpilogueStep::Kind;

  // Appends the epilogue steps of `call` (its argument `chain` is the group's value) to g, or
  // returns false leaving g as it was.
  bool fuse(OpenGroup& g, const Expr& e, const CallNode& call, std::size_t chain) {
    Growth next{g.group.epilogue, g.group.operands, {}, g.logical, false};
    const std::string& op = call.op();
    bool fused = false;
    if (op == "bias_add")
      fused = chain == 0 && fuse_bias_add(next, g, e, call);
    else if (op == "add")
      fused =
          same_shape(call.args[chain].type(), e.type()) && fuse_add(next, e, call.args[1 - chain]);
    else if (op == "requantize")
      fused = fuse_requantize(next, call);
    else if (op == "relu")
      fused = fuse_relu(next);
    else if (op == "clip")
      fused = fuse_clip(next, e, call);
    else if (op == "cast")
      fused = fuse_cast(next, call);
    if (!fused) return false;
    g.group.epilogue = std::move(next.epilogue);
    g.group.operands = std::move(next.operands);
    g.logical = next.logical;
    g.wrapped = next.wrapped;
    for (const auto& a : next.absorbed) {
      member_[a.get()] = index_of(g);
      g.group.calls.push_back(a);
    }
    return true;
  }

  bool accumulating(const Growth& next) const { return next.logical == target_.env.acc_dtype; }

  // + b[c], an int32 vector along the result's channel axis.
  bool fuse_bias_add(Growth& next, const OpenGroup& g, const Expr& e, const CallNode& call) const {
    const auto& b = call.args[1];
    const auto axis = bias_add_params(call.attrs).axis;
    const auto rank = static_cast<std::int64_t>(e.type().ndim());
    if (!accumulating(next) || b.type().dtype != target_.env.acc_dtype ||
        (axis < 0 ? axis + rank : axis) != static_cast<std::int64_t>(g.channel_axis))
      return false;
    next.epilogue.add_channel(target_.env.acc_dtype);
    next.operands.push_back(b);
    return true;
  }

  // + other, of the result's shape: an int32 value, or the cast to int32 of an int8 one, which
  // is then loaded through ACC_8BIT (sign-extended) and the cast joins the group.
  bool fuse_add(Growth& next, const Expr& e, const Expr& other) const {
    const auto& env = target_.env;
    if (!accumulating(next) || !same_shape(other.type(), e.type())) return false;
    const auto* cast = other.as<CallNode>();
    if (cast != nullptr && cast->op() == "cast" && !member_.contains(other.get()) &&
        users_.at(other.get()) == 1 && cast->args[0].type().dtype == env.inp_dtype &&
        other.type().dtype == env.acc_dtype) {
      next.epilogue.add_tensor(env.inp_dtype);
      next.operands.push_back(cast->args[0]);
      next.absorbed.push_back(other);
      return true;
    }
    if (other.type().dtype != env.acc_dtype) return false;
    next.epilogue.add_tensor(env.acc_dtype);
    next.operands.push_back(other);
    return true;
  }

  // (x + r) >> shift, clamped: the ALU's shift argument and 16-bit immediates bound it.
  bool fuse_requantize(Growth& next, const CallNode& call) const {
    const auto& env = target_.env;
    const auto p = requantize_params(call.attrs);
    const auto shr = vta::alu_imm_range(runtime::AluOp::Shr, env.config);
    if (!accumulating(next) || p.out_dtype != env.out_dtype || p.shift > shr.second ||
        !fits_imm(p.lo) || !fits_imm(p.hi))
      return false;
    if (p.rounding == host::Rounding::Nearest && p.shift > 0)
      next.epilogue.imm(K::Add, std::int64_t{1} << (p.shift - 1), target_.env.config);
    if (p.shift > 0) next.epilogue.imm(K::Shr, p.shift, target_.env.config);
    next.epilogue.imm(K::Max, p.lo, target_.env.config);
    next.epilogue.imm(K::Min, p.hi, target_.env.config);
    next.logical = p.out_dtype;
    return true;
  }

  bool fuse_relu(Growth& next) const {
    next.epilogue.imm(K::Max, 0, target_.env.config);
    return true;
  }

  bool fuse_clip(Growth& next, const Expr& e, const CallNode& call) const {
    const auto [lo, hi] =
        host::clip_int_bounds(clip_params(call.attrs), next.logical, names_.label(e));
    if (!fits_imm(lo) || !fits_imm(hi)) return false;
    next.epilogue.imm(K::Max, lo, target_.env.config);
    next.epilogue.imm(K::Min, hi, target_.env.config);
    return true;
  }

  // To int8 only (VTA cannot keep a value wider than it stores); from int32 it wraps, which
  // only the store does, so nothing may follow.
  bool fuse_cast(Growth& next, const CallNode& call) const {
    const DType to = cast_dtype(call.attrs);
    if (to != target_.env.out_dtype) return false;
    next.wrapped = next.logical != to;
    next.logical = to;
    return true;
  }

  std::size_t index_of(const OpenGroup& g) const {
    return static_cast<std::size_t>(&g - open_.data());
  }

  // Within the ALU's immediate for MAX and MIN (and ADD): VTA_ALUOP_IMM_BIT_WIDTH bits.
  bool fits_imm(std::int64_t v) const {
    const auto [lo, hi] = vta::alu_imm_range(runtime::AluOp::Max, target_.env.config);
    return v >= lo && v <= hi;
  }

  static bool same_shape(const TensorType& a, const TensorType& b) {
    if (a.ndim() != b.ndim()) return false;
    for (std::size_t k = 0; k < a.ndim(); ++k)
      if (!ne::can_prove(a.shape[k] == b.shape[k])) return false;
    return true;
  }

  // Why a grown group cannot run as one VTA kernel: a result VTA does not store, or an
  // epilogue whose operands no longer fit the accumulator next to one output tile.
  std::optional<std::string> why_not_stored(const OpenGroup& g) const {
    if (g.logical != target_.env.out_dtype)
      return fmt::format(
          "its {} result would leave VTA, which stores only {}: requantize or cast it in a fused "
          "epilogue",
          g.logical, target_.env.out_dtype);
    const Expr& anchor = g.group.calls.front();
    const TypeCall typing = typing_of(anchor, names_);
    const AnchorCall call{anchor.name(), typing, anchor.type()};
    if (auto why = g.strategy->support(call, target_.env, g.group.epilogue))
      return fmt::format("with its fused epilogue: {}", *why);
    return std::nullopt;
  }

  // Dissolves the groups VTA cannot run, then orders every group by its last call.
  Partition finish() {
    Partition part;
    part.names = names_;
    std::vector<bool> valid(open_.size());
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

  // Calls in post-order (absorbed casts before their add), the result last.
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

 private:
  const Partition& part_;
};

}  // namespace detail

DLAVM_INLINE Function place(const Function& fn, const Partition& part) {
  return detail::Placer(part).mutate(fn);
}

}  // namespace dlavm::graph
