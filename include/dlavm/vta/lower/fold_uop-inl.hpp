// Definitions for dlavm/vta/lower/fold_uop.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/fold_uop.hpp>
#include <dlavm/vta/lower/intrinsic_calls.hpp>
#include <dlavm/vta/lower/nest.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::vta {

namespace detail {

// The kind of compute call a statement is made of: calls with equal keys can share one
// micro-op kernel.
struct UopKey {
  std::string name;
  std::int64_t op = 0, use_imm = 0, imm = 0;
  friend bool operator==(const UopKey&, const UopKey&) = default;
};

inline std::optional<UopKey> uop_key_of_call(const te::CallNode& c) {
  if (c.name == intrin::gemm || c.name == intrin::gemm_reset) return UopKey{c.name};
  if (c.name == intrin::alu) {
    const auto arg = [&](std::size_t k) { return c.args[k].as<te::IntImmNode>()->value; };
    return UopKey{c.name, arg(0), arg(1), arg(2)};
  }
  return std::nullopt;
}

// The operand offsets (dst, src, wgt) of a compute call, in SRAM entries of its buffers.
inline std::vector<ne::Expr> uop_operands(const te::CallNode& c) {
  const auto index = [&](std::size_t k) -> ne::Expr {
    if (const auto* i = c.args[k].as<te::IndexNode>()) return i->index;
    return c.args[k].as<te::IntImmNode>()->value;
  };
  if (c.name == intrin::gemm) return {index(0), index(1), index(2)};
  if (c.name == intrin::gemm_reset) return {index(0), 0, 0};
  return {index(3), index(4), 0};  // alu
}

// The call with its operand offsets replaced.
inline te::Expr with_operands(const te::CallNode& c, const std::vector<ne::Expr>& ops) {
  std::vector<te::Expr> args = c.args;
  if (c.name == intrin::gemm) {
    for (std::size_t k = 0; k < 3; ++k) args[k] = iv(ops[k]);
  } else if (c.name == intrin::gemm_reset) {
    args[0] = iv(ops[0]);
  } else {
    args[3] = iv(ops[0]);
    args[4] = iv(ops[1]);
  }
  return te::call(c.name, c.dtype(), std::move(args), c.buffers);
}

}  // namespace detail

namespace detail {

class FoldUops : public tir::StmtMutator<FoldUops> {
 public:
  explicit FoldUops(const Env& env) {
    const auto layout = env.config.layout();
    const auto max_of = [&](runtime::Form f, runtime::Field field) {
      return (std::int64_t{1} << layout.pos(f, field).width) - 1;
    };
    max_iter_ = max_of(runtime::Form::Gemm, runtime::Field::iter_out);
    max_factor_ = {max_of(runtime::Form::Gemm, runtime::Field::dst_factor_out),
                   max_of(runtime::Form::Gemm, runtime::Field::src_factor_out),
                   max_of(runtime::Form::Gemm, runtime::Field::wgt_factor_out)};
    // Half the micro-op buffer at most, so that several kernels stay resident.
    max_uops_ = env.config.uop_depth() / 2;
  }

  tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
    if (key_of(s)) return fold(s);
    return tir::StmtMutator<FoldUops>::visit_for(n, s);
  }
  tir::Stmt visit_evaluate(const tir::EvaluateNode&, const tir::Stmt& s) {
    if (key_of(s)) return fold(s);
    return s;
  }
  tir::Stmt visit_seq(const tir::SeqNode& n, const tir::Stmt& s) {
    if (key_of(s)) return fold(s);
    return tir::StmtMutator<FoldUops>::visit_seq(n, s);
  }

 private:
  using Key = detail::UopKey;

  // The key shared by every leaf of s, when s is only serial loops and sequences of them.
  static std::optional<Key> key_of(const tir::Stmt& s) {
    if (const auto* e = s.as<tir::EvaluateNode>()) {
      const auto* c = e->value.as<te::CallNode>();
      return c ? detail::uop_key_of_call(*c) : std::nullopt;
    }
    if (const auto* f = s.as<tir::ForNode>()) {
      if (f->for_kind == tir::ForKind::VThread || !detail::is_zero(f->min)) return std::nullopt;
      return key_of(f->body);
    }
    if (const auto* q = s.as<tir::SeqNode>()) {
      std::optional<Key> k;
      for (const auto& part : q->seq) {
        auto pk = key_of(part);
        if (!pk || (k && !(*k == *pk))) return std::nullopt;
        k = pk;
      }
      return k;
    }
    return std::nullopt;
  }

  // Every call under s with the loops around it inside s.
  struct Leaf {
    const te::CallNode* call;
    std::vector<detail::NestLoop> loops;
  };
  static void leaves(const tir::Stmt& s, std::vector<detail::NestLoop>& around,
                     std::vector<Leaf>& out) {
    if (const auto* e = s.as<tir::EvaluateNode>()) {
      out.push_back({e->value.as<te::CallNode>(), around});
    } else if (const auto* f = s.as<tir::ForNode>()) {
      around.push_back({f->var, f->extent});
      leaves(f->body, around, out);
      around.pop_back();
    } else if (const auto* q = s.as<tir::SeqNode>()) {
      for (const auto& part : q->seq) leaves(part, around, out);
    }
  }

  // Micro-ops a statement pushes (an upper bound over the symbolic dims); nullopt when an
  // extent depends on a variable in `levels`.
  static std::optional<std::int64_t> uop_count(const tir::Stmt& s,
                                               const std::vector<ne::Var>& levels) {
    if (s.as<tir::EvaluateNode>()) return 1;
    if (const auto* f = s.as<tir::ForNode>()) {
      for (const auto& v : ne::free_vars(f->extent))
        if (detail::contains(levels, v)) return std::nullopt;
      auto inner = uop_count(f->body, levels);
      if (!inner) return std::nullopt;
      const auto ext = ne::bounds(f->extent).max;
      if (ext > (std::int64_t{1} << 30) / std::max<std::int64_t>(*inner, 1)) return INT32_MAX;
      return ext * *inner;
    }
    std::int64_t total = 0;
    for (const auto& part : s.as<tir::SeqNode>()->seq) {
      auto c = uop_count(part, levels);
      if (!c) return std::nullopt;
      total += *c;
      if (total > INT32_MAX) return INT32_MAX;
    }
    return total;
  }

  // The strides of a level loop in the three operands, when every leaf under it is linear in
  // it with the same strides and the factors fit their fields.
  std::optional<std::vector<ne::Expr>> level_strides(const detail::NestLoop& loop,
                                                     const std::vector<Leaf>& calls) const {
    // An extent that is not positive at run time means no iteration: the instruction is
    // skipped then (see Program), so only the upper bound matters here.
    if (ne::bounds(loop.extent).max > max_iter_) return std::nullopt;
    std::optional<std::vector<ne::Expr>> strides;
    for (const auto& leaf : calls) {
      for (const auto& l : leaf.loops)
        for (const auto& v : ne::free_vars(l.extent))
          if (v.id() == loop.var.id()) return std::nullopt;
      std::vector<ne::Expr> mine;
      for (const auto& op : detail::uop_operands(*leaf.call)) {
        auto f = ne::linear_form(op, {loop.var});
        if (!f) return std::nullopt;
        mine.push_back(ne::simplify(f->strides[0]));
      }
      if (!strides) {
        strides = mine;
        continue;
      }
      for (std::size_t k = 0; k < 3; ++k)
        if (!detail::same((*strides)[k], mine[k])) return std::nullopt;
    }
    if (!strides) return std::nullopt;
    for (std::size_t k = 0; k < 3; ++k) {
      const auto b = ne::bounds((*strides)[k]);
      if (b.min < 0 || b.max > max_factor_[k]) return std::nullopt;
    }
    return strides;
  }

  // Whether an ALU kernel updates each accumulator entry once: VTA's ALU pipeline does not
  // forward a result to a later micro-op of the same instruction (its HLS loop declares no
  // dependence on the accumulator), so a loop that revisits a destination (the window of a
  // reduction) stays a host loop, one instruction per iteration. Every level and every
  // unrolled loop must move the destination, and the unrolled calls write distinct buffers.
  static bool writes_once(const std::vector<detail::NestLoop>& levels,
                          const std::vector<std::vector<ne::Expr>>& strides,
                          const tir::Stmt& rest) {
    for (std::size_t k = 0; k < levels.size(); ++k)
      if (ne::bounds(levels[k].extent).max > 1 && detail::is_zero(strides[k][0])) return false;
    std::vector<Leaf> calls;
    std::vector<detail::NestLoop> around;
    leaves(rest, around, calls);
    std::vector<const te::BufferNode*> written;
    for (const auto& leaf : calls) {
      const auto* b = leaf.call->buffers[0].get();
      if (std::find(written.begin(), written.end(), b) != written.end()) return false;
      written.push_back(b);
      const auto dst = detail::uop_operands(*leaf.call)[0];
      for (const auto& l : leaf.loops) {
        if (ne::bounds(l.extent).max <= 1) continue;
        const auto f = ne::linear_form(dst, {l.var});
        if (!f || detail::is_zero(f->strides[0])) return false;
      }
    }
    return true;
  }

  tir::Stmt fold(const tir::Stmt& s) {
    std::vector<detail::NestLoop> chain;
    tir::Stmt body = s;
    while (const auto* f = body.as<tir::ForNode>()) {
      chain.push_back({f->var, f->extent});
      body = f->body;
    }
    std::vector<Leaf> calls;
    std::vector<detail::NestLoop> around;
    leaves(s, around, calls);
    // The first split (host loops, levels, unrolled rest) whose kernel fits.
    for (std::size_t h = 0; h <= chain.size(); ++h) {
      std::vector<detail::NestLoop> levels;
      std::vector<std::vector<ne::Expr>> strides;
      for (std::size_t j = h; j < chain.size() && levels.size() < 2; ++j) {
        auto st = level_strides(chain[j], calls);
        if (!st) break;
        levels.push_back(chain[j]);
        strides.push_back(std::move(*st));
      }
      // The unrolled rest: loops after the levels, then the body.
      tir::Stmt rest = body;
      for (std::size_t j = chain.size(); j-- > h + levels.size();)
        rest = tir::make_for(chain[j].var, 0, chain[j].extent, tir::ForKind::Serial, rest);
      std::vector<ne::Var> level_vars;
      for (const auto& l : levels) level_vars.push_back(l.var);
      const auto count = uop_count(rest, level_vars);
      if (!count || *count > max_uops_) continue;
      if (key_of(s)->name == intrin::alu && !writes_once(levels, strides, rest)) continue;
      return build(chain, h, levels, strides, rest, *count);
    }
    // No single kernel: fold the parts separately.
    if (const auto* f = s.as<tir::ForNode>())
      return tir::make_for(f->var, f->min, f->extent, f->for_kind, visit(f->body));
    if (const auto* q = s.as<tir::SeqNode>()) {
      std::vector<tir::Stmt> parts;
      for (const auto& part : q->seq) parts.push_back(visit(part));
      return tir::make_seq(parts);
    }
    raise<ScheduleError>("VTA lowering: a micro-op kernel of one call does not fit");
  }

  tir::Stmt build(const std::vector<detail::NestLoop>& chain, std::size_t h,
                  const std::vector<detail::NestLoop>& levels,
                  const std::vector<std::vector<ne::Expr>>& strides, const tir::Stmt& rest,
                  std::int64_t count) {
    std::vector<ne::Var> level_vars;
    for (const auto& l : levels) level_vars.push_back(l.var);
    // Operands with the level variables at zero: the factors carry them.
    struct Strip : tir::StmtMutator<Strip> {
      const std::vector<ne::Var>* vars;
      tir::Stmt visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
        const auto& c = *n.value.as<te::CallNode>();
        std::vector<ne::Expr> ops;
        for (const auto& op : detail::uop_operands(c)) ops.push_back(detail::pinned(op, *vars));
        return tir::make_evaluate(detail::with_operands(c, ops));
      }
    } strip;
    strip.vars = &level_vars;
    std::vector<tir::Stmt> parts;
    for (std::size_t k = 0; k < levels.size(); ++k) {
      std::vector<te::Expr> args{detail::iv(levels[k].extent)};
      for (const auto& st : strides[k]) args.push_back(detail::iv(st));
      parts.push_back(tir::make_evaluate(
          te::call(std::string(intrin::uop_loop_begin), DType::int32(), std::move(args))));
    }
    parts.push_back(strip.visit(rest));
    for (std::size_t k = 0; k < levels.size(); ++k)
      parts.push_back(tir::make_evaluate(
          te::call(std::string(intrin::uop_loop_end), DType::int32(), std::vector<te::Expr>{})));
    // A kernel of one part is still a sequence, so that it prints as a block.
    tir::Stmt kernel = tir::Stmt(make_ref<tir::SeqNode>(
        parts.size() == 1 ? std::vector<tir::Stmt>{parts[0]} : flatten(parts)));
    const auto key = key_of(rest);
    std::string what = key->name.substr(4);  // "gemm", "gemm_reset", "alu"
    if (key->name == intrin::alu)
      what = detail::alu_kernel_name(static_cast<runtime::AluOp>(key->op), key->use_imm);
    tir::Stmt out = tir::make_attr(std::string(intrin::uop_kernel), what, count, kernel);
    for (std::size_t j = h; j-- > 0;)
      out = tir::make_for(chain[j].var, 0, chain[j].extent, tir::ForKind::Serial, out);
    return out;
  }

  static std::vector<tir::Stmt> flatten(const std::vector<tir::Stmt>& parts) {
    std::vector<tir::Stmt> flat;
    for (const auto& p : parts) {
      if (const auto* q = p.as<tir::SeqNode>())
        flat.insert(flat.end(), q->seq.begin(), q->seq.end());
      else
        flat.push_back(p);
    }
    return flat;
  }

  std::int64_t max_iter_ = 0;
  std::vector<std::int64_t> max_factor_;
  std::int64_t max_uops_ = 0;
};

}  // namespace detail

DLAVM_INLINE tir::Stmt fold_uops(const tir::Stmt& body, const Env& env) {
  return detail::FoldUops(env).visit(body);
}

}  // namespace dlavm::vta
