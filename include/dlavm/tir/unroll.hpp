// Unrolling: a loop the schedule marks unrolled (Stage::unroll) whose bounds are constants
// becomes its body once per iteration, with the loop variable replaced by the iteration's
// value; index values that become constants fold into literals. An accelerator pass needs
// this where an operand depends on the loop but an instruction holds it as a constant: the
// shift `x >> 8p` of a byte plane p is one ALU immediate per plane. A loop with a symbolic
// bound stays a loop (unrolled only as far as the code generator can).
//
//   for (p, 0, 2) unroll { W[p] = a >> p * 8 }   ->   W[0] = a >> 0; W[1] = a >> 8
#pragma once

#include <dlavm/tir/rewrite.hpp>
#include <dlavm/tir/stmt.hpp>

#include <vector>

namespace dlavm::tir {

inline Stmt unroll_loops(const Stmt& s) {
  struct Unroller : StmtMutator<Unroller> {
    Stmt visit_for(const ForNode& n, const Stmt& s) {
      const auto lo = n.min.as_int();
      const auto extent = n.extent.as_int();
      if (n.for_kind != ForKind::Unrolled || !lo || !extent) return rebuild(n, s);
      const Stmt body = visit(n.body);
      std::vector<Stmt> copies;
      copies.reserve(static_cast<std::size_t>(*extent));
      for (std::int64_t i = 0; i < *extent; ++i)
        copies.push_back(rewrite(body, {{n.var, ne::Expr(*lo + i)}}));
      return make_seq(copies);
    }
  };
  return Unroller().visit(s);
}

}  // namespace dlavm::tir
