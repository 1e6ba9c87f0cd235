// Definitions for graph/node.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/printer.hpp>
#include <dlavm/ne/structural.hpp>

#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>

namespace dlavm::graph {

DLAVM_INLINE std::string_view device_name(Device d) {
  switch (d) {
    case Device::Any:
      return "any";
    case Device::Host:
      return "host";
    case Device::Vta:
      return "vta";
  }
  raise<ValueError>("internal: unknown Device {}, please report", static_cast<int>(d));
}

DLAVM_INLINE bool same_type(const TensorType& a, const TensorType& b) {
  if (a.dtype != b.dtype || a.shape.size() != b.shape.size()) return false;
  for (std::size_t k = 0; k < a.shape.size(); ++k)
    if (!ne::equal(a.shape[k], b.shape[k])) return false;
  return true;
}

namespace detail {
inline const Node& node_of(const Expr& e) {
  if (!e.defined()) raise<ValueError>("graph: use of an undefined Expr");
  return *e.get();
}
}  // namespace detail

DLAVM_INLINE NodeKind Expr::kind() const { return detail::node_of(*this).kind; }
DLAVM_INLINE const std::string& Expr::name() const { return detail::node_of(*this).name; }
DLAVM_INLINE bool Expr::has_type() const { return detail::node_of(*this).type.has_value(); }
DLAVM_INLINE Device Expr::device() const { return detail::node_of(*this).device; }

DLAVM_INLINE const TensorType& Expr::type() const {
  const Node& n = detail::node_of(*this);
  if (!n.type)
    raise<ValueError>("graph: call '{}' has no type yet; run graph::infer_type first", n.name);
  return *n.type;
}

DLAVM_INLINE CallNode::~CallNode() {
  // Arguments only this node holds are moved to a work list and taken apart there, one level
  // at a time, so each destructor runs with its arguments already gone.
  std::vector<Expr> pending;
  auto take_args = [&pending](CallNode& call) {
    for (Expr& a : call.args)
      if (a.get() != nullptr && a.as<CallNode>() != nullptr && a.use_count() == 1)
        pending.push_back(std::move(a));
    call.args.clear();
  };
  take_args(*this);
  while (!pending.empty()) {
    Expr e = std::move(pending.back());
    pending.pop_back();
    // the only handle: the node dies with `e`, so take its arguments first (it was created
    // non-const, see make_shared<CallNode> below)
    if (e.use_count() == 1) take_args(const_cast<CallNode&>(*e.as<CallNode>()));
  }
}

namespace detail {

// An input; `state`: a variable dim of minimum 0 may be empty (state_input).
inline Expr make_input(std::string name, std::vector<ne::Expr> shape, DType dtype, bool state) {
  const char* who = state ? "graph::state_input" : "graph::input";
  if (name.empty()) raise<ValueError>("{}: the name is empty", who);
  if (dtype.lanes() != 1 || (dtype.is_float() && dtype != DType::float32()))
    raise<TypeError>("{} '{}': dtype {} is not supported (scalar integers or float32)", who, name,
                     dtype);
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (!shape[k].defined()) raise<ShapeError>("{} '{}': dim {} is undefined", who, name, k);
    const auto b = ne::bounds(shape[k]);
    const bool may_be_empty = state && b.min == 0 && shape[k].as<ne::VarNode>() != nullptr;
    if (b.min < 1 && !may_be_empty)
      raise<ShapeError>(
          "{} '{}': dim {} is {}, which can be {} (dims must be >= 1{})", who, name, k, shape[k],
          b.min,
          state ? ", or one variable of minimum 0" : "; a state's may be 0: graph::state_input");
  }
  return Expr(
      std::make_shared<const InputNode>(std::move(name), TensorType{std::move(shape), dtype}));
}

}  // namespace detail

DLAVM_INLINE Expr input(std::string name, std::vector<ne::Expr> shape, DType dtype) {
  return detail::make_input(std::move(name), std::move(shape), dtype, false);
}

DLAVM_INLINE Expr state_input(std::string name, std::vector<ne::Expr> shape, DType dtype) {
  return detail::make_input(std::move(name), std::move(shape), dtype, true);
}

DLAVM_INLINE Expr constant(std::string name, std::shared_ptr<const te::NDArray> value) {
  if (name.empty()) raise<ValueError>("graph::constant: the name is empty");
  if (!value) raise<ValueError>("graph::constant '{}': no value", name);
  std::vector<ne::Expr> shape;
  for (std::int64_t d : value->shape()) {
    if (d < 1)
      raise<ShapeError>("graph::constant '{}': shape [{}] has a dim < 1", name,
                        fmt::join(value->shape(), ", "));
    shape.emplace_back(d);
  }
  TensorType type{std::move(shape), value->dtype()};
  return Expr(
      std::make_shared<const ConstantNode>(std::move(name), std::move(type), std::move(value)));
}

DLAVM_INLINE Expr constant(std::string name, te::NDArray value) {
  return constant(std::move(name), std::make_shared<const te::NDArray>(std::move(value)));
}

namespace detail {
inline void check_call(std::string_view op, const std::vector<Expr>& args) {
  if (op.empty()) raise<ValueError>("graph::call: the op name is empty");
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!args[i].defined()) raise<ValueError>("graph::call '{}': argument {} is undefined", op, i);
}
}  // namespace detail

DLAVM_INLINE Expr call(std::string op, std::vector<Expr> args, Attrs attrs,
                       std::string result_name) {
  detail::check_call(op, args);
  return Expr(std::make_shared<CallNode>(std::move(op), std::move(args), std::move(attrs),
                                         std::nullopt, Device::Any, std::move(result_name)));
}

DLAVM_INLINE Expr typed_call(std::string op, std::vector<Expr> args, Attrs attrs, TensorType type,
                             Device device, std::string result_name) {
  detail::check_call(op, args);
  return Expr(std::make_shared<CallNode>(std::move(op), std::move(args), std::move(attrs),
                                         std::move(type), device, std::move(result_name)));
}

DLAVM_INLINE Expr named(const Expr& e, std::string name) {
  const auto* c = e.as<CallNode>();
  if (c == nullptr)
    raise<ValueError>(
        "graph::named: '{}' is {}; only calls are named this way (inputs and "
        "constants have their names)",
        detail::node_of(e).name, e.kind() == NodeKind::Input ? "an input" : "a constant");
  if (name.empty()) raise<ValueError>("graph::named: the name for a call '{}' is empty", c->op());
  return Expr(
      std::make_shared<CallNode>(c->op(), c->args, c->attrs, c->type, c->device, std::move(name)));
}

DLAVM_INLINE Expr with_args(const CallNode& call, std::vector<Expr> args) {
  if (args.size() != call.args.size())
    raise<ValueError>("internal: with_args: {} arguments for a call '{}' of {}, please report",
                      args.size(), call.op(), call.args.size());
  detail::check_call(call.op(), args);
  return Expr(std::make_shared<CallNode>(call.op(), std::move(args), call.attrs, call.type,
                                         call.device, call.result_name));
}

DLAVM_INLINE std::vector<Expr> post_order(std::span<const Expr> roots) {
  std::vector<Expr> order;
  std::unordered_set<const Node*> done;
  struct Frame {
    const Expr* expr;
    std::size_t next_arg;
  };
  std::vector<Frame> stack;
  for (const Expr& root : roots) {
    if (!root.defined()) raise<ValueError>("graph: traversal of an undefined Expr");
    if (done.contains(root.get())) continue;
    stack.push_back({&root, 0});
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (const auto* call = top.expr->as<CallNode>()) {
        while (top.next_arg < call->args.size() && done.contains(call->args[top.next_arg].get()))
          ++top.next_arg;
        if (top.next_arg < call->args.size()) {
          const Expr* arg = &call->args[top.next_arg];
          stack.push_back({arg, 0});  // invalidates `top`; the loop starts over
          continue;
        }
      }
      done.insert(top.expr->get());
      order.push_back(*top.expr);
      stack.pop_back();
    }
  }
  return order;
}

DLAVM_INLINE Function::Function(std::vector<Expr> params, std::vector<Expr> results,
                                std::vector<State> state)
    : params_(std::move(params)), results_(std::move(results)), state_(std::move(state)) {
  if (results_.empty()) raise<ValueError>("graph::function: no results");
  // params and state inputs: uniquely named Inputs
  std::unordered_map<std::string_view, std::size_t> param_index;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Expr& p = params_[i];
    if (!p.defined()) raise<ValueError>("graph::function: param {} is undefined", i);
    if (p.kind() != NodeKind::Input)
      raise<ValueError>("graph::function: param {} ('{}') is a {}; params must be inputs", i,
                        p.name(), p.kind() == NodeKind::Constant ? "constant" : "call");
    if (!param_index.emplace(p.name(), i).second)
      raise<ValueError>("graph::function: params {} and {} are both named '{}'",
                        param_index[p.name()], i, p.name());
    for (std::size_t k = 0; k < p.type().ndim(); ++k)
      if (ne::bounds(p.type().shape[k]).min < 1)
        raise<ShapeError>(
            "graph::function: param '{}' can be empty along dim {} (`{}`); only a state may be "
            "(graph::state_input)",
            p.name(), k, p.type().shape[k]);
  }
  std::unordered_set<std::string_view> state_names;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    const auto& [in, next] = state_[i];
    if (!in.defined() || !next.defined())
      raise<ValueError>("graph::function: state {} has an undefined input or next value", i);
    if (in.kind() != NodeKind::Input)
      raise<ValueError>(
          "graph::function: state {} ('{}') is not an input; a state is an input "
          "the module keeps",
          i, in.name());
    if (param_index.contains(in.name()) || !state_names.insert(in.name()).second)
      raise<ValueError>("graph::function: state '{}' is also a param or another state", in.name());
    for (std::size_t k = 0; k < in.type().ndim(); ++k) {
      const auto& d = in.type().shape[k];
      const auto* v = d.as<ne::VarNode>();
      if (!d.is_const() && (v == nullptr || v->min < 0))
        raise<ShapeError>(
            "graph::function: state '{}' has the symbolic dim {} `{}`; a state's dim is a "
            "constant or one variable of range [0, max] (a length that grows from run to run, "
            "such as a KV cache's last_token)",
            in.name(), k, d);
    }
  }
  for (std::size_t i = 0; i < results_.size(); ++i)
    if (!results_[i].defined()) raise<ValueError>("graph::function: result {} is undefined", i);
  roots_ = results_;
  for (const auto& st : state_) roots_.push_back(st.next);
  // the leaves the roots use: one node per name, and every input a param or a state
  std::unordered_map<std::string_view, const Node*> leaf_by_name;
  for (const Expr& p : params_) leaf_by_name.emplace(p.name(), p.get());
  for (const auto& st : state_) leaf_by_name.emplace(st.input.name(), st.input.get());
  std::unordered_map<std::string_view, const Node*> call_by_name;
  const auto order = post_order(roots_);
  for (const Expr& e : order) {
    if (const auto* c = e.as<CallNode>()) {
      if (!c->result_name.empty()) call_by_name.emplace(c->result_name, c);
      continue;
    }
    const auto it = leaf_by_name.emplace(e.name(), e.get()).first;
    if (it->second != e.get())
      raise<ValueError>(
          "graph::function: two different leaves (inputs or constants) are named '{}'; a name "
          "must identify one value",
          e.name());
    if (e.kind() == NodeKind::Input && !param_index.contains(e.name()) &&
        !state_names.contains(e.name()))
      raise<ValueError>("graph::function: input '{}' is used by the results but is not a param",
                        e.name());
  }
  // named calls: one node per name, no name shared with a leaf
  for (const Expr& e : order) {
    const auto* c = e.as<CallNode>();
    if (c == nullptr || c->result_name.empty()) continue;
    if (call_by_name.at(c->result_name) != c)
      raise<ValueError>(
          "graph::function: two different calls ('{}' and another) produce a value named '{}'; "
          "a name must identify one value",
          c->op(), c->result_name);
    if (leaf_by_name.contains(c->result_name))
      raise<ValueError>(
          "graph::function: a call '{}' produces a value named '{}', as an input or constant is "
          "named; a name must identify one value",
          c->op(), c->result_name);
  }
}

}  // namespace dlavm::graph
