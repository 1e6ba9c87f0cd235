// Definitions for dlavm/vta/lower/reset_at_first_step.hpp (see core/api.hpp).
#pragma once

#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/tir/rewrite.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/intrinsic_calls.hpp>
#include <dlavm/vta/lower/reset_at_first_step.hpp>
#include <dlavm/vta/lower/uop_kernels.hpp>

#include <optional>
#include <vector>

namespace dlavm::vta {

namespace detail {

class ResetAtFirstStep : public tir::StmtMutator<ResetAtFirstStep> {
 public:
  tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
    threads_ += n.for_kind == tir::ForKind::VThread;
    tir::Stmt out = tir::StmtMutator<ResetAtFirstStep>::visit_for(n, s);
    threads_ -= n.for_kind == tir::ForKind::VThread;
    return out;
  }

  tir::Stmt visit_seq(const tir::SeqNode& n, const tir::Stmt& s) {
    tir::Stmt visited = tir::StmtMutator<ResetAtFirstStep>::visit_seq(n, s);
    const auto* seq = visited.as<tir::SeqNode>();
    if (threads_ == 0 || seq == nullptr) return visited;
    std::vector<tir::Stmt> parts;
    bool changed = false;
    for (std::size_t k = 0; k < seq->seq.size(); ++k) {
      if (k + 1 < seq->seq.size())
        if (auto moved = move_reset(seq->seq[k], seq->seq[k + 1])) {
          parts.insert(parts.end(), moved->begin(), moved->end());
          changed = true;
          ++k;
          continue;
        }
      parts.push_back(seq->seq[k]);
    }
    return changed ? tir::make_seq(parts) : visited;
  }

 private:
  // [the first step with the reset before its first GEMM, the loop over the others], if
  // `reset` only resets an accumulator that `loop` then accumulates into. A reduction of one
  // step is no loop: its allocations and statements follow the reset directly.
  static std::optional<std::vector<tir::Stmt>> move_reset(const tir::Stmt& reset,
                                                          const tir::Stmt& loop) {
    const auto* acc = initialised(reset);
    if (acc == nullptr) return {};
    if (loop.as<tir::AllocateNode>() != nullptr) {
      auto step = insert_before_gemm(loop, reset, acc);
      if (!step) return {};
      return std::vector<tir::Stmt>{*step};
    }
    const auto* f = loop.as<tir::ForNode>();
    if (f == nullptr || f->for_kind != tir::ForKind::Serial) return {};
    const auto lo = ne::simplify(f->min).as_int(), extent = ne::simplify(f->extent).as_int();
    if (!lo || !extent || *extent < 1) return {};
    // The step's allocations go around the first step and the loop over the others, so that
    // both use one buffer each (SRAM holds it once, as it did for the loop).
    std::vector<tir::Buffer> allocations;
    tir::Stmt body = f->body;
    while (const auto* a = body.as<tir::AllocateNode>()) {
      // a buffer sized by the step cannot go around all of them
      for (const auto& d : a->buffer.shape())
        for (const auto& v : ne::free_vars(d))
          if (v.id() == f->var.id()) return {};
      allocations.push_back(a->buffer);
      body = a->body;
    }
    auto first = insert_before_gemm(tir::rewrite(body, {{f->var, ne::Expr(*lo)}}), reset, acc);
    if (!first) return {};
    tir::Stmt out = *first;
    if (*extent > 1)
      out = tir::make_seq({out, tir::make_for(f->var, ne::Expr(*lo + 1), ne::Expr(*extent - 1),
                                              f->for_kind, body)});
    for (auto it = allocations.rbegin(); it != allocations.rend(); ++it)
      out = tir::make_allocate(*it, out);
    return std::vector<tir::Stmt>{out};
  }

  // The accumulator a kernel only resets, or null. (A residual loaded in its place by
  // vta::load_acc_init stays where it is: moved after the first loads, it measured slower,
  // as the compute module then loads it behind them.)
  static const te::BufferNode* initialised(const tir::Stmt& s) {
    const auto* kernel = kernel_of(s, intrin::gemm_reset);
    if (kernel == nullptr) return nullptr;
    const auto* acc = uop_calls(*kernel).front()->buffers[0].get();
    for (const auto* c : uop_calls(*kernel))
      if (c->buffers[0].get() != acc) return nullptr;
    return acc;
  }

  // The step with `reset` inserted before its first statement that touches acc, which must
  // be a GEMM kernel into acc; the step's allocations kept around it.
  static std::optional<tir::Stmt> insert_before_gemm(const tir::Stmt& step, const tir::Stmt& reset,
                                                     const te::BufferNode* acc) {
    if (const auto* a = step.as<tir::AllocateNode>()) {
      auto body = insert_before_gemm(a->body, reset, acc);
      if (!body) return {};
      return tir::make_allocate(a->buffer, *body);
    }
    const auto* seq = step.as<tir::SeqNode>();
    if (seq == nullptr) return {};
    std::vector<tir::Stmt> parts = seq->seq;
    for (std::size_t k = 0; k < parts.size(); ++k) {
      if (!tir::uses_buffer(parts[k], acc)) continue;
      const auto* gemm = kernel_of(parts[k], intrin::gemm);
      if (gemm == nullptr || uop_calls(*gemm).front()->buffers[0].get() != acc) return {};
      parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(k), reset);
      return tir::make_seq(parts);
    }
    return {};
  }

  int threads_ = 0;
};

}  // namespace detail

DLAVM_INLINE tir::Stmt reset_at_first_step(const tir::Stmt& body) {
  return detail::ResetAtFirstStep().visit(body);
}

}  // namespace dlavm::vta
