// te::evaluate: computes a tensor straight from its definition, element by element, with no
// schedule. It is the independent reference that lowered programs are checked against.
//
//   auto c = te::evaluate(C, {{A, a}, {B, b}}, {{"token", 37}});
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/te/index_eval.hpp>
#include <dlavm/te/ndarray.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/tensor.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlavm::te {

using TensorBinding = std::pair<Tensor, std::reference_wrapper<const NDArray>>;

namespace detail {

// The value of an element expression at the point bound in env.
class ValueEvaluator : public ExprFunctor<ValueEvaluator, std::int64_t> {
 public:
  using ReadFn = std::function<std::int64_t(const ReadNode&, std::span<const std::int64_t>)>;
  using LoadFn = std::function<std::int64_t(const LoadNode&, std::span<const std::int64_t>)>;
  ValueEvaluator(IndexEnv& env, ReadFn read, LoadFn load = {})
      : env_(env), read_(std::move(read)), load_(std::move(load)) {}

  std::int64_t visit_int(const IntImmNode& n, const Expr&) { return n.value; }
  std::int64_t visit_cast(const CastNode& n, const Expr&) { return n.dtype().wrap(visit(n.value)); }
  std::int64_t visit_binary(const BinaryNode& n, const Expr&) {
    const auto a = visit(n.a);
    const auto b = visit(n.b);
    return apply_binary(n.kind(), n.a.dtype(), a, b);
  }
  std::int64_t visit_not(const NotNode& n, const Expr&) { return visit(n.a) == 0; }
  std::int64_t visit_select(const SelectNode& n, const Expr&) {
    // Only the taken branch is evaluated: padding reads outside a tensor sit in the other.
    return visit(n.cond) != 0 ? visit(n.t) : visit(n.f);
  }
  std::int64_t visit_index(const IndexNode& n, const Expr&) {
    const auto v = env_.eval(n.index);
    return n.dtype() == bool_type ? (v != 0) : n.dtype().wrap(v);
  }
  std::int64_t visit_read(const ReadNode& n, const Expr&) {
    return read_(n, eval_indices(n.indices));
  }
  std::int64_t visit_load(const LoadNode& n, const Expr&) {
    if (!load_) raise<ValueError>("te::evaluate: buffer load '{}' outside TIR", n.buffer.name());
    return load_(n, eval_indices(n.indices));
  }
  std::int64_t visit_reduce(const ReduceNode& n, const Expr&) {
    std::int64_t acc = combiner_identity(n.combiner, n.dtype());
    reduce_over(n, 0, acc);
    return acc;
  }
  std::int64_t visit_call(const CallNode& n, const Expr&) {
    raise<ValueError>("te::evaluate: intrinsic call '{}' has no reference semantics", n.name);
  }

 private:
  std::vector<std::int64_t> eval_indices(const std::vector<ne::Expr>& indices) {
    std::vector<std::int64_t> out;
    out.reserve(indices.size());
    for (const auto& i : indices) out.push_back(env_.eval(i));
    return out;
  }
  void reduce_over(const ReduceNode& n, std::size_t k, std::int64_t& acc) {
    if (k == n.axes.size()) {
      acc = apply_binary(combiner_kind(n.combiner), n.dtype(), acc, visit(n.source));
      return;
    }
    const auto& ax = n.axes[k];
    const auto lo = env_.eval(ax.dom().min);
    const auto extent = env_.eval(ax.dom().extent);
    const auto slot = env_.push(ax.var(), lo);
    for (std::int64_t v = lo; v < lo + extent; ++v) {
      env_.set(slot, v);
      reduce_over(n, k + 1, acc);
    }
    env_.pop();
  }

  IndexEnv& env_;
  ReadFn read_;
  LoadFn load_;
};

inline std::vector<std::int64_t> eval_shape(const std::vector<ne::Expr>& shape,
                                            const IndexEnv& env) {
  std::vector<std::int64_t> dims;
  for (const auto& d : shape) dims.push_back(env.eval(d));
  return dims;
}

class TensorEvaluator {
 public:
  TensorEvaluator(std::span<const TensorBinding> inputs, std::span<const ne::Binding> bindings)
      : inputs_(inputs), bindings_(bindings) {}

  const NDArray& get(const Operation& op) {
    if (auto it = memo_.find(op.get()); it != memo_.end()) return it->second;
    IndexEnv env(bindings_);
    const auto dims = eval_shape(op->shape, env);
    if (op->kind == OpKind::Placeholder) {
      for (const auto& [t, a] : inputs_) {
        if (t.op() != op) continue;
        const NDArray& arr = a.get();
        if (arr.shape() != dims)
          raise<ShapeError>("te::evaluate: input '{}' has shape [{}], expected [{}]", op->name,
                            fmt::join(arr.shape(), ", "), fmt::join(dims, ", "));
        if (arr.dtype() != op->dtype)
          raise<TypeError>("te::evaluate: input '{}' has dtype {}, expected {}", op->name,
                           arr.dtype(), op->dtype);
        return arr;
      }
      raise<ValueError>("te::evaluate: no data given for placeholder '{}'", op->name);
    }
    NDArray out(op->dtype, dims);
    std::vector<std::int64_t> point(dims.size(), 0);
    std::vector<std::size_t> slots;
    for (const auto& ax : op->axis) slots.push_back(env.push(ax.var(), 0));
    ValueEvaluator value(env, [this](const ReadNode& r, std::span<const std::int64_t> idx) {
      const NDArray& src = get(r.op);
      return src.data()[src.offset(idx, r.op->name)];
    });
    for (std::size_t flat = 0; flat < out.size(); ++flat) {
      // Bind every axis for this point (row-major).
      std::size_t rest = flat;
      for (std::size_t k = dims.size(); k-- > 0;) {
        point[k] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(dims[k]));
        rest /= static_cast<std::size_t>(dims[k]);
      }
      for (std::size_t k = 0; k < dims.size(); ++k) env.set(slots[k], point[k]);
      out.set_flat(flat, value.visit(op->body));
    }
    return memo_.emplace(op.get(), std::move(out)).first->second;
  }

 private:
  std::span<const TensorBinding> inputs_;
  std::span<const ne::Binding> bindings_;
  std::unordered_map<const OperationNode*, NDArray> memo_;
};

}  // namespace detail

inline NDArray evaluate(const Tensor& t, std::span<const TensorBinding> inputs,
                        std::span<const ne::Binding> bindings = {}) {
  detail::TensorEvaluator ev(inputs, bindings);
  return ev.get(t.op());
}
inline NDArray evaluate(const Tensor& t, std::initializer_list<TensorBinding> inputs,
                        std::initializer_list<ne::Binding> bindings = {}) {
  return evaluate(t, std::span<const TensorBinding>(inputs.begin(), inputs.size()),
                  std::span<const ne::Binding>(bindings.begin(), bindings.size()));
}

}  // namespace dlavm::te
