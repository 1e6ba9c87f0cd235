// IterVar: a loop axis of an operation. It pairs an ne variable with the range it iterates
// over, [min, min + extent), and says whether the axis is data-parallel (an output dimension)
// or a reduction. Schedules split and fuse IterVars into new ones; identity is the node.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace dlavm::te {

enum class IterKind : std::uint8_t { DataPar, Reduce };

// Half-open range [min, min + extent) with symbolic ends.
struct Range {
  ne::Expr min;
  ne::Expr extent;
};

struct IterVarNode {
  ne::Var var;
  Range dom;
  IterKind kind;
};

class IterVar {
 public:
  IterVar() = default;
  explicit IterVar(std::shared_ptr<const IterVarNode> node) : node_(std::move(node)) {}

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
  std::shared_ptr<const IterVarNode> node_;
};

// A new axis named `name` over [min, min + extent). The variable's range is what the bounds
// of min and extent allow, so that ne can bound index expressions that use it.
IterVar make_iter_var(std::string name, ne::Expr min, ne::Expr extent, IterKind kind);

// te::reduce_axis({0, n}, "k"): a reduction axis over [lo, hi).
IterVar reduce_axis(std::pair<ne::Expr, ne::Expr> bounds, std::string name = "rv");

}  // namespace dlavm::te

template <>
struct fmt::formatter<dlavm::te::IterVar> : fmt::formatter<std::string_view> {
  auto format(const dlavm::te::IterVar& iv, format_context& ctx) const {
    return fmt::format_to(ctx.out(), "{}", iv.name());
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/iter_var-inl.hpp>
#endif
