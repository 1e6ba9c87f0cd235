// Definitions for dlavm/te/evaluate.hpp (see core/api.hpp).
#pragma once

#include <dlavm/te/evaluate.hpp>
#include <dlavm/te/value_evaluator.hpp>

namespace dlavm::te {

namespace detail {

std::vector<std::int64_t> eval_shape(const std::vector<ne::Expr>& shape, const IndexEnv& env);

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

}  // namespace dlavm::te

namespace dlavm::te::detail {

DLAVM_INLINE std::vector<std::int64_t> eval_shape(const std::vector<ne::Expr>& shape,
                                                  const IndexEnv& env) {
  std::vector<std::int64_t> dims;
  for (const auto& d : shape) dims.push_back(env.eval(d));
  return dims;
}

}  // namespace dlavm::te::detail

namespace dlavm::te {

DLAVM_INLINE NDArray evaluate(const Tensor& t, std::span<const TensorBinding> inputs,
                              std::span<const ne::Binding> bindings) {
  detail::TensorEvaluator ev(inputs, bindings);
  return ev.get(t.op());
}

DLAVM_INLINE NDArray evaluate(const Tensor& t, std::initializer_list<TensorBinding> inputs,
                              std::initializer_list<ne::Binding> bindings) {
  return evaluate(t, std::span<const TensorBinding>(inputs.begin(), inputs.size()),
                  std::span<const ne::Binding>(bindings.begin(), bindings.size()));
}

}  // namespace dlavm::te
