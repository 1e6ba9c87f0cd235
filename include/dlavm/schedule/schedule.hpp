// Schedules: how the operations of a tensor program are computed, not what they compute.
// A Schedule holds one Stage per operation; primitives on a stage rearrange its loops
// (split, reorder, tile, fuse), say where it is computed (compute_at, compute_inline,
// compute_root), where its result lives (set_scope) and how loops are annotated (pragma,
// unroll, bind to a virtual thread). Mistakes raise ScheduleError naming the
// stage, the axis and the numbers.
//
//   auto s = te::create_schedule(C);
//   auto [ko_o, ko_i] = s[C_buf].split(s[C_buf].reduce_axis(0), 4);
//   s[A_buf].compute_at(s[C_buf], ko_o);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/schedule/tensor_intrin.hpp>
#include <dlavm/te.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace dlavm::schedule {

using te::IterVar;
using te::Operation;
using te::Tensor;

struct SplitRelation {
  IterVar parent, outer, inner;
  ne::Expr factor;
};
struct FuseRelation {
  IterVar outer, inner, fused;
};
using Relation = std::variant<SplitRelation, FuseRelation>;

enum class AttachKind : std::uint8_t { Root, Inline, At };
enum class LoopKind : std::uint8_t { Serial, Unrolled, VThread };

// A virtual thread axis for Stage::bind (TVM's te.thread_axis("cthread")).
struct ThreadAxis {
  std::string name;
};
ThreadAxis thread_axis(std::string name = "vthread");

struct IterVarAttr {
  LoopKind loop = LoopKind::Serial;
  std::string thread;                // for LoopKind::VThread
  std::vector<std::string> pragmas;  // "dma_copy", "alu", ...
  std::shared_ptr<const TensorIntrin> tensorize;
};

struct StageNode {
  Operation op;
  bool is_output = false;
  std::vector<IterVar> root;  // axis then reduce_axis
  std::vector<IterVar> leaf;  // the loops, outermost first
  std::vector<IterVar> all;   // every IterVar the stage ever had
  std::vector<Relation> relations;
  AttachKind attach = AttachKind::Root;
  StageNode* attach_stage = nullptr;
  IterVar attach_ivar;
  std::string scope = "global";
  std::unordered_map<const te::IterVarNode*, IterVarAttr> attrs;

  const std::string& name() const { return op->name; }
  bool is_placeholder() const { return op->kind == te::OpKind::Placeholder; }
};

class Schedule;

class Stage {
 public:
  Stage(StageNode* node, Schedule* schedule) : node_(node), schedule_(schedule) {}

  const std::string& name() const { return node_->name(); }
  StageNode* node() const { return node_; }
  const std::vector<IterVar>& leaf_iter_vars() const { return node_->leaf; }

  // The k-th data-parallel / reduction axis of the operation (its root axes).
  IterVar axis(std::size_t k) const;
  IterVar reduce_axis(std::size_t k) const;

  std::pair<IterVar, IterVar> split(const IterVar& parent, const ne::Expr& factor);
  std::pair<IterVar, IterVar> split_nparts(const IterVar& parent, const ne::Expr& nparts);
  Stage& reorder(const std::vector<IterVar>& order);
  // Returns {x_outer, y_outer, x_inner, y_inner}.
  std::array<IterVar, 4> tile(const IterVar& x, const IterVar& y, const ne::Expr& x_factor,
                              const ne::Expr& y_factor);
  IterVar fuse(const IterVar& outer, const IterVar& inner);
  // Fuses adjacent loops, outermost first, into one, as TVM's fuse(*args): pairwise from the
  // outermost, so fuse(a, b, c) is the loop `a.b.fused.c.fused`; one axis is returned as is.
  IterVar fuse(const std::vector<IterVar>& axes);
  template <class... V>
  requires(sizeof...(V) >= 3 && (std::same_as<V, IterVar> && ...)) IterVar fuse(const V&... axes) {
    return fuse(std::vector<IterVar>{axes...});
  }
  // Computes this stage inside loop `ivar` of `parent`, the region one iteration needs. If
  // parent later splits ivar, the stage moves to the inner loop (one iteration of it is one
  // iteration of ivar); if it fuses ivar, to the fused loop. (TVM refuses such a schedule when
  // it lowers it: "cannot find attach point".)
  Stage& compute_at(const Stage& parent, const IterVar& ivar);
  Stage& compute_inline();
  Stage& compute_root();
  Stage& set_scope(std::string scope);
  Stage& pragma(const IterVar& ivar, std::string key);
  Stage& unroll(const IterVar& ivar);
  Stage& bind(const IterVar& ivar, const ThreadAxis& thread);
  // Replaces the loops from ivar inward by the intrinsic; checked against its pattern when
  // the schedule is lowered.
  Stage& tensorize(const IterVar& ivar, std::shared_ptr<const TensorIntrin> intrin);

 private:
  std::optional<std::size_t> find_leaf(const IterVar& ivar) const;
  // The position of loop ivar; raises naming the stage and `primitive` if it is not a loop.
  std::size_t leaf_position(const IterVar& ivar, std::string_view primitive) const;
  // Why ivar is not one of this stage's loops, after `request` ("stage 'C': split of").
  [[noreturn]] void raise_not_a_loop(const IterVar& ivar, const std::string& request) const;
  void check_not_placeholder(std::string_view primitive) const;
  // Splits the loop at leaf position pos by a factor known to be at least 1.
  std::pair<IterVar, IterVar> split_leaf(std::size_t pos, const ne::Expr& factor);
  // Fuses the loop at leaf position pos with the next one, checked to be `outer`, `inner`.
  IterVar fuse_leaf(std::size_t pos, const IterVar& outer, const IterVar& inner);
  // Stages computed at loop `from` of this stage are computed at `to` instead.
  void move_attached(const IterVar& from, const IterVar& to) const;
  IterVarAttr& attr(const IterVar& ivar) { return node_->attrs[ivar.get()]; }

  StageNode* node_;
  Schedule* schedule_;
};

class Schedule {
 public:
  explicit Schedule(std::vector<Tensor> outputs) : outputs_(std::move(outputs)) {
    for (const auto& op : te::topo_order(outputs_)) {
      auto node = std::make_unique<StageNode>();
      node->op = op;
      node->root = op->axis;
      node->root.insert(node->root.end(), op->reduce_axis.begin(), op->reduce_axis.end());
      node->leaf = node->root;
      node->all = node->root;
      for (const auto& t : outputs_) node->is_output = node->is_output || t.op() == op;
      by_op_[op.get()] = node.get();
      stages_.push_back(std::move(node));
    }
  }
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;
  Schedule(Schedule&&) = default;
  Schedule& operator=(Schedule&&) = default;

  // A copy of `t` in `scope`, read by `readers` instead of t (TVM's cache_read). The new
  // stage is computed at root until scheduled; returns its tensor.
  Tensor cache_read(const Tensor& t, const std::string& scope, const std::vector<Tensor>& readers);
  // Moves the computation of `t` into a new stage in `scope`; t becomes a copy of it (TVM's
  // cache_write). Must precede other primitives on t's stage. Returns the new tensor.
  Tensor cache_write(const Tensor& t, const std::string& scope);

  Stage operator[](const Tensor& t) {
    auto it = by_op_.find(t.op().get());
    if (it == by_op_.end())
      raise<ScheduleError>("tensor '{}' is not part of this schedule (its outputs are {})",
                           t.name(), output_names());
    return Stage(it->second, this);
  }
  const std::vector<std::unique_ptr<StageNode>>& stages() const { return stages_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  StageNode* stage_of(const te::OperationNode* op) const {
    auto it = by_op_.find(op);
    return it == by_op_.end() ? nullptr : it->second;
  }
  // The stage that owns ivar, or nullptr.
  const StageNode* owner_of(const IterVar& ivar) const {
    for (const auto& s : stages_)
      for (const auto& v : s->all)
        if (v == ivar) return s.get();
    return nullptr;
  }
  // The current operation of the stage computing t (cache_read/cache_write rebuild
  // operations; users keep the tensors they declared).
  Operation current_op(const Tensor& t) const {
    auto it = by_op_.find(t.op().get());
    return it == by_op_.end() ? t.op() : it->second->op;
  }
  // Whether `consumer` reads `producer`, directly or through other operations.
  bool reads(const StageNode* consumer, const StageNode* producer) const {
    std::vector<const te::OperationNode*> work{consumer->op.get()};
    std::vector<const te::OperationNode*> seen;
    while (!work.empty()) {
      const auto* op = work.back();
      work.pop_back();
      for (const auto& in : op->inputs) {
        if (in.get() == producer->op.get()) return true;
        if (std::find(seen.begin(), seen.end(), in.get()) == seen.end()) {
          seen.push_back(in.get());
          work.push_back(in.get());
        }
      }
    }
    return false;
  }

 private:
  std::string output_names() const {
    std::vector<std::string> names;
    for (const auto& t : outputs_) names.push_back(t.name());
    return fmt::format("{}", fmt::join(names, ", "));
  }

  StageNode* insert_stage(std::size_t position, Operation op, std::string scope) {
    auto node = std::make_unique<StageNode>();
    node->op = op;
    node->root = op->axis;
    node->root.insert(node->root.end(), op->reduce_axis.begin(), op->reduce_axis.end());
    node->leaf = node->root;
    node->all = node->root;
    node->scope = std::move(scope);
    auto* raw = node.get();
    by_op_[op.get()] = raw;
    stages_.insert(stages_.begin() + static_cast<std::ptrdiff_t>(position), std::move(node));
    return raw;
  }
  std::size_t position_of(const StageNode* st) const {
    for (std::size_t k = 0; k < stages_.size(); ++k)
      if (stages_[k].get() == st) return k;
    return stages_.size();
  }
  StageNode* checked_stage(const Tensor& t, std::string_view primitive) const {
    auto it = by_op_.find(t.op().get());
    if (it == by_op_.end())
      raise<ScheduleError>("{}: tensor '{}' is not part of this schedule", primitive, t.name());
    return it->second;
  }
  // Rebuilds, from stage `from` on, every operation that reads a replaced one so that it
  // reads the replacement; the stages keep their IterVars, so schedules stay valid.
  void replace_dataflow(std::unordered_map<const te::OperationNode*, Operation> map,
                        std::size_t from);

  std::vector<Tensor> outputs_;
  std::vector<std::unique_ptr<StageNode>> stages_;
  std::unordered_map<const te::OperationNode*, StageNode*> by_op_;
};

Schedule create_schedule(std::vector<Tensor> outputs);
Schedule create_schedule(const Tensor& output);

// ---- dataflow rewriting --------------------------------------------------------------------

// ---- Stage primitives ---------------------------------------------------------------------

}  // namespace dlavm::schedule

namespace dlavm::te {
using schedule::create_schedule;
using schedule::Schedule;
using schedule::Stage;
using schedule::thread_axis;
}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/schedule/schedule-inl.hpp>
#endif
