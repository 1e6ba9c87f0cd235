// Building value expressions: operators, casts, select, reductions. Operands must share a
// dtype, except C++ integer literals, which adopt the other operand's dtype (and must fit in
// it). Two constants fold on the spot with the dtype's wrap-around.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/te/expr.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::te {

namespace detail {

// Division kind k of a by b in dtype t: Div and Mod truncate toward zero (as C++ does),
// FloorDiv and FloorMod round down (floordiv(-7, 2) == -4, floormod(-7, 2) == 1). The most
// negative value divided by -1 wraps, as other results do. A zero divisor raises; builders
// and evaluators check it first, to name the expression.
constexpr std::int64_t apply_division(ExprKind k, DType t, std::int64_t a, std::int64_t b) {
  if (b == 0) raise<ArithmeticError>("{}({}, 0) in {}: division by zero", op_symbol(k), a, t);
  const bool quotient = k == ExprKind::Div || k == ExprKind::FloorDiv;
  if (b == -1)
    return quotient ? t.wrap(static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(a))) : 0;
  switch (k) {
    case ExprKind::Div:
      return a / b;
    case ExprKind::Mod:
      return a % b;
    case ExprKind::FloorDiv:
      return ne::detail::floor_div(a, b);
    default:
      return ne::detail::floor_mod(a, b);
  }
}

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
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod:
      return apply_division(k, t, a, b);
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

Expr make_const(std::int64_t v, DType t, bool literal = false);

bool is_literal(const Expr& e);

// A literal given the dtype t; it must fit.
Expr retype_literal(const Expr& e, DType t, std::string_view context);

void require_defined(const Expr& e, std::string_view context);

// Why operands a and b have different dtypes, for a builder's TypeError: what each operand
// is, then the fix. When the narrower one gets its dtype from a te::sum (directly, or through
// reads of the compute holding it), the fix is a cast inside that sum, which the message
// spells out; otherwise it is a te::cast of one operand:
//   " (C_buf[i] is int8, bias[i] is int32); compute 'C_buf' produces int8 because ..."
std::string explain_mismatch(const Expr& a, const Expr& b);

}  // namespace detail

// A constant of an explicit dtype: te::make_const(0, DType::int32()).
Expr make_const(std::int64_t v, DType t);

// k(a, b) for any binary kind; the builder behind the operators and the mutator.
Expr binary(ExprKind k, Expr a, Expr b);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
// Division truncating toward zero, as C++'s and TVM's tir.Div / tir.Mod: -7 / 2 == -3.
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
// Division rounding down, as TVM's floordiv / floormod: floordiv(-7, 2) == -4,
// floormod(-7, 2) == 1. ne's overloads come along, for indices: A(te::floordiv(i, 2)).
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
using ne::floordiv;
using ne::floormod;
Expr operator<<(Expr a, Expr b);
Expr operator>>(Expr a, Expr b);
inline Expr operator==(Expr a, Expr b) { return binary(ExprKind::EQ, std::move(a), std::move(b)); }
inline Expr operator!=(Expr a, Expr b) { return binary(ExprKind::NE, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b);
inline Expr operator<=(Expr a, Expr b) { return binary(ExprKind::LE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b);
inline Expr operator>=(Expr a, Expr b) { return binary(ExprKind::GE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);

Expr operator!(Expr a);

// Conversion to dtype t; integer conversions wrap (two's complement), like a hardware store.
Expr cast(DType t, Expr value);

// An ne index expression used as a value of dtype t (int32 by default).
Expr index_value(ne::Expr index, DType t = DType::int32());

// cond ? t : f. cond is a value condition or an ne index condition (`i < pad`).
Expr select(Expr cond, Expr t, Expr f);
Expr select(const ne::Expr& cond, Expr t, Expr f);

// Reductions over axes made with te::reduce_axis.
Expr reduce(Combiner c, Expr source, std::vector<IterVar> axes);
Expr sum(Expr source, std::vector<IterVar> axes);
Expr max(Expr source, std::vector<IterVar> axes);
Expr min(Expr source, std::vector<IterVar> axes);
Expr sum(Expr source, IterVar axis);
Expr max(Expr source, IterVar axis);
Expr min(Expr source, IterVar axis);

// The identity element of a combiner in dtype t: 0, t's minimum, t's maximum.
std::int64_t combiner_identity(Combiner c, DType t);
ExprKind combiner_kind(Combiner c);

Expr load(Buffer buffer, std::vector<ne::Expr> indices);

Expr call(std::string name, DType t, std::vector<Expr> args, std::vector<Buffer> buffers = {});

}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/ops-inl.hpp>
#endif
