// Definitions for vta/replay_plan.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne/affine.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/substitute.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/vta/program.hpp>
#include <dlavm/vta/replay_plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <utility>

namespace dlavm::vta::detail {

// Walks the program's statements once, in the order Program::write replays them, appending
// their operations and compiling their fields.
class PlanCompiler : public tir::StmtVisitor<PlanCompiler> {
 public:
  using OpKind = ReplayPlan::OpKind;
  PlanCompiler(ReplayPlan& plan, const Program& p) : plan_(plan), prog_(p) {}

  void visit_for(const tir::ForNode& n, const tir::Stmt&) {
    ReplayPlan::Op op;
    op.kind = OpKind::For;
    op.field = field(n.min);
    const Interval lo = last_range_;
    field(n.extent);
    const Interval extent = last_range_;
    op.slot = plan_.registers_++;
    // the variable's values: [min, min + extent - 1], as far as the bounds know
    ranges_.push_back(
        {lo.lo, saturate(static_cast<double>(lo.hi) + static_cast<double>(extent.hi) - 1)});
    const auto at = push(op);
    loops_.push_back({n.var, op.slot});
    visit(n.body);
    loops_.pop_back();
    ReplayPlan::Op end;
    end.kind = OpKind::EndFor;
    end.slot = op.slot;
    end.jump = at + 1;
    plan_.ops_[at].jump = push(end) + 1;
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
    in_kernel_ = true;
    visit(n.body);
    in_kernel_ = false;
    ReplayPlan::Op end;
    end.kind = OpKind::KernelEnd;
    plan_.ops_[at].jump = push(end);
    // the registers of enclosing loops its fields read (its own loops, the dims and what is
    // computed from them alone are the same throughout an instantiation)
    std::vector<std::uint32_t> read;
    for (auto k = first_field; k < plan_.fields_.size(); ++k) {
      const auto& f = plan_.fields_[k];
      for (std::uint32_t i = 0; i < f.count; ++i)
        read.push_back(f.general < 0 ? plan_.terms_[f.first + i].slot : plan_.args_[f.first + i]);
    }
    std::sort(read.begin(), read.end());
    read.erase(std::unique(read.begin(), read.end()), read.end());
    ReplayPlan::Kernel kernel;
    kernel.first_key = static_cast<std::uint32_t>(plan_.keys_.size());
    for (const auto r : read)
      if (r < first_register && outer_loop(r)) plan_.keys_.push_back(r);
    kernel.keys = static_cast<std::uint32_t>(plan_.keys_.size()) - kernel.first_key;
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
      op.field = fields({&a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7], &a[8], &a[9]});
      place(op, 0, call->buffers[0]);
      op.param = param(call->buffers[1]);
    } else if (name == intrin::store) {
      op.kind = OpKind::Store;
      op.field = fields({&a[1], &a[2], &a[3], &a[4], &a[5]});
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
    const auto it = prog_.sram().find(b.get());
    if (it == prog_.sram().end())
      raise<ScheduleError>("program '{}': buffer '{}' has no SRAM placement", prog_.name(),
                           b.name());
    op.sram[k] = it->second.base;
    op.regions[k] = prog_.region_of(b.get());
  }
  std::uint32_t param(const te::Buffer& b) const {
    for (std::size_t k = 0; k < prog_.func().flat_params.size(); ++k)
      if (prog_.func().flat_params[k].get() == b.get()) return static_cast<std::uint32_t>(k);
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
    for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
      if (it->first.id() == v.id()) return it->second;
    for (const auto& s : plan_.symbols_)
      if (s.var.id() == v.id()) return s.slot;
    const auto* node = v.as<ne::VarNode>();
    plan_.symbols_.push_back({v, plan_.registers_++});
    ranges_.push_back({std::max(node->min, -kSafe), std::min(node->max, kSafe)});
    return plan_.symbols_.back().slot;
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
    ReplayPlan::Field f;
    const auto at = static_cast<std::uint32_t>(plan_.fields_.size());
    const std::vector<ne::Var> vars = ne::free_vars(x);
    std::vector<std::uint32_t> slots;
    for (const auto& v : vars) slots.push_back(slot(v));
    if (affine(x, vars, slots, f)) {
      plan_.fields_.push_back(f);
      return at;
    }
    // anything else: ne::compile over the registers, each a variable of unbounded range (a
    // dim's range is checked once, when it is bound), keeping eval's checks
    std::vector<ne::Substitution> fresh;
    std::vector<ne::Substitution> ranged;
    std::vector<ne::Var> params;
    for (std::size_t k = 0; k < vars.size(); ++k) {
      const auto& name = vars[k].as<ne::VarNode>()->name;
      params.push_back(ne::var(name, std::numeric_limits<std::int64_t>::min(),
                               std::numeric_limits<std::int64_t>::max()));
      fresh.emplace_back(vars[k], params.back());
      const Interval r = ranges_[slots[k]];
      ranged.emplace_back(vars[k], ne::var(name, r.lo, r.hi));
    }
    const ne::Interval b = ne::bounds(ne::substitute(x, ranged));
    last_range_ = {saturate(static_cast<double>(b.min)), saturate(static_cast<double>(b.max))};
    f.general = static_cast<std::int32_t>(plan_.general_.size());
    plan_.general_.push_back(
        ne::compile(ne::substitute(x, fresh), std::move(params), {.simplify = false}));
    f.first = static_cast<std::uint32_t>(plan_.args_.size());
    f.count = static_cast<std::uint32_t>(slots.size());
    plan_.args_.insert(plan_.args_.end(), slots.begin(), slots.end());
    const bool invariant = std::all_of(slots.begin(), slots.end(), [&](std::uint32_t r) {
      return std::any_of(plan_.symbols_.begin(), plan_.symbols_.end(),
                         [&](const ReplayPlan::Symbol& s) { return s.slot == r; });
    });
    if (invariant) {
      // of the dims only: computed once per instantiation into a register of its own, which
      // the field then reads
      const std::uint32_t reg = plan_.registers_++;
      ranges_.push_back(last_range_);
      plan_.invariants_.push_back({f, reg});
      const auto term = static_cast<std::uint32_t>(plan_.terms_.size());
      plan_.terms_.push_back({reg, 1});
      f = ReplayPlan::Field{0, term, 1, -1};
    }
    plan_.fields_.push_back(f);
    return at;
  }

  // x as constant + sum(coef * register), if it is one whose terms cannot overflow.
  bool affine(const ne::Expr& x, std::span<const ne::Var> vars,
              std::span<const std::uint32_t> slots, ReplayPlan::Field& f) {
    const auto form = ne::linear_form(x, vars);
    if (!form || !form->offset.as_int()) return false;
    std::vector<ReplayPlan::Term> terms;
    const auto offset = static_cast<double>(*form->offset.as_int());
    double magnitude = std::abs(offset), lo = offset, hi = offset;
    for (std::size_t k = 0; k < vars.size(); ++k) {
      const auto coef = form->strides[k].as_int();
      if (!coef) return false;
      if (*coef == 0) continue;
      const Interval r = ranges_[slots[k]];
      const double a = static_cast<double>(*coef) * static_cast<double>(r.lo);
      const double b = static_cast<double>(*coef) * static_cast<double>(r.hi);
      lo += std::min(a, b);
      hi += std::max(a, b);
      magnitude += std::max(std::abs(a), std::abs(b));
      terms.push_back({slots[k], *coef});
    }
    if (magnitude >= static_cast<double>(kSafe)) return false;
    f.constant = *form->offset.as_int();
    f.first = static_cast<std::uint32_t>(plan_.terms_.size());
    f.count = static_cast<std::uint32_t>(terms.size());
    plan_.terms_.insert(plan_.terms_.end(), terms.begin(), terms.end());
    last_range_ = {saturate(lo), saturate(hi)};
    return true;
  }

  ReplayPlan& plan_;
  const Program& prog_;
  std::vector<std::pair<ne::Var, std::uint32_t>> loops_;  // innermost last
  std::vector<Interval> ranges_;                          // per register
  Interval last_range_;
  bool in_kernel_ = false;
};

DLAVM_INLINE ReplayPlan::ReplayPlan(const Program& p) {
  PlanCompiler(*this, p).visit(p.func().body);
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
  for (const auto& [f, reg] : invariants_) regs[reg] = general(f, regs);
}

DLAVM_INLINE void ReplayPlan::raise_failure(const Program& p, Builder& b,
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
                      p.env().config.elem_bytes(mem), runtime::mem_name(mem));
  }
  if (e.status == runtime::Status::NotNeighbours && replay.deps().unordered() >= 0)
    raise<ScheduleError>(
        "dependency tokens: instruction #{} of the {} module conflicts with #{} of the {} "
        "module, which share no token queue",
        e.index, runtime::queue_name(e.to), replay.deps().unordered(), runtime::queue_name(e.from));
  b.check("dep_pop");
}

DLAVM_INLINE void ReplayPlan::write(const Program& p, Builder& b,
                                    std::span<const ne::Binding> bindings,
                                    std::span<const std::uint64_t> phys) const {
  std::vector<std::int64_t> regs(2 * static_cast<std::size_t>(registers_));
  std::int64_t* const r = regs.data();
  std::int64_t* const ends = r + registers_;  // a loop's end, by its variable's register
  bind(bindings, r);
  std::vector<runtime::RegionState> states(p.regions().size());
  std::vector<runtime::UopOp> uops(p.max_kernel_ops());
  runtime::Replay<HostStreamStorage> replay(b.writer(), p.env().config.uop_depth(), p.elem_bytes(),
                                            p.regions().data(), states.data(), p.regions().size(),
                                            phys.data(), {uops.data(), uops.size()});
  const auto check = [&](const Op& op) {
    if (!replay.ok()) raise_failure(p, b, replay, op, r);
  };
  const Op* kernel = nullptr;  // the kernel's last micro-op call
  // per kernel: the key it was last entered with, and the calls it made then
  struct Call {
    bool loop;
    std::int64_t a, b, c, d;
  };
  struct Memo {
    bool valid = false;
    std::vector<std::int64_t> key;
    std::vector<Call> calls;
    const Op* last = nullptr;
  };
  std::vector<Memo> memo(kernels_.size());
  Memo* recording = nullptr;
  const auto n = static_cast<std::uint32_t>(ops_.size());
  for (std::uint32_t pc = 0; pc < n;) {
    const Op& op = ops_[pc];
    const std::uint32_t f = op.field;
    switch (op.kind) {
      case OpKind::For: {
        const std::int64_t lo = value(f, r), extent = value(f + 1, r);
        if (extent <= 0) {
          pc = op.jump;
          continue;
        }
        r[op.slot] = lo;
        ends[op.slot] = lo + extent;
        break;
      }
      case OpKind::EndFor:
        if (++r[op.slot] < ends[op.slot]) {
          pc = op.jump;
          continue;
        }
        break;
      case OpKind::If:
        if (value(f, r) == 0) {
          pc = op.jump;
          continue;
        }
        break;
      case OpKind::Else:
        pc = op.jump;
        continue;
      case OpKind::KernelBegin: {
        replay.kernel_begin();
        kernel = nullptr;
        const Kernel& k = kernels_[op.slot];
        Memo& m = memo[op.slot];
        bool same = m.valid;
        for (std::uint32_t i = 0; same && i < k.keys; ++i)
          same = m.key[i] == r[keys_[k.first_key + i]];
        if (same) {  // the calls it made last time, then its instruction
          for (const Call& c : m.calls)
            if (c.loop)
              replay.loop_begin(c.a, c.b, c.c, c.d);
            else
              replay.push(c.a, c.b, c.c);
          kernel = m.last;
          pc = op.jump;
          continue;
        }
        m.key.resize(k.keys);
        for (std::uint32_t i = 0; i < k.keys; ++i) m.key[i] = r[keys_[k.first_key + i]];
        m.calls.clear();
        recording = &m;
        break;
      }
      case OpKind::LoopBegin: {
        const Call c{true, value(f, r), value(f + 1, r), value(f + 2, r), value(f + 3, r)};
        replay.loop_begin(c.a, c.b, c.c, c.d);
        check(op);
        if (recording != nullptr) recording->calls.push_back(c);
        break;
      }
      case OpKind::Push: {
        kernel = &op;
        Call c{false, op.sram[0] + value(f, r), 0, 0, 0};
        if (op.micro == Micro::Gemm) {
          c.b = op.sram[1] + value(f + 1, r);
          c.c = op.sram[2] + value(f + 2, r);
        } else if (op.micro == Micro::Alu) {
          c.b = op.sram[1] + value(f + 1, r);
        }
        replay.push(c.a, c.b, c.c);
        check(op);
        if (recording != nullptr) recording->calls.push_back(c);
        break;
      }
      case OpKind::KernelEnd:
        if (recording != nullptr) {
          recording->last = kernel;
          recording->valid = true;
          recording = nullptr;
        }
        if (kernel == nullptr) break;
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
        break;
      case OpKind::Load:
        replay.load(static_cast<MemId>(value(f, r)), op.regions[0], op.sram[0] + value(f + 1, r),
                    op.param, value(f + 2, r), value(f + 3, r), value(f + 4, r), value(f + 5, r),
                    value(f + 6, r), value(f + 7, r), value(f + 8, r), value(f + 9, r));
        check(op);
        break;
      case OpKind::Store:
        replay.store(op.regions[0], op.sram[0] + value(f, r), op.param, value(f + 1, r),
                     value(f + 2, r), value(f + 3, r), value(f + 4, r));
        check(op);
        break;
    }
    ++pc;
  }
}

}  // namespace dlavm::vta::detail
