// The lowered VTA intrinsics as passes read them back: the call a statement evaluates, the
// calls under a statement, and an argument as an index expression or a constant. Shared by the
// passes that rewrite lowered functions (vta::load_acc_init, the integer softmax's
// skip_masked_work).
#pragma once

#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/ne/substitute.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/stmt.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::vta::detail {

// An intrinsic's argument as an index expression (its fields are IndexNode or IntImm).
inline std::optional<ne::Expr> index_arg(const te::Expr& e) {
  if (const auto* i = e.as<te::IndexNode>()) return i->index;
  if (const auto* c = e.as<te::IntImmNode>()) return ne::Expr(c->value);
  return std::nullopt;
}

// Its value with `values` substituted, if that is a constant.
inline std::optional<std::int64_t> constant_index(const te::Expr& e,
                                                  std::span<const ne::Substitution> values = {}) {
  const auto i = index_arg(e);
  if (!i) return std::nullopt;
  return ne::simplify(values.empty() ? *i : ne::substitute(*i, values)).as_int();
}

// The call a statement evaluates, or null.
inline const te::CallNode* call_of(const tir::Stmt& s) {
  const auto* e = s.as<tir::EvaluateNode>();
  return e ? e->value.as<te::CallNode>() : nullptr;
}

// Every call under a statement, in order.
inline std::vector<const te::CallNode*> calls_in(const tir::Stmt& s) {
  struct Calls : tir::StmtVisitor<Calls> {
    std::vector<const te::CallNode*> found;
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      if (const auto* c = n.value.as<te::CallNode>()) found.push_back(c);
    }
  } v;
  v.visit(s);
  return v.found;
}

// The first call of intrinsic `name` under a statement, or null.
inline const te::CallNode* first_call(const tir::Stmt& s, std::string_view name) {
  for (const auto* c : calls_in(s))
    if (c->name == name) return c;
  return nullptr;
}

// The name vta::fold_uop gives an ALU kernel (its attribute's node, which the printer shows):
// "alu." and the operation in lower case, ".imm" where it takes an immediate.
inline std::string alu_kernel_name(runtime::AluOp op, bool use_imm) {
  std::string name = "alu.";
  for (const char* c = runtime::alu_name(op); *c; ++c) name += static_cast<char>(*c - 'A' + 'a');
  if (use_imm) name += ".imm";
  return name;
}

}  // namespace dlavm::vta::detail
