// Definitions for dlavm/vta/lower/load_acc_init.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/load_acc_init.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dlavm::vta {

namespace detail {

// A call argument as an index expression (fields are IndexNode or IntImm).
inline std::optional<ne::Expr> index_arg(const te::Expr& e) {
  if (const auto* i = e.as<te::IndexNode>()) return i->index;
  if (const auto* c = e.as<te::IntImmNode>()) return ne::Expr(c->value);
  return std::nullopt;
}

inline std::optional<std::int64_t> constant_index(const te::Expr& e,
                                                  std::span<const ne::Substitution> values = {}) {
  const auto i = index_arg(e);
  if (!i) return std::nullopt;
  return ne::simplify(values.empty() ? *i : ne::substitute(*i, values)).as_int();
}

// The call a statement evaluates, or null.
inline const te::CallNode* call_of(const tir::Stmt& s) {
  const auto* e = s.as<tir::EvaluateNode>();
  return e ? e->value.as<te::CallNode>() : nullptr;
}

// Every call under a statement.
inline std::vector<const te::CallNode*> calls_in(const tir::Stmt& s) {
  struct Calls : tir::StmtVisitor<Calls> {
    std::vector<const te::CallNode*> found;
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      if (const auto* c = n.value.as<te::CallNode>()) found.push_back(c);
    }
  } v;
  v.visit(s);
  return v.found;
}

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

// The (dst, src) entries of every micro-op a kernel (an uop_kernel attr) runs, in order, or
// nullopt where a loop extent, factor or operand is not a constant.
inline std::optional<std::vector<std::pair<std::int64_t, std::int64_t>>> kernel_operands(
    const tir::AttrNode& kernel) {
  struct Level {
    std::int64_t extent, dst, src;
  };
  std::vector<Level> levels;
  std::vector<std::pair<std::int64_t, std::int64_t>> uops;
  std::vector<ne::Substitution> values;
  bool constant = true;
  constexpr std::size_t kMostUops = 1 << 16;
  struct Walk : tir::StmtVisitor<Walk> {
    std::vector<Level>* levels;
    std::vector<std::pair<std::int64_t, std::int64_t>>* uops;
    std::vector<ne::Substitution>* values;
    bool* constant;
    void visit_for(const tir::ForNode& n, const tir::Stmt&) {
      const auto extent = ne::simplify(n.extent).as_int();
      if (!extent || !ne::simplify(n.min).is_const() ||
          *extent * (std::ssize(*uops) + 1) > static_cast<std::int64_t>(kMostUops)) {
        *constant = false;
        return;
      }
      for (std::int64_t k = 0; k < *extent && *constant; ++k) {
        values->emplace_back(n.var, ne::Expr(*ne::simplify(n.min).as_int() + k));
        visit(n.body);
        values->pop_back();
      }
    }
    void visit_if(const tir::IfThenElseNode&, const tir::Stmt&) { *constant = false; }
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      const auto* c = n.value.as<te::CallNode>();
      if (c == nullptr) return;
      if (c->name == intrin::uop_loop_end) return;
      if (c->name == intrin::uop_loop_begin) {
        const auto e = constant_index(c->args[0]), d = constant_index(c->args[1]),
                   s = constant_index(c->args[2]);
        if (!e || !d || !s)
          *constant = false;
        else
          levels->push_back({*e, *d, *s});
        return;
      }
      std::optional<std::int64_t> dst, src = 0;
      if (c->name == intrin::gemm_reset) {
        dst = constant_index(c->args[0], *values);
      } else if (c->name == intrin::alu) {
        dst = constant_index(c->args[3], *values);
        src = constant_index(c->args[4], *values);
      }
      if (!dst || !src)
        *constant = false;
      else
        uops->emplace_back(*dst, *src);
    }
  } walk;
  walk.levels = &levels;
  walk.uops = &uops;
  walk.values = &values;
  walk.constant = &constant;
  walk.visit(kernel.body);
  if (!constant || levels.size() > 2) return std::nullopt;
  std::int64_t runs = static_cast<std::int64_t>(uops.size());
  for (const auto& l : levels) {
    if (l.extent < 0 ||
        runs > static_cast<std::int64_t>(kMostUops) / std::max<std::int64_t>(l.extent, 1))
      return std::nullopt;
    runs *= l.extent;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  out.reserve(static_cast<std::size_t>(runs));
  const Level none{1, 0, 0};
  const Level& outer = levels.empty() ? none : levels[0];
  const Level& inner = levels.size() < 2 ? none : levels[1];
  for (std::int64_t i = 0; i < outer.extent; ++i)
    for (std::int64_t j = 0; j < inner.extent; ++j)
      for (const auto& [d, s] : uops)
        out.emplace_back(d + i * outer.dst + j * inner.dst, s + i * outer.src + j * inner.src);
  return out;
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

class LoadAccInit : public tir::StmtMutator<LoadAccInit> {
 public:
  explicit LoadAccInit(const tir::Stmt& body) {
    for (const auto* c : calls_in(body))
      for (const auto& b : c->buffers) ++uses_[b.get()];
  }

  tir::Stmt visit_allocate(const tir::AllocateNode& n, const tir::Stmt& s) {
    tir::Stmt out = tir::StmtMutator<LoadAccInit>::visit_allocate(n, s);
    if (!removed_.contains(n.buffer.get())) return out;
    return out.as<tir::AllocateNode>()->body;
  }

  tir::Stmt visit_seq(const tir::SeqNode& n, const tir::Stmt& s) {
    tir::Stmt visited = tir::StmtMutator<LoadAccInit>::visit_seq(n, s);
    const auto* seq = visited.as<tir::SeqNode>();
    if (seq == nullptr) return visited;
    std::vector<tir::Stmt> parts = seq->seq;
    bool changed = false;
    for (std::size_t r = 0; r < parts.size(); ++r)
      if (fold_at(parts, r)) changed = true;
    return changed ? tir::make_seq(parts) : visited;
  }

 private:
  // Folds the load of the addend that the reset at parts[r] may take the place of.
  bool fold_at(std::vector<tir::Stmt>& parts, std::size_t r) {
    const auto* reset = kernel_of(parts[r], intrin::gemm_reset);
    if (reset == nullptr) return false;
    const te::Buffer acc_buffer = uop_calls(*reset).front()->buffers[0];
    const te::BufferNode* acc = acc_buffer.get();
    for (const auto* c : uop_calls(*reset))
      if (c->buffers[0].get() != acc) return false;
    // the loads since the reset, by the buffer they fill
    std::unordered_map<const te::BufferNode*, std::size_t> loaded;
    for (std::size_t a = r + 1; a < parts.size(); ++a) {
      if (const auto* c = load_of(parts[a]); c && !mentions(*c, acc)) {
        loaded[c->buffers[0].get()] = a;
        continue;
      }
      if (const auto* add = kernel_of(parts[a], intrin::alu)) {
        const auto* call = uop_calls(*add).front();
        const te::BufferNode* src = call->buffers.size() > 1 ? call->buffers[1].get() : nullptr;
        const auto it = loaded.find(src);
        // the loaded buffer read by this kernel's micro-ops and written by the load alone
        if (is_alu_add(*call) && call->buffers[0].get() == acc && src != acc &&
            constant_index(call->args[1]) == 0 && it != loaded.end() && same_calls(*add, *call) &&
            uses_[src] == 1 + uses_in(*add, src)) {
          if (auto init = init_load(*reset, *add, parts[it->second], acc_buffer)) {
            parts[r] = *init;
            parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(a));
            parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(it->second));
            removed_.insert(src);
            return true;
          }
        }
      }
      if (!accumulates_only(parts[a], acc)) return false;
    }
    return false;
  }

  static int uses_in(const tir::AttrNode& kernel, const te::BufferNode* b) {
    int n = 0;
    for (const auto* c : calls_in(kernel.body)) n += mentions(*c, b) ? 1 : 0;
    return n;
  }

  // Whether every micro-op of the kernel is `call`'s operation on its buffers.
  static bool same_calls(const tir::AttrNode& kernel, const te::CallNode& call) {
    for (const auto* c : uop_calls(kernel)) {
      if (c->buffers.size() != call.buffers.size() ||
          !std::equal(
              c->buffers.begin(), c->buffers.end(), call.buffers.begin(),
              [](const te::Buffer& x, const te::Buffer& y) { return x.get() == y.get(); }) ||
          constant_index(c->args[0]) != constant_index(call.args[0]) ||
          constant_index(c->args[1]) != constant_index(call.args[1]))
        return false;
    }
    return true;
  }

  // The load into `acc` that replaces the reset, if the ADD maps the loaded entries one to one
  // onto the reset ones at a constant distance.
  static std::optional<tir::Stmt> init_load(const tir::AttrNode& reset, const tir::AttrNode& add,
                                            const tir::Stmt& load, const te::Buffer& acc) {
    const auto reset_ops = kernel_operands(reset);
    const auto add_ops = kernel_operands(add);
    auto filled = load_entries(load);
    if (!reset_ops || !add_ops || add_ops->empty() || !filled) return std::nullopt;
    const std::int64_t distance = add_ops->front().first - add_ops->front().second;
    std::vector<std::int64_t> dst, src, zeroed;
    for (const auto& [d, s] : *add_ops) {
      if (d - s != distance) return std::nullopt;
      dst.push_back(d);
      src.push_back(s);
    }
    for (const auto& op : *reset_ops) zeroed.push_back(op.first);
    for (auto* v : {&dst, &src, &zeroed, &*filled}) std::sort(v->begin(), v->end());
    // each entry once: the ADD's, the reset's and the load's; the ADD reads what the load fills
    // and writes what the reset zeroed
    for (const auto* v : {&dst, &zeroed, &*filled})
      if (std::adjacent_find(v->begin(), v->end()) != v->end()) return std::nullopt;
    if (src != *filled || dst != zeroed) return std::nullopt;
    // the same transfers, into acc, `distance` entries on
    struct Retarget : tir::StmtMutator<Retarget> {
      te::Buffer acc;
      std::int64_t distance = 0;
      tir::Stmt visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
        const auto& c = *n.value.as<te::CallNode>();
        auto args = c.args;
        args[1] = te::index_value(ne::simplify(*index_arg(args[1]) + distance));
        std::vector<te::Buffer> buffers = c.buffers;
        buffers[0] = acc;
        return tir::make_evaluate(te::call(c.name, c.dtype(), std::move(args), buffers));
      }
    } retarget;
    retarget.acc = acc;
    retarget.distance = distance;
    return retarget.visit(load);
  }

  // The load a statement is: one, or one in serial loops (a block the 2-D DMA moves in several
  // transfers), or null.
  static const te::CallNode* load_of(const tir::Stmt& s) {
    tir::Stmt inner = s;
    while (const auto* f = inner.as<tir::ForNode>()) {
      if (f->for_kind != tir::ForKind::Serial) return nullptr;
      inner = f->body;
    }
    const auto* c = call_of(inner);
    return c != nullptr && c->name == intrin::load && c->args.size() >= 10 ? c : nullptr;
  }

  // The SRAM entries the loads of `s` (load_of) fill, in order, or nullopt where a loop extent,
  // an offset or a size is not a constant.
  static std::optional<std::vector<std::int64_t>> load_entries(const tir::Stmt& s) {
    constexpr std::size_t kMostEntries = 1 << 16;
    std::vector<std::int64_t> out;
    std::vector<ne::Substitution> values;
    bool constant = true;
    const auto walk = [&](auto&& self, const tir::Stmt& st) -> void {
      if (!constant) return;
      if (const auto* f = st.as<tir::ForNode>()) {
        const auto lo = ne::simplify(f->min).as_int(), extent = ne::simplify(f->extent).as_int();
        if (!lo || !extent) {
          constant = false;
          return;
        }
        for (std::int64_t k = 0; k < *extent && constant; ++k) {
          values.emplace_back(f->var, ne::Expr(*lo + k));
          self(self, f->body);
          values.pop_back();
        }
        return;
      }
      const auto& c = *call_of(st);
      std::array<std::optional<std::int64_t>, 7> f;
      const std::size_t fields[] = {1, 3, 4, 6, 7, 8, 9};
      for (std::size_t k = 0; k < f.size(); ++k) f[k] = constant_index(c.args[fields[k]], values);
      for (const auto& v : f)
        if (!v || *v < 0) constant = false;
      if (!constant) return;
      const std::int64_t count = (*f[3] + *f[1] + *f[4]) * (*f[5] + *f[2] + *f[6]);
      if (out.size() + static_cast<std::size_t>(count) > kMostEntries) {
        constant = false;
        return;
      }
      for (std::int64_t k = 0; k < count; ++k) out.push_back(*f[0] + k);
    };
    walk(walk, s);
    if (!constant) return std::nullopt;
    return out;
  }

  // calls that name each buffer, in the whole function
  std::unordered_map<const te::BufferNode*, int> uses_;
  std::unordered_set<const te::BufferNode*> removed_;
};

}  // namespace detail

DLAVM_INLINE tir::Stmt load_acc_init(const tir::Stmt& body) {
  return detail::LoadAccInit(body).visit(body);
}

}  // namespace dlavm::vta
