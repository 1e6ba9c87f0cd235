// Definitions for dlavm/tir/lower.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/schedule/int_set.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/loop_scope_check.hpp>
#include <dlavm/tir/lower.hpp>
#include <dlavm/tir/stmt.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dlavm::tir {

namespace detail {

using schedule::AttachKind;
using schedule::StageNode;
using IterVarKey = const te::IterVarNode*;

struct StagePlan {
  const StageNode* stage = nullptr;
  te::Expr body;                     // after inlining
  std::vector<ne::Expr> region_min;  // per output dim, in enclosing loop variables
  std::vector<ne::Expr> region_extent;
  std::vector<ne::Expr> extent_bound;  // attached stages: unclipped extents, for sizing
  std::unordered_map<IterVarKey, ne::Expr> extent;  // every IterVar: its loop extent
  std::unordered_map<IterVarKey, ne::Expr> value;   // every root IterVar: its value in loops
  // Every split, by its inner IterVar: the factor in loop variables (split_nparts of a
  // triangular reduction has a factor that names a data-parallel axis).
  std::unordered_map<IterVarKey, ne::Expr> factor;
  std::vector<ne::Expr> guards;    // conditions for non-divisible splits
  std::vector<ne::Var> enclosing;  // loop variables around the attach point
  Buffer buffer;
};

// Substitutes ne variables inside a value expression.
class IndexSubstituter : public te::ExprMutator<IndexSubstituter> {
 public:
  explicit IndexSubstituter(std::vector<ne::Substitution> map) : map_(std::move(map)) {}
  ne::Expr mutate_index(const ne::Expr& e) { return map_.empty() ? e : ne::substitute(e, map_); }

 private:
  std::vector<ne::Substitution> map_;
};

// The fix when the loops from tensorized leaf position p inward do not have the intrinsic's
// nd data-parallel and nr reduction axes: the innermost loops of each kind become the
// intrinsic's, in their order, the others move outside them; tensorize at the first.
DLAVM_INLINE std::string tensorize_order_hint(const StageNode& st, std::size_t p, std::size_t nd,
                                              std::size_t nr) {
  const auto& leaf = st.leaf;
  std::vector<bool> keep(leaf.size(), false);
  std::size_t data = 0, reduce = 0;
  for (std::size_t k = leaf.size(); k-- > 0;) {
    auto& count = leaf[k].is_reduce() ? reduce : data;
    if (count < (leaf[k].is_reduce() ? nr : nd)) {
      keep[k] = true;
      ++count;
    }
  }
  if (data < nd || reduce < nr)
    return fmt::format("; stage '{}' has only {} data-parallel and {} reduction loops in all",
                       st.name(), data, reduce);
  std::vector<std::string> order, kept, moved;
  for (std::size_t k = 0; k < leaf.size(); ++k) {
    if (keep[k]) continue;
    order.push_back(leaf[k].name());
    if (k >= p) moved.push_back(fmt::format("'{}'", leaf[k].name()));
  }
  for (std::size_t k = 0; k < leaf.size(); ++k)
    if (keep[k]) kept.push_back(leaf[k].name());
  order.insert(order.end(), kept.begin(), kept.end());
  bool same_order = true;
  for (std::size_t k = 0; k < leaf.size(); ++k)
    same_order = same_order && order[k] == leaf[k].name();
  if (same_order)
    return fmt::format("; tensorize at '{}' instead, where the intrinsic's loops ({}) begin",
                       kept.front(), fmt::join(kept, ", "));
  return fmt::format(
      "; reorder so that the intrinsic's loops ({}) are innermost{}, and tensorize at the first: "
      "s[{}].reorder({{{}}}); s[{}].tensorize({}, ...)",
      fmt::join(kept, ", "),
      moved.empty() ? std::string() : fmt::format(" with {} outside them", fmt::join(moved, ", ")),
      st.name(), fmt::join(order, ", "), st.name(), kept.front());
}

// The matching of a tensorized stage against an intrinsic's pattern (Lowerer::match_tensorize):
// its loops paired with the pattern's axes, its body matched structurally with the pattern's,
// and each operand's access as the intrinsic sees it (an offset and a stride per dim).
class TensorizeMatcher {
 public:
  // An input of the pattern and the stage's tensor read in its place.
  struct Access {
    const te::OperationNode* op;
    std::vector<ne::Expr> indices;          // in loop variables
    std::vector<ne::Expr> pattern_indices;  // the intrinsic's, in its axes
  };

  TensorizeMatcher(std::string where, const StagePlan& plan, const te::OperationNode& pattern)
      : where(std::move(where)), plan_(plan), pat_(pattern) {}

  // Pairs loop `mine` (loop variable `var`) with the pattern's axis `theirs`: equal extents.
  void pair(const te::IterVar& mine, const ne::Var& var, const te::IterVar& theirs) {
    const auto ext = ne::simplify(plan_.extent.at(mine.get()));
    const auto want = theirs.dom().extent;
    if (!ne::equal(ext, want))
      raise<ScheduleError>("{}: loop '{}' has extent {}, the intrinsic's axis '{}' has {}", where,
                           mine.name(), ext, theirs.name(), want);
    inner_vars_.push_back(var);
    pattern_vars_.push_back(theirs.var());
  }

  // A guard (a non-divisible split) on a tensorized loop: the intrinsic computes whole tiles.
  void check_guards() const {
    for (const auto& g : plan_.guards)
      for (const auto& v : ne::free_vars(g))
        for (const auto& iv : inner_vars_)
          if (v.id() == iv.id())
            raise<ScheduleError>(
                "{}: loop '{}' needs a guard (a non-divisible split); the intrinsic cannot "
                "compute a partial tile",
                where, iv.name());
  }

  // The bodies, structurally: reads pair the stage's tensors with the pattern's inputs.
  void match_bodies() {
    const auto* mine = plan_.body.as<te::ReduceNode>();
    const auto* theirs = pat_.body.as<te::ReduceNode>();
    if ((mine == nullptr) != (theirs == nullptr) || (mine && mine->combiner != theirs->combiner))
      mismatch(plan_.body, pat_.body);
    if (mine)
      match(mine->source, theirs->source);
    else
      match(plan_.body, pat_.body);
  }

  const Access& access_of(const te::OperationNode& input) const {
    auto it = operands_.find(&input);
    if (it == operands_.end())
      raise<ScheduleError>("{}: the intrinsic's input '{}' has no counterpart", where, input.name);
    return it->second;
  }

  // An operand access: the flat element offset into the buffer (in loop variables) and, for
  // each of the intrinsic operand's dims, the flat stride that walks it. The intrinsic indexes
  // each operand dim by one of its axes; the stage's flat index must be linear in the
  // tensorized loops, and every loop it walks must be one of those dims.
  schedule::IntrinOperand operand(const std::string& what, const Buffer& b,
                                  const std::vector<ne::Expr>& index,
                                  const std::vector<ne::Expr>& pattern_index,
                                  const std::vector<ne::Expr>& pattern_shape) const {
    const ne::Expr flat = b.flat_index(index);
    auto form = ne::linear_form(flat, inner_vars_);
    if (!form)
      raise<ScheduleError>("{}: '{}' is indexed by {}, which is not linear in the tensorized loops",
                           where, what, flat);
    std::vector<bool> covered(inner_vars_.size(), false);
    std::vector<ne::Expr> strides;
    for (std::size_t d = 0; d < pattern_index.size(); ++d) {
      const auto axis = pattern_axis(pattern_index[d]);
      if (!axis && ne::simplify(pattern_index[d]).as_int() == 0 &&
          ne::linear_form(pattern_index[d], pattern_vars_) && pattern_shape[d].as_int() == 1) {
        // An extent-1 dim (its axis simplifies to 0) is never stepped: report its dense stride.
        ne::Expr dense = 1;
        for (std::size_t e = d + 1; e < pattern_shape.size(); ++e) dense = dense * pattern_shape[e];
        strides.push_back(ne::simplify(dense));
        continue;
      }
      if (!axis)
        raise<ScheduleError>(
            "{}: the intrinsic indexes dim {} of its operand by {}; each dim must be one axis",
            where, d, pattern_index[d]);
      covered[*axis] = true;
      strides.push_back(ne::simplify(form->strides[*axis]));
    }
    for (std::size_t k = 0; k < inner_vars_.size(); ++k)
      if (!covered[k] && !ne::equal(ne::simplify(form->strides[k]), 0))
        raise<ScheduleError>(
            "{}: '{}' moves with loop '{}' (stride {}), which the intrinsic's operand does not "
            "have as a dim",
            where, what, inner_vars_[k].name(), ne::simplify(form->strides[k]));
    return schedule::IntrinOperand{b, ne::simplify(form->offset), std::move(strides)};
  }

  const std::string where;
  std::vector<ne::Substitution> to_loops;  // root axes in loop variables

 private:
  // The pattern axis a dim's index is (exactly one axis, stride 1, offset 0), if it is one.
  std::optional<std::size_t> pattern_axis(const ne::Expr& index) const {
    auto pf = ne::linear_form(index, pattern_vars_);
    if (!pf || ne::simplify(pf->offset).as_int() != 0) return std::nullopt;
    std::optional<std::size_t> axis;
    for (std::size_t k = 0; k < pf->strides.size(); ++k) {
      const auto c = ne::simplify(pf->strides[k]).as_int();
      if (c == 1 && !axis)
        axis = k;
      else if (c != 0)
        return std::nullopt;
    }
    return axis;
  }

  [[noreturn]] void mismatch(const te::Expr& mine, const te::Expr& theirs) const {
    raise<ScheduleError>("{}: the computation `{}` does not match the intrinsic's `{}`", where,
                         mine, theirs);
  }

  void match(const te::Expr& a, const te::Expr& b) {
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) mismatch(a, b);
    if (const auto* x = a.as<te::IntImmNode>()) {
      if (x->value != b.as<te::IntImmNode>()->value) mismatch(a, b);
    } else if (const auto* c = a.as<te::CastNode>()) {
      match(c->value, b.as<te::CastNode>()->value);
    } else if (const auto* bin = a.as<te::BinaryNode>()) {
      match(bin->a, b.as<te::BinaryNode>()->a);
      match(bin->b, b.as<te::BinaryNode>()->b);
    } else if (const auto* n = a.as<te::NotNode>()) {
      match(n->a, b.as<te::NotNode>()->a);
    } else if (const auto* sel = a.as<te::SelectNode>()) {
      match(sel->cond, b.as<te::SelectNode>()->cond);
      match(sel->t, b.as<te::SelectNode>()->t);
      match(sel->f, b.as<te::SelectNode>()->f);
    } else if (const auto* rd = a.as<te::ReadNode>()) {
      read(*rd, *b.as<te::ReadNode>());
    } else {
      mismatch(a, b);
    }
  }

  // A read of the stage's tensor where the pattern reads its input: one tensor per input.
  void read(const te::ReadNode& mine, const te::ReadNode& theirs) {
    auto [it, fresh] =
        operands_.try_emplace(theirs.op.get(), Access{mine.op.get(), {}, theirs.indices});
    if (!fresh && it->second.op != mine.op.get())
      raise<ScheduleError>("{}: the intrinsic's input '{}' is read from both '{}' and '{}'", where,
                           theirs.op->name, it->second.op->name, mine.op->name);
    std::vector<ne::Expr> in_loops;
    for (const auto& i : mine.indices)
      in_loops.push_back(ne::simplify(ne::substitute(i, to_loops)));
    it->second.indices = std::move(in_loops);
  }

  const StagePlan& plan_;
  const te::OperationNode& pat_;
  std::vector<ne::Var> inner_vars_, pattern_vars_;
  std::unordered_map<const te::OperationNode*, Access> operands_;
};

class Lowerer {
 public:
  Lowerer(schedule::Schedule& s, const std::vector<te::Tensor>& args, std::string name)
      : schedule_(s), args_(args), name_(std::move(name)) {}

  PrimFunc run() {
    for (const auto& st : schedule_.stages()) plans_[st.get()].stage = st.get();
    make_params();
    inline_bodies();
    check_axes_used();
    check_attachments();
    infer_bounds();
    make_buffers();
    std::vector<Stmt> top;
    std::vector<Buffer> root_allocs;
    for (const auto& st : schedule_.stages()) {
      if (st->is_placeholder() || st->attach != AttachKind::Root) continue;
      top.push_back(make_stage(*st));
      if (!is_param(st.get())) root_allocs.push_back(plans_[st.get()].buffer);
    }
    Stmt body = make_allocate(root_allocs, make_seq(top));
    check_loop_scopes(body);
    PrimFunc f{name_, params_, body, {}};
    return f;
  }

 private:
  bool is_param(const StageNode* st) const { return param_of_.count(st->op.get()) != 0; }

  // The variable the loop of axis iv runs with, over [0, extent). The simplifier relies on a
  // variable's range, so the range must hold every value the loop takes. An axis that starts
  // at 0 loops with its own variable. One declared over [min, min + extent) with min != 0 (a
  // reduction over {3, 8}) loops with a fresh `name.idx` and has the value min + idx: its own
  // variable's range is [min, min + extent - 1].
  const ne::Var& loop_var(const te::IterVar& iv) {
    if (ne::simplify(iv.dom().min).as_int() == 0) return iv.var();
    if (auto it = loop_vars_.find(iv.get()); it != loop_vars_.end()) return it->second;
    const auto extent = ne::bounds(iv.dom().extent);
    auto idx = ne::var(iv.name() + ".idx", 0, std::max<std::int64_t>(extent.max - 1, 0));
    return loop_vars_.emplace(iv.get(), std::move(idx)).first->second;
  }

  void make_params() {
    for (const auto& t : args_) {
      const auto* st = schedule_.stage_of(t.op().get());
      if (st == nullptr)
        raise<ScheduleError>("lower '{}': argument '{}' is not part of the schedule", name_,
                             t.name());
      // Keyed by the stage's current operation: cache_read/cache_write rebuild operations.
      if (param_of_.count(st->op.get()) != 0)
        raise<ScheduleError>("lower '{}': argument '{}' is listed twice", name_, t.name());
      auto b = te::make_buffer(t.name(), t.dtype(), t.shape(), "global");
      param_of_.emplace(st->op.get(), b);
      params_.push_back(b);
    }
    for (const auto& st : schedule_.stages()) {
      if ((st->is_placeholder() || st->is_output) && !is_param(st.get()))
        raise<ScheduleError>("lower '{}': {} '{}' is not among the arguments", name_,
                             st->is_placeholder() ? "input" : "output", st->name());
    }
  }

  // Bodies with inlined stages substituted, in topological order so that an inlined stage's
  // own body is final before its readers use it.
  void inline_bodies() {
    struct Inliner : te::ExprMutator<Inliner> {
      Lowerer* self;
      te::Expr visit_read(const te::ReadNode& n, const te::Expr& e) {
        const auto* st = self->schedule_.stage_of(n.op.get());
        auto base = te::ExprMutator<Inliner>::visit_read(n, e);
        if (st == nullptr || st->attach != AttachKind::Inline) return base;
        const auto* read = base.as<te::ReadNode>();
        std::vector<ne::Substitution> map;
        for (std::size_t k = 0; k < st->op->axis.size(); ++k)
          map.emplace_back(st->op->axis[k].var(), read->indices[k]);
        return IndexSubstituter(map).visit(self->plans_[st].body);
      }
    } inliner;
    inliner.self = this;
    for (const auto& st : schedule_.stages()) {
      if (st->is_placeholder()) continue;
      plans_[st.get()].body = inliner.visit(st->op->body);
    }
  }

  // A compute indexes with its own axes, its reductions' axes and symbolic dims. An axis of
  // another compute (captured by its lambda) has no loop around this stage's body.
  void check_axes_used() {
    std::unordered_map<std::uint64_t, const StageNode*> axis_owner;
    for (const auto& st : schedule_.stages())
      for (const auto& r : st->root) axis_owner.emplace(r.var().id(), st.get());
    struct Uses : te::ExprVisitor<Uses> {
      std::vector<ne::Expr> found;
      void visit_index_expr(const ne::Expr& e) { found.push_back(e); }
      void visit_reduce(const te::ReduceNode& n, const te::Expr&) {
        for (const auto& a : n.axes) {
          found.push_back(a.dom().min);
          found.push_back(a.dom().extent);
        }
        visit(n.source);
      }
    };
    for (const auto& st : schedule_.stages()) {
      if (st->is_placeholder() || st->attach == AttachKind::Inline) continue;
      Uses uses;
      uses.visit(plans_[st.get()].body);
      for (const auto& e : uses.found)
        for (const auto& v : ne::free_vars(e)) {
          const auto it = axis_owner.find(v.id());
          if (it == axis_owner.end()) continue;
          const bool own = std::any_of(st->root.begin(), st->root.end(), [&](const te::IterVar& r) {
            return r.var().id() == v.id();
          });
          if (!own)
            raise<ScheduleError>(
                "compute '{}' uses '{}', an axis of compute '{}' (in {}); index with the "
                "compute's own axes, its reduction axes and symbolic dims",
                st->name(), v.name(), it->second->name(), e);
        }
    }
  }

  // Every stage computed at a loop finds that loop when its parent's nest is built (a stage
  // whose loop is missing would silently not be computed at all).
  void check_attachments() const {
    for (const auto& st : schedule_.stages()) {
      if (st->attach != AttachKind::At) continue;
      const auto* parent = st->attach_stage;
      const auto where = fmt::format("stage '{}' is computed at loop '{}' of stage '{}'",
                                     st->name(), st->attach_ivar.name(), parent->name());
      if (parent->attach == AttachKind::Inline)
        raise<ScheduleError>(
            "{}, but '{}' is inlined (compute_inline) and has no loops; compute '{}' at a loop of "
            "a stage that reads '{}', or at root",
            where, parent->name(), st->name(), parent->name());
      const auto& leaf = parent->leaf;
      const auto pos = static_cast<std::size_t>(
          std::find(leaf.begin(), leaf.end(), st->attach_ivar) - leaf.begin());
      std::vector<std::string> names;
      for (const auto& v : leaf) names.push_back(v.name());
      if (pos == leaf.size())
        raise<ScheduleError>("internal: {}, which is not one of its loops ({}); please report",
                             where, fmt::join(names, ", "));
      std::shared_ptr<const schedule::TensorIntrin> intrin;
      const auto tensorized = tensorize_position(*parent, &intrin);
      if (pos >= tensorized)
        raise<ScheduleError>(
            "{}, which the intrinsic '{}' replaces (tensorize at '{}'); compute '{}' at a loop "
            "outside '{}'",
            where, intrin->name(), leaf[tensorized].name(), st->name(), leaf[tensorized].name());
    }
  }

  // Every read of `producer` in the bodies of the stages that are computed (not inlined).
  std::vector<std::pair<const StageNode*, std::vector<ne::Expr>>> reads_of(
      const StageNode* producer) {
    struct Collect : te::ExprVisitor<Collect> {
      const te::OperationNode* op;
      std::vector<std::vector<ne::Expr>> found;
      void visit_read(const te::ReadNode& n, const te::Expr&) {
        if (n.op.get() == op) found.push_back(n.indices);
      }
    };
    std::vector<std::pair<const StageNode*, std::vector<ne::Expr>>> out;
    for (const auto& st : schedule_.stages()) {
      if (st->is_placeholder() || st->attach == AttachKind::Inline) continue;
      Collect c;
      c.op = producer->op.get();
      c.visit(plans_[st.get()].body);
      for (auto& idx : c.found) out.emplace_back(st.get(), std::move(idx));
    }
    return out;
  }

  void infer_bounds() {
    const auto& stages = schedule_.stages();
    for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
      StageNode* st = it->get();
      auto& plan = plans_[st];
      if (st->is_placeholder() || st->attach == AttachKind::Inline) continue;
      if (st->attach == AttachKind::At) {
        const auto& parent = plans_[st->attach_stage];
        plan.enclosing = parent.enclosing;
        for (const auto& v : st->attach_stage->leaf) {
          plan.enclosing.push_back(loop_var(v));
          if (v == st->attach_ivar) break;
        }
        infer_region(*st, plan);
      } else {
        for (const auto& d : st->op->shape) {
          plan.region_min.push_back(0);
          plan.region_extent.push_back(d);
        }
      }
      const auto local = infer_loops(*st, plan);
      add_guards(*st, plan, local);
      check_loop_order(*st, plan);
    }
  }

  // Extents of every IterVar of st and the local value (from the start of its range) of
  // every root axis in loop variables; sets plan.value and plan.factor. Data-parallel axes
  // span the stage's region; a reduction spans its declared range, which may name the
  // data-parallel axes or earlier reductions (a triangular k < i + 1), and so may the factor
  // of a split_nparts of it: those axes are replaced by their values in the loops, which are
  // known after a round. A range can only name axes created before it, so each round settles
  // at least one more reduction.
  std::unordered_map<IterVarKey, ne::Expr> infer_loops(const StageNode& st, StagePlan& plan) {
    const auto n_data = st.op->axis.size();
    std::vector<ne::Expr> root_min, root_extent;
    for (std::size_t k = 0; k < st.root.size(); ++k) {
      root_min.push_back(k < n_data ? plan.region_min[k] : st.root[k].dom().min);
      root_extent.push_back(k < n_data ? plan.region_extent[k] : st.root[k].dom().extent);
    }
    for (const auto& rel : st.relations)
      if (const auto* sp = std::get_if<schedule::SplitRelation>(&rel))
        plan.factor[sp->inner.get()] = sp->factor;
    std::unordered_map<IterVarKey, ne::Expr> local;
    for (bool changed = true; changed;) {
      for (std::size_t k = 0; k < st.root.size(); ++k)
        plan.extent[st.root[k].get()] = root_extent[k];
      derive_extents(st, plan);
      local = derive_values(st, plan);
      // On an iteration that a guard skips, an axis's value can be past its range (i split by
      // a factor that does not divide its extent), and so would be the ranges and factors
      // computed from it: a loop longer than its variable's range, a factor of 0. Those see
      // the value clamped into the range, where they are valid; the guard still skips it.
      std::vector<ne::Substitution> axis_values;
      for (std::size_t k = 0; k < st.root.size(); ++k) {
        const auto& r = st.root[k];
        plan.value[r.get()] = ne::simplify(root_min[k] + local.at(r.get()));
        const auto last =
            k < n_data ? r.dom().min + r.dom().extent - 1 : root_min[k] + root_extent[k] - 1;
        axis_values.emplace_back(r.var(), ne::simplify(ne::min(plan.value[r.get()], last)));
      }
      changed = false;
      const auto settle = [&](const ne::Expr& declared, ne::Expr& current) {
        auto e = ne::simplify(ne::substitute(declared, axis_values));
        changed = changed || !ne::equal(e, current);
        current = std::move(e);
      };
      for (std::size_t k = n_data; k < st.root.size(); ++k) {
        settle(st.root[k].dom().min, root_min[k]);
        settle(st.root[k].dom().extent, root_extent[k]);
      }
      for (const auto& rel : st.relations)
        if (const auto* sp = std::get_if<schedule::SplitRelation>(&rel))
          settle(sp->factor, plan.factor[sp->inner.get()]);
    }
    return local;
  }

  // Root extents down through the relations to every loop.
  void derive_extents(const StageNode& st, StagePlan& plan) {
    for (const auto& rel : st.relations) {
      if (const auto* sp = std::get_if<schedule::SplitRelation>(&rel)) {
        const auto ext = plan.extent.at(sp->parent.get());
        const auto& factor = plan.factor.at(sp->inner.get());
        plan.extent[sp->outer.get()] = ne::simplify(ne::ceildiv(ext, factor));
        plan.extent[sp->inner.get()] = factor;
      } else {
        // A loop of extent e runs max(e, 0) times. Extents can be negative: the region of an
        // attached stage on an iteration its reader's guard skips, a reduction over
        // [0, n - 5) with n < 5. The product of two would be a positive trip count.
        const auto& fu = std::get<schedule::FuseRelation>(rel);
        const auto runs = [&](const te::IterVar& iv) {
          return ne::max(plan.extent.at(iv.get()), 0);
        };
        plan.extent[fu.fused.get()] = ne::simplify(runs(fu.outer) * runs(fu.inner));
      }
    }
  }

  // Values from the start of each range: leaves are their loop variables; up through the
  // relations, last first.
  std::unordered_map<IterVarKey, ne::Expr> derive_values(const StageNode& st,
                                                         const StagePlan& plan) {
    std::unordered_map<IterVarKey, ne::Expr> value;
    for (const auto& v : st.leaf) value[v.get()] = loop_var(v);
    for (auto r = st.relations.rbegin(); r != st.relations.rend(); ++r) {
      if (const auto* sp = std::get_if<schedule::SplitRelation>(&*r)) {
        value[sp->parent.get()] =
            value.at(sp->outer.get()) * plan.factor.at(sp->inner.get()) + value.at(sp->inner.get());
      } else {
        const auto& fu = std::get<schedule::FuseRelation>(*r);
        const auto inner_ext = plan.extent.at(fu.inner.get());
        value[fu.outer.get()] = ne::floordiv(value.at(fu.fused.get()), inner_ext);
        value[fu.inner.get()] = ne::floormod(value.at(fu.fused.get()), inner_ext);
      }
    }
    return value;
  }

  // Every split parent (the root axes included) needs a guard unless its largest value over
  // the loops' actual extents (not the axes' declared ranges) is provably inside its extent:
  // with nested non-divisible splits an inner parent can overflow while the root stays in
  // range, and that iteration would otherwise be computed twice.
  void add_guards(const StageNode& st, StagePlan& plan,
                  const std::unordered_map<IterVarKey, ne::Expr>& value) {
    schedule::SweepMap loops;
    for (const auto& v : st.leaf)
      loops[loop_var(v).id()] = {0, ne::simplify(plan.extent.at(v.get()) - 1)};
    auto needs_guard = [&](const te::IterVar& iv) {
      const auto local = ne::simplify(value.at(iv.get()));
      const auto ext = plan.extent.at(iv.get());
      const auto reach = schedule::eval_set(local, loops);
      return !ne::can_prove(reach.hi < ext) && !ne::can_prove(local < ext);
    };
    const auto leaf_pos = [&](const te::IterVar& iv) {
      return static_cast<std::size_t>(std::find(st.leaf.begin(), st.leaf.end(), iv) -
                                      st.leaf.begin());
    };
    for (const auto& rel : st.relations) {
      const auto* sp = std::get_if<schedule::SplitRelation>(&rel);
      if (sp == nullptr || !needs_guard(sp->parent)) continue;
      // With the inner loop inside the outer one, the last partial block is a shorter inner
      // loop, min(factor, extent - outer*factor), instead of a guard (TVM's loop partition):
      // target passes then see a loop whose extent is an expression, not a condition.
      const auto po = leaf_pos(sp->outer), pi = leaf_pos(sp->inner);
      const auto& factor = plan.factor.at(sp->inner.get());
      if (po < st.leaf.size() && pi < st.leaf.size() && po < pi) {
        plan.extent[sp->inner.get()] = ne::simplify(
            ne::min(factor, plan.extent.at(sp->parent.get()) - loop_var(sp->outer) * factor));
        continue;
      }
      const auto local = ne::simplify(value.at(sp->parent.get()));
      plan.guards.push_back(local < plan.extent.at(sp->parent.get()));
    }
  }

  // A loop's extent may use only the loops around it: a reduction whose range names a
  // data-parallel axis (k < i + 1) must stay inside the loops that axis became.
  void check_loop_order(const StageNode& st, const StagePlan& plan) {
    for (std::size_t p = 0; p < st.leaf.size(); ++p) {
      const auto& extent = plan.extent.at(st.leaf[p].get());
      for (const auto& v : ne::free_vars(extent))
        for (std::size_t q = p + 1; q < st.leaf.size(); ++q)
          if (v.id() == loop_var(st.leaf[q]).id())
            raise<ScheduleError>(
                "stage '{}': loop '{}' has extent {}, which depends on loop '{}' inside it; "
                "reorder so that '{}' is inside the loops its range depends on",
                st.name(), st.leaf[p].name(), extent, st.leaf[q].name(), st.leaf[p].name());
    }
  }

  // Every loop variable of body is used inside its loop (see LoopScopeCheck).
  void check_loop_scopes(const Stmt& body) {
    std::unordered_map<std::uint64_t, std::string> loops;
    for (const auto& st : schedule_.stages())
      for (const auto& v : st->all) {
        auto what = fmt::format("axis '{}' of stage '{}'", v.name(), st->name());
        loops.emplace(loop_var(v).id(), what);
        loops.emplace(v.var().id(), std::move(what));
      }
    (void)LoopScopeCheck(name_, std::move(loops)).visit(body);
  }

  // The region of an attached stage: what its consumers read while the loops inside its
  // attach point sweep, the enclosing loops held fixed; clipped to the tensor's shape unless it
  // provably stays inside.
  void infer_region(const StageNode& st, StagePlan& plan) {
    std::unordered_set<std::uint64_t> fixed;
    for (const auto& v : plan.enclosing) fixed.insert(v.id());
    // `sweep`: the loops inside the attach point; `every`: all loops, the enclosing ones too
    schedule::SweepMap sweep, every;
    for (const auto& [node, p] : plans_) {
      if (node == &st || p.extent.empty()) continue;
      for (const auto& v : node->leaf) {
        const schedule::IntSet range{0, ne::simplify(p.extent.at(v.get()) - 1)};
        every[loop_var(v).id()] = range;
        if (fixed.count(loop_var(v).id()) == 0) sweep[loop_var(v).id()] = range;
      }
    }
    const auto reads = reads_of(&st);
    // Every reader must run inside the attach scope, after the producer: the attach target
    // itself or a stage attached within the same loops. A reader outside would see a buffer
    // that holds one iteration's region, or nothing yet.
    for (const auto& [consumer, indices] : reads) {
      if (consumer == st.attach_stage) continue;
      const auto& ce = plans_[consumer].enclosing;
      const bool inside =
          consumer->attach == AttachKind::At && ce.size() >= plan.enclosing.size() &&
          std::equal(plan.enclosing.begin(), plan.enclosing.end(), ce.begin(),
                     [](const ne::Var& a, const ne::Var& b) { return a.id() == b.id(); });
      if (!inside)
        raise<ScheduleError>(
            "stage '{}' is computed at loop '{}' of stage '{}', but stage '{}' reads it outside "
            "that loop; "
            "compute '{}' at the same loop or inside it",
            st.name(), st.attach_ivar.name(), st.attach_stage->name(), consumer->name(),
            consumer->name());
    }
    const auto ndim = st.op->shape.size();
    std::vector<schedule::IntSet> region(ndim);
    bool first = true;
    for (const auto& [consumer, indices] : reads) {
      const auto& cp = plans_[consumer];
      std::vector<ne::Substitution> to_loops;
      for (const auto& r : consumer->root) to_loops.emplace_back(r.var(), cp.value.at(r.get()));
      for (std::size_t k = 0; k < ndim; ++k) {
        const auto idx = ne::substitute(indices[k], to_loops);
        auto set = sweep_until_fixed(idx, sweep, fixed);
        region[k] = first ? set : schedule::unite(region[k], set);
      }
      first = false;
    }
    if (first)
      raise<ScheduleError>("stage '{}' is attached but nothing computed reads it", st.name());
    for (std::size_t k = 0; k < ndim; ++k) {
      const auto& dim = st.op->shape[k];
      // Clipped unless the region provably stays inside the tensor with every loop swept over
      // its whole range: one index i of a symbolic dim n keeps the extent 1, not
      // min(i, n - 1) - i + 1, which is 1 only knowing i < n (and which a copy nest would keep
      // as a loop of its own).
      const bool inside_lo = ne::can_prove(sweep_until_fixed(region[k].lo, every, {}).lo >= 0);
      const bool inside_hi =
          ne::can_prove(sweep_until_fixed(region[k].hi, every, {}).hi <= dim - 1);
      const auto lo =
          inside_lo ? ne::simplify(region[k].lo) : ne::simplify(ne::max(region[k].lo, 0));
      const auto hi =
          inside_hi ? ne::simplify(region[k].hi) : ne::simplify(ne::min(region[k].hi, dim - 1));
      plan.region_min.push_back(lo);
      // On an iteration a guard of the consumer skips, the region can lie outside the tensor
      // and this extent is negative: its loops do not run (a fuse counts it as 0).
      plan.region_extent.push_back(ne::simplify(hi - lo + 1));
      // Interval bounds do not see that min(x + 3, 9) - x <= 3: the unclipped extent gives
      // the buffer its size when it is tighter.
      plan.extent_bound.push_back(ne::simplify(region[k].hi - region[k].lo + 1));
    }
  }

  static schedule::IntSet sweep_until_fixed(const ne::Expr& e, const schedule::SweepMap& sweep,
                                            const std::unordered_set<std::uint64_t>& fixed) {
    auto set = schedule::eval_set(e, sweep);
    // Sweep intervals may themselves mention sweeping variables (extents of inner loops that
    // depend on outer ones): evaluate again until only fixed variables remain.
    for (int round = 0; round < 16; ++round) {
      bool again = false;
      for (const auto* end : {&set.lo, &set.hi})
        for (const auto& v : ne::free_vars(*end))
          again = again || (sweep.count(v.id()) != 0 && fixed.count(v.id()) == 0);
      if (!again) break;
      set = {schedule::eval_set(set.lo, sweep).lo, schedule::eval_set(set.hi, sweep).hi};
    }
    return set;
  }

  void make_buffers() {
    // Loop variables may not appear in a buffer's shape: allocate for the largest extent.
    std::unordered_set<std::uint64_t> loop_vars;
    for (const auto& st : schedule_.stages())
      for (const auto& v : st->all) {
        loop_vars.insert(v.var().id());
        loop_vars.insert(loop_var(v).id());
      }
    for (const auto& st : schedule_.stages()) {
      auto& plan = plans_[st.get()];
      if (auto it = param_of_.find(st->op.get()); it != param_of_.end()) {
        plan.buffer = it->second;
        continue;
      }
      if (st->attach == AttachKind::Inline) continue;
      std::vector<ne::Expr> shape;
      const auto uses_loop = [&](const ne::Expr& e) {
        for (const auto& v : ne::free_vars(e))
          if (loop_vars.count(v.id()) != 0) return true;
        return false;
      };
      for (std::size_t k = 0; k < plan.region_extent.size(); ++k) {
        const auto& ext = plan.region_extent[k];
        if (!uses_loop(ext)) {
          shape.push_back(ext);
          continue;
        }
        auto size = ne::bounds(ext).max;
        if (k < plan.extent_bound.size())
          size = std::min(size, ne::bounds(plan.extent_bound[k]).max);
        shape.push_back(size);
      }
      plan.buffer = te::make_buffer(st->name(), st->op->dtype, std::move(shape), st->scope);
    }
  }

  // The body of stage st with its axes replaced by loop expressions and reads turned into
  // loads from the producers' buffers (offset by the producers' regions).
  te::Expr rewrite_value(const StageNode& st, const te::Expr& body) {
    struct Rewriter : te::ExprMutator<Rewriter> {
      Lowerer* self;
      std::vector<ne::Substitution> map;
      ne::Expr mutate_index(const ne::Expr& e) { return ne::simplify(ne::substitute(e, map)); }
      te::Expr visit_read(const te::ReadNode& n, const te::Expr&) {
        const auto* producer = self->schedule_.stage_of(n.op.get());
        const auto& pp = self->plans_[producer];
        std::vector<ne::Expr> idx;
        for (std::size_t k = 0; k < n.indices.size(); ++k) {
          ne::Expr i = mutate_index(n.indices[k]);
          if (!pp.region_min.empty()) i = ne::simplify(i - pp.region_min[k]);
          idx.push_back(i);
        }
        return te::load(pp.buffer, std::move(idx));
      }
    } rw;
    rw.self = this;
    for (const auto& r : st.root) rw.map.emplace_back(r.var(), plans_[&st].value.at(r.get()));
    return rw.visit(body);
  }

  std::vector<ne::Expr> store_indices(const StageNode& st) {
    const auto& plan = plans_[&st];
    std::vector<ne::Expr> idx;
    for (std::size_t k = 0; k < st.op->axis.size(); ++k)
      idx.push_back(ne::simplify(plan.value.at(st.op->axis[k].get()) - plan.region_min[k]));
    return idx;
  }

  Stmt guarded(const StagePlan& plan, Stmt s) {
    if (plan.guards.empty()) return s;
    ne::Expr cond = plan.guards.front();
    for (std::size_t k = 1; k < plan.guards.size(); ++k) cond = cond && plan.guards[k];
    return make_if(cond, std::move(s));
  }

  Stmt make_loop(const StageNode& st, const te::IterVar& v, Stmt body, const ne::Var& var) {
    const auto& plan = plans_[&st];
    ForKind kind = ForKind::Serial;
    std::vector<std::string> pragmas;
    if (auto it = st.attrs.find(v.get()); it != st.attrs.end()) {
      kind = it->second.loop == schedule::LoopKind::Unrolled  ? ForKind::Unrolled
             : it->second.loop == schedule::LoopKind::VThread ? ForKind::VThread
                                                              : ForKind::Serial;
      pragmas = it->second.pragmas;
    }
    Stmt loop = make_for(var, 0, plan.extent.at(v.get()), kind, std::move(body));
    for (auto p = pragmas.rbegin(); p != pragmas.rend(); ++p)
      loop = make_attr("pragma_" + *p, v.name(), 1, loop);
    return loop;
  }

  // The producers attached at loop v of st, each inside its allocation, around `rest`.
  Stmt with_attached(const StageNode& st, const te::IterVar& v, Stmt rest) {
    std::vector<const StageNode*> attached;
    for (const auto& s : schedule_.stages())
      if (s->attach == AttachKind::At && s->attach_stage == &st && s->attach_ivar == v)
        attached.push_back(s.get());
    if (attached.empty()) return rest;
    std::vector<Stmt> parts;
    for (const auto* p : attached) parts.push_back(make_stage(*p));
    parts.push_back(std::move(rest));
    Stmt body = make_seq(parts);
    for (auto it = attached.rbegin(); it != attached.rend(); ++it)
      if (!is_param(*it)) body = make_allocate(plans_[*it].buffer, body);
    return body;
  }

  // The leaf position that is tensorized, or leaf.size().
  static std::size_t tensorize_position(const StageNode& st,
                                        std::shared_ptr<const schedule::TensorIntrin>* intrin) {
    for (std::size_t k = 0; k < st.leaf.size(); ++k)
      if (auto it = st.attrs.find(st.leaf[k].get()); it != st.attrs.end() && it->second.tensorize) {
        *intrin = it->second.tensorize;
        return k;
      }
    return st.leaf.size();
  }

  static std::vector<Stmt> evaluate_all(const std::vector<te::Expr>& calls) {
    std::vector<Stmt> out;
    for (const auto& c : calls) out.push_back(make_evaluate(c));
    return out;
  }

  Stmt make_stage(const StageNode& st) {
    const auto& plan = plans_[&st];
    const auto* reduce = plan.body.as<te::ReduceNode>();
    const auto idx = store_indices(st);
    const auto& leaf = st.leaf;
    std::shared_ptr<const schedule::TensorIntrin> intrin;
    const std::size_t tensorized = tensorize_position(st, &intrin);
    // The first reduction loop: the accumulator is initialised just outside it, over the
    // data-parallel loops that come after it (TVM's ".init" loops).
    std::size_t first_reduce = leaf.size();
    if (reduce != nullptr)
      for (std::size_t k = 0; k < leaf.size(); ++k)
        if (leaf[k].is_reduce()) {
          first_reduce = k;
          break;
        }
    Stmt body;
    schedule::IntrinBody calls;
    if (intrin) {
      calls = match_tensorize(st, tensorized, *intrin);
      if (reduce == nullptr)
        body = make_seq(evaluate_all(calls.body));
      else
        body = make_seq(evaluate_all(first_reduce >= tensorized ? calls.body : calls.update));
      if (!plan.guards.empty()) body = guarded(plan, body);
    } else if (reduce != nullptr) {
      const auto acc = te::load(plan.buffer, idx);
      const auto src = rewrite_value(st, reduce->source);
      body =
          make_store(plan.buffer, idx, te::binary(te::combiner_kind(reduce->combiner), acc, src));
      body = guarded(plan, body);
    } else {
      body = guarded(plan, make_store(plan.buffer, idx, rewrite_value(st, plan.body)));
    }
    const std::size_t loops = std::min(tensorized, leaf.size());
    if (loops > 0) body = with_attached(st, leaf[loops - 1], body);
    for (std::size_t k = loops; k-- > 0;) {
      body = make_loop(st, leaf[k], body, loop_var(leaf[k]));
      if (k == first_reduce)
        body = make_seq({make_init(st, *reduce, first_reduce, tensorized, calls), body});
      if (k > 0) body = with_attached(st, leaf[k - 1], body);
    }
    return body;
  }

  // Matches the loops from leaf position `p` inward, and the stage's body, against the
  // intrinsic's pattern; returns the intrinsic's statements for the operands found.
  schedule::IntrinBody match_tensorize(const StageNode& st, std::size_t p,
                                       const schedule::TensorIntrin& intrin) {
    const auto& plan = plans_[&st];
    const auto& pat = *intrin.pattern().op();
    TensorizeMatcher m(fmt::format("stage '{}': tensorize at axis '{}' with intrinsic '{}'",
                                   st.name(), st.leaf[p].name(), intrin.name()),
                       plan, pat);
    std::vector<te::IterVar> inner_data, inner_reduce;
    for (std::size_t k = p; k < st.leaf.size(); ++k)
      (st.leaf[k].is_reduce() ? inner_reduce : inner_data).push_back(st.leaf[k]);
    if (inner_data.size() != pat.axis.size() || inner_reduce.size() != pat.reduce_axis.size())
      raise<ScheduleError>(
          "{}: the loops from there inward have {} data-parallel and {} reduction axes, the "
          "intrinsic has {} and {}{}",
          m.where, inner_data.size(), inner_reduce.size(), pat.axis.size(), pat.reduce_axis.size(),
          tensorize_order_hint(st, p, pat.axis.size(), pat.reduce_axis.size()));
    for (std::size_t k = 0; k < inner_data.size(); ++k)
      m.pair(inner_data[k], loop_var(inner_data[k]), pat.axis[k]);
    for (std::size_t k = 0; k < inner_reduce.size(); ++k)
      m.pair(inner_reduce[k], loop_var(inner_reduce[k]), pat.reduce_axis[k]);
    m.check_guards();
    for (const auto& r : st.root) m.to_loops.emplace_back(r.var(), plan.value.at(r.get()));
    m.match_bodies();
    schedule::IntrinCall call;
    for (const auto& in : pat.inputs) {
      const auto& access = m.access_of(*in);
      const auto& pp = plans_[schedule_.stage_of(access.op)];
      std::vector<ne::Expr> index;
      for (std::size_t d = 0; d < access.indices.size(); ++d) {
        ne::Expr i = access.indices[d];
        if (!pp.region_min.empty()) i = i - pp.region_min[d];
        index.push_back(ne::simplify(i));
      }
      call.inputs.push_back(
          m.operand(access.op->name, pp.buffer, index, access.pattern_indices, in->shape));
    }
    std::vector<ne::Expr> pattern_out;
    for (const auto& a : pat.axis) pattern_out.push_back(a.var());
    call.output = m.operand(st.name(), plan.buffer, store_indices(st), pattern_out, pat.shape);
    return intrin.lower(call);
  }

  Stmt make_init(const StageNode& st, const te::ReduceNode& reduce, std::size_t first_reduce,
                 std::size_t tensorized, const schedule::IntrinBody& calls) {
    const auto& plan = plans_[&st];
    std::vector<ne::Substitution> renames;
    std::vector<std::pair<te::IterVar, ne::Var>> loops;
    // Loops inside a tensorized axis are the intrinsic's: its reset covers them.
    const std::size_t last = std::min(tensorized, st.leaf.size());
    for (std::size_t k = first_reduce; k < last; ++k) {
      const auto& v = st.leaf[k];
      if (v.is_reduce()) continue;
      const auto& loop = loop_var(v);
      auto init_var = ne::var(v.name() + ".init", loop.min(), loop.max());
      renames.emplace_back(loop, init_var);
      loops.emplace_back(v, init_var);
    }
    // Reduction variables do not matter for the data-parallel indices; pin them to 0 so the
    // init store has only data-parallel loops.
    for (std::size_t k = first_reduce; k < st.leaf.size(); ++k)
      if (st.leaf[k].is_reduce()) renames.emplace_back(loop_var(st.leaf[k]), 0);
    Stmt init;
    if (tensorized < st.leaf.size()) {
      std::vector<Stmt> resets;
      for (const auto& c : calls.reset) {
        struct Rename : te::ExprMutator<Rename> {
          const std::vector<ne::Substitution>* map;
          ne::Expr mutate_index(const ne::Expr& e) { return ne::simplify(ne::substitute(e, *map)); }
        } rn;
        rn.map = &renames;
        resets.push_back(make_evaluate(rn.visit(c)));
      }
      init = make_seq(resets);
    } else {
      std::vector<ne::Expr> idx;
      for (const auto& i : store_indices(st))
        idx.push_back(ne::simplify(ne::substitute(i, renames)));
      init = make_store(plan.buffer, idx,
                        te::make_const(te::combiner_identity(reduce.combiner, plan.buffer.dtype()),
                                       plan.buffer.dtype()));
    }
    std::vector<ne::Expr> guards;
    for (const auto& g : plan.guards) {
      auto c = ne::simplify(ne::substitute(g, renames));
      if (!ne::can_prove(c)) guards.push_back(c);
    }
    if (!guards.empty()) {
      ne::Expr cond = guards.front();
      for (std::size_t k = 1; k < guards.size(); ++k) cond = cond && guards[k];
      init = make_if(cond, init);
    }
    // The init loops keep their axes' pragmas (TVM's init nest does): a reduction whose
    // pragma is on a data axis inside its reduction loop (stages computed at that loop, the
    // pragma's nest the update alone) gets its init lowered the same way.
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
      init = make_for(it->second, 0,
                      ne::simplify(ne::substitute(plan.extent.at(it->first.get()), renames)),
                      ForKind::Serial, init);
      if (auto a = st.attrs.find(it->first.get()); a != st.attrs.end())
        for (auto p = a->second.pragmas.rbegin(); p != a->second.pragmas.rend(); ++p)
          init = make_attr("pragma_" + *p, it->first.name(), 1, init);
    }
    return init;
  }

  schedule::Schedule& schedule_;
  const std::vector<te::Tensor>& args_;
  std::string name_;
  std::vector<Buffer> params_;
  std::unordered_map<const te::OperationNode*, Buffer> param_of_;
  std::unordered_map<const StageNode*, StagePlan> plans_;
  std::unordered_map<IterVarKey, ne::Var> loop_vars_;  // axes with a nonzero min: see loop_var
};

// Replaces loops of extent one by their body with the variable set to the loop's start,
// and simplifies every index on the way.
class RemoveUnitLoops : public StmtMutator<RemoveUnitLoops> {
 public:
  ne::Expr mutate_index(const ne::Expr& e) {
    return ne::simplify(map_.empty() ? e : ne::substitute(e, map_));
  }
  te::Expr mutate_expr(const te::Expr& e) {
    struct Sub : te::ExprMutator<Sub> {
      RemoveUnitLoops* self;
      ne::Expr mutate_index(const ne::Expr& i) { return self->mutate_index(i); }
    } sub;
    sub.self = this;
    return sub.visit(e);
  }
  Stmt visit_for(const ForNode& n, const Stmt& s) {
    const auto ext = mutate_index(n.extent);
    if (ext.as_int() == 1 && n.for_kind != ForKind::VThread) {
      map_.emplace_back(n.var, mutate_index(n.min));
      auto body = visit(n.body);
      map_.pop_back();
      return body;
    }
    return StmtMutator<RemoveUnitLoops>::visit_for(n, s);
  }
  Stmt visit_if(const IfThenElseNode& n, const Stmt& s) {
    const auto c = mutate_index(n.cond);
    if (ne::can_prove(c)) return visit(n.then_case);
    return StmtMutator<RemoveUnitLoops>::visit_if(n, s);
  }

 private:
  std::vector<ne::Substitution> map_;
};

// Flattens every buffer to one dimension, row-major: buffer[i, j] -> buffer[i*cols + j].
class Flatten : public StmtMutator<Flatten> {
 public:
  Buffer flat(const Buffer& b) {
    if (auto it = flat_.find(b.get()); it != flat_.end()) return it->second;
    auto f = te::make_buffer(b.name(), b.dtype(), {b.size()}, b.scope());
    flat_.emplace(b.get(), f);
    return f;
  }
  te::Expr mutate_expr(const te::Expr& e) {
    struct Sub : te::ExprMutator<Sub> {
      Flatten* self;
      te::Expr visit_load(const te::LoadNode& n, const te::Expr&) {
        return te::load(self->flat(n.buffer), {n.buffer.flat_index(n.indices)});
      }
      // Intrinsic operands already carry flat offsets; only their buffers change.
      te::Expr visit_call(const te::CallNode& n, const te::Expr& e) {
        auto base = te::ExprMutator<Sub>::visit_call(n, e);
        const auto* c = base.as<te::CallNode>();
        std::vector<Buffer> buffers;
        for (const auto& b : c->buffers) buffers.push_back(self->flat(b));
        return te::call(c->name, c->dtype(), c->args, std::move(buffers));
      }
    } sub;
    sub.self = this;
    return sub.visit(e);
  }
  Stmt visit_store(const StoreNode& n, const Stmt&) {
    return make_store(flat(n.buffer), {n.buffer.flat_index(n.indices)}, mutate_expr(n.value));
  }
  Stmt visit_allocate(const AllocateNode& n, const Stmt&) {
    return make_allocate(flat(n.buffer), visit(n.body));
  }

 private:
  std::unordered_map<const te::BufferNode*, Buffer> flat_;
};

}  // namespace detail

// Lowers schedule s for the tensors `args` (inputs and outputs, in the order the function
// takes them) to a TIR function with flattened buffers.
DLAVM_INLINE PrimFunc lower(schedule::Schedule& s, const std::vector<te::Tensor>& args,
                            std::string name) {
  PrimFunc f = detail::Lowerer(s, args, std::move(name)).run();
  f.body = detail::RemoveUnitLoops().visit(f.body);
  detail::Flatten flatten;
  f.body = flatten.visit(f.body);
  for (const auto& p : f.params) f.flat_params.push_back(flatten.flat(p));
  return f;
}

}  // namespace dlavm::tir
