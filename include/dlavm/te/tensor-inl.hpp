// Definitions for dlavm/te/tensor.hpp (see core/api.hpp).
#pragma once

#include <dlavm/te/tensor.hpp>

namespace dlavm::te::detail {

DLAVM_INLINE void check_shape(const std::string& name, const std::vector<ne::Expr>& shape) {
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (!shape[k].defined()) raise<ShapeError>("tensor '{}': dim {} is undefined", name, k);
    const auto b = ne::bounds(shape[k]);
    if (b.max < 1)
      raise<ShapeError>("tensor '{}': dim {} is {}, which is never positive (at most {})", name, k,
                        shape[k], b.max);
    if (b.min < 1)
      raise<ShapeError>("tensor '{}': dim {} is {}, which can be {} (dims must be >= 1)", name, k,
                        shape[k], b.min);
  }
}

DLAVM_INLINE void rethrow_in_compute(const std::string& name) {
  const auto in_compute = [&](const Error& e) {
    return fmt::format("compute '{}': {}", name, e.what());
  };
  // The kinds a body's builders raise; any other passes through unchanged.
  try {
    throw;
  } catch (const TypeError& e) {
    throw TypeError(in_compute(e));
  } catch (const ShapeError& e) {
    throw ShapeError(in_compute(e));
  } catch (const ScheduleError& e) {
    throw ScheduleError(in_compute(e));
  } catch (const ValueError& e) {
    throw ValueError(in_compute(e));
  } catch (const ArithmeticError& e) {
    throw ArithmeticError(in_compute(e));
  }
}

DLAVM_INLINE Tensor make_compute(std::string name, std::vector<ne::Expr> shape,
                                 std::vector<IterVar> axis, Expr body) {
  if (!body.defined()) raise<ValueError>("compute '{}': the lambda returned no expression", name);
  std::vector<IterVar> reduce_axis;
  if (const auto* r = body.as<ReduceNode>()) reduce_axis = r->axes;
  struct NestedReduce : ExprVisitor<NestedReduce> {
    bool top = true, nested = false;
    void visit_reduce(const ReduceNode& n, const Expr&) {
      nested = nested || !top;
      top = false;
      visit(n.source);
    }
    void visit_cast(const CastNode& n, const Expr&) {
      top = false;
      visit(n.value);
    }
    void visit_binary(const BinaryNode& n, const Expr&) {
      top = false;
      visit(n.a);
      visit(n.b);
    }
    void visit_select(const SelectNode& n, const Expr&) {
      top = false;
      visit(n.cond);
      visit(n.t);
      visit(n.f);
    }
  } nested;
  nested.visit(body);
  if (nested.nested)
    raise<ScheduleError>(
        "compute '{}': a reduction must be the whole body (te::sum(...)), not part of it; "
        "compute the reduction as its own tensor",
        name);
  // A range can only name variables created before it: reductions newest first, then the
  // data-parallel axes (whose ranges name symbolic dims only).
  auto newest_first = reduce_axis;
  std::sort(newest_first.begin(), newest_first.end(),
            [](const IterVar& a, const IterVar& b) { return a.var().id() > b.var().id(); });
  std::vector<ne::Sweep> sweep;
  for (const auto& r : newest_first) sweep.push_back({r.var(), r.dom().min, r.dom().extent});
  for (const auto& a : axis) sweep.push_back({a.var(), a.dom().min, a.dom().extent});
  ReadCollector reads(name, std::move(sweep));
  reads.visit(body);
  const DType dtype = body.dtype();
  return Tensor(make_ref<OperationNode>(OpKind::Compute, std::move(name), dtype, std::move(shape),
                                        std::move(axis), std::move(reduce_axis), std::move(body),
                                        std::move(reads.inputs)));
}

}  // namespace dlavm::te::detail

namespace dlavm::te {

DLAVM_INLINE Tensor placeholder(std::vector<ne::Expr> shape, DType dtype, std::string name) {
  detail::check_shape(name, shape);
  return Tensor(make_ref<OperationNode>(OpKind::Placeholder, std::move(name), dtype,
                                        std::move(shape), std::vector<IterVar>{},
                                        std::vector<IterVar>{}, Expr(), std::vector<Operation>{}));
}

DLAVM_INLINE std::vector<Operation> topo_order(std::span<const Tensor> outputs) {
  std::vector<Operation> order;
  std::unordered_set<const OperationNode*> done;
  auto visit = [&](auto& self, const Operation& op) -> void {
    if (!done.insert(op.get()).second) return;
    for (const auto& in : op->inputs) self(self, in);
    order.push_back(op);
  };
  for (const auto& t : outputs) visit(visit, t.op());
  return order;
}

}  // namespace dlavm::te
