// Internal: the check that lowering leaves no loop variable outside its loop (an invariant of
// te::lower; tests reach it directly). Its members are in the class, so it may be included by
// more than one part of the compiled library.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/stmt.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlavm::tir::detail {

// Checks that lowering left every loop variable inside its loop: a variable of an axis of
// the schedule (or of the loop over one) that the function uses must be bound by an enclosing
// `for`. Without this check the interpreter would take it for an unbound symbolic dim. A
// mutator that returns every node unchanged: its hooks reach every index of every statement.
class LoopScopeCheck : public StmtMutator<LoopScopeCheck> {
 public:
  LoopScopeCheck(std::string func, std::unordered_map<std::uint64_t, std::string> loops)
      : func_(std::move(func)), loops_(std::move(loops)) {}

  ne::Expr mutate_index(const ne::Expr& e) {
    for (const auto& v : ne::free_vars(e)) {
      const auto it = loops_.find(v.id());
      if (it != loops_.end() && std::find(bound_.begin(), bound_.end(), v.id()) == bound_.end())
        raise<ScheduleError>(
            "internal: lowering '{}' uses loop variable '{}' ({}) outside its loop, in {}; "
            "please report",
            func_, v.name(), it->second, e);
    }
    return e;
  }
  te::Expr mutate_expr(const te::Expr& e) {
    struct Indices : te::ExprVisitor<Indices> {
      LoopScopeCheck* self;
      void visit_index_expr(const ne::Expr& i) { self->mutate_index(i); }
    } indices;
    indices.self = this;
    indices.visit(e);
    return e;
  }
  Stmt visit_for(const ForNode& n, const Stmt& s) {
    mutate_index(n.min);
    mutate_index(n.extent);
    bound_.push_back(n.var.id());
    visit(n.body);
    bound_.pop_back();
    return s;
  }
  Stmt visit_allocate(const AllocateNode& n, const Stmt& s) {
    for (const auto& d : n.buffer.shape()) mutate_index(d);
    visit(n.body);
    return s;
  }

 private:
  std::string func_;
  std::unordered_map<std::uint64_t, std::string> loops_;  // variable id -> what it is
  std::vector<std::uint64_t> bound_;
};

}  // namespace dlavm::tir::detail
