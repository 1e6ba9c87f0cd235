// Loop nests as the VTA passes read them: the For loops at the top of an annotated stage, the
// "dims" that flat index expressions walk through them (adjacent loops merged where every
// access is contiguous), and offsets with loops pinned to a value. Shared by the DMA and ALU
// injection passes.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
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
// outside it merges with it (a padded loop must stay at the edge of its dim). nullopt when an
// index is not affine in the loops.
inline std::optional<std::vector<Dim>> access_dims(const std::vector<NestLoop>& loops,
                                                   const std::vector<ne::Expr>& indices,
                                                   const std::vector<bool>& closed = {}) {
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
    if (!dims.empty() && !inner_closed) {
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

}  // namespace dlavm::vta::detail
