// What the rewrites that recognize written-out forms (recognize_layer_norm, recognize_gelu,
// recognize_hard_swish) and fold constants into layers (fold_scale_shift) ask of a graph: the
// call of an op, a float32 scalar constant, how many places read a node, and the leaves of a
// product or sum.
//
//   const graph::Users users(fn);
//   if (const auto* m = graph::call_of(e, "reduce_mean"); m && users.once(e)) ...
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/node.hpp>

#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dlavm::graph {

// How many calls, results and states read each node of a function.
class Users {
 public:
  explicit Users(const Function& fn) {
    for (const Expr& e : post_order(fn.roots()))
      if (const auto* c = e.as<CallNode>())
        for (const Expr& a : c->args) ++count_[a.get()];
    for (const Expr& r : fn.roots()) ++count_[r.get()];
  }
  int of(const Expr& e) const {
    const auto it = count_.find(e.get());
    return it == count_.end() ? 0 : it->second;
  }
  bool once(const Expr& e) const { return of(e) == 1; }

 private:
  std::unordered_map<const Node*, int> count_;
};

// e as a call of `op`, or null.
inline const CallNode* call_of(const Expr& e, std::string_view op) {
  const auto* c = e.as<CallNode>();
  return c != nullptr && c->op() == op ? c : nullptr;
}

// The value of a float32 constant of one element (any rank), or nullopt.
inline std::optional<float> float_scalar(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  if (c == nullptr || c->value->dtype() != DType::float32() || c->value->size() != 1)
    return std::nullopt;
  return c->value->fdata()[0];
}

// The leaves of nested calls of `op` (a product or a sum) rooted at e: an inner call counts as
// a node of the tree only when read once (by its parent); e itself always does.
inline void leaves_of(const Expr& e, std::string_view op, const Users& users,
                      std::vector<Expr>& out, bool root = true) {
  const auto* c = call_of(e, op);
  if (c == nullptr || (!root && !users.once(e)) || c->args.size() != 2) {
    out.push_back(e);
    return;
  }
  leaves_of(c->args[0], op, users, out, false);
  leaves_of(c->args[1], op, users, out, false);
}

}  // namespace dlavm::graph
