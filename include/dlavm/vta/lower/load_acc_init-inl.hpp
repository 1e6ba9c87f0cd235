// Definitions for dlavm/vta/lower/load_acc_init.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/intrinsic_calls.hpp>
#include <dlavm/vta/lower/load_acc_init.hpp>
#include <dlavm/vta/lower/nest.hpp>
#include <dlavm/vta/lower/uop_kernels.hpp>

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

// A LOAD's fields as inject_dma writes them: the SRAM offset (in entries of its buffer), the
// rows and columns it moves, and the pads around them.
struct LoadFields {
  ne::Expr sram, y_size, x_size, y_pad_0, y_pad_1, x_pad_0, x_pad_1;
  static std::optional<LoadFields> of(const te::CallNode& load) {
    if (load.args.size() < 10) return std::nullopt;
    std::array<ne::Expr, 7> f;
    const std::size_t at[] = {1, 3, 4, 6, 7, 8, 9};
    for (std::size_t k = 0; k < f.size(); ++k) {
      const auto e = index_arg(load.args[at[k]]);
      if (!e) return std::nullopt;
      f[k] = *e;
    }
    return LoadFields{f[0], f[1], f[2], f[3], f[4], f[5], f[6]};
  }
  // The SRAM entries it fills from sram on: its rows and pads by its columns and pads.
  ne::Expr filled() const { return (y_pad_0 + y_size + y_pad_1) * (x_pad_0 + x_size + x_pad_1); }
};

class LoadAccInit : public tir::StmtMutator<LoadAccInit> {
 public:
  explicit LoadAccInit(const tir::Stmt& body) : uses_(buffer_uses(body)) {}

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
    // Whether a GEMM accumulated into acc since: only then does the pass apply. A block
    // loaded and stored with no GEMM or ALU op writing it after the load would store stale
    // bytes on the Xilinx boards (their STORE reads an output SRAM that only GEMM and ALU
    // write), and the reset-then-ADD of a plain copy is no accumulation to start from a load.
    bool accumulated = false;
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
        if (accumulated && is_alu_add(*call) && call->buffers[0].get() == acc && src != acc &&
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
      for (const auto* c : calls_in(parts[a]))
        accumulated = accumulated || (c->name == intrin::gemm && c->buffers[0].get() == acc);
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
    const auto reset_form = kernel_form(reset);
    const auto add_form = kernel_form(add);
    if (!reset_form || !add_form) return std::nullopt;
    auto distance = constant_distance(*reset_form, *add_form, load);
    if (!distance) distance = dense_distance(*reset_form, *add_form, load);
    if (!distance) return std::nullopt;
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
    retarget.distance = *distance;
    return retarget.visit(load);
  }

  // The distance from the loaded entries to the reset ones, enumerating every entry (every
  // extent a constant): the ADD's sources are the loaded entries, its destinations the reset
  // ones, each once.
  static std::optional<std::int64_t> constant_distance(const KernelForm& reset,
                                                       const KernelForm& add,
                                                       const tir::Stmt& load) {
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
    for (const auto* v : {&dst, &zeroed, &*filled})
      if (std::adjacent_find(v->begin(), v->end()) != v->end()) return std::nullopt;
    if (src != *filled || dst != zeroed) return std::nullopt;
    return distance;
  }

  // The same where extents read symbolic dims (a partial last block): the reset, the ADD's
  // destinations and sources and the load (one transfer) each a dense range, the ADD's sides at
  // one distance micro-op by micro-op and level by level, the ranges' sizes equal.
  static std::optional<std::int64_t> dense_distance(const KernelForm& reset, const KernelForm& add,
                                                    const tir::Stmt& load) {
    const auto* transfer = call_of(load);
    if (transfer == nullptr) return std::nullopt;
    const std::int64_t distance = add.uops.front().first - add.uops.front().second;
    for (const auto& [d, s] : add.uops)
      if (d - s != distance) return std::nullopt;
    for (const auto& l : add.levels)
      if (!same(l.dst, l.src)) return std::nullopt;
    const auto zeroed = dense_range(reset, false);
    const auto dst = dense_range(add, false);
    const auto src = dense_range(add, true);
    const auto fields = LoadFields::of(*transfer);
    if (!zeroed || !dst || !src || !fields || zeroed->first != dst->first ||
        !same(zeroed->second, dst->second) || !same(src->second, fields->filled()) ||
        ne::simplify(fields->sram).as_int() != src->first)
      return std::nullopt;
    return distance;
  }

  // The SRAM entries the loads of `s` (load_of) fill, in order, or nullopt where a loop extent,
  // an offset or a size is not a constant.
  static std::optional<std::vector<std::int64_t>> load_entries(const tir::Stmt& s) {
    std::vector<std::int64_t> out;
    std::vector<ne::Substitution> values;
    std::int64_t budget = kMostEnumerated;
    const bool constant = for_each_unrolled(
        s, values, budget, [&](const te::CallNode& c, std::span<const ne::Substitution> at) {
          const auto fields = LoadFields::of(c);
          if (!fields) return false;
          const auto first = ne::simplify(ne::substitute(fields->sram, at)).as_int();
          const auto count = ne::simplify(ne::substitute(fields->filled(), at)).as_int();
          if (!first || !count || *count < 0 || budget < *count) return false;
          budget -= *count;
          for (std::int64_t k = 0; k < *count; ++k) out.push_back(*first + k);
          return true;
        });
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
