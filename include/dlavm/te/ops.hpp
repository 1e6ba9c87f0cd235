// Building value expressions: operators, casts, select, reductions. Operands must share a
// dtype, except C++ integer literals, which adopt the other operand's dtype (and must fit in
// it). Two constants fold on the spot with the dtype's wrap-around.
#pragma once

#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/te/expr.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::te {

constexpr std::string_view op_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add:
      return "+";
    case ExprKind::Sub:
      return "-";
    case ExprKind::Mul:
      return "*";
    case ExprKind::Min:
      return "min";
    case ExprKind::Max:
      return "max";
    case ExprKind::Shl:
      return "<<";
    case ExprKind::Shr:
      return ">>";
    case ExprKind::EQ:
      return "==";
    case ExprKind::NE:
      return "!=";
    case ExprKind::LT:
      return "<";
    case ExprKind::LE:
      return "<=";
    case ExprKind::GT:
      return ">";
    case ExprKind::GE:
      return ">=";
    case ExprKind::And:
      return "&&";
    case ExprKind::Or:
      return "||";
    default:
      return "?";
  }
}

namespace detail {

// The value of integer operation k on a and b in dtype t: results wrap to t's width, shifts
// by a negative amount shift the other way (as VTA's ALU SHR does), shifts saturate at the
// width. Shared by constant folding, te::evaluate and the TIR interpreter.
constexpr std::int64_t apply_binary(ExprKind k, DType t, std::int64_t a, std::int64_t b) {
  const auto wrap = [t](std::int64_t v) { return t.wrap(v); };
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
  const auto shift_right = [&](std::int64_t x, std::int64_t s) -> std::int64_t {
    return s >= 63 ? (x < 0 ? -1 : 0) : (x >> s);
  };
  const auto shift_left = [&](std::int64_t x, std::int64_t s) -> std::int64_t {
    return s >= 64 ? 0 : wrap(static_cast<std::int64_t>(u(x) << s));
  };
  switch (k) {
    case ExprKind::Add:
      return wrap(static_cast<std::int64_t>(u(a) + u(b)));
    case ExprKind::Sub:
      return wrap(static_cast<std::int64_t>(u(a) - u(b)));
    case ExprKind::Mul:
      return wrap(static_cast<std::int64_t>(u(a) * u(b)));
    case ExprKind::Min:
      return a < b ? a : b;
    case ExprKind::Max:
      return a < b ? b : a;
    case ExprKind::Shr:
      return b >= 0 ? shift_right(a, b) : shift_left(a, b == INT64_MIN ? 64 : -b);
    case ExprKind::Shl:
      return b >= 0 ? shift_left(a, b) : shift_right(a, b == INT64_MIN ? 64 : -b);
    case ExprKind::EQ:
      return a == b;
    case ExprKind::NE:
      return a != b;
    case ExprKind::LT:
      return a < b;
    case ExprKind::LE:
      return a <= b;
    case ExprKind::GT:
      return a > b;
    case ExprKind::GE:
      return a >= b;
    case ExprKind::And:
      return (a != 0) && (b != 0);
    case ExprKind::Or:
      return (a != 0) || (b != 0);
    default:
      return 0;
  }
}

inline Expr make_const(std::int64_t v, DType t, bool literal = false) {
  return Expr(std::make_shared<const IntImmNode>(v, t, literal));
}

inline bool is_literal(const Expr& e) {
  const auto* imm = e.as<IntImmNode>();
  return imm != nullptr && imm->literal;
}

// A literal given the dtype t; it must fit.
inline Expr retype_literal(const Expr& e, DType t, std::string_view context) {
  const auto v = e.as<IntImmNode>()->value;
  if (t.is_float())
    raise<TypeError>("{}: literal {} meets a {} operand; dlavm computes on integer types only",
                     context, v, t);
  if (v < t.min_value() || v > t.max_value())
    raise<TypeError>("{}: literal {} does not fit in {} (range {}..{})", context, v, t,
                     t.min_value(), t.max_value());
  return make_const(v, t);
}

inline void require_defined(const Expr& e, std::string_view context) {
  if (!e.defined()) raise<ValueError>("te: {} of an undefined expression", context);
}

}  // namespace detail

// A constant of an explicit dtype: te::make_const(0, DType::int32()).
inline Expr make_const(std::int64_t v, DType t) {
  if (t.is_integral() && (v < t.min_value() || v > t.max_value()))
    raise<TypeError>("te::make_const: {} does not fit in {} (range {}..{})", v, t, t.min_value(),
                     t.max_value());
  return detail::make_const(v, t);
}

// k(a, b) for any binary kind; the builder behind the operators and the mutator.
inline Expr binary(ExprKind k, Expr a, Expr b) {
  detail::require_defined(a, op_symbol(k));
  detail::require_defined(b, op_symbol(k));
  const auto context = fmt::format("operator {}", op_symbol(k));
  const bool la = detail::is_literal(a), lb = detail::is_literal(b);
  if (la && !lb) a = detail::retype_literal(a, b.dtype(), context);
  if (lb && !la) b = detail::retype_literal(b, a.dtype(), context);
  const bool logical = k == ExprKind::And || k == ExprKind::Or;
  if (logical && (a.dtype() != bool_type || b.dtype() != bool_type))
    raise<TypeError>("{} needs conditions, got {} and {}", context, a.dtype(), b.dtype());
  if (a.dtype() != b.dtype())
    raise<TypeError>("{}: operands have types {} and {}; convert one with te::cast", context,
                     a.dtype(), b.dtype());
  if (a.dtype().is_float())
    raise<TypeError>("{}: {} operands; dlavm computes on integer types only", context, a.dtype());
  const DType result = is_comparison(k) || logical ? bool_type : a.dtype();
  const auto* x = a.as<IntImmNode>();
  const auto* y = b.as<IntImmNode>();
  if (x != nullptr && y != nullptr)
    return detail::make_const(detail::apply_binary(k, a.dtype(), x->value, y->value), result,
                              la && lb);
  return Expr(std::make_shared<const BinaryNode>(k, result, std::move(a), std::move(b)));
}

inline Expr operator+(Expr a, Expr b) { return binary(ExprKind::Add, std::move(a), std::move(b)); }
inline Expr operator-(Expr a, Expr b) { return binary(ExprKind::Sub, std::move(a), std::move(b)); }
inline Expr operator*(Expr a, Expr b) { return binary(ExprKind::Mul, std::move(a), std::move(b)); }
inline Expr operator<<(Expr a, Expr b) { return binary(ExprKind::Shl, std::move(a), std::move(b)); }
inline Expr operator>>(Expr a, Expr b) { return binary(ExprKind::Shr, std::move(a), std::move(b)); }
inline Expr operator==(Expr a, Expr b) { return binary(ExprKind::EQ, std::move(a), std::move(b)); }
inline Expr operator!=(Expr a, Expr b) { return binary(ExprKind::NE, std::move(a), std::move(b)); }
inline Expr operator<(Expr a, Expr b) { return binary(ExprKind::LT, std::move(a), std::move(b)); }
inline Expr operator<=(Expr a, Expr b) { return binary(ExprKind::LE, std::move(a), std::move(b)); }
inline Expr operator>(Expr a, Expr b) { return binary(ExprKind::GT, std::move(a), std::move(b)); }
inline Expr operator>=(Expr a, Expr b) { return binary(ExprKind::GE, std::move(a), std::move(b)); }
inline Expr operator&&(Expr a, Expr b) { return binary(ExprKind::And, std::move(a), std::move(b)); }
inline Expr operator||(Expr a, Expr b) { return binary(ExprKind::Or, std::move(a), std::move(b)); }
inline Expr min(Expr a, Expr b) { return binary(ExprKind::Min, std::move(a), std::move(b)); }
inline Expr max(Expr a, Expr b) { return binary(ExprKind::Max, std::move(a), std::move(b)); }

inline Expr operator!(Expr a) {
  detail::require_defined(a, "operator !");
  if (a.dtype() != bool_type) raise<TypeError>("operator ! needs a condition, got {}", a.dtype());
  if (const auto* x = a.as<IntImmNode>()) return detail::make_const(x->value == 0, bool_type);
  return Expr(std::make_shared<const NotNode>(std::move(a)));
}

// Conversion to dtype t; integer conversions wrap (two's complement), like a hardware store.
inline Expr cast(DType t, Expr value) {
  detail::require_defined(value, "te::cast");
  if (t.is_float() || value.dtype().is_float())
    raise<TypeError>("te::cast from {} to {}: dlavm computes on integer types only", value.dtype(),
                     t);
  if (value.dtype() == t && !detail::is_literal(value)) return value;
  if (const auto* x = value.as<IntImmNode>()) return detail::make_const(t.wrap(x->value), t);
  return Expr(std::make_shared<const CastNode>(t, std::move(value)));
}

// An ne index expression used as a value of dtype t (int32 by default).
inline Expr index_value(ne::Expr index, DType t = DType::int32()) {
  if (const auto v = index.as_int()) return make_const(t.wrap(*v), t);
  return Expr(std::make_shared<const IndexNode>(std::move(index), t));
}

// cond ? t : f. cond is a value condition or an ne index condition (`i < pad`).
inline Expr select(Expr cond, Expr t, Expr f) {
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
    raise<TypeError>("te::select: branches have types {} and {}", t.dtype(), f.dtype());
  if (const auto* c = cond.as<IntImmNode>()) return c->value != 0 ? t : f;
  return Expr(std::make_shared<const SelectNode>(std::move(cond), std::move(t), std::move(f)));
}
inline Expr select(const ne::Expr& cond, Expr t, Expr f) {
  if (const auto c = cond.as_int()) return select(detail::make_const(*c != 0, bool_type), t, f);
  return select(Expr(std::make_shared<const IndexNode>(cond, bool_type)), std::move(t),
                std::move(f));
}

// Reductions over axes made with te::reduce_axis.
inline Expr reduce(Combiner c, Expr source, std::vector<IterVar> axes) {
  detail::require_defined(source, "te reduction");
  if (axes.empty()) raise<ValueError>("te reduction over no axes");
  for (const auto& a : axes)
    if (!a.is_reduce())
      raise<ScheduleError>("te reduction over axis '{}', which is not a reduce_axis", a.name());
  if (source.dtype().is_float())
    raise<TypeError>("te reduction of {}: dlavm computes on integer types only", source.dtype());
  return Expr(std::make_shared<const ReduceNode>(c, std::move(source), std::move(axes)));
}
inline Expr sum(Expr source, std::vector<IterVar> axes) {
  return reduce(Combiner::Sum, std::move(source), std::move(axes));
}
inline Expr max(Expr source, std::vector<IterVar> axes) {
  return reduce(Combiner::Max, std::move(source), std::move(axes));
}
inline Expr min(Expr source, std::vector<IterVar> axes) {
  return reduce(Combiner::Min, std::move(source), std::move(axes));
}
inline Expr sum(Expr source, IterVar axis) { return sum(std::move(source), std::vector{axis}); }
inline Expr max(Expr source, IterVar axis) { return max(std::move(source), std::vector{axis}); }
inline Expr min(Expr source, IterVar axis) { return min(std::move(source), std::vector{axis}); }

// The identity element of a combiner in dtype t: 0, t's minimum, t's maximum.
inline std::int64_t combiner_identity(Combiner c, DType t) {
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
inline ExprKind combiner_kind(Combiner c) {
  return c == Combiner::Sum ? ExprKind::Add : c == Combiner::Max ? ExprKind::Max : ExprKind::Min;
}

inline Expr load(Buffer buffer, std::vector<ne::Expr> indices) {
  if (indices.size() != buffer.ndim())
    raise<ShapeError>("buffer '{}' has {} dims but is indexed with {}", buffer.name(),
                      buffer.ndim(), indices.size());
  return Expr(std::make_shared<const LoadNode>(std::move(buffer), std::move(indices)));
}

inline Expr call(std::string name, DType t, std::vector<Expr> args,
                 std::vector<Buffer> buffers = {}) {
  return Expr(
      std::make_shared<const CallNode>(std::move(name), t, std::move(args), std::move(buffers)));
}

}  // namespace dlavm::te
