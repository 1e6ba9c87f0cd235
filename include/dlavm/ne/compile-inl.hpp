// Definitions for dlavm/ne/compile.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne/compile.hpp>
#include <dlavm/ne/eval-inl.hpp>

namespace dlavm::ne {

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
    std::uint16_t ret = result;
    relocate(ret);
    out_.num_regs_ = base + out_.code_.size();
    out_.code_.push_back({Op::Ret, false, 0, ret, 0, 0, 0});
    out_.source_.push_back(out_.expr_);
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
    const auto ca = n.a.as_int();
    const auto cb = n.b.as_int();
    if (cb && !ca && *cb != 0) {  // x op imm (a zero divisor stays in a register: it raises)
      if (const auto op = imm_op(k, false)) return emit(*op, reg(n.a), 0, 0, e, *cb, false);
    } else if (ca && !cb) {  // imm op x
      // RSubI computes imm - x, in source order; the others have their operands swapped.
      if (const auto op = imm_op(k, true))
        return emit(*op, reg(n.b), 0, 0, e, *ca, *op != Op::RSubI);
    }
    std::uint16_t a = reg(n.a);
    std::uint16_t b = reg(n.b);
    bool swapped = false;
    if (k == Kind::GT || k == Kind::GE) {  // a > b is b < a
      std::swap(a, b);
      swapped = true;
      k = k == Kind::GT ? Kind::LT : Kind::LE;
    }
    return emit(op_of(k), a, b, a, e, 0, swapped);
  }
  std::uint16_t visit_not(const NotNode& n, const Expr& e) {
    const std::uint16_t a = reg(n.a);
    return emit(Op::Not, a, a, a, e, 0, false);
  }
  std::uint16_t visit_select(const SelectNode& n, const Expr& e) {
    const std::uint16_t c = reg(n.cond);
    const std::uint16_t t = reg(n.t);
    const std::uint16_t f = reg(n.f);
    return emit(Op::Select, c, t, f, e, 0, false);
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

  std::uint16_t emit(Op op, std::uint16_t a, std::uint16_t b, std::uint16_t c, const Expr& e,
                     std::int64_t imm, bool swapped) {
    if (out_.code_.size() >= kMaxRegisters) too_large();
    const auto dst = static_cast<std::uint16_t>(kTemp | out_.code_.size());
    out_.code_.push_back({op, swapped, dst, a, b, c, imm});
    out_.source_.push_back(e);
    return dst;
  }

  // The immediate form of `x k imm` (imm_first: `imm k x`), if there is one.
  static std::optional<Op> imm_op(Kind k, bool imm_first) {
    switch (k) {
      case Kind::Add:
        return Op::AddI;
      case Kind::Sub:
        return imm_first ? Op::RSubI : Op::SubI;
      case Kind::Mul:
        return Op::MulI;
      case Kind::FloorDiv:
        return imm_first ? std::nullopt : std::optional(Op::DivI);
      case Kind::FloorMod:
        return imm_first ? std::nullopt : std::optional(Op::ModI);
      case Kind::Min:
        return Op::MinI;
      case Kind::Max:
        return Op::MaxI;
      case Kind::EQ:
        return Op::EqI;
      case Kind::NE:
        return Op::NeI;
      case Kind::LT:
        return imm_first ? Op::GtI : Op::LtI;  // imm < x is x > imm
      case Kind::LE:
        return imm_first ? Op::GeI : Op::LeI;
      case Kind::GT:
        return imm_first ? Op::LtI : Op::GtI;
      case Kind::GE:
        return imm_first ? Op::LeI : Op::GeI;
      default:
        return std::nullopt;
    }
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

// The dispatch table takes label addresses (GNU computed goto). One threaded interpreter
// over 145 lines, kept whole on purpose: a label per opcode must sit in one function for the
// computed goto, and it is the hot loop of every general field an instantiation evaluates.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
DLAVM_INLINE std::int64_t CompiledExpr::operator()(std::span<const std::int64_t> args) const {
  const std::size_t n = params_.size();
  if (args.size() != n) [[unlikely]]
    bad_args(args);
  std::int64_t stack[kStackRegisters];
  std::unique_ptr<std::int64_t[]> heap;
  std::int64_t* r = stack;
  if (num_regs_ > kStackRegisters) [[unlikely]] {
    heap = std::make_unique<std::int64_t[]>(num_regs_);
    r = heap.get();
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t v = args[i];
    if (v < lo_[i] || v > hi_[i]) [[unlikely]]
      bad_args(args);
    r[i] = v;
  }
  std::copy(consts_.begin(), consts_.end(), r + n);

  static const void* const dispatch[] = {
      &&op_add,  &&op_sub,   &&op_mul,  &&op_div,  &&op_mod,  &&op_min,  &&op_max,    &&op_eq,
      &&op_ne,   &&op_lt,    &&op_le,   &&op_and,  &&op_or,   &&op_not,  &&op_select, &&op_addi,
      &&op_subi, &&op_rsubi, &&op_muli, &&op_divi, &&op_modi, &&op_mini, &&op_maxi,   &&op_eqi,
      &&op_nei,  &&op_lti,   &&op_lei,  &&op_gti,  &&op_gei,  &&op_ret};
  static_assert(std::size(dispatch) == static_cast<std::size_t>(Op::Ret) + 1);
  const Instr* const code = code_.data();
  const Instr* in = code;
  std::int64_t a = 0;
  std::int64_t b = 0;
#define DLAVM_NE_NEXT()                               \
  do {                                                \
    ++in;                                             \
    goto* dispatch[static_cast<std::size_t>(in->op)]; \
  } while (0)
  // An overflow-checked operation on x and y (in evaluation order).
#define DLAVM_NE_CHECKED(builtin, x, y)              \
  a = x;                                             \
  b = y;                                             \
  if (builtin(a, b, &r[in->dst])) [[unlikely]]       \
    fail(static_cast<std::size_t>(in - code), a, b); \
  DLAVM_NE_NEXT()

  goto* dispatch[static_cast<std::size_t>(in->op)];
op_add:
  DLAVM_NE_CHECKED(__builtin_add_overflow, r[in->a], r[in->b]);
op_sub:
  DLAVM_NE_CHECKED(__builtin_sub_overflow, r[in->a], r[in->b]);
op_mul:
  DLAVM_NE_CHECKED(__builtin_mul_overflow, r[in->a], r[in->b]);
op_div:
  a = r[in->a];
  b = r[in->b];
  if (b == 0 || (b == -1 && a == detail::int64_min)) [[unlikely]]
    fail(static_cast<std::size_t>(in - code), a, b);
  r[in->dst] = detail::floor_div(a, b);
  DLAVM_NE_NEXT();
op_mod:
  a = r[in->a];
  b = r[in->b];
  if (b == 0) [[unlikely]]
    fail(static_cast<std::size_t>(in - code), a, b);
  r[in->dst] = detail::floor_mod(a, b);
  DLAVM_NE_NEXT();
op_min:
  a = r[in->a];
  b = r[in->b];
  r[in->dst] = a < b ? a : b;
  DLAVM_NE_NEXT();
op_max:
  a = r[in->a];
  b = r[in->b];
  r[in->dst] = a < b ? b : a;
  DLAVM_NE_NEXT();
op_eq:
  r[in->dst] = r[in->a] == r[in->b];
  DLAVM_NE_NEXT();
op_ne:
  r[in->dst] = r[in->a] != r[in->b];
  DLAVM_NE_NEXT();
op_lt:
  r[in->dst] = r[in->a] < r[in->b];
  DLAVM_NE_NEXT();
op_le:
  r[in->dst] = r[in->a] <= r[in->b];
  DLAVM_NE_NEXT();
op_and:
  r[in->dst] = (r[in->a] != 0) & (r[in->b] != 0);
  DLAVM_NE_NEXT();
op_or:
  r[in->dst] = (r[in->a] != 0) | (r[in->b] != 0);
  DLAVM_NE_NEXT();
op_not:
  r[in->dst] = r[in->a] == 0;
  DLAVM_NE_NEXT();
op_select:
  r[in->dst] = r[in->a] != 0 ? r[in->b] : r[in->c];
  DLAVM_NE_NEXT();
op_addi:
  DLAVM_NE_CHECKED(__builtin_add_overflow, r[in->a], in->imm);
op_subi:
  DLAVM_NE_CHECKED(__builtin_sub_overflow, r[in->a], in->imm);
op_rsubi:
  DLAVM_NE_CHECKED(__builtin_sub_overflow, in->imm, r[in->a]);
op_muli:
  DLAVM_NE_CHECKED(__builtin_mul_overflow, r[in->a], in->imm);
op_divi:  // imm != 0 (see Compiler::visit_binary)
  a = r[in->a];
  if (in->imm == -1 && a == detail::int64_min) [[unlikely]]
    fail(static_cast<std::size_t>(in - code), a, in->imm);
  r[in->dst] = detail::floor_div(a, in->imm);
  DLAVM_NE_NEXT();
op_modi:
  r[in->dst] = detail::floor_mod(r[in->a], in->imm);
  DLAVM_NE_NEXT();
op_mini:
  a = r[in->a];
  r[in->dst] = a < in->imm ? a : in->imm;
  DLAVM_NE_NEXT();
op_maxi:
  a = r[in->a];
  r[in->dst] = a < in->imm ? in->imm : a;
  DLAVM_NE_NEXT();
op_eqi:
  r[in->dst] = r[in->a] == in->imm;
  DLAVM_NE_NEXT();
op_nei:
  r[in->dst] = r[in->a] != in->imm;
  DLAVM_NE_NEXT();
op_lti:
  r[in->dst] = r[in->a] < in->imm;
  DLAVM_NE_NEXT();
op_lei:
  r[in->dst] = r[in->a] <= in->imm;
  DLAVM_NE_NEXT();
op_gti:
  r[in->dst] = r[in->a] > in->imm;
  DLAVM_NE_NEXT();
op_gei:
  r[in->dst] = r[in->a] >= in->imm;
  DLAVM_NE_NEXT();
op_ret:
  return r[in->a];
#undef DLAVM_NE_CHECKED
#undef DLAVM_NE_NEXT
}
#pragma GCC diagnostic pop

DLAVM_INLINE CompiledExpr compile(const Expr& e, std::vector<Var> params, CompileOptions options) {
  return detail::Compiler::compile(e, std::move(params), options.simplify);
}

DLAVM_INLINE CompiledExpr compile(const Expr& e, CompileOptions options) {
  return compile(e, free_vars(e), options);
}

}  // namespace dlavm::ne

namespace dlavm::ne {

DLAVM_INLINE std::int64_t CompiledExpr::operator()(std::initializer_list<std::int64_t> args) const {
  return (*this)(std::span<const std::int64_t>(args.begin(), args.size()));
}

[[noreturn, gnu::cold]] DLAVM_INLINE void CompiledExpr::fail(std::size_t pc, std::int64_t a,
                                                             std::int64_t b) const {
  if (code_[pc].swapped) std::swap(a, b);
  const auto* node = source_[pc].as<BinaryNode>();
  detail::raise_arithmetic("ne::compile", expr_, source_[pc], node->a, a, node->b, b);
}

[[noreturn, gnu::cold]] DLAVM_INLINE void CompiledExpr::bad_args(
    std::span<const std::int64_t> args) const {
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

}  // namespace dlavm::ne
