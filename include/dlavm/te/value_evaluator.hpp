// Internal: the evaluator of element expressions that te::evaluate and tir::run share. A
// class with its members in the class (no DLAVM_INLINE), so that the te and tir parts of the
// compiled library may both include it.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/te/index_eval.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/printer.hpp>

#include <cstdint>
#include <functional>
#include <span>

namespace dlavm::te::detail {

// The value of an element expression at the point bound in env.
class ValueEvaluator : public ExprFunctor<ValueEvaluator, std::int64_t> {
 public:
  using ReadFn = std::function<std::int64_t(const ReadNode&, std::span<const std::int64_t>)>;
  using LoadFn = std::function<std::int64_t(const LoadNode&, std::span<const std::int64_t>)>;
  ValueEvaluator(IndexEnv& env, ReadFn read, LoadFn load = {})
      : env_(env), read_(std::move(read)), load_(std::move(load)) {}

  std::int64_t visit_int(const IntImmNode& n, const Expr&) { return n.value; }
  std::int64_t visit_cast(const CastNode& n, const Expr&) { return n.dtype().wrap(visit(n.value)); }
  std::int64_t visit_binary(const BinaryNode& n, const Expr& e) {
    const auto a = visit(n.a);
    const auto b = visit(n.b);
    if (is_division(n.kind()) && b == 0) raise<ArithmeticError>("`{}` divides {} by zero", e, a);
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

}  // namespace dlavm::te::detail
