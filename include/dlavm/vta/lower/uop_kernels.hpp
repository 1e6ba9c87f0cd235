// Micro-op kernels as the passes after fold_uops read them: a kernel's loop levels and
// micro-op operands (KernelForm), the entries it touches (enumerated where every extent is a
// constant, or as one dense range where extents read symbolic dims), and which statements
// only accumulate into an accumulator block. Shared by vta::load_acc_init and
// vta::gemm_into_acc.
#pragma once

#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/intrinsic_calls.hpp>
#include <dlavm/vta/lower/nest.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlavm::vta::detail {

// The micro-op calls of a kernel (its loop markers left out).
inline std::vector<const te::CallNode*> uop_calls(const tir::AttrNode& kernel) {
  auto calls = calls_in(kernel.body);
  std::erase_if(calls, [](const te::CallNode* c) {
    return c->name == intrin::uop_loop_begin || c->name == intrin::uop_loop_end;
  });
  return calls;
}

inline bool mentions(const te::CallNode& c, const te::BufferNode* b) {
  return std::any_of(c.buffers.begin(), c.buffers.end(),
                     [&](const te::Buffer& x) { return x.get() == b; });
}

// At most this many micro-ops, transfers or entries are enumerated per statement; past it the
// pass leaves the statement as it is.
inline constexpr std::int64_t kMostEnumerated = 1 << 16;

// Calls `leaf(call, values)` for each call under `s` with its serial loops unrolled, each
// loop's variable bound in `values`; false where a loop bound is not a constant, a branch
// stands in the way, or more than kMostEnumerated calls would run.
template <class Leaf>
bool for_each_unrolled(const tir::Stmt& s, std::vector<ne::Substitution>& values,
                       std::int64_t& budget, Leaf&& leaf) {
  if (const auto* f = s.as<tir::ForNode>()) {
    const auto lo = ne::simplify(f->min).as_int(), extent = ne::simplify(f->extent).as_int();
    if (!lo || !extent) return false;
    for (std::int64_t k = 0; k < *extent; ++k) {
      values.emplace_back(f->var, ne::Expr(*lo + k));
      const bool ok = for_each_unrolled(f->body, values, budget, leaf);
      values.pop_back();
      if (!ok) return false;
    }
    return true;
  }
  if (const auto* q = s.as<tir::SeqNode>()) {
    for (const auto& part : q->seq)
      if (!for_each_unrolled(part, values, budget, leaf)) return false;
    return true;
  }
  if (const auto* c = call_of(s)) return --budget >= 0 && leaf(*c, values);
  return false;
}

// A micro-op kernel as its fields: its loop levels (outermost first; extents and factors may
// read symbolic dims) and its micro-ops' (dst, src) offsets, which fold_uops leaves constant
// once its unrolled loops are (a GEMM's src is its input entry; its weight entry is left out).
struct KernelForm {
  struct Level {
    ne::Expr extent, dst, src;
  };
  std::vector<Level> levels;
  std::vector<std::pair<std::int64_t, std::int64_t>> uops;
};

inline std::optional<KernelForm> kernel_form(const tir::AttrNode& kernel) {
  KernelForm form;
  std::vector<ne::Substitution> values;
  std::int64_t budget = kMostEnumerated;
  const bool constant = for_each_unrolled(
      kernel.body, values, budget,
      [&](const te::CallNode& c, std::span<const ne::Substitution> at) {
        if (c.name == intrin::uop_loop_end) return true;
        if (c.name == intrin::uop_loop_begin) {
          const auto e = index_arg(c.args[0]), d = index_arg(c.args[1]), s = index_arg(c.args[2]);
          if (!e || !d || !s) return false;
          form.levels.push_back({ne::simplify(*e), ne::simplify(*d), ne::simplify(*s)});
          return true;
        }
        std::optional<std::int64_t> dst, src = 0;
        if (c.name == intrin::gemm_reset) {
          dst = constant_index(c.args[0], at);
        } else if (c.name == intrin::gemm) {
          dst = constant_index(c.args[0], at);
          src = constant_index(c.args[1], at);
        } else if (c.name == intrin::alu) {
          dst = constant_index(c.args[3], at);
          src = constant_index(c.args[4], at);
        }
        if (!dst || !src) return false;
        form.uops.emplace_back(*dst, *src);
        return true;
      });
  if (!constant || form.levels.size() > 2 || form.uops.empty()) return std::nullopt;
  return form;
}

// The (dst, src) entries of every micro-op the kernel runs, in order, or nullopt where a loop
// level is not a constant.
inline std::optional<std::vector<std::pair<std::int64_t, std::int64_t>>> kernel_operands(
    const KernelForm& k) {
  struct Level {
    std::int64_t extent, dst, src;
  };
  std::vector<Level> levels;
  std::int64_t runs = std::ssize(k.uops);
  for (const auto& l : k.levels) {
    const auto e = l.extent.as_int(), d = l.dst.as_int(), s = l.src.as_int();
    if (!e || !d || !s || *e < 0 || runs > kMostEnumerated / std::max<std::int64_t>(*e, 1))
      return std::nullopt;
    runs *= *e;
    levels.push_back({*e, *d, *s});
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  out.reserve(static_cast<std::size_t>(runs));
  const Level none{1, 0, 0};
  const Level& outer = levels.empty() ? none : levels[0];
  const Level& inner = levels.size() < 2 ? none : levels[1];
  for (std::int64_t i = 0; i < outer.extent; ++i)
    for (std::int64_t j = 0; j < inner.extent; ++j)
      for (const auto& [d, s] : k.uops)
        out.emplace_back(d + i * outer.dst + j * inner.dst, s + i * outer.src + j * inner.src);
  return out;
}

// Where a side of the kernel (its dst, or its src, operands) covers a dense range of entries,
// each once, whatever its extents: the first entry and the count. The micro-ops cover n
// consecutive entries; each level, innermost first, steps over everything inside it.
inline std::optional<std::pair<std::int64_t, ne::Expr>> dense_range(const KernelForm& k, bool src) {
  std::vector<std::int64_t> at;
  for (const auto& [d, s] : k.uops) at.push_back(src ? s : d);
  std::sort(at.begin(), at.end());
  for (std::size_t i = 1; i < at.size(); ++i)
    if (at[i] != at[0] + static_cast<std::int64_t>(i)) return std::nullopt;
  ne::Expr size = std::ssize(at);
  for (auto it = k.levels.rbegin(); it != k.levels.rend(); ++it) {
    if (!is_zero((src ? it->src : it->dst) - size)) return std::nullopt;
    size = ne::simplify(it->extent * size);
  }
  return std::pair{at[0], size};
}

// The kernel a statement is, if it is one whose micro-ops all call `name`.
inline const tir::AttrNode* kernel_of(const tir::Stmt& s, std::string_view name) {
  const auto* a = s.as<tir::AttrNode>();
  if (a == nullptr || a->key != intrin::uop_kernel) return nullptr;
  const auto calls = uop_calls(*a);
  if (calls.empty()) return nullptr;
  for (const auto* c : calls)
    if (c->name != name || c->buffers.empty()) return nullptr;
  return a;
}

inline bool is_alu_add(const te::CallNode& c) {
  return c.name == intrin::alu &&
         constant_index(c.args[0]) == static_cast<std::int64_t>(runtime::AluOp::Add);
}

// Whether a statement touches accumulator `acc` only by accumulating into it.
inline bool accumulates_only(const tir::Stmt& s, const te::BufferNode* acc) {
  for (const auto* c : calls_in(s)) {
    if (!mentions(*c, acc)) continue;
    if (c->name == intrin::gemm && c->buffers[0].get() == acc &&
        std::none_of(c->buffers.begin() + 1, c->buffers.end(),
                     [&](const te::Buffer& b) { return b.get() == acc; }))
      continue;
    if (is_alu_add(*c) && c->buffers[0].get() == acc &&
        (constant_index(c->args[1]) == 1 || c->buffers[1].get() != acc))
      continue;
    return false;
  }
  return true;
}

// The load a statement is: one, or one in serial loops (a block the 2-D DMA moves in several
// transfers), or null.
inline const te::CallNode* load_of(const tir::Stmt& s) {
  tir::Stmt inner = s;
  while (const auto* f = inner.as<tir::ForNode>()) {
    if (f->for_kind != tir::ForKind::Serial) return nullptr;
    inner = f->body;
  }
  const auto* c = call_of(inner);
  return c != nullptr && c->name == intrin::load && c->args.size() >= 10 ? c : nullptr;
}

// How many calls name each buffer in `body`: a pass that removes a buffer's last uses checks
// that nothing else names it.
inline std::unordered_map<const te::BufferNode*, int> buffer_uses(const tir::Stmt& body) {
  std::unordered_map<const te::BufferNode*, int> uses;
  for (const auto* c : calls_in(body))
    for (const auto& b : c->buffers) ++uses[b.get()];
  return uses;
}

}  // namespace dlavm::vta::detail
