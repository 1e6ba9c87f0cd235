// Loop nests as the VTA passes read them: the For loops at the top of an annotated stage, the
// "dims" that flat index expressions walk through them (adjacent loops merged where every
// access is contiguous), offsets with loops pinned to a value, and the bounds a condition
// (a te::pad select, the guard of a split whose factor does not divide the extent) puts on
// the loops, with the nest clipped to them. Shared by the DMA and ALU injection passes.
//
//   for (i.inner, 0, 3) { if (i.outer*3 + i.inner < 10) { B[i.inner] = A[...] } }
//   loop_bounds(cond, loops)  -> i.inner <= 9 - i.outer*3
//   clip_loops(loops, bounds) -> for (i.inner, 0, min(3, 10 - i.outer*3)) (nonempty: extent >= 1)
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/tir/rewrite.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::vta::detail {

// A loop of a nest: variable and extent.
struct NestLoop {
  ne::Var var;
  ne::Expr extent;
};

// Peels the For loops at the top of s; returns them outermost first and the innermost body.
inline std::pair<std::vector<NestLoop>, tir::Stmt> peel_loops(tir::Stmt s) {
  std::vector<NestLoop> loops;
  while (const auto* f = s.as<tir::ForNode>()) {
    if (!f->min.is_const() || *f->min.as_int() != 0)
      raise<ScheduleError>("VTA lowering: loop '{}' starts at {}, expected 0", f->var.name(),
                           f->min);
    loops.push_back({f->var, f->extent});
    s = f->body;
  }
  return {std::move(loops), std::move(s)};
}

inline bool same(const ne::Expr& a, const ne::Expr& b) {
  return ne::equal(ne::simplify(a), ne::simplify(b));
}

inline bool divisible(const ne::Expr& e, std::int64_t d) {
  return ne::simplify(ne::floormod(e, d)).as_int() == 0;
}

inline bool is_zero(const ne::Expr& e) { return ne::simplify(e).as_int() == 0; }

// One dimension of an access: extent and the strides of the accesses that walk it.
struct Dim {
  ne::Var var;
  ne::Expr extent;
  std::vector<ne::Expr> strides;  // one per access
  std::vector<ne::Var> merged;    // loops folded into this dimension, innermost first
};

// The dims of a nest for the given flat index expressions (innermost first), with adjacent
// loops merged where every access walks them contiguously (stride_outer = stride_inner *
// extent_inner). A loop in `closed` is only ever the outermost loop of its dim: nothing
// outside it merges with it (a padded loop must stay at the edge of its dim). With
// `closed_joins_at_most` > 0, a closed loop also starts a dim of its own unless the dim inside
// it provably holds at most that many elements (a padded row then stays a row, rather than
// padding a whole row of tiles at a time). nullopt when an index is not affine in the loops.
inline std::optional<std::vector<Dim>> access_dims(const std::vector<NestLoop>& loops,
                                                   const std::vector<ne::Expr>& indices,
                                                   const std::vector<bool>& closed = {},
                                                   std::int64_t closed_joins_at_most = 0) {
  std::vector<ne::Var> vars;
  for (const auto& l : loops) vars.push_back(l.var);
  std::vector<ne::LinearForm> forms;
  for (const auto& i : indices) {
    auto f = ne::linear_form(i, vars);
    if (!f) return std::nullopt;
    forms.push_back(std::move(*f));
  }
  std::vector<Dim> dims;
  bool inner_closed = false;
  for (std::size_t k = loops.size(); k-- > 0;) {
    Dim d{loops[k].var, loops[k].extent, {}, {loops[k].var}};
    for (const auto& f : forms) d.strides.push_back(ne::simplify(f.strides[k]));
    const bool is_closed = k < closed.size() && closed[k];
    const bool joins =
        !is_closed || closed_joins_at_most <= 0 ||
        (!dims.empty() && ne::bounds(dims.back().extent).max <= closed_joins_at_most);
    if (!dims.empty() && !inner_closed && joins) {
      auto& inner = dims.back();
      bool contiguous = true;
      for (std::size_t a = 0; a < forms.size(); ++a)
        contiguous = contiguous && same(d.strides[a], inner.strides[a] * inner.extent);
      if (contiguous) {
        inner.extent = ne::simplify(inner.extent * d.extent);
        inner.merged.push_back(d.var);
        inner_closed = is_closed;
        continue;
      }
    }
    dims.push_back(std::move(d));
    inner_closed = is_closed;
  }
  return dims;
}

inline te::Expr iv(const ne::Expr& e) { return te::index_value(ne::simplify(e)); }

// The index with the given loop variables replaced by values (zero by default).
inline ne::Expr pinned(const ne::Expr& index, const std::vector<ne::Var>& vars,
                       const std::vector<std::pair<ne::Var, ne::Expr>>& at = {}) {
  std::vector<ne::Substitution> z;
  for (const auto& v : vars) {
    ne::Expr value = 0;
    for (const auto& [w, e] : at)
      if (w.id() == v.id()) value = e;
    z.emplace_back(v, value);
  }
  return ne::simplify(ne::substitute(index, z));
}

inline bool contains(const std::vector<ne::Var>& vars, const ne::Var& v) {
  return std::any_of(vars.begin(), vars.end(), [&](const ne::Var& w) { return w.id() == v.id(); });
}

// The loops of `loops` not in `folded`, outermost first: they stay host loops.
inline std::vector<NestLoop> host_loops(const std::vector<NestLoop>& loops,
                                        const std::vector<ne::Var>& folded) {
  std::vector<NestLoop> host;
  for (const auto& l : loops)
    if (!contains(folded, l.var)) host.push_back(l);
  return host;
}

inline tir::Stmt wrap_loops(const std::vector<NestLoop>& host, tir::Stmt body) {
  for (auto it = host.rbegin(); it != host.rend(); ++it)
    body = tir::make_for(it->var, 0, it->extent, tir::ForKind::Serial, body);
  return body;
}

// The conjuncts of a condition: `a && (b && c)` -> a, b, c.
inline std::vector<ne::Expr> conjuncts(const ne::Expr& cond) {
  std::vector<ne::Expr> out;
  auto split = [&](auto& self, const ne::Expr& e) -> void {
    if (const auto* b = e.as<ne::BinaryNode>(); b && b->kind() == ne::Kind::And) {
      self(self, b->a);
      self(self, b->b);
    } else {
      out.push_back(e);
    }
  };
  split(split, ne::simplify(cond));
  return out;
}

// Bounds a condition puts on one loop of a nest: lo <= var <= hi (undefined: unbounded).
struct ClipBound {
  ne::Expr lo, hi;
};

// A condition read as per-loop bounds. When a conjunct is not a comparison linear in exactly
// one loop with a constant coefficient, `failed` is that conjunct and `why` says what it is.
struct LoopBounds {
  std::vector<ClipBound> bounds;  // per loop of the nest
  ne::Expr failed;
  std::string why;
};

// Reads `cond`, a conjunction of comparisons each linear in exactly one loop of `loops` (the
// offsets in variables outside the nest), as per-loop bounds.
inline LoopBounds loop_bounds(const ne::Expr& cond, const std::vector<NestLoop>& loops) {
  std::vector<ne::Var> vars;
  for (const auto& l : loops) vars.push_back(l.var);
  LoopBounds out{std::vector<ClipBound>(loops.size()), {}, {}};
  for (const auto& c : conjuncts(cond)) {
    const auto* cmp = c.as<ne::BinaryNode>();
    // Every comparison as `e >= 0`.
    ne::Expr e;
    if (cmp != nullptr) {
      switch (cmp->kind()) {
        case ne::Kind::LT:
          e = cmp->b - cmp->a - 1;
          break;
        case ne::Kind::LE:
          e = cmp->b - cmp->a;
          break;
        case ne::Kind::GT:
          e = cmp->a - cmp->b - 1;
          break;
        case ne::Kind::GE:
          e = cmp->a - cmp->b;
          break;
        default:
          break;
      }
    }
    const auto fail = [&](const char* why) {
      out.failed = c;
      out.why = why;
      return out;
    };
    if (!e.defined()) return fail("is not a comparison");
    const auto form = ne::linear_form(e, vars);
    std::optional<std::size_t> which;
    bool several = false;
    if (form)
      for (std::size_t k = 0; k < vars.size(); ++k)
        if (!is_zero(form->strides[k])) {
          several = several || which.has_value();
          which = k;
        }
    if (!form || several || !which) return fail("does not bound exactly one loop linearly");
    const auto stride = ne::simplify(form->strides[*which]).as_int();
    if (!stride) return fail("has a symbolic coefficient");
    // stride * v + offset >= 0
    auto& b = out.bounds[*which];
    if (*stride > 0) {
      const ne::Expr lo = ne::simplify(ne::floordiv(-form->offset + *stride - 1, *stride));
      b.lo = b.lo.defined() ? ne::simplify(ne::max(b.lo, lo)) : lo;
    } else {
      const ne::Expr hi = ne::simplify(ne::floordiv(form->offset, -*stride));
      b.hi = b.hi.defined() ? ne::simplify(ne::min(b.hi, hi)) : hi;
    }
  }
  return out;
}

// A nest clipped to the box where per-loop bounds hold: each clipped loop starts again at 0
// over the iterations it keeps (the old variable becomes new + first kept value).
struct ClippedNest {
  std::vector<NestLoop> loops;
  std::vector<ne::Substitution> shift;  // old loop variable -> new variable + first value
  ne::Expr nonempty = 1;                // every clipped loop keeps an iteration
};

inline ClippedNest clip_loops(const std::vector<NestLoop>& loops,
                              const std::vector<ClipBound>& bounds) {
  ClippedNest out;
  std::vector<ne::Expr> nonempty;
  for (std::size_t k = 0; k < loops.size(); ++k) {
    const auto& l = loops[k];
    const auto& b = k < bounds.size() ? bounds[k] : ClipBound{};
    if (!b.lo.defined() && !b.hi.defined()) {
      out.loops.push_back(l);
      continue;
    }
    const ne::Expr lo = b.lo.defined() ? ne::simplify(ne::max(b.lo, 0)) : ne::Expr(0);
    const ne::Expr hi =
        b.hi.defined() ? ne::simplify(ne::min(b.hi, l.extent - 1)) : ne::simplify(l.extent - 1);
    const ne::Expr extent = ne::simplify(hi - lo + 1);
    if (is_zero(lo) && same(extent, l.extent)) {
      out.loops.push_back(l);
      continue;
    }
    const auto v = ne::var(l.var.name(), 0, std::max<std::int64_t>(ne::bounds(extent).max - 1, 0));
    out.loops.push_back({v, extent});
    out.shift.emplace_back(l.var, ne::Expr(v) + lo);
    if (ne::bounds(extent).min < 1) nonempty.push_back(extent >= 1);
  }
  for (const auto& c : nonempty) out.nonempty = ne::simplify(out.nonempty && c);
  return out;
}

// `body` (a statement inside `loops`) rebuilt inside the clipped nest.
inline tir::Stmt clipped_nest(const ClippedNest& c, const tir::Stmt& body) {
  tir::Stmt inner = c.shift.empty() ? body : tir::Rewriter(c.shift, {}).visit(body);
  return wrap_loops(c.loops, inner);
}

// `s` run only where `cond` holds (nothing when it is provably true).
inline tir::Stmt only_if(const ne::Expr& cond, tir::Stmt s) {
  const auto c = ne::simplify(cond);
  if (const auto v = c.as_int(); v && *v != 0) return s;
  return tir::make_if(c, std::move(s));
}

// What a split guard is, for messages: `cond` names a loop of `loops` whose extent is the
// split's factor; the constant it is compared with is the extent the factor does not divide.
inline std::string describe_guard(const ne::Expr& cond, const std::vector<NestLoop>& loops) {
  for (const auto& c : conjuncts(cond)) {
    const auto* cmp = c.as<ne::BinaryNode>();
    if (cmp == nullptr || cmp->kind() != ne::Kind::LT) continue;
    const auto extent = ne::simplify(cmp->b).as_int();
    std::vector<ne::Var> vars;
    for (const auto& l : loops) vars.push_back(l.var);
    const auto form = ne::linear_form(cmp->a, vars);
    if (!extent || !form) continue;
    for (std::size_t k = 0; k < loops.size(); ++k)
      if (ne::simplify(form->strides[k]).as_int() == 1)
        if (const auto factor = ne::simplify(loops[k].extent).as_int())
          return fmt::format(
              "a split by {} (loop '{}') of an axis of extent {}, which {} does not divide",
              *factor, loops[k].var.name(), *extent, *factor);
  }
  return "a split whose factor does not divide the axis's extent";
}

// The first store under s (the stage an annotated nest computes), or null.
inline const tir::StoreNode* first_store(const tir::Stmt& s) {
  if (const auto* st = s.as<tir::StoreNode>()) return st;
  if (const auto* f = s.as<tir::ForNode>()) return first_store(f->body);
  if (const auto* i = s.as<tir::IfThenElseNode>()) return first_store(i->then_case);
  if (const auto* a = s.as<tir::AttrNode>()) return first_store(a->body);
  if (const auto* q = s.as<tir::SeqNode>())
    for (const auto& part : q->seq)
      if (const auto* st = first_store(part)) return st;
  return nullptr;
}

// Whether `init` is a reduction's init nest (loops around a store of a constant) that te::lower
// left in front of the pragma `key` annotating the reduction's update into the same buffer:
// what a schedule whose reduction loops are outermost, with the pragma on the first of them,
// lowers to (the init goes just outside the first reduction loop).
inline bool init_before(const tir::Stmt& init, const tir::Stmt& next, const std::string& key) {
  const auto* attr = next.as<tir::AttrNode>();
  if (attr == nullptr || attr->key != key) return false;
  tir::Stmt s = init;
  while (const auto* f = s.as<tir::ForNode>()) s = f->body;
  const auto* store = s.as<tir::StoreNode>();
  if (store == nullptr || store->value.as<te::IntImmNode>() == nullptr) return false;
  s = attr->body;
  while (const auto* f = s.as<tir::ForNode>()) s = f->body;
  const auto* update = s.as<tir::StoreNode>();
  return update != nullptr && update->buffer.same_as(store->buffer);
}

}  // namespace dlavm::vta::detail
