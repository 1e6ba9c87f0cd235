// Definitions for graph/evaluate.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/eval.hpp>

#include <fmt/format.h>

#include <memory>

namespace dlavm::graph {

namespace detail {

DLAVM_INLINE std::vector<std::int64_t> concrete_dims(const std::vector<ne::Expr>& shape,
                                                     std::span<const ne::Binding> bindings,
                                                     std::string_view what, std::string_view name) {
  std::vector<std::int64_t> out;
  out.reserve(shape.size());
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (const auto c = shape[k].as_int()) {  // most dims (no evaluation)
      out.push_back(*c);
      continue;
    }
    try {
      out.push_back(ne::eval(shape[k], bindings));
    } catch (const ValueError& e) {
      raise<ValueError>("{}{} dim {} is `{}`: {}", what, name, k, shape[k], e.what());
    }
  }
  return out;
}

// The concrete shape of a type under the bindings; `what` names the node for messages.
inline std::vector<std::int64_t> concrete_shape(const TensorType& t,
                                                std::span<const ne::Binding> bindings,
                                                std::string_view what) {
  return concrete_dims(t.shape, bindings, fmt::format("evaluate: {}", what));
}

using ArrayPtr = std::shared_ptr<const te::NDArray>;

// Values are shared: constants are never copied.
class Evaluator : public ExprFunctor<Evaluator, ArrayPtr> {
 public:
  Evaluator(const Function& fn, std::span<const NamedArray> inputs,
            std::span<const ne::Binding> bindings, const OpRegistry& ops)
      : names_(fn), inputs_(inputs), bindings_(bindings), ops_(ops) {
    check_inputs(fn);
  }

  ArrayPtr visit_input(const InputNode& n, const Expr& e) {
    for (const NamedArray& in : inputs_)
      if (in.name == n.name) return std::make_shared<const te::NDArray>(in.value.get());
    raise<ValueError>("evaluate: no array for input {}", names_.name(e));
  }
  ArrayPtr visit_constant(const ConstantNode& n, const Expr&) { return n.value; }
  ArrayPtr visit_call(const CallNode& call, const Expr& e, ArgResults<ArrayPtr> args) {
    const std::string label = names_.label(e);
    if (!call.type)
      raise<ValueError>("evaluate: {} has no type; run graph::infer_type on the function first",
                        label);
    const OpRecord& op = ops_.at(call.op());
    std::vector<const te::NDArray*> arrays;
    for (std::size_t i = 0; i < args.size(); ++i) arrays.push_back(args[i].get());
    auto out = std::make_shared<const te::NDArray>(op.host_kernel(arrays, call.attrs));
    check_output(*call.type, *out, label);
    return out;
  }

 private:
  // The params and the state inputs: the reference takes the states' values as inputs.
  void check_inputs(const Function& fn) const {
    std::vector<Expr> leaves = fn.params();
    for (const auto& st : fn.state()) leaves.push_back(st.input);
    for (const NamedArray& in : inputs_) {
      bool known = false;
      for (const Expr& p : leaves) known = known || p.name() == in.name;
      if (!known) {
        std::vector<std::string_view> params;
        for (const Expr& p : leaves) params.push_back(p.name());
        raise<ValueError>("evaluate: '{}' is not an input of the function (its inputs: {})",
                          in.name, fmt::join(params, ", "));
      }
    }
    for (const Expr& p : leaves) {
      const NamedArray* given = nullptr;
      for (const NamedArray& in : inputs_)
        if (in.name == p.name()) given = &in;
      const std::string what = fmt::format("input {}", names_.name(p));
      if (given == nullptr)
        raise<ValueError>("evaluate: no array for {} ({})", what, type_text(p.type()));
      const te::NDArray& a = given->value.get();
      if (a.dtype() != p.type().dtype)
        raise<TypeError>("evaluate: {} is {} but its array is {}", what, type_text(p.type()),
                         a.dtype());
      const auto want = concrete_shape(p.type(), bindings_, what);
      if (a.shape() != want)
        raise<ShapeError>("evaluate: {} is {}, [{}] under the bindings, but its array is [{}]",
                          what, type_text(p.type()), fmt::join(want, ", "),
                          fmt::join(a.shape(), ", "));
    }
  }

  void check_output(const TensorType& type, const te::NDArray& out,
                    const std::string& label) const {
    const auto want = concrete_shape(type, bindings_, label);
    if (out.dtype() != type.dtype || out.shape() != want)
      raise<ValueError>(
          "internal: evaluate: {} produced {}[{}] but its type is {} = {}[{}], please report",
          label, out.dtype(), fmt::join(out.shape(), ", "), type_text(type), type.dtype,
          fmt::join(want, ", "));
  }

  NodeNames names_;
  std::span<const NamedArray> inputs_;
  std::span<const ne::Binding> bindings_;
  const OpRegistry& ops_;
};

}  // namespace detail

DLAVM_INLINE const te::NDArray& EvaluationTrace::value_of(const Expr& e) const {
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].same_as(e)) return *values[i];
  raise<ValueError>("EvaluationTrace: node '{}' is not part of the evaluated graph",
                    e.defined() ? e.name() : std::string("<undefined>"));
}

DLAVM_INLINE std::vector<te::NDArray> evaluate(const Function& fn,
                                               std::span<const NamedArray> inputs,
                                               std::span<const ne::Binding> bindings,
                                               const OpRegistry& ops) {
  std::vector<te::NDArray> results;
  for (const auto& r : detail::Evaluator(fn, inputs, bindings, ops).visit(fn.results()))
    results.push_back(*r);
  return results;
}

DLAVM_INLINE std::vector<te::NDArray> evaluate(const Function& fn,
                                               std::span<const NamedArray> inputs,
                                               std::span<const ne::Binding> bindings) {
  return evaluate(fn, inputs, bindings, default_ops());
}

DLAVM_INLINE EvaluationTrace evaluate_trace(const Function& fn, std::span<const NamedArray> inputs,
                                            std::span<const ne::Binding> bindings,
                                            const OpRegistry& ops) {
  detail::Evaluator ev(fn, inputs, bindings, ops);
  EvaluationTrace trace;
  ev.visit(fn.roots());
  for (const auto& r : fn.results()) trace.results.push_back(*ev.result_of(r));
  trace.nodes = post_order(fn.roots());
  for (const Expr& e : trace.nodes) trace.values.push_back(ev.result_of(e));
  return trace;
}

DLAVM_INLINE EvaluationTrace evaluate_trace(const Function& fn, std::span<const NamedArray> inputs,
                                            std::span<const ne::Binding> bindings) {
  return evaluate_trace(fn, inputs, bindings, default_ops());
}

}  // namespace dlavm::graph
