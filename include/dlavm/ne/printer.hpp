// Text form of ne expressions, through fmt: `fmt::format("{}", e)` or `ne::to_string(e)`.
//
// Infix operators print with their usual C++ spelling (`*` without spaces, the others with),
// floordiv/floormod/min/max/select as calls. Every infix operand that is itself infix is
// parenthesised, except the left operand of the same operator family, so that left-leaning
// chains stay flat: `(token*4096) + 16`, `a + b - c`, `a*b*c`, `x - (y - z)`. The text
// depends only on structure and names, so it is stable across runs.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/functor.hpp>

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace dlavm::ne {

constexpr std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::IntImm:
      return "IntImm";
    case Kind::Var:
      return "Var";
    case Kind::Add:
      return "Add";
    case Kind::Sub:
      return "Sub";
    case Kind::Mul:
      return "Mul";
    case Kind::FloorDiv:
      return "FloorDiv";
    case Kind::FloorMod:
      return "FloorMod";
    case Kind::Min:
      return "Min";
    case Kind::Max:
      return "Max";
    case Kind::EQ:
      return "EQ";
    case Kind::NE:
      return "NE";
    case Kind::LT:
      return "LT";
    case Kind::LE:
      return "LE";
    case Kind::GT:
      return "GT";
    case Kind::GE:
      return "GE";
    case Kind::And:
      return "And";
    case Kind::Or:
      return "Or";
    case Kind::Not:
      return "Not";
    case Kind::Select:
      return "Select";
  }
  return "?";
}

namespace detail {

// The infix spelling of k, or empty for kinds printed as calls.
constexpr std::string_view infix_symbol(Kind k) {
  switch (k) {
    case Kind::Add:
      return " + ";
    case Kind::Sub:
      return " - ";
    case Kind::Mul:
      return "*";
    case Kind::EQ:
      return " == ";
    case Kind::NE:
      return " != ";
    case Kind::LT:
      return " < ";
    case Kind::LE:
      return " <= ";
    case Kind::GT:
      return " > ";
    case Kind::GE:
      return " >= ";
    case Kind::And:
      return " && ";
    case Kind::Or:
      return " || ";
    default:
      return {};
  }
}

constexpr std::string_view call_name(Kind k) {
  switch (k) {
    case Kind::FloorDiv:
      return "floordiv";
    case Kind::FloorMod:
      return "floormod";
    case Kind::Min:
      return "min";
    case Kind::Max:
      return "max";
    default:
      return {};
  }
}

constexpr int infix_family(Kind k) {
  switch (k) {
    case Kind::Add:
    case Kind::Sub:
      return 1;
    case Kind::Mul:
      return 2;
    case Kind::And:
      return 3;
    case Kind::Or:
      return 4;
    default:
      return 0;  // comparisons never chain without parentheses
  }
}

}  // namespace detail

// Appends the text of e to `out` (what fmt::format("{}", e) prints).
void format_to(fmt::memory_buffer& out, const Expr& e);
std::string to_string(const Expr& e);

}  // namespace dlavm::ne

template <>
struct fmt::formatter<dlavm::ne::Expr> : fmt::formatter<std::string_view> {
  format_context::iterator format(const dlavm::ne::Expr& e, format_context& ctx) const;
};

template <>
struct fmt::formatter<dlavm::ne::Var> : fmt::formatter<dlavm::ne::Expr> {};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/printer-inl.hpp>
#endif
