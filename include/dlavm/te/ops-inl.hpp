// Definitions for dlavm/te/ops.hpp (see core/api.hpp).
#pragma once

#include <dlavm/te/ops.hpp>
#include <dlavm/te/printer.hpp>

#include <unordered_set>

namespace dlavm::te::detail {

DLAVM_INLINE Expr make_const(std::int64_t v, DType t, bool literal) {
  return Expr(make_ref<IntImmNode>(v, t, literal));
}

DLAVM_INLINE bool is_literal(const Expr& e) {
  const auto* imm = e.as<IntImmNode>();
  return imm != nullptr && imm->literal;
}

DLAVM_INLINE Expr retype_literal(const Expr& e, DType t, std::string_view context) {
  const auto v = e.as<IntImmNode>()->value;
  if (t.is_float())
    raise<TypeError>("{}: literal {} meets a {} operand; dlavm computes on integer types only",
                     context, v, t);
  if (v < t.min_value() || v > t.max_value())
    raise<TypeError>("{}: literal {} does not fit in {} (range {}..{})", context, v, t,
                     t.min_value(), t.max_value());
  return make_const(v, t);
}

DLAVM_INLINE void require_defined(const Expr& e, std::string_view context) {
  if (!e.defined()) raise<ValueError>("te: {} of an undefined expression", context);
}

// The te::sum a value gets its dtype from: through arithmetic and selects (whose operands
// share their dtype) and into the bodies of the computes it reads. A cast, a placeholder or
// a max/min reduction decide the dtype themselves: no sum then.
class SumOrigin : public ExprVisitor<SumOrigin> {
 public:
  const OperationNode* op = nullptr;  // the compute whose body holds the sum, if read
  const ReduceNode* sum = nullptr;

  void visit_cast(const CastNode&, const Expr&) {}
  void visit_not(const NotNode&, const Expr&) {}
  void visit_binary(const BinaryNode& n, const Expr&) {
    if (!is_arith(n.kind())) return;
    for (const auto* side : {&n.a, &n.b})
      if (sum == nullptr && !is_literal(*side)) visit(*side);
  }
  void visit_select(const SelectNode& n, const Expr&) {
    visit(n.t);
    if (sum == nullptr) visit(n.f);
  }
  void visit_reduce(const ReduceNode& n, const Expr&) {
    if (n.combiner == Combiner::Sum) sum = &n;
  }
  void visit_read(const ReadNode& n, const Expr&) {
    if (n.op->kind != OpKind::Compute || !seen_.insert(n.op.get()).second) return;
    visit(n.op->body);
    if (sum != nullptr && op == nullptr) op = n.op.get();
  }

 private:
  std::unordered_set<const OperationNode*> seen_;  // a DAG of computes is walked once
};

// The text of an operand in a message, cut when long.
DLAVM_INLINE std::string brief(const Expr& e) {
  constexpr std::size_t limit = 60;
  auto text = to_string(e);
  if (text.size() > limit) text = text.substr(0, limit - 3) + "...";
  return text;
}

// The fix when `narrow` takes its dtype from a te::sum and `wide` is wider: accumulate in
// wide's dtype by casting inside the sum (casting `wide` down would drop the high bits).
DLAVM_INLINE std::string narrow_sum_hint(const SumOrigin& origin, DType narrow, DType wide) {
  const auto& source = origin.sum->source;
  std::string cast_source;
  if (const auto* mul = source.as<BinaryNode>(); mul != nullptr && mul->kind() == ExprKind::Mul)
    cast_source = fmt::format("te::cast({}, {}) * te::cast({}, {})", wide, brief(mul->a), wide,
                              brief(mul->b));
  else
    cast_source = fmt::format("te::cast({}, {})", wide, brief(source));
  const auto why = origin.op != nullptr ? fmt::format(
                                              "compute '{}' produces {} because its "
                                              "te::sum adds",
                                              origin.op->name, narrow)
                                        : fmt::format("the te::sum is {} because it adds", narrow);
  return fmt::format(
      "; {} {} values {}: cast the operands inside te::sum to the accumulator type, "
      "te::sum({}, ...), rather than the {} operand to {}",
      why, narrow, brief(source), cast_source, wide, narrow);
}

DLAVM_INLINE std::string explain_mismatch(const Expr& a, const Expr& b) {
  auto text = fmt::format(" ({} is {}, {} is {})", brief(a), a.dtype(), brief(b), b.dtype());
  for (const auto& [narrow, wide] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    if (narrow->dtype().bits() >= wide->dtype().bits()) continue;
    SumOrigin origin;
    origin.visit(*narrow);
    if (origin.sum != nullptr)
      return text + narrow_sum_hint(origin, narrow->dtype(), wide->dtype());
  }
  return text + "; convert one with te::cast";
}

}  // namespace dlavm::te::detail

namespace dlavm::te {

DLAVM_INLINE Expr make_const(std::int64_t v, DType t) {
  if (t.is_integral() && (v < t.min_value() || v > t.max_value()))
    raise<TypeError>("te::make_const: {} does not fit in {} (range {}..{})", v, t, t.min_value(),
                     t.max_value());
  return detail::make_const(v, t);
}

DLAVM_INLINE Expr binary(ExprKind k, Expr a, Expr b) {
  detail::require_defined(a, op_symbol(k));
  detail::require_defined(b, op_symbol(k));
  const auto context = fmt::format("{}{}", is_call_style(k) ? "te::" : "operator ", op_symbol(k));
  const bool la = detail::is_literal(a), lb = detail::is_literal(b);
  if (la && !lb) a = detail::retype_literal(a, b.dtype(), context);
  if (lb && !la) b = detail::retype_literal(b, a.dtype(), context);
  const bool logical = k == ExprKind::And || k == ExprKind::Or;
  if (logical && (a.dtype() != bool_type || b.dtype() != bool_type))
    raise<TypeError>("{} needs conditions, got {} and {}", context, a.dtype(), b.dtype());
  if (a.dtype() != b.dtype())
    raise<TypeError>("{}: operands have types {} and {}{}", context, a.dtype(), b.dtype(),
                     detail::explain_mismatch(a, b));
  if (a.dtype().is_float())
    raise<TypeError>("{}: {} operands; dlavm computes on integer types only", context, a.dtype());
  if (is_division(k) && b.as<IntImmNode>() != nullptr && b.as<IntImmNode>()->value == 0)
    raise<ArithmeticError>("{}: {} divided by constant zero", context, detail::brief(a));
  const DType result = is_comparison(k) || logical ? bool_type : a.dtype();
  const auto* x = a.as<IntImmNode>();
  const auto* y = b.as<IntImmNode>();
  if (x != nullptr && y != nullptr)
    return detail::make_const(detail::apply_binary(k, a.dtype(), x->value, y->value), result,
                              la && lb);
  return Expr(make_ref<BinaryNode>(k, result, std::move(a), std::move(b)));
}

DLAVM_INLINE Expr operator+(Expr a, Expr b) {
  return binary(ExprKind::Add, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator-(Expr a, Expr b) {
  return binary(ExprKind::Sub, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator*(Expr a, Expr b) {
  return binary(ExprKind::Mul, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator/(Expr a, Expr b) {
  return binary(ExprKind::Div, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator%(Expr a, Expr b) {
  return binary(ExprKind::Mod, std::move(a), std::move(b));
}

DLAVM_INLINE Expr floordiv(Expr a, Expr b) {
  return binary(ExprKind::FloorDiv, std::move(a), std::move(b));
}

DLAVM_INLINE Expr floormod(Expr a, Expr b) {
  return binary(ExprKind::FloorMod, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator<<(Expr a, Expr b) {
  return binary(ExprKind::Shl, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator>>(Expr a, Expr b) {
  return binary(ExprKind::Shr, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator<(Expr a, Expr b) {
  return binary(ExprKind::LT, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator>(Expr a, Expr b) {
  return binary(ExprKind::GT, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator&&(Expr a, Expr b) {
  return binary(ExprKind::And, std::move(a), std::move(b));
}

DLAVM_INLINE Expr operator||(Expr a, Expr b) {
  return binary(ExprKind::Or, std::move(a), std::move(b));
}

DLAVM_INLINE Expr min(Expr a, Expr b) { return binary(ExprKind::Min, std::move(a), std::move(b)); }

DLAVM_INLINE Expr max(Expr a, Expr b) { return binary(ExprKind::Max, std::move(a), std::move(b)); }

DLAVM_INLINE Expr operator!(Expr a) {
  detail::require_defined(a, "operator !");
  if (a.dtype() != bool_type) raise<TypeError>("operator ! needs a condition, got {}", a.dtype());
  if (const auto* x = a.as<IntImmNode>()) return detail::make_const(x->value == 0, bool_type);
  return Expr(make_ref<NotNode>(std::move(a)));
}

DLAVM_INLINE Expr cast(DType t, Expr value) {
  detail::require_defined(value, "te::cast");
  if (t.is_float() || value.dtype().is_float())
    raise<TypeError>("te::cast from {} to {}: dlavm computes on integer types only", value.dtype(),
                     t);
  if (value.dtype() == t && !detail::is_literal(value)) return value;
  if (const auto* x = value.as<IntImmNode>()) return detail::make_const(t.wrap(x->value), t);
  return Expr(make_ref<CastNode>(t, std::move(value)));
}

DLAVM_INLINE Expr index_value(ne::Expr index, DType t) {
  if (const auto v = index.as_int()) return make_const(t.wrap(*v), t);
  return Expr(make_ref<IndexNode>(std::move(index), t));
}

DLAVM_INLINE Expr select(Expr cond, Expr t, Expr f) {
  detail::require_defined(cond, "te::select");
  detail::require_defined(t, "te::select");
  detail::require_defined(f, "te::select");
  if (detail::is_literal(t) && !detail::is_literal(f))
    t = detail::retype_literal(t, f.dtype(), "te::select");
  if (detail::is_literal(f) && !detail::is_literal(t))
    f = detail::retype_literal(f, t.dtype(), "te::select");
  if (cond.dtype() != bool_type)
    raise<TypeError>("te::select: the condition has type {}, expected a comparison", cond.dtype());
  if (t.dtype() != f.dtype())
    raise<TypeError>("te::select: branches have types {} and {}{}", t.dtype(), f.dtype(),
                     detail::explain_mismatch(t, f));
  if (const auto* c = cond.as<IntImmNode>()) return c->value != 0 ? t : f;
  return Expr(make_ref<SelectNode>(std::move(cond), std::move(t), std::move(f)));
}

DLAVM_INLINE Expr select(const ne::Expr& cond, Expr t, Expr f) {
  if (const auto c = cond.as_int()) return select(detail::make_const(*c != 0, bool_type), t, f);
  return select(Expr(make_ref<IndexNode>(cond, bool_type)), std::move(t), std::move(f));
}

DLAVM_INLINE Expr reduce(Combiner c, Expr source, std::vector<IterVar> axes) {
  detail::require_defined(source, "te reduction");
  if (axes.empty()) raise<ValueError>("te reduction over no axes");
  for (const auto& a : axes)
    if (!a.is_reduce())
      raise<ScheduleError>("te reduction over axis '{}', which is not a reduce_axis", a.name());
  if (source.dtype().is_float())
    raise<TypeError>("te reduction of {}: dlavm computes on integer types only", source.dtype());
  return Expr(make_ref<ReduceNode>(c, std::move(source), std::move(axes)));
}

DLAVM_INLINE Expr sum(Expr source, std::vector<IterVar> axes) {
  return reduce(Combiner::Sum, std::move(source), std::move(axes));
}

DLAVM_INLINE Expr max(Expr source, std::vector<IterVar> axes) {
  return reduce(Combiner::Max, std::move(source), std::move(axes));
}

DLAVM_INLINE Expr min(Expr source, std::vector<IterVar> axes) {
  return reduce(Combiner::Min, std::move(source), std::move(axes));
}

DLAVM_INLINE Expr sum(Expr source, IterVar axis) {
  return sum(std::move(source), std::vector{axis});
}

DLAVM_INLINE Expr max(Expr source, IterVar axis) {
  return max(std::move(source), std::vector{axis});
}

DLAVM_INLINE Expr min(Expr source, IterVar axis) {
  return min(std::move(source), std::vector{axis});
}

DLAVM_INLINE std::int64_t combiner_identity(Combiner c, DType t) {
  switch (c) {
    case Combiner::Sum:
      return 0;
    case Combiner::Max:
      return t.min_value();
    case Combiner::Min:
      return t.max_value();
  }
  return 0;
}

DLAVM_INLINE ExprKind combiner_kind(Combiner c) {
  return c == Combiner::Sum ? ExprKind::Add : c == Combiner::Max ? ExprKind::Max : ExprKind::Min;
}

DLAVM_INLINE Expr load(Buffer buffer, std::vector<ne::Expr> indices) {
  if (indices.size() != buffer.ndim())
    raise<ShapeError>("buffer '{}' has {} dims but is indexed with {}", buffer.name(),
                      buffer.ndim(), indices.size());
  return Expr(make_ref<LoadNode>(std::move(buffer), std::move(indices)));
}

DLAVM_INLINE Expr call(std::string name, DType t, std::vector<Expr> args,
                       std::vector<Buffer> buffers) {
  return Expr(make_ref<CallNode>(std::move(name), t, std::move(args), std::move(buffers)));
}

}  // namespace dlavm::te
