// ne::compile: turns an expression into a flat evaluator for run-time instantiation.
//
//   auto f = ne::compile(token*4096 + 16, {token});
//   std::int64_t bytes = f({37});                  // or f(std::span<const std::int64_t>)
//
// The expression is simplified (unless CompileOptions::simplify is false), common
// subexpressions are shared, and the result is three-address code over a small register file
// ([arguments | constants | temporaries]), constants mostly as immediate operands, run by a
// direct-threaded loop: no tree walk, no allocation (up to 64 registers), the same checks as
// ne::eval (argument ranges, int64 overflow, division by zero) with the same error types. A
// CompiledExpr is immutable; calls from several threads are safe.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/int_math.hpp>
#include <dlavm/ne/printer.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/ne/structural.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlavm::ne {

struct CompileOptions {
  bool simplify = true;  // compile simplify(e) rather than e as written
};

namespace detail {
class Compiler;
}  // namespace detail

class CompiledExpr {
 public:
  // The value for the given parameter values, in the order of params().
  std::int64_t operator()(std::span<const std::int64_t> args) const;
  std::int64_t operator()(std::initializer_list<std::int64_t> args) const;

  const std::vector<Var>& params() const { return params_; }
  // The expression the code computes (simplified unless told otherwise).
  const Expr& expr() const { return expr_; }
  // Operations executed per call (the final return not counted).
  std::size_t num_instructions() const { return code_.size() - 1; }
  std::size_t num_registers() const { return num_regs_; }

 private:
  friend class detail::Compiler;
  // Three-address operations on registers; the *I forms take their second operand from
  // the instruction's immediate (RSubI computes imm - a).
  enum class Op : std::uint8_t {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Min,
    Max,
    Eq,
    Ne,
    Lt,
    Le,
    And,
    Or,
    Not,
    Select,
    AddI,
    SubI,
    RSubI,
    MulI,
    DivI,
    ModI,
    MinI,
    MaxI,
    EqI,
    NeI,
    LtI,
    LeI,
    GtI,
    GeI,
    Ret,  // returns register a; ends every program
  };
  struct Instr {
    Op op;
    bool swapped;  // the source node has its operands the other way round (for messages)
    std::uint16_t dst;
    std::uint16_t a;
    std::uint16_t b;
    std::uint16_t c;  // select's false branch
    std::int64_t imm;
  };
  static constexpr std::size_t kStackRegisters = 64;

  [[noreturn, gnu::cold]] void fail(std::size_t pc, std::int64_t a, std::int64_t b) const;
  [[noreturn, gnu::cold]] void bad_args(std::span<const std::int64_t> args) const;

  Expr expr_;
  std::vector<Var> params_;
  std::vector<std::int64_t> lo_;  // parameter ranges
  std::vector<std::int64_t> hi_;
  std::vector<std::int64_t> consts_;
  std::vector<Instr> code_;
  std::vector<Expr> source_;  // the node each instruction computes, for error messages
  std::size_t num_regs_ = 0;
};

// The interpreter loop is direct-threaded (GNU computed goto, supported by GCC and Clang):
// every operation ends with its own indirect jump to the next one, which branch predictors
// follow far better than the single jump of a switch. The code always ends with Ret.

// Compiles e as a function of `params`, in that order. Every variable of e (after
// simplification) must be among them; parameters e does not use are allowed.
CompiledExpr compile(const Expr& e, std::vector<Var> params, CompileOptions options = {});

// Compiles e as a function of its variables in creation order (ne::free_vars(e)).
CompiledExpr compile(const Expr& e, CompileOptions options = {});

}  // namespace dlavm::ne

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/ne/compile-inl.hpp>
#endif
