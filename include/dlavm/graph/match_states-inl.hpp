// Definitions for graph/match_states.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/match_states.hpp>
#include <dlavm/graph/partition.hpp>

#include <memory>
#include <optional>
#include <unordered_map>

namespace dlavm::graph {

namespace detail {

class StateMatcher {
 public:
  StateMatcher(const Function& fn, const Partition& part, const Target& target)
      : fn_(fn), part_(part), target_(target) {
    for (const auto& e : post_order(fn.roots()))
      if (const auto* c = e.as<CallNode>())
        for (std::size_t k = 0; k < c->args.size(); ++k) uses_[c->args[k].get()].push_back(e);
    for (const auto& r : fn.results()) uses_[r.get()].emplace_back();
    for (const auto& st : fn.state()) uses_[st.next.get()].emplace_back();
    for (const auto& g : part.groups) {
      if (g.device != Device::Vta || !g.layouts) continue;
      const auto& args = g.anchor().as<CallNode>()->args;
      for (std::size_t k = 0; k < g.layouts->inputs.size(); ++k)
        read_by_vta_[(k < args.size() ? args[k] : g.operands[k - args.size()]).get()].push_back(
            g.layouts->inputs[k]);
    }
  }

  // The states to hold packed.
  std::vector<HeldState> run() const {
    std::vector<HeldState> out;
    for (std::size_t i = 0; i < fn_.state().size(); ++i)
      if (auto h = match(i)) out.push_back(std::move(*h));
    return out;
  }

 private:
  std::size_t count(const Expr& e) const {
    const auto it = uses_.find(e.get());
    return it == uses_.end() ? 0 : it->second.size();
  }

  // The one layout VTA kernels hold e in, if every call reading it is such a kernel holding it
  // as a matmul weight of whole bytes, and `others` more read it (a state's next value: the
  // state).
  std::optional<Layout> weight_layout(const Expr& e, std::size_t others) const {
    const auto it = read_by_vta_.find(e.get());
    if (it == read_by_vta_.end() || it->second.size() + others != count(e)) return std::nullopt;
    const Layout& l = it->second.front();
    for (const auto& other : it->second)
      if (other != l) return std::nullopt;
    if (l.kind != Layout::Kind::MatmulWeight || l.planes != 1) return std::nullopt;
    return l;
  }

  // State i's growing dim: its one dim that is not constant (none for a state of another
  // shape, which the module keeps as an array).
  std::optional<std::size_t> growing_axis(std::size_t i) const {
    const auto& shape = fn_.state()[i].input.type().shape;
    std::optional<std::size_t> axis;
    for (std::size_t k = 0; k < shape.size(); ++k)
      if (!shape[k].is_const()) {
        if (axis) return std::nullopt;
        axis = k;
      }
    return axis;
  }

  // The rows a state's next value appends along `axis`, if it is such an append.
  std::optional<Expr> appended_rows(const State& st, std::size_t axis) const {
    const auto* next = st.next.as<CallNode>();
    if (next == nullptr || next->args.size() != 2 || !next->args[0].same_as(st.input) ||
        count(st.input) != 1 || count(st.next) != 2)  // the state; the state and one reader
      return std::nullopt;
    const OpRecord& op = target_.ops.at(next->op());
    if (!op.concat_axis || op.concat_axis(typing_of(st.next, part_.names)) != axis)
      return std::nullopt;
    return next->args[1];
  }

  std::optional<HeldState> match(std::size_t i) const {
    const State& st = fn_.state()[i];
    const auto axis = growing_axis(i);
    if (!axis) return std::nullopt;
    const auto rows = appended_rows(st, *axis);
    if (!rows) return std::nullopt;
    HeldState h{i, st.next, *rows, st.next, {}, {}};
    const std::size_t rank = st.input.type().ndim();
    // the next value's reader besides the state: a VTA kernel, or a permutation VTA reads
    Expr reader;
    for (const Expr& u : uses_.at(st.next.get()))
      if (u.defined()) reader = u;
    auto layout = weight_layout(st.next, 1);
    if (layout) {
      for (std::size_t k = 0; k < rank; ++k) h.perm.push_back(static_cast<std::int64_t>(k));
    } else if (reader.defined() && reader.device() == Device::Host) {
      const OpRecord& op = target_.ops.at(reader.name());
      const auto perm =
          op.permutation ? op.permutation(typing_of(reader, part_.names)) : std::nullopt;
      layout = weight_layout(reader, 0);
      if (!perm || !layout) return std::nullopt;
      h.read = reader;
      h.perm = *perm;
    } else {
      return std::nullopt;
    }
    // the growing dim is the weight's K or N
    const auto at = static_cast<std::int64_t>(*axis);
    if (h.perm.size() != rank || rank < 2 || (h.perm[rank - 1] != at && h.perm[rank - 2] != at))
      return std::nullopt;
    h.layout = *layout;
    return h;
  }

  const Function& fn_;
  const Partition& part_;
  const Target& target_;
  // the calls reading each node; an undefined Expr: a result, or a state's next value
  std::unordered_map<const Node*, std::vector<Expr>> uses_;
  std::unordered_map<const Node*, std::vector<Layout>> read_by_vta_;
};

}  // namespace detail

DLAVM_INLINE Function match_states(const Function& laid_out, const Target& target) {
  const Partition& part = placement_of(laid_out, "match_states");
  require_layouts(part, "graph pass 'match_states'");
  auto out = std::make_shared<Partition>(part);
  out->held = detail::StateMatcher(laid_out, part, target).run();
  return laid_out.with_placement(std::move(out));
}

}  // namespace dlavm::graph
