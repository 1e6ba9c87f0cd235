// ne::compile: turns an expression into a flat evaluator for run-time instantiation.
//
//   auto f = ne::compile(token*4096 + 16, {token});
//   std::int64_t bytes = f({37});                  // or f(std::span<const std::int64_t>)
//
// The expression is simplified (unless CompileOptions::simplify is false), common
// subexpressions are shared, and the result is three-address code over a small register file
// ([arguments | constants | temporaries]) run by one switch loop: no tree walk, no allocation
// (up to 64 registers), the same checks as ne::eval (argument ranges, int64 overflow,
// division by zero) with the same error types. A CompiledExpr is immutable; calls from
// several threads are safe.
#pragma once

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
}

class CompiledExpr {
 public:
  // The value for the given parameter values, in the order of params().
  std::int64_t operator()(std::span<const std::int64_t> args) const;
  std::int64_t operator()(std::initializer_list<std::int64_t> args) const {
    return (*this)(std::span<const std::int64_t>(args.begin(), args.size()));
  }

  const std::vector<Var>& params() const { return params_; }
  // The expression the code computes (simplified unless told otherwise).
  const Expr& expr() const { return expr_; }
  std::size_t num_instructions() const { return code_.size(); }
  std::size_t num_registers() const { return num_regs_; }

 private:
  friend class detail::Compiler;
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
    Select
  };
  struct Instr {
    Op op;
    std::uint16_t dst;
    std::uint16_t a;
    std::uint16_t b;
    std::uint16_t c;  // select's false branch
  };
  static constexpr std::size_t kStackRegisters = 64;

  [[noreturn, gnu::cold, gnu::noinline]] void fail(std::size_t pc, std::int64_t a,
                                                   std::int64_t b) const {
    const auto* node = source_[pc].as<BinaryNode>();
    detail::raise_arithmetic("ne::compile", expr_, source_[pc], node->a, a, node->b, b);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bad_args(std::span<const std::int64_t> args) const {
    if (args.size() != params_.size()) {
      std::vector<std::string_view> names;
      for (const Var& p : params_) names.push_back(p.name());
      raise<ValueError>("ne::compile of `{}`: called with {} argument{}, expected {} ({})", expr_,
                        args.size(), args.size() == 1 ? "" : "s", params_.size(),
                        fmt::join(names, ", "));
    }
    for (std::size_t i = 0; i < args.size(); ++i)
      detail::check_in_range(params_[i].node(), args[i], "ne::compile", expr_);
    raise<ValueError>("ne::compile of `{}`: bad arguments", expr_);  // not reached
  }

  Expr expr_;
  std::vector<Var> params_;
  std::vector<std::int64_t> lo_;  // parameter ranges
  std::vector<std::int64_t> hi_;
  std::vector<std::int64_t> consts_;
  std::vector<Instr> code_;
  std::vector<Expr> source_;  // the node each instruction computes, for error messages
  std::size_t num_regs_ = 0;
  std::uint16_t result_ = 0;
};

namespace detail {

class Compiler : public ExprFunctor<Compiler, std::uint16_t> {
 public:
  using Op = CompiledExpr::Op;
  static constexpr std::uint32_t kTemp = 0x8000;  // provisional index of temporaries
  static constexpr std::size_t kMaxRegisters = 0x7fff;

  static CompiledExpr compile(const Expr& e, std::vector<Var> params, bool simplify_first) {
    CompiledExpr out;
    out.expr_ = simplify_first ? simplify(e) : e;
    for (const Var& p : params) {
      out.lo_.push_back(p.min());
      out.hi_.push_back(p.max());
    }
    out.params_ = std::move(params);
    Compiler(out).run();
    return out;
  }

 private:
  explicit Compiler(CompiledExpr& out) : out_(out) {}

  void run() {
    const std::uint16_t result = reg(out_.expr_);
    const std::size_t base = out_.params_.size() + out_.consts_.size();
    if (base + out_.code_.size() > kMaxRegisters)
      raise<ValueError>("ne::compile: expression needs {} registers, the limit is {}",
                        base + out_.code_.size(), kMaxRegisters);
    auto relocate = [&](std::uint16_t& r) {
      if (r & kTemp) r = static_cast<std::uint16_t>(base + (r & ~kTemp));
    };
    for (auto& in : out_.code_) {
      relocate(in.dst);
      relocate(in.a);
      relocate(in.b);
      relocate(in.c);
    }
    out_.result_ = result;
    relocate(out_.result_);
    out_.num_regs_ = base + out_.code_.size();
  }

 public:
  std::uint16_t visit_int(const IntImmNode& n, const Expr&) {
    if (out_.params_.size() + out_.consts_.size() >= kMaxRegisters) too_large();
    out_.consts_.push_back(n.value);
    return static_cast<std::uint16_t>(out_.params_.size() + out_.consts_.size() - 1);
  }
  std::uint16_t visit_var(const VarNode& n, const Expr&) {
    for (std::size_t i = 0; i < out_.params_.size(); ++i)
      if (out_.params_[i].id() == n.id) return static_cast<std::uint16_t>(i);
    std::vector<std::string_view> names;
    for (const Var& p : out_.params_) names.push_back(p.name());
    raise<ValueError>("ne::compile of `{}`: variable '{}' is not among the parameters ({})",
                      out_.expr_, n.name, fmt::join(names, ", "));
  }
  std::uint16_t visit_binary(const BinaryNode& n, const Expr& e) {
    Kind k = n.kind();
    std::uint16_t a = reg(n.a);
    std::uint16_t b = reg(n.b);
    if (k == Kind::GT || k == Kind::GE) {  // a > b is b < a
      std::swap(a, b);
      k = k == Kind::GT ? Kind::LT : Kind::LE;
    }
    return emit(op_of(k), a, b, a, e);
  }
  std::uint16_t visit_not(const NotNode& n, const Expr& e) {
    const std::uint16_t a = reg(n.a);
    return emit(Op::Not, a, a, a, e);
  }
  std::uint16_t visit_select(const SelectNode& n, const Expr& e) {
    const std::uint16_t c = reg(n.cond);
    const std::uint16_t t = reg(n.t);
    const std::uint16_t f = reg(n.f);
    return emit(Op::Select, c, t, f, e);
  }

 private:
  [[noreturn]] static void too_large() {
    raise<ValueError>("ne::compile: expression needs more than {} registers", kMaxRegisters);
  }

  std::uint16_t reg(const Expr& e) {
    if (auto it = memo_.find(e); it != memo_.end()) return it->second;
    const std::uint16_t r = visit(e);
    memo_.emplace(e, r);
    return r;
  }

  std::uint16_t emit(Op op, std::uint16_t a, std::uint16_t b, std::uint16_t c, const Expr& e) {
    if (out_.code_.size() >= kMaxRegisters) too_large();
    const auto dst = static_cast<std::uint16_t>(kTemp | out_.code_.size());
    out_.code_.push_back({op, dst, a, b, c});
    out_.source_.push_back(e);
    return dst;
  }

  static Op op_of(Kind k) {
    switch (k) {
      case Kind::Add:
        return Op::Add;
      case Kind::Sub:
        return Op::Sub;
      case Kind::Mul:
        return Op::Mul;
      case Kind::FloorDiv:
        return Op::Div;
      case Kind::FloorMod:
        return Op::Mod;
      case Kind::Min:
        return Op::Min;
      case Kind::Max:
        return Op::Max;
      case Kind::EQ:
        return Op::Eq;
      case Kind::NE:
        return Op::Ne;
      case Kind::LT:
        return Op::Lt;
      case Kind::LE:
        return Op::Le;
      case Kind::And:
        return Op::And;
      default:
        return Op::Or;
    }
  }

  CompiledExpr& out_;
  std::unordered_map<Expr, std::uint16_t, ExprHash, ExprEqual> memo_;
};

}  // namespace detail

inline std::int64_t CompiledExpr::operator()(std::span<const std::int64_t> args) const {
  const std::size_t n = params_.size();
  if (args.size() != n) [[unlikely]]
    bad_args(args);
  std::int64_t stack[kStackRegisters];
  std::vector<std::int64_t> heap;
  std::int64_t* r = stack;
  if (num_regs_ > kStackRegisters) [[unlikely]] {
    heap.resize(num_regs_);
    r = heap.data();
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t v = args[i];
    if (v < lo_[i] || v > hi_[i]) [[unlikely]]
      bad_args(args);
    r[i] = v;
  }
  std::copy(consts_.begin(), consts_.end(), r + n);
  const Instr* code = code_.data();
  const std::size_t size = code_.size();
  for (std::size_t pc = 0; pc < size; ++pc) {
    const Instr& in = code[pc];
    const std::int64_t a = r[in.a];
    const std::int64_t b = r[in.b];
    std::int64_t& out = r[in.dst];
    switch (in.op) {
      case Op::Add:
        if (__builtin_add_overflow(a, b, &out)) [[unlikely]]
          fail(pc, a, b);
        break;
      case Op::Sub:
        if (__builtin_sub_overflow(a, b, &out)) [[unlikely]]
          fail(pc, a, b);
        break;
      case Op::Mul:
        if (__builtin_mul_overflow(a, b, &out)) [[unlikely]]
          fail(pc, a, b);
        break;
      case Op::Div:
        if (b == 0 || (b == -1 && a == detail::int64_min)) [[unlikely]]
          fail(pc, a, b);
        out = detail::floor_div(a, b);
        break;
      case Op::Mod:
        if (b == 0) [[unlikely]]
          fail(pc, a, b);
        out = detail::floor_mod(a, b);
        break;
      case Op::Min:
        out = a < b ? a : b;
        break;
      case Op::Max:
        out = a < b ? b : a;
        break;
      case Op::Eq:
        out = a == b;
        break;
      case Op::Ne:
        out = a != b;
        break;
      case Op::Lt:
        out = a < b;
        break;
      case Op::Le:
        out = a <= b;
        break;
      case Op::And:
        out = (a != 0) & (b != 0);
        break;
      case Op::Or:
        out = (a != 0) | (b != 0);
        break;
      case Op::Not:
        out = a == 0;
        break;
      case Op::Select:
        out = a != 0 ? b : r[in.c];
        break;
    }
  }
  return r[result_];
}

// Compiles e as a function of `params`, in that order. Every variable of e (after
// simplification) must be among them; parameters e does not use are allowed.
inline CompiledExpr compile(const Expr& e, std::vector<Var> params, CompileOptions options = {}) {
  return detail::Compiler::compile(e, std::move(params), options.simplify);
}

// Compiles e as a function of its variables in creation order (ne::free_vars(e)).
inline CompiledExpr compile(const Expr& e, CompileOptions options = {}) {
  return compile(e, free_vars(e), options);
}

}  // namespace dlavm::ne
