// Definitions for vta/replay_plan.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne/affine.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/structural.hpp>
#include <dlavm/ne/substitute.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/vta/loop_memo_scan.hpp>
#include <dlavm/vta/replay_plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace dlavm::vta::detail {

// Walks the program's statements once, in the order Program::write replays them, appending
// their operations and compiling their fields.
class PlanCompiler : public tir::StmtVisitor<PlanCompiler> {
 public:
  using OpKind = ReplayPlan::OpKind;
  PlanCompiler(ReplayPlan& plan, const ReplaySource& p) : plan_(plan), prog_(p) {
    plan_.registers_ = ReplayPlan::kOne + 1;
    ranges_.push_back({1, 1});
  }

  void visit_for(const tir::ForNode& n, const tir::Stmt&) {
    if (in_kernel_ || memo_ || plain_ == &n || !LoopMemoScan::candidate(n.extent))
      return loop(n, false);
    // The outermost loops outside kernels are memoized (ReplayPlan::LoopMemo) when the values
    // their body reads from their variable, DRAM offsets aside, can be computed at the top of
    // an iteration: compiled first to learn which those are, then, if they cannot, compiled
    // again as a plain loop whose inner loops may be memoized themselves.
    const Snapshot before = snapshot();
    memo_.emplace(n.var);
    loop(n, true);
    const bool ok = memo_->scan.ok;
    memo_.reset();
    if (ok) return;
    restore(before);
    plain_ = &n;
    loop(n, false);
  }
  void visit_if(const tir::IfThenElseNode& n, const tir::Stmt&) {
    ReplayPlan::Op op;
    op.kind = OpKind::If;
    op.field = field(n.cond);
    const auto at = push(op);
    visit(n.then_case);
    if (n.else_case.defined()) {
      ReplayPlan::Op skip;
      skip.kind = OpKind::Else;
      const auto else_at = push(skip);
      plan_.ops_[at].jump = else_at + 1;
      visit(n.else_case);
      plan_.ops_[else_at].jump = static_cast<std::uint32_t>(plan_.ops_.size());
    } else {
      plan_.ops_[at].jump = static_cast<std::uint32_t>(plan_.ops_.size());
    }
  }
  void visit_store(const tir::StoreNode& n, const tir::Stmt&) {
    raise<ScheduleError>("program '{}': a store to '{}' is left on the host", prog_.name(),
                         n.buffer.name());
  }
  void visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
    if (n.key != intrin::uop_kernel) return tir::StmtVisitor<PlanCompiler>::visit_attr(n, s);
    ReplayPlan::Op begin;
    begin.kind = OpKind::KernelBegin;
    begin.slot = static_cast<std::uint32_t>(plan_.kernels_.size());
    const auto at = push(begin);
    const auto first_field = plan_.fields_.size();
    const auto first_register = plan_.registers_;
    // a kernel without a micro-op call writes nothing: not scanned (LoopMemoScan)
    const bool writes = kernel_call(n.body) != nullptr;
    auto scanned = std::move(memo_);
    memo_.reset();
    if (writes) memo_ = std::move(scanned);
    in_kernel_ = true;
    visit(n.body);
    in_kernel_ = false;
    if (!writes) memo_ = std::move(scanned);
    ReplayPlan::Op end;
    end.kind = OpKind::KernelEnd;
    plan_.ops_[at].jump = push(end);
    if (writes) count_call();
    // Its keys, as vta::replay_source keys a kernel's memo: the value of each field that
    // reads enclosing loops alone, and the enclosing loops that a field varying inside the
    // kernel reads (its own loops, the dims and what is computed from them alone are the same
    // throughout an instantiation): a kernel of a loop's every iteration that reads the
    // loop only through the same block size is entered again with the same keys.
    const auto last_field = plan_.fields_.size();
    std::vector<std::uint32_t> outer_read;
    std::vector<std::uint32_t> keys;
    for (auto k = first_field; k < last_field; ++k) {
      const auto& f = plan_.fields_[k];
      std::vector<std::uint32_t> read;
      for (std::uint32_t i = 0; i < f.count; ++i)
        if (f.general < 0) {
          read.push_back(plan_.terms_[f.first + i].a);
          read.push_back(plan_.terms_[f.first + i].b);
        } else {
          read.push_back(plan_.args_[f.first + i]);
        }
      bool outer = false, inner = false;
      for (const auto r : read) {
        if (!outer_loop(r)) continue;
        (r < first_register ? outer : inner) = true;
      }
      if (outer && !inner) keys.push_back(static_cast<std::uint32_t>(k));
      if (outer && inner)
        for (const auto r : read)
          if (r < first_register && outer_loop(r)) outer_read.push_back(r);
    }
    std::sort(outer_read.begin(), outer_read.end());
    outer_read.erase(std::unique(outer_read.begin(), outer_read.end()), outer_read.end());
    for (const auto r : outer_read) {  // the loop's register, as a field
      ReplayPlan::Field f;
      f.first = static_cast<std::uint32_t>(plan_.terms_.size());
      f.count = 1;
      plan_.terms_.push_back({r, ReplayPlan::kOne, 1});
      keys.push_back(static_cast<std::uint32_t>(plan_.fields_.size()));
      plan_.fields_.push_back(f);
    }
    ReplayPlan::Kernel kernel;
    kernel.first_key = static_cast<std::uint32_t>(plan_.keys_.size());
    plan_.keys_.insert(plan_.keys_.end(), keys.begin(), keys.end());
    kernel.keys = static_cast<std::uint32_t>(keys.size());
    plan_.kernels_.push_back(kernel);
  }
  void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
    const auto* call = n.value.as<te::CallNode>();
    if (call == nullptr)
      raise<ScheduleError>("program '{}': `{}` is not a VTA intrinsic", prog_.name(), n.value);
    const std::string& name = call->name;
    const auto& a = call->args;
    ReplayPlan::Op op;
    op.call = call;
    if (in_kernel_) {
      if (name == intrin::uop_loop_begin) {
        op.kind = OpKind::LoopBegin;
        op.field = fields({&a[0], &a[1], &a[2], &a[3]});
      } else if (name == intrin::uop_loop_end) {
        return;
      } else if (name == intrin::gemm) {
        op.kind = OpKind::Push;
        op.micro = ReplayPlan::Micro::Gemm;
        op.field = fields({&a[0], &a[1], &a[2]});
        for (int k = 0; k < 3; ++k) place(op, k, call->buffers[static_cast<std::size_t>(k)]);
      } else if (name == intrin::gemm_reset) {
        op.kind = OpKind::Push;
        op.micro = ReplayPlan::Micro::GemmReset;
        op.field = fields({&a[0]});
        place(op, 0, call->buffers[0]);
      } else if (name == intrin::alu) {
        op.kind = OpKind::Push;
        op.micro = ReplayPlan::Micro::Alu;
        op.field = fields({&a[3], &a[4], &a[0], &a[1], &a[2]});
        place(op, 0, call->buffers[0]);
        place(op, 1, call->buffers[1]);
      } else {
        raise<ScheduleError>("program '{}': '{}' inside a micro-op kernel", prog_.name(), name);
      }
    } else if (name == intrin::load) {
      op.kind = OpKind::Load;
      op.field = fields({&a[0], &a[1]});
      dram_field(a[2]);
      fields({&a[3], &a[4], &a[5], &a[6], &a[7], &a[8], &a[9]});
      count_call();
      place(op, 0, call->buffers[0]);
      op.param = param(call->buffers[1]);
    } else if (name == intrin::store) {
      op.kind = OpKind::Store;
      op.field = fields({&a[1]});
      dram_field(a[2]);
      fields({&a[3], &a[4], &a[5]});
      count_call();
      place(op, 0, call->buffers[0]);
      op.param = param(call->buffers[1]);
    } else {
      raise<ScheduleError>("program '{}': intrinsic '{}' outside a micro-op kernel", prog_.name(),
                           name);
    }
    push(op);
  }

 private:
  struct Interval {
    std::int64_t lo = 0, hi = 0;
  };
  // values past this are treated as unbounded: an affine field within it cannot overflow
  static constexpr std::int64_t kSafe = std::int64_t{1} << 61;
  // (in double: the bounds only decide whether a field could come near int64's range)
  static std::int64_t saturate(double v) {
    return static_cast<std::int64_t>(
        std::clamp(v, -static_cast<double>(kSafe), static_cast<double>(kSafe)));
  }

  // The loop being scanned for memoization (LoopMemoScan) and its keys' expressions.
  struct MemoScan {
    explicit MemoScan(ne::Var v) : scan(std::move(v), ReplayPlan::kKernelEntries) {}
    LoopMemoScan scan;
    std::vector<ne::Expr> keys;
  };
  // The plan's sizes before a loop compiled as memoized, to compile it again as a plain one.
  struct Snapshot {
    std::size_t ops, fields, terms, args, general, symbols, invariants, kernels, keys, memos,
        memo_keys, ranges, invariant_exprs;
    std::uint32_t registers;
  };
  Snapshot snapshot() const {
    const ReplayPlan& p = plan_;
    return {p.ops_.size(),           p.fields_.size(),  p.terms_.size(),      p.args_.size(),
            p.general_.size(),       p.symbols_.size(), p.invariants_.size(), p.kernels_.size(),
            p.keys_.size(),          p.memos_.size(),   p.memo_keys_.size(),  ranges_.size(),
            invariant_exprs_.size(), p.registers_};
  }
  void restore(const Snapshot& s) {
    const auto cut = [](auto& v, std::size_t n) {
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(n), v.end());
    };
    ReplayPlan& p = plan_;
    cut(p.ops_, s.ops);
    cut(p.fields_, s.fields);
    cut(p.terms_, s.terms);
    cut(p.args_, s.args);
    cut(p.general_, s.general);
    cut(p.symbols_, s.symbols);
    cut(p.invariants_, s.invariants);
    cut(p.kernels_, s.kernels);
    cut(p.keys_, s.keys);
    cut(p.memos_, s.memos);
    cut(p.memo_keys_, s.memo_keys);
    cut(ranges_, s.ranges);
    cut(invariant_exprs_, s.invariant_exprs);
    p.registers_ = s.registers;
  }

  void loop(const tir::ForNode& n, bool memoized) {
    ReplayPlan::Op op;
    op.kind = OpKind::For;
    op.field = field(n.min);
    const Interval lo = last_range_;
    field(n.extent);
    const Interval extent = last_range_;
    op.slot = plan_.registers_++;
    // the variable's values: [min, min + extent - 1], as far as the bounds know (none where
    // the extent is 0 at most: then [min, min], a range its body's fields can be compiled for)
    ranges_.push_back({lo.lo, std::max(lo.lo, saturate(static_cast<double>(lo.hi) +
                                                       static_cast<double>(extent.hi) - 1))});
    const std::int64_t repeat = memo_ ? memo_->scan.repeat : 1;
    if (memo_ && !memoized) memo_->scan.open(n.var, n.extent, in_kernel_);
    if (memoized) op.memo = static_cast<std::uint32_t>(plan_.memos_.size());
    const auto at = push(op);
    loops_.push_back({n.var, op.slot});
    std::uint32_t iteration = 0;
    if (memoized) {
      ReplayPlan::Op it;
      it.kind = OpKind::Iteration;
      it.slot = op.slot;
      it.memo = op.memo;
      iteration = push(it);
    }
    visit(n.body);
    if (memoized && memo_->scan.ok) {
      // its keys, computed at the top of an iteration (compiled as fields of no loop inside)
      MemoScan scanned = std::move(*memo_);
      memo_.reset();
      ReplayPlan::LoopMemo m;
      m.first_key = static_cast<std::uint32_t>(plan_.memo_keys_.size());
      for (const auto& k : scanned.keys) plan_.memo_keys_.push_back(field(k));
      m.keys = static_cast<std::uint32_t>(scanned.keys.size());
      m.affine = scanned.scan.affine;
      m.calls = static_cast<std::uint32_t>(scanned.scan.memo_calls());
      plan_.memos_.push_back(m);
      memo_ = std::move(scanned);
    }
    if (memo_) memo_->scan.close(repeat);
    loops_.pop_back();
    ReplayPlan::Op end;
    end.kind = OpKind::EndFor;
    end.slot = op.slot;
    end.memo = op.memo;
    end.jump = memoized ? iteration : at + 1;
    const auto end_at = push(end);
    plan_.ops_[at].jump = end_at + 1;
    if (memoized) plan_.ops_[iteration].jump = end_at;
  }

  // A field of the loop being scanned: a key where it reads the loop's variable alone.
  void scan(const ne::Expr& x) {
    if (memo_->scan.read(x, in_kernel_) &&
        std::none_of(memo_->keys.begin(), memo_->keys.end(),
                     [&](const ne::Expr& k) { return ne::equal(k, x); }))
      memo_->keys.push_back(x);
  }
  // A transfer's DRAM offset: a copied iteration recomputes it, so it is no key.
  void dram_field(const te::Expr& e) {
    if (memo_) memo_->scan.dram(e);
    auto scanned = std::move(memo_);
    memo_.reset();
    field(e);
    memo_ = std::move(scanned);
  }
  // A call that writes an instruction, in the loop being scanned.
  void count_call() {
    if (memo_) memo_->scan.call();
  }

  // Whether register r is a loop variable's (not a dim's, nor one computed from dims alone).
  bool outer_loop(std::uint32_t r) const {
    for (const auto& op : plan_.ops_)
      if (op.kind == OpKind::For && op.slot == r) return true;
    return false;
  }

  std::uint32_t push(const ReplayPlan::Op& op) {
    plan_.ops_.push_back(op);
    return static_cast<std::uint32_t>(plan_.ops_.size() - 1);
  }
  void place(ReplayPlan::Op& op, int k, const te::Buffer& b) const {
    const auto it = prog_.sram.find(b.get());
    if (it == prog_.sram.end())
      raise<ScheduleError>("program '{}': buffer '{}' has no SRAM placement", prog_.name(),
                           b.name());
    op.sram[k] = it->second.base;
    op.regions[k] = prog_.region_of.at(b.get());
  }
  std::uint32_t param(const te::Buffer& b) const {
    for (std::size_t k = 0; k < prog_.func.flat_params.size(); ++k)
      if (prog_.func.flat_params[k].get() == b.get()) return static_cast<std::uint32_t>(k);
    raise<ScheduleError>("program '{}': buffer '{}' is not a parameter in DRAM", prog_.name(),
                         b.name());
  }
  std::uint32_t fields(std::initializer_list<const te::Expr*> args) {
    const auto first = static_cast<std::uint32_t>(plan_.fields_.size());
    for (const auto* a : args) field(*a);
    return first;
  }

  // The register of variable v: the innermost loop binding it, or a dim.
  std::uint32_t slot(const ne::Var& v) {
    if (const auto loop = loop_slot(v)) return *loop;
    for (const auto& s : plan_.symbols_)
      if (s.var.id() == v.id()) return s.slot;
    const auto* node = v.as<ne::VarNode>();
    plan_.symbols_.push_back({v, plan_.registers_++});
    ranges_.push_back({std::max(node->min, -kSafe), std::min(node->max, kSafe)});
    return plan_.symbols_.back().slot;
  }
  std::optional<std::uint32_t> loop_slot(const ne::Var& v) const {
    for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
      if (it->first.id() == v.id()) return it->second;
    return std::nullopt;
  }

  // Compiles one field; last_range_ is then its interval.
  std::uint32_t field(const te::Expr& e) {
    ReplayPlan::Field f;
    const auto at = static_cast<std::uint32_t>(plan_.fields_.size());
    if (const auto* c = e.as<te::IntImmNode>()) {
      f.constant = c->value;
      last_range_ = {saturate(static_cast<double>(c->value)),
                     saturate(static_cast<double>(c->value))};
      plan_.fields_.push_back(f);
      return at;
    }
    const auto* index = e.as<te::IndexNode>();
    if (index == nullptr)
      raise<ScheduleError>("program '{}': intrinsic argument `{}` is not an index", prog_.name(),
                           e);
    return field(index->index);
  }
  std::uint32_t field(const ne::Expr& x) {
    if (memo_) scan(x);
    ReplayPlan::Field f;
    if (!linear(x, f) && !clamped(x, f)) f = compiled(x);
    plan_.fields_.push_back(f);
    return static_cast<std::uint32_t>(plan_.fields_.size() - 1);
  }

  // x through ne::compile over its variables' registers, each a variable of unbounded range (a
  // dim's range is checked once, when it is bound), keeping eval's checks.
  ReplayPlan::Field compiled(const ne::Expr& x) {
    const std::vector<ne::Var> vars = ne::free_vars(x);
    std::vector<ne::Substitution> fresh;
    std::vector<ne::Substitution> ranged;
    std::vector<ne::Var> params;
    ReplayPlan::Field f;
    f.first = static_cast<std::uint32_t>(plan_.args_.size());
    f.count = static_cast<std::uint32_t>(vars.size());
    for (const auto& v : vars) {
      const auto& name = v.as<ne::VarNode>()->name;
      params.push_back(ne::var(name, std::numeric_limits<std::int64_t>::min(),
                               std::numeric_limits<std::int64_t>::max()));
      fresh.emplace_back(v, params.back());
      const std::uint32_t reg = slot(v);
      plan_.args_.push_back(reg);
      ranged.emplace_back(v, ne::var(name, ranges_[reg].lo, ranges_[reg].hi));
    }
    const ne::Interval b = ne::bounds(ne::substitute(x, ranged));
    last_range_ = {saturate(static_cast<double>(b.min)), saturate(static_cast<double>(b.max))};
    f.general = static_cast<std::int32_t>(plan_.general_.size());
    plan_.general_.push_back(
        ne::compile(ne::substitute(x, fresh), std::move(params), {.simplify = false}));
    return f;
  }

  // The register holding x, an expression of the dims alone: a dim's own, or one computed once
  // per instantiation (one register per distinct expression); last_range_ is its interval.
  std::uint32_t invariant(const ne::Expr& x) {
    if (x.as<ne::VarNode>() != nullptr) {
      const std::uint32_t reg = slot(ne::free_vars(x).front());
      last_range_ = ranges_[reg];
      return reg;
    }
    for (const auto& [e, reg] : invariant_exprs_)
      if (ne::equal(e, x)) {
        last_range_ = ranges_[reg];
        return reg;
      }
    const ReplayPlan::Field f = compiled(x);
    const std::uint32_t reg = plan_.registers_++;
    ranges_.push_back(last_range_);
    plan_.invariants_.push_back({f, reg});
    invariant_exprs_.emplace_back(x, reg);
    return reg;
  }

  // x as constant + sum(coef * a * b), linear in the loop variables with coefficients of the
  // dims alone (a dim, or a register computed from them: token * floordiv(token + 15, 16)
  // times a loop variable is one term), if its terms cannot overflow.
  bool linear(const ne::Expr& x, ReplayPlan::Field& f) {
    std::vector<ne::Var> loop_vars;
    std::vector<std::uint32_t> loop_slots;
    for (const auto& v : ne::free_vars(x))
      if (const auto s = loop_slot(v)) {
        loop_vars.push_back(v);
        loop_slots.push_back(*s);
      }
    const auto form = ne::linear_form(x, loop_vars);
    if (!form) return false;
    std::vector<ReplayPlan::Term> terms;
    for (std::size_t k = 0; k < loop_vars.size(); ++k) {
      const auto coef = form->strides[k].as_int();
      if (coef && *coef == 0) continue;
      terms.push_back(coef ? ReplayPlan::Term{loop_slots[k], ReplayPlan::kOne, *coef}
                           : ReplayPlan::Term{loop_slots[k], invariant(form->strides[k]), 1});
    }
    std::int64_t constant = 0;
    if (const auto c = form->offset.as_int()) {
      constant = *c;
    } else {
      // the dims' part: affine in them, or one register
      const std::vector<ne::Var> dims = ne::free_vars(form->offset);
      const auto dim_form = ne::linear_form(form->offset, dims);
      const bool affine = dim_form && dim_form->offset.as_int() &&
                          std::all_of(dim_form->strides.begin(), dim_form->strides.end(),
                                      [](const ne::Expr& e) { return e.as_int().has_value(); });
      if (affine) {
        constant = *dim_form->offset.as_int();
        for (std::size_t k = 0; k < dims.size(); ++k)
          if (const auto c = *dim_form->strides[k].as_int(); c != 0)
            terms.push_back({slot(dims[k]), ReplayPlan::kOne, c});
      } else {
        terms.push_back({invariant(form->offset), ReplayPlan::kOne, 1});
      }
    }
    // the bounds of each term over the registers' ranges (in double: they only decide whether
    // a field could come near int64's range)
    double magnitude = std::abs(static_cast<double>(constant));
    double lo = static_cast<double>(constant), hi = lo;
    for (const auto& t : terms) {
      const Interval a = ranges_[t.a], b = ranges_[t.b];
      const double c = static_cast<double>(t.coef);
      double tlo = std::numeric_limits<double>::infinity(), thi = -tlo;
      for (const auto u : {a.lo, a.hi})
        for (const auto v : {b.lo, b.hi}) {
          const double p = c * static_cast<double>(u) * static_cast<double>(v);
          tlo = std::min(tlo, p);
          thi = std::max(thi, p);
        }
      lo += tlo;
      hi += thi;
      magnitude += std::max(std::abs(tlo), std::abs(thi));
    }
    if (magnitude >= static_cast<double>(kSafe)) return false;
    f.constant = constant;
    f.first = static_cast<std::uint32_t>(plan_.terms_.size());
    f.count = static_cast<std::uint32_t>(terms.size());
    plan_.terms_.insert(plan_.terms_.end(), terms.begin(), terms.end());
    last_range_ = {saturate(lo), saturate(hi)};
    return true;
  }

  // x as post + scale * (a linear field clamped by a constant): the rows of a block,
  // min(token - i*64, 64), times a stride, or subtracted from the block's size.
  bool clamped(const ne::Expr& x, ReplayPlan::Field& f) {
    std::int64_t post = 0, scale = 1;
    ne::Expr e = x;
    for (;;) {
      const auto* n = e.as<ne::BinaryNode>();
      if (n == nullptr) return false;
      const auto ca = n->a.as_int(), cb = n->b.as_int();
      const ne::Kind k = e.kind();
      if (k == ne::Kind::Min || k == ne::Kind::Max) {
        if (!ca && !cb) return false;
        const std::int64_t bound = ca ? *ca : *cb;
        if (!linear(ca ? n->b : n->a, f)) return false;
        f.clamped = true;
        f.lo = k == ne::Kind::Max ? bound : std::numeric_limits<std::int64_t>::min();
        f.hi = k == ne::Kind::Min ? bound : std::numeric_limits<std::int64_t>::max();
        f.scale = scale;
        f.post = post;
        const auto clamp = [&](std::int64_t v) {
          return static_cast<double>(std::clamp(v, f.lo, f.hi));
        };
        const double a =
            static_cast<double>(post) + (static_cast<double>(scale) * clamp(last_range_.lo));
        const double b =
            static_cast<double>(post) + (static_cast<double>(scale) * clamp(last_range_.hi));
        if (std::max(std::abs(a), std::abs(b)) >= static_cast<double>(kSafe) ||
            std::abs(static_cast<double>(scale)) *
                    std::max(std::abs(clamp(last_range_.lo)), std::abs(clamp(last_range_.hi))) >=
                static_cast<double>(kSafe))
          return false;
        last_range_ = {saturate(std::min(a, b)), saturate(std::max(a, b))};
        return true;
      }
      if (!ca && !cb) return false;
      const std::int64_t c = ca ? *ca : *cb;
      const ne::Expr rest = ca ? n->b : n->a;
      bool overflow = false;
      if (k == ne::Kind::Add || (k == ne::Kind::Sub && cb)) {
        std::int64_t term = 0;
        overflow = __builtin_mul_overflow(scale, k == ne::Kind::Add ? c : -c, &term) ||
                   __builtin_add_overflow(post, term, &post);
      } else if (k == ne::Kind::Sub) {  // c - rest
        std::int64_t term = 0;
        overflow = __builtin_mul_overflow(scale, c, &term) ||
                   __builtin_add_overflow(post, term, &post) ||
                   scale == std::numeric_limits<std::int64_t>::min();
        scale = -scale;
      } else if (k == ne::Kind::Mul) {
        overflow = __builtin_mul_overflow(scale, c, &scale);
      } else {
        return false;
      }
      if (overflow || std::abs(static_cast<double>(post)) >= static_cast<double>(kSafe) ||
          std::abs(static_cast<double>(scale)) >= static_cast<double>(kSafe))
        return false;
      e = rest;
    }
  }

  ReplayPlan& plan_;
  const ReplaySource& prog_;
  std::vector<std::pair<ne::Var, std::uint32_t>> loops_;             // innermost last
  std::vector<Interval> ranges_;                                     // per register
  std::vector<std::pair<ne::Expr, std::uint32_t>> invariant_exprs_;  // of the dims, registers
  Interval last_range_;
  bool in_kernel_ = false;
  std::optional<MemoScan> memo_;         // the loop being scanned
  const tir::ForNode* plain_ = nullptr;  // the loop compiled again, not memoized
};

DLAVM_INLINE ReplayPlan::ReplayPlan(const ReplaySource& p) {
  PlanCompiler(*this, p).visit(p.func.body);
  find_dim_reads();
}

DLAVM_INLINE std::uint64_t ReplayPlan::dims_read(const Field& f,
                                                 const std::vector<std::uint64_t>& dims) const {
  std::uint64_t mask = 0;
  for (std::uint32_t i = 0; i < f.count; ++i) {
    if (f.general >= 0) {
      mask |= dims[args_[f.first + i]];
    } else {
      const Term& t = terms_[f.first + i];
      mask |= dims[t.a] | dims[t.b];
    }
  }
  return mask;
}

DLAVM_INLINE void ReplayPlan::find_dim_reads() {
  // per register, the dims it holds or is computed from (a dim past the 64th: every bit)
  std::vector<std::uint64_t> dims(registers_, 0);
  for (std::size_t k = 0; k < symbols_.size(); ++k)
    dims[symbols_[k].slot] = k < 64 ? std::uint64_t{1} << k : ~std::uint64_t{0};
  for (const auto& [f, reg] : invariants_) dims[reg] = dims_read(f, dims);
  const auto any = [&](std::uint32_t first, std::uint32_t count) {
    std::uint64_t mask = 0;
    for (std::uint32_t k = first; k < first + count; ++k) mask |= dims_read(fields_[k], dims);
    return mask;
  };
  reads_dims_.assign(ops_.size(), 0);
  kernel_dims_ = 0;
  // A kernel's micro-ops (its pushes, and the host loops and branches around them) must not
  // change; its micro-op loops' extents and factors are fields of its instruction, rewritten
  // like a transfer's (on its KernelBegin) where the kernel's body is straight (its loops then
  // each evaluated once, in order).
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    const Op& op = ops_[i];
    switch (op.kind) {
      case OpKind::For:
        reads_dims_[i] = any(op.field, 2);
        break;
      case OpKind::If:
        reads_dims_[i] = any(op.field, 1);
        break;
      case OpKind::Load:
        reads_dims_[i] = any(op.field, 10);
        break;
      case OpKind::Store:
        reads_dims_[i] = any(op.field, 5);
        break;
      case OpKind::KernelBegin: {
        bool straight = true;
        std::uint64_t loops = 0;
        for (std::uint32_t k = static_cast<std::uint32_t>(i) + 1; k < op.jump; ++k) {
          const Op& in = ops_[k];
          if (in.kind == OpKind::LoopBegin) {
            loops |= any(in.field, 4);
          } else if (in.kind == OpKind::Push) {
            kernel_dims_ |= any(in.field, in.micro == Micro::Alu    ? 5
                                          : in.micro == Micro::Gemm ? 3
                                                                    : 1);
          } else if (in.kind == OpKind::For || in.kind == OpKind::If) {
            straight = false;
            kernel_dims_ |= any(in.field, in.kind == OpKind::For ? 2 : 1);
          }
        }
        (straight ? reads_dims_[i] : kernel_dims_) |= loops;
        i = op.jump;  // its KernelEnd
        break;
      }
      default:
        break;
    }
  }
}

DLAVM_INLINE std::int64_t ReplayPlan::general(const Field& f, const std::int64_t* regs) const {
  std::int64_t args[16];
  std::vector<std::int64_t> many;
  std::int64_t* a = args;
  if (f.count > 16) {
    many.resize(f.count);
    a = many.data();
  }
  for (std::uint32_t k = 0; k < f.count; ++k) a[k] = regs[args_[f.first + k]];
  return general_[static_cast<std::size_t>(f.general)](std::span<const std::int64_t>(a, f.count));
}

DLAVM_INLINE void ReplayPlan::bind(std::span<const ne::Binding> bindings,
                                   std::int64_t* regs) const {
  for (const auto& s : symbols_) {
    const auto& v = *s.var.as<ne::VarNode>();
    const ne::Binding* given = nullptr;
    for (const auto& x : bindings)
      if (x.name == v.name) given = &x;
    if (given == nullptr)
      raise<ValueError>(
          "no value for variable '{}': no enclosing loop binds it and no symbolic dim of that "
          "name was given (bind symbolic dims by name, e.g. {{\"{}\", 1}})",
          v.name, v.name);
    if (given->value < v.min || given->value > v.max)
      raise<ValueError>("symbolic dim '{}' = {} is outside its range [{}, {}]", v.name,
                        given->value, v.min, v.max);
    regs[s.slot] = given->value;
  }
  regs[kOne] = 1;
  for (const auto& [f, reg] : invariants_) regs[reg] = general(f, regs);
}

DLAVM_INLINE void ReplayPlan::raise_failure(const ReplaySource& p, Builder& b,
                                            const runtime::Replay<HostStreamStorage>& replay,
                                            const Op& op, const std::int64_t* regs) const {
  const te::CallNode& call = *op.call;
  const runtime::WriterError e = b.writer().error();
  if (e.status == runtime::Status::EmptyTransfer) {
    const bool load = call.name == intrin::load;
    raise<ValueError>(
        "program '{}': {} of '{}' -> '{}' is {} for these values; the block holds no data "
        "(all padding or empty), which a VTA transfer cannot express",
        p.name(), e.field == vta::Field::y_size ? "y_size" : "x_size",
        call.buffers[load ? 1 : 0].name(), call.buffers[load ? 0 : 1].name(), e.value);
  }
  if (e.status == runtime::Status::Misaligned) {
    const auto mem =
        e.opcode == Opcode::Store ? MemId::Out : static_cast<MemId>(value(op.field, regs));
    raise<ValueError>("DRAM address 0x{:x} is not aligned to the {}-byte {} element", e.value,
                      p.env.config.elem_bytes(mem), runtime::mem_name(mem));
  }
  if (e.status == runtime::Status::NotNeighbours && replay.deps().unordered() >= 0)
    raise<ScheduleError>(
        "dependency tokens: instruction #{} of the {} module conflicts with #{} of the {} "
        "module, which share no token queue",
        e.index, runtime::queue_name(e.to), replay.deps().unordered(), runtime::queue_name(e.from));
  b.check("dep_pop");
}

// What ReplayPlan::write needs during an instantiation, kept by each thread from one to the
// next so that, once warm, an instantiation allocates nothing but the stream it returns.
struct ReplayWorkspace {
  // an entry of a kernel site's memo: the values of its keys, and what it wrote with them
  // (written, when it wrote an instruction; last: its last micro-op call)
  struct Memo {
    bool valid = false;
    std::vector<std::int64_t> key;
    bool wrote = false;
    runtime::WrittenKernel written;
    const ReplayPlan::Op* last = nullptr;
  };
  // per kernel site: its last kKernelEntries entries, the oldest replaced (counted by
  // runtime::Replay::memo_replaced: a loop copy must not start after one, its kernels might
  // miss)
  struct Site {
    Memo entry[ReplayPlan::kKernelEntries];
    std::uint32_t next = 0;
  };
  // per memoized loop: a runtime::LoopTape over arrays of the loop's sizes (what a generated
  // replay's runtime::LoopMemo holds)
  struct Loop {
    std::vector<std::int64_t> keys, map_from, map_to;
    std::vector<runtime::LoopCall> calls;
    std::vector<runtime::PushEdit> edits;
    std::vector<runtime::RegionState> states;
    std::vector<std::uint8_t> map_module;
    std::vector<std::uint32_t> map_where;
    std::vector<std::uint16_t> visited, transfers;
    runtime::LoopTape tape;
    // for a StreamTape: where the iteration before began and ended (its entries, its words),
    // whether there was one, and where this one began and whether it was copied whole
    std::size_t last_entries = 0, last_entries_end = 0, last_word = 0, last_words = 0;
    bool have_last = false, whole = false;
    std::size_t entries = 0, word = 0;
    // A fresh tape, as the loop is entered.
    void start(const ReplayPlan::LoopMemo& m, std::size_t regions) {
      keys.resize(m.keys + 1);
      calls.resize(m.calls + 1);
      edits.resize(m.calls + 1);
      states.resize(regions + 1);
      map_from.resize((4 * regions) + 1);
      map_to.resize((4 * regions) + 1);
      map_module.resize((4 * regions) + 1);
      map_where.resize((4 * regions) + 1);
      visited.resize(m.calls + 1);
      transfers.resize(m.calls + 1);
      tape = runtime::LoopTape{};
      tape.keys = keys.data();
      tape.key_capacity = m.keys;
      tape.calls = calls.data();
      tape.call_capacity = m.calls;
      tape.log.edits = edits.data();
      tape.log.capacity = m.calls;
      tape.states = states.data();
      tape.state_capacity = regions;
      tape.map.from = map_from.data();
      tape.map.to = map_to.data();
      tape.map.module = map_module.data();
      tape.map.where = map_where.data();
      tape.map.capacity = 4 * regions;
      tape.visited = visited.data();
      tape.transfers = transfers.data();
    }
  };
  std::vector<std::int64_t> regs;
  std::vector<runtime::RegionState> states;
  std::vector<runtime::UopOp> uops;
  std::vector<Site> memo;
  std::vector<std::int64_t> key;  // the kernel being entered's keys
  std::vector<Loop> loops;
};

DLAVM_INLINE ReplayWorkspace& replay_workspace() {
  thread_local ReplayWorkspace ws;
  return ws;
}

// One interpreter loop with a case per operation, kept whole (over 100 lines) on purpose: it is
// instantiation's hot loop (bench/vta_build, bench/graph_llm), and every case shares its state
// (the registers, the replay, the kernel being recorded), which helpers would pass around.
DLAVM_INLINE void ReplayPlan::write(const ReplaySource& p, Builder& b,
                                    std::span<const ne::Binding> bindings,
                                    std::span<const std::uint64_t> phys, bool copy_loops,
                                    StreamTape* tape) const {
  ReplayWorkspace& ws = replay_workspace();
  bool tape_ok = true;  // every loop copy followed
  // an operation that reads the dims, for the tape
  const auto record = [&](std::uint32_t pc, std::int64_t value, std::int64_t extent) {
    if (tape == nullptr || reads_dims_[pc] == 0) return;
    if (tape->entries.size() == StreamTape::kMaxEntries) {
      tape_ok = false;  // (a prefill's long stream: written anew when its dims change)
      return;
    }
    tape->entries.push_back({pc, value, extent});
  };
  // a memoized loop's iteration ends: one copied whole ran no operations, so its entries are
  // those of the iteration before, its transfers' instructions moved by the words between
  const auto iteration_entries = [&](ReplayWorkspace::Loop& loop) {
    const std::size_t words = b.writer().size() - loop.word;
    if (loop.whole) {
      if (!loop.have_last || words != loop.last_words) {
        tape_ok = false;
      } else {
        const auto shift = static_cast<std::int64_t>(loop.word - loop.last_word);
        for (std::size_t e = loop.last_entries; e < loop.last_entries_end; ++e) {
          StreamTape::Entry entry = tape->entries[e];
          const OpKind kind = ops_[entry.op].kind;
          const bool insn = kind == OpKind::Load || kind == OpKind::Store ||
                            (kind == OpKind::KernelBegin && entry.value >= 0);
          if (insn) entry.value += shift;
          if (tape->entries.size() == StreamTape::kMaxEntries) {
            tape_ok = false;
            break;
          }
          tape->entries.push_back(entry);
        }
      }
    }
    loop.have_last = true;
    loop.last_entries = loop.entries;
    loop.last_entries_end = tape->entries.size();
    loop.last_word = loop.word;
    loop.last_words = words;
  };
  ws.regs.resize(2 * static_cast<std::size_t>(registers_));
  std::int64_t* const r = ws.regs.data();
  std::int64_t* const ends = r + registers_;  // a loop's end, by its variable's register
  bind(bindings, r);
  if (tape != nullptr) {
    tape->entries.clear();
    tape->phys.assign(phys.begin(), phys.end());
    tape->dims.clear();
    for (const auto& s : symbols_) tape->dims.push_back(r[s.slot]);
    tape->valid = false;  // until the stream is written
  }
  ws.states.resize(p.regions.size());
  ws.uops.resize(p.max_kernel_ops);
  runtime::Replay<HostStreamStorage> replay(b.writer(), p.env.config.uop_depth(), p.elem_bytes,
                                            p.regions.data(), ws.states.data(), p.regions.size(),
                                            phys.data(), {ws.uops.data(), ws.uops.size()});
  replay.copy_loops(copy_loops);
  if (ws.loops.size() < memos_.size()) ws.loops.resize(memos_.size());
  const auto check = [&](const Op& op) {
    if (!replay.ok()) raise_failure(p, b, replay, op, r);
  };
  // a copied iteration fails where its calls would (their transfers' DRAM addresses): the
  // writer's error, without a call to name
  const auto check_copy = [&] {
    if (!replay.ok()) b.check("a loop copy");
  };
  const Op* kernel = nullptr;  // the kernel's last micro-op call
  using Memo = ReplayWorkspace::Memo;
  std::vector<ReplayWorkspace::Site>& memo = ws.memo;
  if (memo.size() < kernels_.size()) memo.resize(kernels_.size());
  for (std::size_t k = 0; k < kernels_.size(); ++k) {
    for (auto& e : memo[k].entry) e.valid = false;
    memo[k].next = 0;
  }
  Memo* recording = nullptr;
  std::uint32_t kernel_at = 0;  // the KernelBegin of the kernel being recorded
  const auto n = static_cast<std::uint32_t>(ops_.size());
  for (std::uint32_t pc = 0; pc < n;) {
    const Op& op = ops_[pc];
    const std::uint32_t f = op.field;
    switch (op.kind) {
      case OpKind::For: {
        const std::int64_t lo = value(f, r), extent = value(f + 1, r);
        record(pc, lo, extent);
        if (extent <= 0) {
          pc = op.jump;
          continue;
        }
        r[op.slot] = lo;
        ends[op.slot] = lo + extent;
        if (op.memo != kNoMemo) {
          ws.loops[op.memo].start(memos_[op.memo], p.regions.size());
          ws.loops[op.memo].have_last = false;
        }
        break;
      }
      case OpKind::Iteration: {
        const LoopMemo& m = memos_[op.memo];
        ReplayWorkspace::Loop& loop = ws.loops[op.memo];
        runtime::LoopTape& t = loop.tape;
        // (not copied after a kernel memo replaced a key: Replay::iteration_begin)
        bool same = t.have_keys;
        for (std::uint32_t k = 0; k < m.keys; ++k) {
          const std::int64_t v = value(memo_keys_[m.first_key + k], r);
          same = same && t.keys[k] == v;
          t.keys[k] = v;
        }
        t.have_keys = true;
        loop.entries = tape != nullptr ? tape->entries.size() : 0;
        loop.word = b.writer().size();
        loop.whole = !replay.iteration_begin(t, same, r[op.slot] + 1 < ends[op.slot], m.affine);
        if (loop.whole) {
          pc = op.jump;  // copied whole, or failed: its EndFor
          continue;
        }
        break;
      }
      case OpKind::EndFor:
        if (op.memo != kNoMemo) {
          if (!replay.iteration_end(ws.loops[op.memo].tape)) check_copy();
          if (tape != nullptr) iteration_entries(ws.loops[op.memo]);
        }
        if (++r[op.slot] < ends[op.slot]) {
          pc = op.jump;
          continue;
        }
        break;
      case OpKind::If: {
        const bool taken = value(f, r) != 0;
        record(pc, taken ? 1 : 0, 0);
        if (!taken) {
          pc = op.jump;
          continue;
        }
        break;
      }
      case OpKind::Else:
        pc = op.jump;
        continue;
      case OpKind::KernelBegin: {
        replay.kernel_begin();
        kernel = nullptr;
        const Kernel& k = kernels_[op.slot];
        ReplayWorkspace::Site& site = memo[op.slot];
        ws.key.resize(k.keys);
        for (std::uint32_t i = 0; i < k.keys; ++i) ws.key[i] = value(keys_[k.first_key + i], r);
        const Memo* hit = nullptr;
        for (const auto& e : site.entry)
          if (e.valid && e.key == ws.key) {
            hit = &e;
            break;
          }
        if (hit != nullptr) {  // the instruction it wrote with these keys (if any), again
          const Memo& m = *hit;
          if (m.wrote) {
            const Op& last = *m.last;
            const bool alu = last.micro == Micro::Alu, reset = last.micro == Micro::GemmReset;
            const runtime::RegionAccess accesses[] = {
                {last.regions[0], true}, {last.regions[1], false}, {last.regions[2], false}};
            replay.again(m.written, accesses, alu ? 2 : reset ? 1 : 3);
            check(last);
          }
          record(pc, m.wrote ? static_cast<std::int64_t>(b.writer().size()) - 1 : -1, 0);
          pc = op.jump + 1;  // past its KernelEnd
          continue;
        }
        Memo& m = site.entry[site.next];
        site.next = (site.next + 1) % kKernelEntries;
        if (m.valid) replay.memo_replaced();
        m.valid = false;  // until its KernelEnd
        m.key = ws.key;
        recording = &m;
        kernel_at = pc;
        break;
      }
      case OpKind::LoopBegin: {
        replay.loop_begin(value(f, r), value(f + 1, r), value(f + 2, r), value(f + 3, r));
        check(op);
        break;
      }
      case OpKind::Push: {
        kernel = &op;
        const std::int64_t dst = op.sram[0] + value(f, r);
        if (op.micro == Micro::Gemm)
          replay.push(dst, op.sram[1] + value(f + 1, r), op.sram[2] + value(f + 2, r));
        else if (op.micro == Micro::Alu)
          replay.push(dst, op.sram[1] + value(f + 1, r), 0);
        else
          replay.push(dst, 0, 0);
        check(op);
        break;
      }
      case OpKind::KernelEnd: {
        const std::size_t size = b.writer().size();
        if (kernel != nullptr) {
          if (kernel->micro == Micro::Alu) {
            const std::uint32_t k = kernel->field;
            replay.alu(static_cast<AluOp>(value(k + 2, r)), value(k + 3, r) != 0, value(k + 4, r),
                       kernel->regions[0], kernel->regions[1]);
          } else {
            const bool reset = kernel->micro == Micro::GemmReset;
            replay.gemm(reset, kernel->regions[0], reset ? 0 : kernel->regions[1],
                        reset ? 0 : kernel->regions[2]);
          }
          check(*kernel);
        }
        if (recording != nullptr) {
          recording->last = kernel;
          recording->wrote = b.writer().size() != size;  // not when it had no iterations
          if (recording->wrote) recording->written = b.writer().last_kernel();
          recording->valid = true;
          recording = nullptr;
        }
        record(kernel_at,
               b.writer().size() != size ? static_cast<std::int64_t>(b.writer().size()) - 1 : -1,
               0);
        break;
      }
      case OpKind::Load:
        replay.load(static_cast<MemId>(value(f, r)), op.regions[0], op.sram[0] + value(f + 1, r),
                    op.param, value(f + 2, r), value(f + 3, r), value(f + 4, r), value(f + 5, r),
                    value(f + 6, r), value(f + 7, r), value(f + 8, r), value(f + 9, r));
        check(op);
        record(pc, static_cast<std::int64_t>(b.writer().size()) - 1, 0);
        break;
      case OpKind::Store:
        replay.store(op.regions[0], op.sram[0] + value(f, r), op.param, value(f + 1, r),
                     value(f + 2, r), value(f + 3, r), value(f + 4, r));
        check(op);
        record(pc, static_cast<std::int64_t>(b.writer().size()) - 1, 0);
        break;
    }
    ++pc;
  }
  if (tape != nullptr) {
    tape->valid = tape_ok;
    if (!tape_ok) tape->entries = {};
  }
}

// A straight kernel's micro-op loops for the registers `r`, over its instruction (`e`: the
// tape's entry, its instruction or -1 where it wrote none): false where it would write one now
// and not then, or the other way, or a field does not fit.
DLAVM_INLINE bool ReplayPlan::kernel_loops(
    std::uint32_t at, const std::int64_t* r, const runtime::IsaLayout& layout,
    std::span<const runtime::InsnWord> insns, const StreamTape::Entry* e,
    std::vector<std::pair<std::size_t, runtime::InsnWord>>& patches) const {
  if (e == nullptr) return false;
  runtime::KernelLoop loops[2];
  std::size_t nloops = 0;
  bool empty = false, pushes = false, alu = false;
  for (std::uint32_t k = at + 1; k < ops_[at].jump; ++k) {
    const Op& op = ops_[k];
    if (op.kind == OpKind::Push) {
      pushes = true;
      alu = op.micro == Micro::Alu;
    }
    if (op.kind != OpKind::LoopBegin) continue;
    // (every loop's fields evaluated, as write() does: one may raise for these dims)
    const runtime::KernelLoop loop{value(op.field, r), value(op.field + 1, r),
                                   value(op.field + 2, r), value(op.field + 3, r)};
    if (empty) continue;
    if (loop.extent < 1) {
      empty = true;  // the kernel writes nothing
    } else {
      if (nloops == 2) return false;
      loops[nloops++] = loop;
    }
  }
  const bool writes = pushes && !empty;
  if (e->value < 0 || !writes) return e->value < 0 && !writes;
  const auto at_word = static_cast<std::size_t>(e->value);
  if (at_word >= insns.size()) return false;
  runtime::InsnWord w = insns[at_word];
  const runtime::Form form = alu ? runtime::Form::Alu : runtime::Form::Gemm;
  const runtime::KernelLoop none{};
  const runtime::KernelLoop& first = nloops > 0 ? loops[0] : none;
  const runtime::KernelLoop& inner = nloops > 1 ? loops[1] : none;
  using runtime::Field;
  const std::pair<Field, std::int64_t> values[] = {
      {Field::iter_out, first.extent},    {Field::iter_in, inner.extent},
      {Field::dst_factor_out, first.dst}, {Field::dst_factor_in, inner.dst},
      {Field::src_factor_out, first.src}, {Field::src_factor_in, inner.src},
      {Field::wgt_factor_out, first.wgt}, {Field::wgt_factor_in, inner.wgt}};
  for (const auto& [field, v] : values) {
    if (alu && (field == Field::wgt_factor_out || field == Field::wgt_factor_in)) continue;
    if (!runtime::replace_field(w, layout.pos(form, field), v)) return false;
  }
  patches.emplace_back(at_word, w);
  return true;
}

// The same walk as write(), without writing: every iteration runs (no copies) and kernels are
// skipped (they read no dims where the tape is valid). A loop bound or branch that reads the dims
// must meet the value the tape holds; a transfer that reads them is encoded again over its old
// word, whose opcode, memory and dependency flags stay.
DLAVM_INLINE bool ReplayPlan::repatch(const ReplaySource& p, std::span<runtime::InsnWord> insns,
                                      const StreamTape& tape,
                                      std::span<const ne::Binding> bindings) const {
  if (!tape.valid || tape.phys.size() != p.func.params.size()) return false;
  ReplayWorkspace& ws = replay_workspace();
  ws.regs.resize(2 * static_cast<std::size_t>(registers_));
  std::int64_t* const r = ws.regs.data();
  std::int64_t* const ends = r + registers_;
  bind(bindings, r);
  if (tape.dims.size() != symbols_.size()) return false;
  std::uint64_t changed = 0;  // the dims whose values changed
  for (std::size_t k = 0; k < symbols_.size(); ++k)
    if (r[symbols_[k].slot] != tape.dims[k])
      changed |= k < 64 ? std::uint64_t{1} << k : ~std::uint64_t{0};
  if ((changed & kernel_dims_) != 0) return false;  // its kernels' micro-ops could change
  thread_local std::vector<std::pair<std::size_t, runtime::InsnWord>> patches;
  patches.clear();
  const runtime::IsaLayout layout = p.env.config.layout();
  using runtime::Field;
  const auto pos = [&](Field x) { return layout.pos(runtime::Form::Mem, x); };
  // a transfer's fields over its old word, or false where one does not fit
  const auto encode = [&](std::size_t at, MemId mem, std::int64_t sram, std::size_t param,
                          std::int64_t offset, std::span<const std::int64_t> rest) {
    if (at >= insns.size()) return false;
    runtime::InsnWord w = insns[at];
    if (get_field(w, pos(Field::memory_type)) != static_cast<std::uint64_t>(mem)) return false;
    const std::uint64_t elem = p.elem_bytes.of[static_cast<std::size_t>(mem)];
    if (elem == 0 || tape.phys[param] % elem != 0) return false;
    const std::int64_t y = rest[0], x = rest[1];
    if (y < 0 || x < 1) return false;
    const std::int64_t dram = static_cast<std::int64_t>(tape.phys[param] / elem) +
                              (mem == MemId::Out || y > 0 ? offset : 0);
    const std::int64_t stride = rest[2] == runtime::kDenseStride ? x : rest[2];
    const std::pair<Field, std::int64_t> values[] = {{Field::sram_base, sram},
                                                     {Field::dram_base, dram},
                                                     {Field::y_size, y},
                                                     {Field::x_size, x},
                                                     {Field::x_stride, stride}};
    for (const auto& [field, v] : values)
      if (!runtime::replace_field(w, pos(field), v)) return false;
    // a load's paddings, after its y, x and stride
    const Field pads[] = {Field::y_pad_0, Field::y_pad_1, Field::x_pad_0, Field::x_pad_1};
    for (std::size_t k = 3; k < rest.size(); ++k)
      if (!runtime::replace_field(w, pos(pads[k - 3]), rest[k])) return false;
    patches.emplace_back(at, w);
    return true;
  };
  std::size_t next = 0;  // the tape's next entry
  const auto entry = [&](std::uint32_t pc) -> const StreamTape::Entry* {
    if (next == tape.entries.size() || tape.entries[next].op != pc) return nullptr;
    return &tape.entries[next++];
  };
  const auto n = static_cast<std::uint32_t>(ops_.size());
  for (std::uint32_t pc = 0; pc < n;) {
    const Op& op = ops_[pc];
    const std::uint32_t f = op.field;
    switch (op.kind) {
      case OpKind::For: {
        const std::int64_t lo = value(f, r), extent = value(f + 1, r);
        if (reads_dims_[pc] != 0) {
          const auto* e = entry(pc);
          if (e == nullptr || e->value != lo || e->extent != extent) return false;
        }
        if (extent <= 0) {
          pc = op.jump;
          continue;
        }
        r[op.slot] = lo;
        ends[op.slot] = lo + extent;
        break;
      }
      case OpKind::Iteration:
        break;
      case OpKind::EndFor:
        if (++r[op.slot] < ends[op.slot]) {
          pc = op.jump;
          continue;
        }
        break;
      case OpKind::If: {
        const bool taken = value(f, r) != 0;
        if (reads_dims_[pc] != 0) {
          const auto* e = entry(pc);
          if (e == nullptr || e->value != (taken ? 1 : 0)) return false;
        }
        if (!taken) {
          pc = op.jump;
          continue;
        }
        break;
      }
      case OpKind::Else:
        pc = op.jump;
        continue;
      case OpKind::KernelBegin:
        if (reads_dims_[pc] != 0 && !kernel_loops(pc, r, layout, insns, entry(pc), patches))
          return false;
        pc = op.jump + 1;  // past its KernelEnd
        continue;
      case OpKind::LoopBegin:
      case OpKind::Push:
      case OpKind::KernelEnd:
        break;
      case OpKind::Load:
        if (reads_dims_[pc] != 0) {
          const auto* e = entry(pc);
          const std::int64_t rest[] = {value(f + 3, r), value(f + 4, r), value(f + 5, r),
                                       value(f + 6, r), value(f + 7, r), value(f + 8, r),
                                       value(f + 9, r)};
          if (e == nullptr ||
              !encode(static_cast<std::size_t>(e->value), static_cast<MemId>(value(f, r)),
                      op.sram[0] + value(f + 1, r), op.param, value(f + 2, r), rest))
            return false;
        }
        break;
      case OpKind::Store:
        if (reads_dims_[pc] != 0) {
          const auto* e = entry(pc);
          const std::int64_t rest[] = {value(f + 2, r), value(f + 3, r), value(f + 4, r)};
          if (e == nullptr || !encode(static_cast<std::size_t>(e->value), MemId::Out,
                                      op.sram[0] + value(f, r), op.param, value(f + 1, r), rest))
            return false;
        }
        break;
    }
    ++pc;
  }
  if (next != tape.entries.size()) return false;
  for (const auto& [at, w] : patches) insns[at] = w;
  return true;
}

}  // namespace dlavm::vta::detail
