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

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/schedule/tensor_intrin.hpp>
#include <dlavm/te.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
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
inline ThreadAxis thread_axis(std::string name = "vthread") { return {std::move(name)}; }

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
  std::size_t leaf_position(const IterVar& ivar, std::string_view primitive) const;
  void check_not_placeholder(std::string_view primitive) const;
  // Splits the loop at leaf position pos by a factor known to be at least 1.
  std::pair<IterVar, IterVar> split_leaf(std::size_t pos, const ne::Expr& factor);
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

inline Schedule create_schedule(std::vector<Tensor> outputs) {
  if (outputs.empty()) raise<ScheduleError>("create_schedule: no output tensors");
  return Schedule(std::move(outputs));
}
inline Schedule create_schedule(const Tensor& output) {
  return create_schedule(std::vector{output});
}

// ---- dataflow rewriting --------------------------------------------------------------------

namespace detail {
// Redirects reads of replaced operations.
class ReadRedirector : public te::ExprMutator<ReadRedirector> {
 public:
  explicit ReadRedirector(const std::unordered_map<const te::OperationNode*, Operation>& map)
      : map_(map) {}
  te::Expr visit_read(const te::ReadNode& n, const te::Expr& e) {
    auto it = map_.find(n.op.get());
    if (it == map_.end()) return e;
    return Tensor(it->second).read(n.indices);
  }

 private:
  const std::unordered_map<const te::OperationNode*, Operation>& map_;
};

// The same computation with another body (same axes, so schedules on it stay valid).
inline Operation with_body(const Operation& op, te::Expr body) {
  auto node = std::make_shared<te::OperationNode>(*op);
  node->body = std::move(body);
  node->inputs.clear();
  struct Inputs : te::ExprVisitor<Inputs> {
    std::vector<Operation> ops;
    void visit_read(const te::ReadNode& n, const te::Expr&) {
      if (std::find(ops.begin(), ops.end(), n.op) == ops.end()) ops.push_back(n.op);
    }
  } inputs;
  inputs.visit(node->body);
  node->inputs = std::move(inputs.ops);
  return node;
}

// A compute `name` over `shape` whose element is `source(i...)`.
inline Tensor copy_of(const Tensor& source, const std::string& name) {
  std::vector<te::IterVar> axis;
  std::vector<ne::Expr> indices;
  for (std::size_t k = 0; k < source.ndim(); ++k) {
    axis.push_back(
        te::make_iter_var(fmt::format("ax{}", k), 0, source.shape()[k], te::IterKind::DataPar));
    indices.push_back(axis.back().var());
  }
  return te::detail::make_compute(name, source.shape(), std::move(axis),
                                  source.read(std::move(indices)));
}
}  // namespace detail

inline void Schedule::replace_dataflow(std::unordered_map<const te::OperationNode*, Operation> map,
                                       std::size_t from) {
  for (std::size_t k = from; k < stages_.size(); ++k) {
    auto& st = stages_[k];
    if (st->is_placeholder()) continue;
    const bool reads_replaced =
        std::any_of(st->op->inputs.begin(), st->op->inputs.end(),
                    [&](const Operation& in) { return map.count(in.get()) != 0; });
    if (!reads_replaced) continue;
    auto rebuilt = detail::with_body(st->op, detail::ReadRedirector(map).visit(st->op->body));
    map[st->op.get()] = rebuilt;
    by_op_[rebuilt.get()] = st.get();
    st->op = rebuilt;
  }
}

inline Tensor Schedule::cache_read(const Tensor& t, const std::string& scope,
                                   const std::vector<Tensor>& readers) {
  auto* source = checked_stage(t, "cache_read");
  if (readers.empty()) raise<ScheduleError>("cache_read of '{}': no readers given", t.name());
  std::vector<StageNode*> reader_stages;
  for (const auto& r : readers) {
    auto* rs = checked_stage(r, "cache_read");
    if (std::find(rs->op->inputs.begin(), rs->op->inputs.end(), source->op) == rs->op->inputs.end())
      raise<ScheduleError>("cache_read of '{}': stage '{}' does not read it", t.name(), rs->name());
    reader_stages.push_back(rs);
  }
  const Tensor current(source->op);
  const Tensor cache = detail::copy_of(current, t.name() + "." + scope);
  insert_stage(position_of(source) + 1, cache.op(), scope);
  const std::unordered_map<const te::OperationNode*, Operation> redirect{
      {source->op.get(), cache.op()}};
  std::unordered_map<const te::OperationNode*, Operation> rebuilt;
  for (auto* rs : reader_stages) {
    auto op = detail::with_body(rs->op, detail::ReadRedirector(redirect).visit(rs->op->body));
    rebuilt[rs->op.get()] = op;
    by_op_[op.get()] = rs;
    rs->op = op;
  }
  replace_dataflow(std::move(rebuilt), position_of(source) + 2);
  return cache;
}

inline Tensor Schedule::cache_write(const Tensor& t, const std::string& scope) {
  auto* st = checked_stage(t, "cache_write");
  if (st->is_placeholder()) raise<ScheduleError>("cache_write of placeholder '{}'", t.name());
  if (!st->relations.empty() || st->attach != AttachKind::Root || st->leaf != st->root)
    raise<ScheduleError>("cache_write of '{}' must come before other primitives on its stage",
                         t.name());
  const auto& op = st->op;
  // The cache computes the original body over fresh axes.
  std::vector<ne::Substitution> rename;
  std::vector<te::IterVar> axis;
  for (const auto& a : op->axis) {
    axis.push_back(te::make_iter_var(a.name() + ".c", a.dom().min, a.dom().extent, a.kind()));
    rename.emplace_back(a.var(), axis.back().var());
  }
  std::unordered_map<const te::IterVarNode*, te::IterVar> fresh_reduce;
  for (const auto& r : op->reduce_axis) {
    // A range may name the axes (a triangular k < i + 1): those are renamed too.
    auto fresh = te::make_iter_var(r.name(), ne::substitute(r.dom().min, rename),
                                   ne::substitute(r.dom().extent, rename), r.kind());
    rename.emplace_back(r.var(), fresh.var());
    fresh_reduce.emplace(r.get(), fresh);
  }
  struct Renamer : te::ExprMutator<Renamer> {
    const std::vector<ne::Substitution>* map;
    const std::unordered_map<const te::IterVarNode*, te::IterVar>* reduce;
    ne::Expr mutate_index(const ne::Expr& e) { return ne::substitute(e, *map); }
    te::Expr visit_reduce(const te::ReduceNode& n, const te::Expr&) {
      std::vector<te::IterVar> axes;
      for (const auto& a : n.axes) axes.push_back(reduce->at(a.get()));
      return te::reduce(n.combiner, visit(n.source), axes);
    }
  } renamer;
  renamer.map = &rename;
  renamer.reduce = &fresh_reduce;
  const auto body = renamer.visit(op->body);
  const Tensor cache = te::detail::make_compute(t.name() + "." + scope, op->shape, axis, body);
  insert_stage(position_of(st), cache.op(), scope);
  // t becomes a copy of the cache over its own data-parallel axes; reductions move away.
  std::vector<ne::Expr> indices;
  for (const auto& a : op->axis) indices.push_back(a.var());
  auto node = std::make_shared<te::OperationNode>(*op);
  node->reduce_axis.clear();
  node->body = cache.read(indices);
  node->inputs = {cache.op()};
  const Operation copy = node;
  std::unordered_map<const te::OperationNode*, Operation> rebuilt{{op.get(), copy}};
  by_op_[copy.get()] = st;
  st->op = copy;
  st->root = copy->axis;
  st->leaf = st->root;
  st->all = st->root;
  replace_dataflow(std::move(rebuilt), position_of(st) + 1);
  return cache;
}

// ---- Stage primitives ---------------------------------------------------------------------

inline IterVar Stage::axis(std::size_t k) const {
  const auto& a = node_->op->axis;
  if (k >= a.size())
    raise<ScheduleError>("stage '{}': axis({}) requested, the operation has {} axes", name(), k,
                         a.size());
  return a[k];
}
inline IterVar Stage::reduce_axis(std::size_t k) const {
  const auto& a = node_->op->reduce_axis;
  if (k >= a.size())
    raise<ScheduleError>(
        "stage '{}': reduce_axis({}) requested, the operation has {} reduction axes", name(), k,
        a.size());
  return a[k];
}

inline std::size_t Stage::leaf_position(const IterVar& ivar, std::string_view primitive) const {
  if (!ivar.defined())
    raise<ScheduleError>("stage '{}': {} of an undefined axis", name(), primitive);
  const auto& leaf = node_->leaf;
  for (std::size_t k = 0; k < leaf.size(); ++k)
    if (leaf[k] == ivar) return k;
  if (const auto* owner = schedule_->owner_of(ivar); owner && owner != node_)
    raise<ScheduleError>("stage '{}': {} of axis '{}', which belongs to stage '{}'", name(),
                         primitive, ivar.name(), owner->name());
  std::vector<std::string> names;
  for (const auto& v : leaf) names.push_back(v.name());
  if (std::find(node_->all.begin(), node_->all.end(), ivar) != node_->all.end())
    raise<ScheduleError>(
        "stage '{}': {} of axis '{}', which was already split or fused (loops: {})", name(),
        primitive, ivar.name(), fmt::join(names, ", "));
  raise<ScheduleError>("stage '{}': {} of axis '{}', which is not one of its loops ({})", name(),
                       primitive, ivar.name(), fmt::join(names, ", "));
}

inline void Stage::check_not_placeholder(std::string_view primitive) const {
  if (node_->is_placeholder())
    raise<ScheduleError>("stage '{}' is a placeholder: {} applies to computed tensors", name(),
                         primitive);
}

inline void Stage::move_attached(const IterVar& from, const IterVar& to) const {
  for (const auto& st : schedule_->stages())
    if (st->attach == AttachKind::At && st->attach_stage == node_ && st->attach_ivar == from)
      st->attach_ivar = to;
}

inline std::pair<IterVar, IterVar> Stage::split(const IterVar& parent, const ne::Expr& factor) {
  check_not_placeholder("split");
  const auto pos = leaf_position(parent, "split");
  if (!factor.defined() || ne::bounds(factor).min < 1)
    raise<ScheduleError>("stage '{}': split of axis '{}' by factor {}, which must be at least 1",
                         name(), parent.name(),
                         factor.defined() ? fmt::format("{}", factor) : "<undefined>");
  return split_leaf(pos, factor);
}

inline std::pair<IterVar, IterVar> Stage::split_nparts(const IterVar& parent,
                                                       const ne::Expr& nparts) {
  check_not_placeholder("split_nparts");
  const auto pos = leaf_position(parent, "split_nparts");
  if (!nparts.defined() || ne::bounds(nparts).min < 1)
    raise<ScheduleError>(
        "stage '{}': split_nparts of axis '{}' into {} parts, which must be at least 1", name(),
        parent.name(), nparts.defined() ? fmt::format("{}", nparts) : "<undefined>");
  // The part size ceil(extent / nparts) is at least 1 when the extent is (the ceildiv form
  // lets bounds see it); an empty loop (a reduction over [0, n - 5) with n < 5) has parts of
  // size 1, and no part then runs.
  const auto extent = parent.dom().extent;
  return split_leaf(pos, ne::simplify(ne::max(ne::ceildiv(extent, nparts), 1)));
}

inline std::pair<IterVar, IterVar> Stage::split_leaf(std::size_t pos, const ne::Expr& factor) {
  const auto parent = node_->leaf[pos];
  const auto outer_extent = ne::simplify(ne::ceildiv(parent.dom().extent, factor));
  auto outer = te::make_iter_var(parent.name() + ".outer", 0, outer_extent, parent.kind());
  auto inner = te::make_iter_var(parent.name() + ".inner", 0, factor, parent.kind());
  node_->relations.emplace_back(SplitRelation{parent, outer, inner, factor});
  node_->leaf.erase(node_->leaf.begin() + static_cast<std::ptrdiff_t>(pos));
  node_->leaf.insert(node_->leaf.begin() + static_cast<std::ptrdiff_t>(pos), {outer, inner});
  node_->all.push_back(outer);
  node_->all.push_back(inner);
  move_attached(parent, inner);
  return {outer, inner};
}

inline Stage& Stage::reorder(const std::vector<IterVar>& order) {
  check_not_placeholder("reorder");
  std::vector<std::size_t> positions;
  for (const auto& v : order) {
    const auto p = leaf_position(v, "reorder");
    if (std::find(positions.begin(), positions.end(), p) != positions.end())
      raise<ScheduleError>("stage '{}': reorder lists axis '{}' twice", name(), v.name());
    positions.push_back(p);
  }
  std::sort(positions.begin(), positions.end());
  for (std::size_t k = 0; k < order.size(); ++k) node_->leaf[positions[k]] = order[k];
  return *this;
}

inline std::array<IterVar, 4> Stage::tile(const IterVar& x, const IterVar& y,
                                          const ne::Expr& x_factor, const ne::Expr& y_factor) {
  auto [xo, xi] = split(x, x_factor);
  auto [yo, yi] = split(y, y_factor);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

inline IterVar Stage::fuse(const IterVar& outer, const IterVar& inner) {
  check_not_placeholder("fuse");
  const auto po = leaf_position(outer, "fuse");
  const auto pi = leaf_position(inner, "fuse");
  if (pi != po + 1)
    raise<ScheduleError>(
        "stage '{}': fuse of '{}' (loop {}) and '{}' (loop {}): the inner axis must "
        "be the loop directly inside the outer one",
        name(), outer.name(), po, inner.name(), pi);
  if (outer.kind() != inner.kind())
    raise<ScheduleError>("stage '{}': fuse of data-parallel and reduction axes '{}' and '{}'",
                         name(), outer.name(), inner.name());
  auto fused =
      te::make_iter_var(outer.name() + "." + inner.name() + ".fused", 0,
                        ne::simplify(outer.dom().extent * inner.dom().extent), outer.kind());
  node_->relations.emplace_back(FuseRelation{outer, inner, fused});
  // Before the leaf changes: outer and inner may be references into it.
  move_attached(outer, fused);
  move_attached(inner, fused);
  node_->leaf.erase(node_->leaf.begin() + static_cast<std::ptrdiff_t>(po),
                    node_->leaf.begin() + static_cast<std::ptrdiff_t>(pi) + 1);
  node_->leaf.insert(node_->leaf.begin() + static_cast<std::ptrdiff_t>(po), fused);
  node_->all.push_back(fused);
  return fused;
}

inline Stage& Stage::compute_at(const Stage& parent, const IterVar& ivar) {
  check_not_placeholder("compute_at");
  if (parent.node_ == node_)
    raise<ScheduleError>("stage '{}': compute_at its own loop '{}' would make a cycle", name(),
                         ivar.name());
  if (!schedule_->reads(parent.node_, node_))
    raise<ScheduleError>("stage '{}': compute_at stage '{}', which does not consume '{}'", name(),
                         parent.name(), name());
  // Attaching into a stage that is itself (transitively) attached inside this one is a cycle.
  for (const StageNode* s = parent.node_; s != nullptr; s = s->attach_stage)
    if (s->attach_stage == node_)
      raise<ScheduleError>(
          "stage '{}': compute_at stage '{}' makes a cycle: '{}' is computed inside '{}'", name(),
          parent.name(), parent.name(), name());
  (void)parent.leaf_position(ivar, "compute_at");
  node_->attach = AttachKind::At;
  node_->attach_stage = parent.node_;
  node_->attach_ivar = ivar;
  return *this;
}

inline Stage& Stage::compute_inline() {
  check_not_placeholder("compute_inline");
  if (!node_->op->reduce_axis.empty())
    raise<ScheduleError>("stage '{}' is a reduction and cannot be inlined", name());
  if (node_->is_output)
    raise<ScheduleError>("stage '{}' is an output and cannot be inlined", name());
  node_->attach = AttachKind::Inline;
  node_->attach_stage = nullptr;
  return *this;
}

inline Stage& Stage::compute_root() {
  check_not_placeholder("compute_root");
  node_->attach = AttachKind::Root;
  node_->attach_stage = nullptr;
  return *this;
}

inline Stage& Stage::set_scope(std::string scope) {
  check_not_placeholder("set_scope");
  if (node_->is_output)
    raise<ScheduleError>("stage '{}' is an output; its result must stay in global memory, not '{}'",
                         name(), scope);
  node_->scope = std::move(scope);
  return *this;
}

inline Stage& Stage::pragma(const IterVar& ivar, std::string key) {
  check_not_placeholder("pragma");
  (void)leaf_position(ivar, "pragma");
  if (key.empty())
    raise<ScheduleError>("stage '{}': pragma with an empty key on axis '{}'", name(), ivar.name());
  attr(ivar).pragmas.push_back(std::move(key));
  return *this;
}

inline Stage& Stage::unroll(const IterVar& ivar) {
  check_not_placeholder("unroll");
  (void)leaf_position(ivar, "unroll");
  attr(ivar).loop = LoopKind::Unrolled;
  return *this;
}

inline Stage& Stage::bind(const IterVar& ivar, const ThreadAxis& thread) {
  check_not_placeholder("bind");
  (void)leaf_position(ivar, "bind");
  if (ivar.is_reduce())
    raise<ScheduleError>("stage '{}': bind of reduction axis '{}' to thread '{}'", name(),
                         ivar.name(), thread.name);
  auto& a = attr(ivar);
  a.loop = LoopKind::VThread;
  a.thread = thread.name;
  return *this;
}

inline Stage& Stage::tensorize(const IterVar& ivar, std::shared_ptr<const TensorIntrin> intrin) {
  check_not_placeholder("tensorize");
  (void)leaf_position(ivar, "tensorize");
  if (!intrin)
    raise<ScheduleError>("stage '{}': tensorize of axis '{}' with no intrinsic", name(),
                         ivar.name());
  for (const auto& [key, a] : node_->attrs)
    if (a.tensorize && key != ivar.get())
      raise<ScheduleError>("stage '{}' is already tensorized at another axis", name());
  attr(ivar).tensorize = std::move(intrin);
  return *this;
}

}  // namespace dlavm::schedule

namespace dlavm::te {
using schedule::create_schedule;
using schedule::Schedule;
using schedule::Stage;
using schedule::thread_axis;
}  // namespace dlavm::te
