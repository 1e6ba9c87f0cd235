// Definitions for dlavm/vta/lower/gemm_into_acc.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/gemm_into_acc.hpp>
#include <dlavm/vta/lower/intrinsic_calls.hpp>
#include <dlavm/vta/lower/nest.hpp>
#include <dlavm/vta/lower/uop_kernels.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dlavm::vta {

namespace detail {

class GemmIntoAcc : public tir::StmtMutator<GemmIntoAcc> {
 public:
  explicit GemmIntoAcc(const tir::Stmt& body) : uses_(buffer_uses(body)) {}

  tir::Stmt visit_allocate(const tir::AllocateNode& n, const tir::Stmt& s) {
    tir::Stmt out = tir::StmtMutator<GemmIntoAcc>::visit_allocate(n, s);
    if (!removed_.contains(n.buffer.get())) return out;
    return out.as<tir::AllocateNode>()->body;
  }

  tir::Stmt visit_seq(const tir::SeqNode& n, const tir::Stmt& s) {
    tir::Stmt visited = tir::StmtMutator<GemmIntoAcc>::visit_seq(n, s);
    const auto* seq = visited.as<tir::SeqNode>();
    if (seq == nullptr) return visited;
    std::vector<tir::Stmt> parts = seq->seq;
    bool changed = false;
    for (std::size_t a = 0; a < parts.size(); ++a)
      if (fold_at(parts, a)) {
        changed = true;
        a = 0;  // indices moved: look again from the start
      }
    return changed ? tir::make_seq(parts) : visited;
  }

 private:
  // Folds the GEMMs of the block that the ADD at parts[a] adds into the accumulator.
  bool fold_at(std::vector<tir::Stmt>& parts, std::size_t a) {
    const auto* add = kernel_of(parts[a], intrin::alu);
    if (add == nullptr) return false;
    const auto calls = uop_calls(*add);
    const te::Buffer acc = calls.front()->buffers[0];
    if (calls.front()->buffers.size() < 2) return false;
    const te::BufferNode* g = calls.front()->buffers[1].get();
    for (const auto* c : calls)
      if (!is_alu_add(*c) || constant_index(c->args[1]) != 0 || c->buffers.size() != 2 ||
          c->buffers[0].get() != acc.get() || c->buffers[1].get() != g || g == acc.get())
        return false;
    // back from the ADD: the GEMMs into g, then g's reset
    std::vector<std::size_t> gemms;
    std::optional<std::size_t> reset;
    int g_calls = static_cast<int>(calls.size());
    for (std::size_t j = a; j-- > 0;) {
      if (writes_only(parts[j], intrin::gemm, g)) {
        const auto* k = kernel_of(parts[j], intrin::gemm);
        for (const auto* c : uop_calls(*k))
          if (c->buffers[1].get() == acc.get() || c->buffers[2].get() == acc.get() ||
              c->buffers[1].get() == g || c->buffers[2].get() == g)
            return false;
        gemms.push_back(j);
        g_calls += static_cast<int>(uop_calls(*k).size());
        continue;
      }
      if (writes_only(parts[j], intrin::gemm_reset, g)) {
        reset = j;
        g_calls += static_cast<int>(uop_calls(*kernel_of(parts[j], intrin::gemm_reset)).size());
        break;
      }
      for (const auto* c : calls_in(parts[j]))
        if (mentions(*c, g)) return false;
    }
    if (!reset || gemms.empty() || uses_[g] != g_calls) return false;
    const std::size_t first_gemm = gemms.back();
    // back from the ADD: acc accumulated into only, back to its initialisation before the GEMMs
    bool initialised = false;
    for (std::size_t j = a; j-- > 0;) {
      if (j < first_gemm && initialises(parts[j], acc.get())) {
        initialised = true;
        break;
      }
      if (!accumulates_only(parts[j], acc.get())) return false;
    }
    if (!initialised) return false;
    const auto distance = mapped_distance(parts, *reset, gemms, *add);
    if (!distance) return false;
    int retargeted = 0;
    for (const std::size_t j : gemms) {
      retargeted += static_cast<int>(uop_calls(*kernel_of(parts[j], intrin::gemm)).size());
      parts[j] = retarget(parts[j], acc, *distance);
    }
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(a));
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(*reset));
    removed_.insert(g);
    // the counts as the function now stands: a later fold into g's or acc's users reads them
    uses_[acc.get()] += retargeted - static_cast<int>(calls.size());
    uses_[g] = 0;
    return true;
  }

  // Whether a statement is a kernel whose micro-ops all call `name` with output buffer `b`.
  static bool writes_only(const tir::Stmt& s, std::string_view name, const te::BufferNode* b) {
    const auto* k = kernel_of(s, name);
    if (k == nullptr) return false;
    for (const auto* c : uop_calls(*k))
      if (c->buffers[0].get() != b) return false;
    return true;
  }

  // Whether a statement gives `acc` its first value: a kernel that only resets it, or a load
  // into it.
  static bool initialises(const tir::Stmt& s, const te::BufferNode* acc) {
    if (writes_only(s, intrin::gemm_reset, acc)) return true;
    const auto* load = load_of(s);
    return load != nullptr && load->buffers[0].get() == acc;
  }

  // The distance from the entries of g to those of acc the ADD adds them to, if the ADD maps
  // the reset entries one to one at that distance and the GEMMs write only reset entries.
  static std::optional<std::int64_t> mapped_distance(const std::vector<tir::Stmt>& parts,
                                                     std::size_t reset,
                                                     const std::vector<std::size_t>& gemms,
                                                     const tir::AttrNode& add) {
    const auto reset_form = kernel_form(*parts[reset].as<tir::AttrNode>());
    const auto add_form = kernel_form(add);
    if (!reset_form || !add_form) return std::nullopt;
    std::vector<KernelForm> gemm_forms;
    for (const std::size_t j : gemms) {
      auto f = kernel_form(*parts[j].as<tir::AttrNode>());
      if (!f) return std::nullopt;
      gemm_forms.push_back(std::move(*f));
    }
    const std::int64_t distance = add_form->uops.front().first - add_form->uops.front().second;
    for (const auto& [d, s] : add_form->uops)
      if (d - s != distance) return std::nullopt;
    if (constant_entries(*reset_form, gemm_forms, *add_form, distance)) return distance;
    if (dense_entries(*reset_form, gemm_forms, *add_form)) return distance;
    return std::nullopt;
  }

  // Every extent a constant: the ADD's sources are the reset entries, each once, each at
  // `distance` from its destination; every GEMM destination is a reset entry.
  static bool constant_entries(const KernelForm& reset, const std::vector<KernelForm>& gemms,
                               const KernelForm& add, std::int64_t distance) {
    const auto reset_ops = kernel_operands(reset);
    const auto add_ops = kernel_operands(add);
    if (!reset_ops || !add_ops) return false;
    std::vector<std::int64_t> zeroed, src;
    for (const auto& op : *reset_ops) zeroed.push_back(op.first);
    for (const auto& [d, s] : *add_ops) {
      if (d - s != distance) return false;
      src.push_back(s);
    }
    std::sort(zeroed.begin(), zeroed.end());
    std::sort(src.begin(), src.end());
    if (std::adjacent_find(src.begin(), src.end()) != src.end()) return false;
    zeroed.erase(std::unique(zeroed.begin(), zeroed.end()), zeroed.end());
    if (src != zeroed) return false;
    for (const auto& g : gemms) {
      const auto ops = kernel_operands(g);
      if (!ops) return false;
      for (const auto& op : *ops)
        if (!std::binary_search(zeroed.begin(), zeroed.end(), op.first)) return false;
    }
    return true;
  }

  // Extents that read symbolic dims: the reset, the ADD's sources and each GEMM's destinations
  // one dense range, the ADD's two sides at one distance level by level.
  static bool dense_entries(const KernelForm& reset, const std::vector<KernelForm>& gemms,
                            const KernelForm& add) {
    for (const auto& l : add.levels)
      if (!same(l.dst, l.src)) return false;
    const auto zeroed = dense_range(reset, false);
    const auto src = dense_range(add, true);
    if (!zeroed || !src || zeroed->first != src->first || !same(zeroed->second, src->second))
      return false;
    for (const auto& g : gemms) {
      const auto dst = dense_range(g, false);
      if (!dst || dst->first != zeroed->first || !same(dst->second, zeroed->second)) return false;
    }
    return true;
  }

  // The GEMM kernel accumulating into acc, `distance` entries on.
  static tir::Stmt retarget(const tir::Stmt& kernel, const te::Buffer& acc, std::int64_t distance) {
    struct Retarget : tir::StmtMutator<Retarget> {
      te::Buffer acc;
      std::int64_t distance = 0;
      tir::Stmt visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt& s) {
        const auto* c = n.value.as<te::CallNode>();
        if (c == nullptr || c->name != intrin::gemm) return s;
        auto args = c->args;
        args[0] = te::index_value(ne::simplify(*index_arg(args[0]) + distance));
        std::vector<te::Buffer> buffers = c->buffers;
        buffers[0] = acc;
        return tir::make_evaluate(te::call(c->name, c->dtype(), std::move(args), buffers));
      }
    } r;
    r.acc = acc;
    r.distance = distance;
    return r.visit(kernel);
  }

  // calls that name each buffer, in the whole function
  std::unordered_map<const te::BufferNode*, int> uses_;
  std::unordered_set<const te::BufferNode*> removed_;
};

}  // namespace detail

DLAVM_INLINE tir::Stmt gemm_into_acc(const tir::Stmt& body) {
  return detail::GemmIntoAcc(body).visit(body);
}

}  // namespace dlavm::vta
