// The one traversal idiom of the graph IR. ExprFunctor walks the DAG under some roots in
// post-order (graph::post_order: iterative, each node once, arguments first) and dispatches
// each node to a method of the derived class (CRTP), memoizing its result:
//   R visit_input(const InputNode&, const Expr&)
//   R visit_constant(const ConstantNode&, const Expr&)
//   R visit_call(const CallNode&, const Expr&, ArgResults<R> args)   // args: the results of
//                                                                    // the call's arguments
// ExprMutator (R = Expr) rebuilds a call only when an argument changed, keeping its attrs,
// type and device; a pass overrides the kinds it rewrites. infer_type, the printer and the
// reference executor are written this way; for_each_node serves read-only walks.
//
//   struct CountCalls : graph::ExprFunctor<CountCalls, int> {
//     int visit_input(const InputNode&, const Expr&) { return 0; }
//     int visit_constant(const ConstantNode&, const Expr&) { return 0; }
//     int visit_call(const CallNode&, const Expr&, ArgResults<int>) { return ++calls; }
//     int calls = 0;
//   };
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/graph/node.hpp>

#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlavm::graph {

// Calls f(const Expr&) on every node under `roots`, in post-order.
template <class F>
void for_each_node(std::span<const Expr> roots, F&& f) {
  for (const Expr& e : post_order(roots)) f(e);
}
template <class F>
void for_each_node(const Function& fn, F&& f) {
  for_each_node(fn.roots(), std::forward<F>(f));
}

// The results of a call's arguments, by position, without copying them.
template <class R>
class ArgResults {
 public:
  explicit ArgResults(std::span<const R* const> results) : results_(results) {}
  const R& operator[](std::size_t i) const { return *results_[i]; }
  std::size_t size() const { return results_.size(); }

 private:
  std::span<const R* const> results_;
};

template <class Derived, class R>
class ExprFunctor {
 public:
  // Visits every node under `roots` not visited before; returns the roots' results.
  std::vector<R> visit(std::span<const Expr> roots) {
    auto& self = static_cast<Derived&>(*this);
    std::vector<const R*> arg_results;
    for (const Expr& e : post_order(roots)) {
      if (memo_.contains(e.get())) continue;
      switch (e.kind()) {
        case NodeKind::Input:
          memo_.emplace(e.get(), self.visit_input(*e.as<InputNode>(), e));
          break;
        case NodeKind::Constant:
          memo_.emplace(e.get(), self.visit_constant(*e.as<ConstantNode>(), e));
          break;
        case NodeKind::Call: {
          const CallNode& call = *e.as<CallNode>();
          arg_results.clear();
          for (const Expr& a : call.args) arg_results.push_back(&result_of(a));
          R r = self.visit_call(call, e, ArgResults<R>(arg_results));
          memo_.emplace(e.get(), std::move(r));
          break;
        }
      }
    }
    std::vector<R> out;
    out.reserve(roots.size());
    for (const Expr& root : roots) out.push_back(result_of(root));
    return out;
  }
  R visit(const Expr& root) { return visit(std::span<const Expr>(&root, 1)).front(); }

  bool visited(const Expr& e) const { return memo_.contains(e.get()); }
  // The memoized result of a visited node.
  const R& result_of(const Expr& e) const {
    auto it = memo_.find(e.get());
    if (it == memo_.end())
      raise<ValueError>("internal: graph functor: node '{}' was not visited, please report",
                        e.name());
    return it->second;
  }

 protected:
  std::unordered_map<const Node*, R> memo_;
};

template <class Derived>
class ExprMutator : public ExprFunctor<Derived, Expr> {
 public:
  Expr visit_input(const InputNode&, const Expr& e) { return e; }
  Expr visit_constant(const ConstantNode&, const Expr& e) { return e; }
  Expr visit_call(const CallNode& call, const Expr& e, ArgResults<Expr> args) {
    bool changed = false;
    for (std::size_t i = 0; i < args.size(); ++i)
      changed = changed || !args[i].same_as(call.args[i]);
    if (!changed) return e;
    std::vector<Expr> new_args;
    new_args.reserve(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) new_args.push_back(args[i]);
    return with_args(call, std::move(new_args));
  }

  // The function with its results, states and params mutated. A param or state input the
  // roots do not use is visited on its own.
  Function mutate(const Function& fn) {
    std::vector<Expr> roots = this->visit(fn.roots());
    const auto n = static_cast<std::ptrdiff_t>(fn.results().size());
    std::vector<Expr> results(roots.begin(), roots.begin() + n);
    std::vector<Expr> params;
    params.reserve(fn.params().size());
    for (const Expr& p : fn.params()) params.push_back(this->visit(p));
    std::vector<State> state;
    for (std::size_t i = 0; i < fn.state().size(); ++i)
      state.push_back({this->visit(fn.state()[i].input), roots[results.size() + i]});
    return Function(std::move(params), std::move(results), std::move(state));
  }
};

}  // namespace dlavm::graph
