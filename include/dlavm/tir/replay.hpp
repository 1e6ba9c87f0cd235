// LoopReplay: executes TIR's control flow on the host. Loops run with their variables bound in
// an IndexEnv, guards are evaluated, everything else is left to the derived visitor (the
// reference interpreter stores values; the VTA program emitter encodes instructions).
#pragma once

#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/stmt.hpp>

#include <cstdint>
#include <span>

namespace dlavm::tir {

template <class Derived>
class LoopReplay : public StmtVisitor<Derived> {
 public:
  explicit LoopReplay(std::span<const ne::Binding> symbols) : env_(symbols) {}

  void visit_for(const ForNode& n, const Stmt&) {
    const auto lo = env_.eval(n.min);
    const auto extent = env_.eval(n.extent);
    const auto slot = env_.push(n.var, lo);
    for (std::int64_t v = lo; v < lo + extent; ++v) {
      env_.set(slot, v);
      this->visit(n.body);
    }
    env_.pop();
  }
  void visit_if(const IfThenElseNode& n, const Stmt&) {
    if (env_.eval(n.cond) != 0)
      this->visit(n.then_case);
    else if (n.else_case.defined())
      this->visit(n.else_case);
  }

 protected:
  te::IndexEnv env_;
};

}  // namespace dlavm::tir
