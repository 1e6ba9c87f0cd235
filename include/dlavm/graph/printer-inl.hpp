// Definitions for graph/printer.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/printer.hpp>

#include <fmt/format.h>

namespace dlavm::graph {

namespace detail {

inline bool is_identifier(std::string_view name) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name.empty() || !alpha(name.front())) return false;
  for (char c : name)
    if (!alpha(c) && !digit(c) && c != '.') return false;
  return true;
}

inline std::string leaf_name(std::string_view name) {
  if (is_identifier(name)) return fmt::format("%{}", name);
  std::string s = "%\"";
  for (char c : name) {
    if (c == '"' || c == '\\') s += '\\';
    s += c;
  }
  return s + "\"";
}

}  // namespace detail

DLAVM_INLINE std::string printed_name(std::string_view name) { return detail::leaf_name(name); }

namespace detail {

// One line of a call: `%0 = host.dense(%x, %w) /* ret=..., dtype=..., device=host */`.
inline void print_call(std::string& out, const NodeNames& names, const CallNode& call,
                       const Expr& e) {
  out += fmt::format("  {} = ", names.name(e));
  if (call.device != Device::Any) out += fmt::format("{}.", device_name(call.device));
  out += call.op();
  out += '(';
  for (std::size_t i = 0; i < call.args.size(); ++i) {
    if (i > 0) out += ", ";
    out += names.name(call.args[i]);
  }
  if (!call.attrs.empty()) out += fmt::format("{}{}", call.args.empty() ? "" : ", ", call.attrs);
  out += ')';
  if (call.type) {
    out += fmt::format(" /* ret={}, dtype={}", shape_text(call.type->shape), call.type->dtype);
    if (call.device != Device::Any) out += fmt::format(", device={}", device_name(call.device));
    out += " */";
  }
  out += '\n';
}

// `fn (%x: T) state (%h: T) {` ... `  next %h = %3` ... `  return %4` `}`: the state part
// only when there are states.
inline std::string print_function(std::span<const Expr> params, std::span<const Expr> results,
                                  std::span<const State> state = {}) {
  std::vector<Expr> roots(results.begin(), results.end());
  for (const auto& st : state) roots.push_back(st.next);
  const NodeNames names(roots);
  const auto typed = [&](const Expr& p) {
    return fmt::format("{}: {}", names.name(p),
                       p.has_type() ? type_text(p.type()) : std::string("?"));
  };
  std::string out = "fn (";
  for (std::size_t i = 0; i < params.size(); ++i) out += (i > 0 ? ", " : "") + typed(params[i]);
  out += ")";
  if (!state.empty()) {
    out += " state (";
    for (std::size_t i = 0; i < state.size(); ++i)
      out += (i > 0 ? ", " : "") + typed(state[i].input);
    out += ")";
  }
  out += " {\n";
  for (const Expr& e : post_order(roots)) {
    switch (e.kind()) {
      case NodeKind::Input:
        break;
      case NodeKind::Constant:
        out += fmt::format("  {} = constant {}\n", names.name(e), type_text(e.type()));
        break;
      case NodeKind::Call:
        print_call(out, names, *e.as<CallNode>(), e);
        break;
    }
  }
  for (const auto& st : state)
    out += fmt::format("  next {} = {}\n", names.name(st.input), names.name(st.next));
  out += "  return ";
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (i > 0) out += ", ";
    out += names.name(results[i]);
  }
  out += "\n}";
  return out;
}

}  // namespace detail

DLAVM_INLINE std::string shape_text(const std::vector<ne::Expr>& shape) {
  std::string out = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (k > 0) out += ", ";
    out += ne::to_string(shape[k]);
  }
  return out + ")";
}

DLAVM_INLINE std::string type_text(const TensorType& type) {
  return fmt::format("Tensor[{}, {}]", shape_text(type.shape), type.dtype);
}

DLAVM_INLINE NodeNames::NodeNames(std::span<const Expr> roots) {
  for (const Expr& e : post_order(roots))
    if (e.kind() == NodeKind::Call) call_number_.emplace(e.get(), call_number_.size());
}

DLAVM_INLINE std::string NodeNames::name(const Expr& e) const {
  if (e.kind() != NodeKind::Call) return detail::leaf_name(e.name());
  if (const auto& named = e.as<CallNode>()->result_name; !named.empty())
    return detail::leaf_name(named);
  auto it = call_number_.find(e.get());
  return it == call_number_.end() ? std::string("%?") : fmt::format("%{}", it->second);
}

DLAVM_INLINE std::string NodeNames::label(const Expr& e) const {
  if (e.kind() != NodeKind::Call) return name(e);
  return fmt::format("{} ({})", name(e), e.name());
}

DLAVM_INLINE std::string to_string(const Function& fn) {
  return detail::print_function(fn.params(), fn.results(), fn.state());
}

DLAVM_INLINE std::string to_string(const Expr& e) {
  std::vector<Expr> inputs;
  for (const Expr& n : post_order(std::span<const Expr>(&e, 1)))
    if (n.kind() == NodeKind::Input) inputs.push_back(n);
  return detail::print_function(inputs, std::span<const Expr>(&e, 1));
}

}  // namespace dlavm::graph
