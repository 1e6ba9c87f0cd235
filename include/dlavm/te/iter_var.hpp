// IterVar: a loop axis of an operation. It pairs an ne variable with the range it iterates
// over, [min, min + extent), and says whether the axis is data-parallel (an output dimension)
// or a reduction. Schedules split and fuse IterVars into new ones; identity is the node.
// In index expressions an axis stands for its variable, arithmetic included:
//   auto k = te::reduce_axis({0, 8}, "k");
//   te::compute(te::shape(4), [&](auto i) { return te::sum(B(i, k + 1) - B(i, k), {k}); }, "D");
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/core/ref.hpp>
#include <dlavm/ne.hpp>

#include <fmt/format.h>

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace dlavm::te {

enum class IterKind : std::uint8_t { DataPar, Reduce };

// Half-open range [min, min + extent) with symbolic ends.
struct Range {
  ne::Expr min;
  ne::Expr extent;
};

struct IterVarNode : RefCounted {
  IterVarNode(ne::Var v, Range d, IterKind k) : var(std::move(v)), dom(std::move(d)), kind(k) {}
  ne::Var var;
  Range dom;
  IterKind kind;
};

class IterVar {
 public:
  IterVar() = default;
  explicit IterVar(Ref<IterVarNode> node) : node_(std::move(node)) {}

  const ne::Var& var() const { return node_->var; }
  const std::string& name() const { return node_->var.name(); }
  const Range& dom() const { return node_->dom; }
  IterKind kind() const { return node_->kind; }
  bool is_reduce() const { return node_->kind == IterKind::Reduce; }
  bool defined() const { return node_ != nullptr; }
  const IterVarNode* get() const { return node_.get(); }
  bool same_as(const IterVar& other) const { return node_ == other.node_; }
  friend bool operator==(const IterVar& a, const IterVar& b) { return a.node_ == b.node_; }

  // An axis stands for its loop variable in index expressions: A(i, k) with k a reduce axis.
  operator ne::Expr() const { return node_->var; }  // NOLINT(google-explicit-constructor)

 private:
  Ref<IterVarNode> node_;
};

namespace detail {
// An axis as an operand: IterVar, whatever its value category. A refinement of ne's operand
// of mixed static-dim operators, so that te's overloads below are chosen over ne's.
template <class T>
concept Axis = ne::detail::SymbolicOperand<T> && std::same_as<std::remove_cvref_t<T>, IterVar>;
}  // namespace detail

// Arithmetic and ordering on axes build index expressions, as on their variables: B(i, k + 1),
// A(i * 2 + dy), k - 1, 16_c * ko + ki, te::select(k < n, ...). (== and != compare the axes
// themselves; compare k.var() for a condition.) The static-dim overloads are templates more
// specialized than Hana's generic operators, as in ne/static.hpp.
#define DLAVM_TE_AXIS_OPERATOR(op)                                                               \
  inline ne::Expr operator op(const IterVar& a, const ne::Expr& b) { return a.var() op b; }      \
  inline ne::Expr operator op(const ne::Expr& a, const IterVar& b) { return a op b.var(); }      \
  inline ne::Expr operator op(const IterVar& a, const IterVar& b) { return a.var() op b.var(); } \
  template <detail::Axis A, class T, T V>                                                        \
  ne::Expr operator op(A&& a, boost::hana::integral_constant<T, V> b) {                          \
    return a.var() op ne::Expr(b);                                                               \
  }                                                                                              \
  template <detail::Axis A, class T, T V>                                                        \
  ne::Expr operator op(boost::hana::integral_constant<T, V> a, A&& b) {                          \
    return ne::Expr(a) op b.var();                                                               \
  }
DLAVM_TE_AXIS_OPERATOR(+)
DLAVM_TE_AXIS_OPERATOR(-)
DLAVM_TE_AXIS_OPERATOR(*)
DLAVM_TE_AXIS_OPERATOR(<)
DLAVM_TE_AXIS_OPERATOR(<=)
DLAVM_TE_AXIS_OPERATOR(>)
DLAVM_TE_AXIS_OPERATOR(>=)
#undef DLAVM_TE_AXIS_OPERATOR
inline ne::Expr operator-(const IterVar& a) { return -a.var(); }

// A new axis named `name` over [min, min + extent). The variable's range is what the bounds
// of min and extent allow, so that ne can bound index expressions that use it.
IterVar make_iter_var(std::string name, ne::Expr min, ne::Expr extent, IterKind kind);

// te::reduce_axis({0, n}, "k"): a reduction axis over [lo, hi).
IterVar reduce_axis(std::pair<ne::Expr, ne::Expr> bounds, std::string name = "rv");

}  // namespace dlavm::te

template <>
struct fmt::formatter<dlavm::te::IterVar> : fmt::formatter<std::string_view> {
  auto format(const dlavm::te::IterVar& iv, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(iv.name(), ctx);
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/iter_var-inl.hpp>
#endif
