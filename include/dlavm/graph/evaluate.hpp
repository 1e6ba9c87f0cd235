// The reference executor: runs a typed function (graph::infer_type's result) on the host,
// every call with its op's host kernel, in post-order. It checks each input array against its
// param's type under the bindings of the symbolic dims (TypeError / ShapeError naming the
// input and the numbers), and every value a kernel produces against the call's type (a
// mismatch is an internal error). evaluate returns the results; evaluate_trace keeps every
// node's value, for per-layer comparisons.
//
//   auto typed = graph::infer_type(fn, target);
//   auto out = graph::evaluate(typed, {{"x", x_array}}, {{"token", 37}});
//   auto trace = graph::evaluate_trace(typed, {{"x", x_array}}, {{"token", 37}});
//   trace.value_of(some_node);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/te/ndarray.hpp>

#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dlavm::graph {

// An input array by param name (the array is not copied).
struct NamedArray {
  std::string_view name;
  std::reference_wrapper<const te::NDArray> value;
};

// Every node's value, in post-order (shared: a constant's value is the constant's array).
struct EvaluationTrace {
  std::vector<Expr> nodes;
  std::vector<std::shared_ptr<const te::NDArray>> values;
  std::vector<te::NDArray> results;

  // ValueError when the node is not part of the evaluated graph.
  const te::NDArray& value_of(const Expr& e) const;
};

// `ops` supplies the host kernels (the registry infer_type used).
std::vector<te::NDArray> evaluate(const Function& fn, std::span<const NamedArray> inputs,
                                  std::span<const ne::Binding> bindings, const OpRegistry& ops);
std::vector<te::NDArray> evaluate(const Function& fn, std::span<const NamedArray> inputs,
                                  std::span<const ne::Binding> bindings = {});
inline std::vector<te::NDArray> evaluate(const Function& fn,
                                         std::initializer_list<NamedArray> inputs,
                                         std::initializer_list<ne::Binding> bindings = {}) {
  return evaluate(fn, std::span(inputs.begin(), inputs.size()),
                  std::span(bindings.begin(), bindings.size()));
}

EvaluationTrace evaluate_trace(const Function& fn, std::span<const NamedArray> inputs,
                               std::span<const ne::Binding> bindings, const OpRegistry& ops);
EvaluationTrace evaluate_trace(const Function& fn, std::span<const NamedArray> inputs,
                               std::span<const ne::Binding> bindings = {});
inline EvaluationTrace evaluate_trace(const Function& fn, std::initializer_list<NamedArray> inputs,
                                      std::initializer_list<ne::Binding> bindings = {}) {
  return evaluate_trace(fn, std::span(inputs.begin(), inputs.size()),
                        std::span(bindings.begin(), bindings.size()));
}

namespace detail {
// The dims under the bindings; a dim that does not evaluate is a ValueError starting with
// `what` and `name` ("input %x dim 1 is `token`: ...": "input ", "%x"; the message is built
// only then). The executors (evaluate, Module) share it.
std::vector<std::int64_t> concrete_dims(const std::vector<ne::Expr>& shape,
                                        std::span<const ne::Binding> bindings,
                                        std::string_view what, std::string_view name = {});
}  // namespace detail

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/evaluate-inl.hpp>
#endif
