// Definitions for dlavm/tir/vthread.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/rewrite.hpp>
#include <dlavm/tir/vthread.hpp>

namespace dlavm::tir {

namespace detail {

class VThreadInjector {
 public:
  VThreadInjector(ne::Var tx, std::int64_t threads, const VThreadGroupOf& group_of)
      : tx_(std::move(tx)), n_(threads), group_of_(group_of) {}

  Stmt inject(const Stmt& s) {
    if (group(s)) return replicate({s});
    if (const auto* f = s.as<ForNode>()) {
      if (depends(f->min) || depends(f->extent)) return replicate({s});
      return make_for(f->var, f->min, f->extent, f->for_kind, inject(f->body));
    }
    if (const auto* a = s.as<AllocateNode>()) {
      // One buffer per thread; statements replicated below use their thread's copy.
      std::vector<Buffer> copies;
      for (std::int64_t t = 0; t < n_; ++t) {
        std::vector<ne::Expr> shape;
        for (const auto& d : a->buffer.shape())
          shape.push_back(ne::simplify(ne::substitute(d, {{tx_, t}})));
        copies.push_back(te::make_buffer(fmt::format("{}.v{}", a->buffer.name(), t),
                                         a->buffer.dtype(), shape, a->buffer.scope()));
      }
      locals_.emplace_back(a->buffer.get(), copies);
      Stmt body = inject(a->body);
      locals_.pop_back();
      return make_allocate(copies, body);
    }
    if (const auto* a = s.as<AttrNode>())
      return make_attr(a->key, a->node, a->value, inject(a->body));
    if (const auto* i = s.as<IfThenElseNode>()) {
      if (depends(i->cond)) return replicate({s});
      return make_if(i->cond, inject(i->then_case),
                     i->else_case.defined() ? inject(i->else_case) : Stmt());
    }
    if (const auto* q = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      std::vector<Stmt> run;
      std::optional<int> run_group;
      const auto flush = [&] {
        if (!run.empty()) out.push_back(replicate(run));
        run.clear();
        run_group.reset();
      };
      for (const auto& part : q->seq) {
        const auto g = group(part);
        if (g && (!run_group || *run_group == *g)) {
          run.push_back(part);
          run_group = g;
          continue;
        }
        flush();
        if (g) {
          run.push_back(part);
          run_group = g;
        } else {
          out.push_back(inject(part));
        }
      }
      flush();
      return make_seq(out);
    }
    return replicate({s});
  }

 private:
  // The statements once per thread, tx replaced by the thread index, each thread using its
  // copies of the buffers allocated in the loop (and fresh ones for allocations inside).
  Stmt replicate(const std::vector<Stmt>& block) {
    std::vector<Stmt> out;
    for (std::int64_t t = 0; t < n_; ++t) {
      BufferMap map;
      for (const auto& [orig, copies] : locals_) map[orig] = copies[static_cast<std::size_t>(t)];
      Rewriter rw({{tx_, t}}, std::move(map), /*fresh_allocations=*/true, fmt::format(".v{}", t));
      for (const auto& s : block) out.push_back(rw.visit(s));
    }
    return make_seq(out);
  }

  // The group shared by every leaf of s, if any.
  std::optional<int> group(const Stmt& s) const {
    if (s.as<StoreNode>() || s.as<EvaluateNode>()) return group_of_(s);
    std::optional<int> g;
    bool mixed = false;
    const auto merge = [&](const Stmt& c) {
      if (!c.defined() || mixed) return;
      const auto cg = group(c);
      if (!cg || (g && *g != *cg)) {
        mixed = true;
        return;
      }
      g = cg;
    };
    if (const auto* f = s.as<ForNode>()) {
      if (f->for_kind == ForKind::VThread) return std::nullopt;
      merge(f->body);
    } else if (const auto* a = s.as<AllocateNode>()) {
      merge(a->body);
    } else if (const auto* a = s.as<AttrNode>()) {
      merge(a->body);
    } else if (const auto* i = s.as<IfThenElseNode>()) {
      merge(i->then_case);
      merge(i->else_case);
    } else if (const auto* q = s.as<SeqNode>()) {
      for (const auto& c : q->seq) merge(c);
    }
    return mixed ? std::nullopt : g;
  }

  bool depends(const ne::Expr& e) const {
    for (const auto& v : ne::free_vars(e))
      if (v.id() == tx_.id()) return true;
    return false;
  }

  ne::Var tx_;
  std::int64_t n_;
  const VThreadGroupOf& group_of_;
  std::vector<std::pair<const te::BufferNode*, std::vector<Buffer>>> locals_;
};

class VThreadPass : public StmtMutator<VThreadPass> {
 public:
  explicit VThreadPass(VThreadGroupOf group_of) : group_of_(std::move(group_of)) {}
  Stmt visit_for(const ForNode& n, const Stmt& s) {
    if (n.for_kind != ForKind::VThread) return StmtMutator<VThreadPass>::visit_for(n, s);
    const auto ext = ne::simplify(n.extent).as_int();
    if (!ext || !ne::simplify(n.min).is_const() || *ne::simplify(n.min).as_int() != 0)
      raise<ScheduleError>(
          "virtual thread '{}' runs over [{}, {} + {}); it needs a constant count from 0",
          n.var.name(), n.min, n.min, n.extent);
    // Inner virtual threads first, then this one.
    const Stmt body = visit(n.body);
    return VThreadInjector(n.var, *ext, group_of_).inject(body);
  }

 private:
  VThreadGroupOf group_of_;
};

}  // namespace detail

}  // namespace dlavm::tir

namespace dlavm::tir {

DLAVM_INLINE Stmt inject_virtual_threads(const Stmt& s, VThreadGroupOf group_of) {
  return detail::VThreadPass(std::move(group_of)).visit(s);
}

}  // namespace dlavm::tir
