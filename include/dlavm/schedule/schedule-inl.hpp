// Definitions for dlavm/schedule/schedule.hpp (see core/api.hpp).
#pragma once

#include <dlavm/schedule/schedule.hpp>

namespace dlavm::schedule {

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
Operation with_body(const Operation& op, te::Expr body);

// A compute `name` over `shape` whose element is `source(i...)`.
Tensor copy_of(const Tensor& source, const std::string& name);
}  // namespace detail

}  // namespace dlavm::schedule

namespace dlavm::schedule {

DLAVM_INLINE ThreadAxis thread_axis(std::string name) { return {std::move(name)}; }

DLAVM_INLINE Schedule create_schedule(std::vector<Tensor> outputs) {
  if (outputs.empty()) raise<ScheduleError>("create_schedule: no output tensors");
  return Schedule(std::move(outputs));
}

DLAVM_INLINE Schedule create_schedule(const Tensor& output) {
  return create_schedule(std::vector{output});
}

}  // namespace dlavm::schedule

namespace dlavm::schedule::detail {

DLAVM_INLINE Operation with_body(const Operation& op, te::Expr body) {
  auto node = std::make_unique<te::OperationNode>(*op);
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
  return Operation(node.release());
}

DLAVM_INLINE Tensor copy_of(const Tensor& source, const std::string& name) {
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

}  // namespace dlavm::schedule::detail

namespace dlavm::schedule {

DLAVM_INLINE void Schedule::replace_dataflow(
    std::unordered_map<const te::OperationNode*, Operation> map, std::size_t from) {
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

DLAVM_INLINE Tensor Schedule::cache_read(const Tensor& t, const std::string& scope,
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

DLAVM_INLINE Tensor Schedule::cache_write(const Tensor& t, const std::string& scope) {
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
  auto node = std::make_unique<te::OperationNode>(*op);
  node->reduce_axis.clear();
  node->body = cache.read(indices);
  node->inputs = {cache.op()};
  const Operation copy(node.release());
  std::unordered_map<const te::OperationNode*, Operation> rebuilt{{op.get(), copy}};
  by_op_[copy.get()] = st;
  st->op = copy;
  st->root = copy->axis;
  st->leaf = st->root;
  st->all = st->root;
  replace_dataflow(std::move(rebuilt), position_of(st) + 1);
  return cache;
}

DLAVM_INLINE IterVar Stage::axis(std::size_t k) const {
  const auto& a = node_->op->axis;
  if (k >= a.size())
    raise<ScheduleError>("stage '{}': axis({}) requested, the operation has {} axes", name(), k,
                         a.size());
  return a[k];
}

DLAVM_INLINE IterVar Stage::reduce_axis(std::size_t k) const {
  const auto& a = node_->op->reduce_axis;
  if (k >= a.size())
    raise<ScheduleError>(
        "stage '{}': reduce_axis({}) requested, the operation has {} reduction axes", name(), k,
        a.size());
  return a[k];
}

DLAVM_INLINE std::optional<std::size_t> Stage::find_leaf(const IterVar& ivar) const {
  const auto& leaf = node_->leaf;
  for (std::size_t k = 0; k < leaf.size(); ++k)
    if (leaf[k] == ivar) return k;
  return std::nullopt;
}

DLAVM_INLINE std::size_t Stage::leaf_position(const IterVar& ivar,
                                              std::string_view primitive) const {
  if (const auto k = find_leaf(ivar)) return *k;
  raise_not_a_loop(ivar, fmt::format("stage '{}': {} of", name(), primitive));
}

DLAVM_INLINE void Stage::raise_not_a_loop(const IterVar& ivar, const std::string& request) const {
  if (!ivar.defined()) raise<ScheduleError>("{} an undefined axis", request);
  std::vector<std::string> names;
  for (const auto& v : node_->leaf) names.push_back(v.name());
  if (const auto* owner = schedule_->owner_of(ivar); owner && owner != node_)
    raise<ScheduleError>(
        "{} axis '{}', which belongs to stage '{}'; pass one of the loops of '{}' ({})", request,
        ivar.name(), owner->name(), name(), fmt::join(names, ", "));
  if (std::find(node_->all.begin(), node_->all.end(), ivar) != node_->all.end())
    raise<ScheduleError>("{} axis '{}', which was already split or fused (loops: {})", request,
                         ivar.name(), fmt::join(names, ", "));
  raise<ScheduleError>("{} axis '{}', which is not one of its loops ({})", request, ivar.name(),
                       fmt::join(names, ", "));
}

DLAVM_INLINE void Stage::check_not_placeholder(std::string_view primitive) const {
  if (node_->is_placeholder())
    raise<ScheduleError>("stage '{}' is a placeholder: {} applies to computed tensors", name(),
                         primitive);
}

DLAVM_INLINE void Stage::move_attached(const IterVar& from, const IterVar& to) const {
  for (const auto& st : schedule_->stages())
    if (st->attach == AttachKind::At && st->attach_stage == node_ && st->attach_ivar == from)
      st->attach_ivar = to;
}

DLAVM_INLINE std::pair<IterVar, IterVar> Stage::split(const IterVar& parent,
                                                      const ne::Expr& factor) {
  check_not_placeholder("split");
  const auto pos = leaf_position(parent, "split");
  if (!factor.defined() || ne::bounds(factor).min < 1)
    raise<ScheduleError>("stage '{}': split of axis '{}' by factor {}, which must be at least 1",
                         name(), parent.name(),
                         factor.defined() ? fmt::format("{}", factor) : "<undefined>");
  return split_leaf(pos, factor);
}

DLAVM_INLINE std::pair<IterVar, IterVar> Stage::split_nparts(const IterVar& parent,
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

DLAVM_INLINE std::pair<IterVar, IterVar> Stage::split_leaf(std::size_t pos,
                                                           const ne::Expr& factor) {
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

DLAVM_INLINE Stage& Stage::reorder(const std::vector<IterVar>& order) {
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

DLAVM_INLINE std::array<IterVar, 4> Stage::tile(const IterVar& x, const IterVar& y,
                                                const ne::Expr& x_factor,
                                                const ne::Expr& y_factor) {
  auto [xo, xi] = split(x, x_factor);
  auto [yo, yi] = split(y, y_factor);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

DLAVM_INLINE IterVar Stage::fuse(const IterVar& outer, const IterVar& inner) {
  // Copies: outer and inner may be references into the leaf list, which fusing changes.
  return fuse(std::vector<IterVar>{outer, inner});
}

DLAVM_INLINE IterVar Stage::fuse(const std::vector<IterVar>& axes) {
  check_not_placeholder("fuse");
  if (axes.empty())
    raise<ScheduleError>("stage '{}': fuse of no axes; list the loops to fuse, outermost first",
                         name());
  // Everything is checked before the first pair is fused: an error leaves the stage as it was.
  std::vector<std::size_t> pos;
  for (const auto& a : axes) pos.push_back(leaf_position(a, "fuse"));
  for (std::size_t k = 1; k < axes.size(); ++k)
    if (pos[k] != pos[k - 1] + 1) {
      std::vector<std::string> listed, loops;
      for (std::size_t j = 0; j < axes.size(); ++j)
        listed.push_back(fmt::format("'{}' (loop {})", axes[j].name(), pos[j]));
      for (const auto& v : node_->leaf) loops.push_back(v.name());
      raise<ScheduleError>(
          "stage '{}': fuse of {}: each axis must be the loop directly inside the one before it "
          "(loops: {})",
          name(), fmt::join(listed, ", "), fmt::join(loops, ", "));
    }
  for (std::size_t k = 1; k < axes.size(); ++k)
    if (axes[k].kind() != axes[k - 1].kind())
      raise<ScheduleError>("stage '{}': fuse of data-parallel and reduction axes '{}' and '{}'",
                           name(), axes[k - 1].name(), axes[k].name());
  IterVar fused = axes.front();
  for (std::size_t k = 1; k < axes.size(); ++k) fused = fuse_leaf(pos.front(), fused, axes[k]);
  return fused;
}

DLAVM_INLINE IterVar Stage::fuse_leaf(std::size_t pos, const IterVar& outer, const IterVar& inner) {
  auto fused =
      te::make_iter_var(outer.name() + "." + inner.name() + ".fused", 0,
                        ne::simplify(outer.dom().extent * inner.dom().extent), outer.kind());
  node_->relations.emplace_back(FuseRelation{outer, inner, fused});
  move_attached(outer, fused);
  move_attached(inner, fused);
  node_->leaf.erase(node_->leaf.begin() + static_cast<std::ptrdiff_t>(pos),
                    node_->leaf.begin() + static_cast<std::ptrdiff_t>(pos) + 2);
  node_->leaf.insert(node_->leaf.begin() + static_cast<std::ptrdiff_t>(pos), fused);
  node_->all.push_back(fused);
  return fused;
}

DLAVM_INLINE Stage& Stage::compute_at(const Stage& parent, const IterVar& ivar) {
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
  // The message names this stage too: it is the one being moved.
  if (!parent.find_leaf(ivar))
    parent.raise_not_a_loop(
        ivar, fmt::format("stage '{}': compute_at stage '{}' at", name(), parent.name()));
  node_->attach = AttachKind::At;
  node_->attach_stage = parent.node_;
  node_->attach_ivar = ivar;
  return *this;
}

DLAVM_INLINE Stage& Stage::compute_inline() {
  check_not_placeholder("compute_inline");
  if (!node_->op->reduce_axis.empty())
    raise<ScheduleError>("stage '{}' is a reduction and cannot be inlined", name());
  if (node_->is_output)
    raise<ScheduleError>("stage '{}' is an output and cannot be inlined", name());
  node_->attach = AttachKind::Inline;
  node_->attach_stage = nullptr;
  return *this;
}

DLAVM_INLINE Stage& Stage::compute_root() {
  check_not_placeholder("compute_root");
  node_->attach = AttachKind::Root;
  node_->attach_stage = nullptr;
  return *this;
}

DLAVM_INLINE Stage& Stage::set_scope(std::string scope) {
  check_not_placeholder("set_scope");
  if (node_->is_output)
    raise<ScheduleError>("stage '{}' is an output; its result must stay in global memory, not '{}'",
                         name(), scope);
  node_->scope = std::move(scope);
  return *this;
}

DLAVM_INLINE Stage& Stage::pragma(const IterVar& ivar, std::string key) {
  check_not_placeholder("pragma");
  (void)leaf_position(ivar, "pragma");
  if (key.empty())
    raise<ScheduleError>("stage '{}': pragma with an empty key on axis '{}'", name(), ivar.name());
  attr(ivar).pragmas.push_back(std::move(key));
  return *this;
}

DLAVM_INLINE Stage& Stage::unroll(const IterVar& ivar) {
  check_not_placeholder("unroll");
  (void)leaf_position(ivar, "unroll");
  attr(ivar).loop = LoopKind::Unrolled;
  return *this;
}

DLAVM_INLINE Stage& Stage::bind(const IterVar& ivar, const ThreadAxis& thread) {
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

DLAVM_INLINE Stage& Stage::tensorize(const IterVar& ivar,
                                     std::shared_ptr<const TensorIntrin> intrin) {
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
