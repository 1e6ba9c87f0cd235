// Text form of value expressions through fmt, in the spirit of TVM's lowered text:
// `cast(int32, A_buf[ki])`, `(C_buf[i] + 1)`, `max(x, 0)`, `sum(..., axis=[ko, ki])`.
// It needs the node set only, so that the builders (ops.hpp) can print operands in their
// messages; tensors print through tensor.hpp (`A: int8[16]`).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te/expr.hpp>

#include <fmt/format.h>

#include <string>

namespace dlavm::te {

namespace detail {
class ExprPrinter : public ExprFunctor<ExprPrinter, void> {
 public:
  explicit ExprPrinter(std::string& out) : out_(out) {}
  void visit_int(const IntImmNode& n, const Expr&) { out_ += fmt::format("{}", n.value); }
  void visit_cast(const CastNode& n, const Expr&) {
    out_ += fmt::format("cast({}, ", n.dtype());
    visit(n.value);
    out_ += ')';
  }
  void visit_binary(const BinaryNode& n, const Expr&) {
    if (is_call_style(n.kind())) {
      out_ += op_symbol(n.kind());
      out_ += '(';
      visit(n.a);
      out_ += ", ";
      visit(n.b);
      out_ += ')';
      return;
    }
    out_ += '(';
    visit(n.a);
    const bool spaced = n.kind() != ExprKind::Mul;
    if (spaced) out_ += ' ';
    out_ += op_symbol(n.kind());
    if (spaced) out_ += ' ';
    visit(n.b);
    out_ += ')';
  }
  void visit_not(const NotNode& n, const Expr&) {
    out_ += "!";
    visit(n.a);
  }
  void visit_select(const SelectNode& n, const Expr&) {
    out_ += "select(";
    visit(n.cond);
    out_ += ", ";
    visit(n.t);
    out_ += ", ";
    visit(n.f);
    out_ += ')';
  }
  void visit_index(const IndexNode& n, const Expr&) { out_ += fmt::format("{}", n.index); }
  void visit_read(const ReadNode& n, const Expr&) {
    out_ += fmt::format("{}[{}]", n.op->name, fmt::join(n.indices, ", "));
  }
  void visit_load(const LoadNode& n, const Expr&) {
    out_ += fmt::format("{}[{}]", n.buffer.name(), fmt::join(n.indices, ", "));
  }
  void visit_reduce(const ReduceNode& n, const Expr&) {
    out_ += n.combiner == Combiner::Sum ? "sum(" : n.combiner == Combiner::Max ? "max(" : "min(";
    visit(n.source);
    out_ += ", axis=[";
    for (std::size_t k = 0; k < n.axes.size(); ++k)
      out_ += fmt::format("{}{}", k ? ", " : "", n.axes[k].name());
    out_ += "])";
  }
  void visit_call(const CallNode& n, const Expr&) {
    out_ += fmt::format("@{}(", n.name);
    for (std::size_t k = 0; k < n.buffers.size(); ++k)
      out_ += fmt::format("{}{}", k ? ", " : "", n.buffers[k].name());
    if (!n.buffers.empty() && !n.args.empty()) out_ += "; ";
    for (std::size_t k = 0; k < n.args.size(); ++k) {
      if (k) out_ += ", ";
      visit(n.args[k]);
    }
    out_ += ')';
  }

 private:
  std::string& out_;
};
}  // namespace detail

std::string to_string(const Expr& e);

}  // namespace dlavm::te

template <>
struct fmt::formatter<dlavm::te::Expr> : fmt::formatter<std::string_view> {
  auto format(const dlavm::te::Expr& e, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(dlavm::te::to_string(e), ctx);
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/printer-inl.hpp>
#endif
