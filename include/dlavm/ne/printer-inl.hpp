// Definitions for dlavm/ne/printer.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/printer.hpp>

namespace dlavm::ne {

namespace detail {

class Printer : public ExprFunctor<Printer, void> {
 public:
  explicit Printer(fmt::memory_buffer& out) : out_(out) {}

  void visit_int(const IntImmNode& n, const Expr&) {
    const fmt::format_int digits(n.value);
    out_.append(digits.data(), digits.data() + digits.size());
  }
  void visit_var(const VarNode& n, const Expr&) { write(n.name); }
  void visit_binary(const BinaryNode& n, const Expr&) {
    const auto symbol = infix_symbol(n.kind());
    if (symbol.empty()) {
      write(call_name(n.kind()));
      write("(");
      visit(n.a);
      write(", ");
      visit(n.b);
      write(")");
      return;
    }
    operand(n.a, n.kind(), true);
    write(symbol);
    operand(n.b, n.kind(), false);
  }
  void visit_not(const NotNode& n, const Expr&) {
    write("!");
    operand(n.a, Kind::Not, false);
  }
  void visit_select(const SelectNode& n, const Expr&) {
    write("select(");
    visit(n.cond);
    write(", ");
    visit(n.t);
    write(", ");
    visit(n.f);
    write(")");
  }

 private:
  void operand(const Expr& child, Kind parent, bool left) {
    const Kind k = child.kind();
    const bool infix = !infix_symbol(k).empty();
    const bool flat = left && infix_family(k) != 0 && infix_family(k) == infix_family(parent);
    if (infix && !flat) {
      write("(");
      visit(child);
      write(")");
    } else {
      visit(child);
    }
  }
  void write(std::string_view s) { out_.append(s.data(), s.data() + s.size()); }

  fmt::memory_buffer& out_;
};

}  // namespace detail

DLAVM_INLINE void format_to(fmt::memory_buffer& out, const Expr& e) {
  if (!e.defined()) {
    constexpr std::string_view undefined = "<undefined>";
    out.append(undefined.data(), undefined.data() + undefined.size());
    return;
  }
  detail::Printer(out).visit(e);
}

DLAVM_INLINE std::string to_string(const Expr& e) {
  fmt::memory_buffer out;
  format_to(out, e);
  return fmt::to_string(out);
}

}  // namespace dlavm::ne

DLAVM_INLINE fmt::format_context::iterator fmt::formatter<dlavm::ne::Expr>::format(
    const dlavm::ne::Expr& e, format_context& ctx) const {
  fmt::memory_buffer out;
  dlavm::ne::format_to(out, e);
  return fmt::formatter<std::string_view>::format(std::string_view(out.data(), out.size()), ctx);
}
