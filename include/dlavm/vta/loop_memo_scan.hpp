// vta::detail::LoopMemoScan: which loops a replay memoizes (runtime::LoopMemo), decided by one
// rule for the host's replay plan (vta/replay_plan.hpp) and the generated replay
// (vta/codegen.hpp), each of which walks the loop's body once, telling the scan what it opens
// and reads:
//   an outermost loop outside kernels, of three iterations or more or a symbolic count;
//   its keys: the values the body reads from its variable, DRAM offsets aside, each computed
//   at the top of an iteration; it cannot be memoized where a value reads its variable and a
//   loop opened inside its body (or a kernel's loop), nor where a kernel's value reads a loop
//   inside the body and the kernel's memo holds one entry (a copied iteration would then
//   miss it);
//   `affine`: every DRAM offset is affine in its variable with a step free of the loops inside
//   (a copy then runs no calls);
//   `calls`: at most how many calls of an iteration write an instruction, counted with each
//   inner loop's largest count (ne::bounds of its extent over the dims' ranges): the memo's
//   size (memo_calls()), capped at kMaxCalls, which it also is where an inner loop's count has
//   no bound (an iteration with more calls than its memo holds is not copied);
//   a kernel without a micro-op call (kernel_call below) writes nothing and is not scanned;
//   `tiled()` (the generated replay's alone): an affine loop whose iterations hold more than
//   kMinTileCalls calls is tiled instead (runtime::TileMemo: a tile copied whole from the one
//   before it), with room for `transfers`, the transfers of an iteration counted as the calls
//   are (tile_transfers()); its body's inner loops are memoized as in any loop where an
//   iteration holds more calls than a memo does (tile_memoizes_inside()), else they stay
//   plain, as in a memoized loop, and without the time shortcuts the tiles are a loop memo's
//   iterations (runtime::TiledLoopMemo);
//   `outer` (the generated replay's, for a loop inside others): the loops around it, whose
//   values the body reads are keys too, so that the loop entered again may copy an iteration
//   of an entry before (`entry`: no value reads them with a loop inside the body;
//   `entry_steps`: no DRAM step reads them, so that the steps an entry measured hold in the
//   next).
#pragma once

#include <dlavm/ne/affine.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlavm::vta::detail {

struct LoopMemoScan {
  static constexpr std::int64_t kMaxCalls = 384;
  // An affine loop whose iterations hold more calls than this is tiled (docs/vta.md): its
  // first iteration recorded, with the steps the code gives, saves writing the second one by
  // its calls; below it the tile memo's fixed costs (its arrays, the recording's pass over the
  // regions) are not paid back (the token GEMM's blocks of 14 calls at one row, the float
  // layer's loops of 3 and 6 calls at one token: docs/performance.md).
  static constexpr std::int64_t kMinTileCalls = 32;
  static constexpr std::int64_t kMaxTransfers = 1024;  // a tile's (12 bytes each)

  // `kernel_entries`: how many entries a kernel site's memo holds, each the values of its keys
  // and what it wrote with them (runtime::kKernelMemoEntries, in the host's plan and in the
  // generated replay's memos of kernels that read a loop inside the body): with more than one,
  // a kernel's value may vary with a loop inside the body, each of its values found again in a
  // copy (where one was replaced, the replay copies no iteration after it).
  explicit LoopMemoScan(ne::Var v, int kernel_entries = 1)
      : var(std::move(v)), kernel_entries_(kernel_entries) {}

  // Whether a loop is a candidate (`extent`: its iteration count).
  static bool candidate(const ne::Expr& extent) {
    const auto* k = extent.as<ne::IntImmNode>();
    return k == nullptr || k->value >= 3;  // fewer: one runs, one is recorded, none copied
  }

  // A loop's largest iteration count (`extent` over the dims' ranges), or -1 where it has
  // no bound.
  static std::int64_t largest_count(const ne::Expr& extent) {
    if (const auto* k = extent.as<ne::IntImmNode>()) return std::max<std::int64_t>(k->value, 0);
    if (const auto b = ne::bounds(extent); b.max < ne::detail::int64_max)
      return std::max<std::int64_t>(b.max, 0);
    return -1;
  }

  // A loop `v` of `extent` iterations opened in the body (in a kernel or not); close() with
  // the `repeat` before it when it closes.
  void open(const ne::Var& v, const ne::Expr& extent, bool in_kernel) {
    (in_kernel ? kernel_loops : inner).push_back(v.id());
    inside.push_back(v);
    if (in_kernel) return;
    const std::int64_t most = largest_count(extent);
    repeat = std::min(repeat * (most < 0 ? kMore : std::min(most, kMore)), kMore);
  }
  void close(std::int64_t before) { repeat = before; }

  // A value the body reads, other than a DRAM offset (`in_kernel`: a kernel's, its
  // instruction's fields included): whether it is a key.
  bool read(const ne::Expr& e, bool in_kernel) {
    bool reads_var = false, reads_inner = false, reads_kernel = false, reads_outer = false;
    for (const auto& v : ne::free_vars(e)) {
      reads_var = reads_var || v.id() == var.id();
      reads_inner = reads_inner || among(inner, v.id());
      reads_kernel = reads_kernel || among(kernel_loops, v.id());
      reads_outer = reads_outer || std::any_of(outer.begin(), outer.end(),
                                               [&](const ne::Var& o) { return o.id() == v.id(); });
    }
    if (reads_var && (reads_inner || reads_kernel)) ok = false;
    if (in_kernel && reads_inner && kernel_entries_ == 1) ok = false;
    if (reads_outer && (reads_inner || reads_kernel)) entry = false;
    return (reads_var || reads_outer) && !reads_inner && !reads_kernel;
  }
  // A transfer's DRAM offset (an IntImm or an Index).
  void dram(const te::Expr& e) {
    transfers = std::min(transfers + repeat, kMaxTransfers + 1);
    if (!affine) return;
    if (const auto* i = e.as<te::IndexNode>()) {
      const auto form = ne::linear_form(i->index, {var});
      affine = form.has_value() && !ne::detail::uses_any(form->strides[0], inside);
      entry_steps = entry_steps && affine && !ne::detail::uses_any(form->strides[0], outer);
    } else if (e.as<te::IntImmNode>() == nullptr) {
      affine = false;
    }
  }
  // A call that writes an instruction.
  void call() { calls = std::min(calls + repeat, kMore); }

  // Whether loop `id` was opened in the body, outside kernels.
  bool opened_inside(std::uint64_t id) const { return among(inner, id); }
  // The size of its memo: the calls of an iteration, at most kMaxCalls.
  std::int64_t memo_calls() const { return std::clamp<std::int64_t>(calls, 1, kMaxCalls); }
  // Whether the generated replay tiles the loop, and its tile memo's room for transfers.
  bool tiled() const { return ok && affine && calls > kMinTileCalls; }
  // Whether a tiled loop's inner loops are memoized: where its iterations hold more calls than
  // a memo does (the first tile, a decode step's only one, is then written by its inner loops'
  // copies); where a memo would hold them, they stay plain, as inside the memoized loop.
  bool tile_memoizes_inside() const { return calls > kMaxCalls; }
  std::int64_t tile_transfers() const {
    return std::clamp<std::int64_t>(transfers, 1, kMaxTransfers);
  }

  ne::Var var;
  std::vector<std::uint64_t> inner, kernel_loops;  // loops opened in the body, kernels' apart
  std::vector<ne::Var> inside;                     // both
  std::vector<ne::Var> outer;                      // the loops around (the generated replay's)
  bool ok = true, affine = true, entry = true, entry_steps = true;
  std::int64_t calls = 0, repeat = 1;  // `repeat`: the iterations of the inner loops open
  std::int64_t transfers = 0;

 private:
  static constexpr std::int64_t kMore = kMaxCalls + 1;  // more calls than a memo holds
  int kernel_entries_ = 1;
  static bool among(const std::vector<std::uint64_t>& ids, std::uint64_t id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  }
};

// The micro-op call of a kernel's body (its last), or nullptr: a kernel without one writes
// nothing, and neither replay counts or scans it.
inline const te::CallNode* kernel_call(const tir::Stmt& body) {
  struct Find : tir::StmtVisitor<Find> {
    const te::CallNode* call = nullptr;
    void visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt&) {
      const auto* c = n.value.as<te::CallNode>();
      if (c != nullptr &&
          (c->name == intrin::gemm || c->name == intrin::gemm_reset || c->name == intrin::alu))
        call = c;
    }
  } find;
  find.visit(body);
  return find.call;
}

}  // namespace dlavm::vta::detail
