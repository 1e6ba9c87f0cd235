// Definitions for graph/build.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/build.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/tir/specialize.hpp>
#include <dlavm/vta/program.hpp>

#include <fmt/format.h>

#include <optional>
#include <span>
#include <unordered_map>
#include <utility>

namespace dlavm::graph {

namespace detail {

class ModuleBuilder {
 public:
  ModuleBuilder(const Function& fn, const Partition& part, const Target& target,
                const BuildOptions& options)
      : fn_(fn), part_(part), target_(target), options_(options), names_(fn) {
    if (!options_.chooser) options_.chooser = std::make_shared<const Chooser>();
  }

  Module build() {
    std::vector<std::size_t> params, results;
    std::vector<ModuleState> state;
    for (const auto& p : fn_.params()) {
      params.push_back(add_value(p, ModuleValue::Kind::Param, {}, nullptr));
      values_.back().param = p.name();
      forms(p).plain = params.back();
    }
    for (const auto& st : fn_.state()) {
      state.push_back({add_value(st.input, ModuleValue::Kind::State, {}, nullptr), 0, {}, {}});
      values_.back().param = st.input.name();
      forms(st.input).plain = state.back().value;
    }
    find_appended();
    for (const auto& g : part_.groups) {
      if (g.device == Device::Vta)
        vta_step(g);
      else
        host_step(g);
    }
    for (const auto& r : fn_.results()) results.push_back(plain(r));
    for (std::size_t i = 0; i < state.size(); ++i) {
      const Appended* a = appended(i);
      if (a == nullptr) {
        state[i].next = plain(fn_.state()[i].next);
        continue;
      }
      if (!a->packed)
        raise<ValueError>("internal: build: state {} is never read packed, please report",
                          names_.name(fn_.state()[i].input));
      state[i].next = plain(a->rows);
      state[i].packed = a->packed;
      state[i].perm = a->perm;
    }
    return Module(options_.name, target_.env, std::make_shared<const OpRegistry>(target_.ops),
                  std::move(values_), std::move(steps_),
                  {std::move(params), std::move(results), std::move(state)}, options_.plan);
  }

 private:
  std::size_t add_value(const Expr& e, ModuleValue::Kind kind, Layout layout,
                        std::shared_ptr<const te::NDArray> constant) {
    ModuleValue v;
    v.kind = kind;
    v.name = names_.name(e);
    v.node = v.name;
    if (layout.kind != Layout::Kind::Plain) v.name += ":" + to_string(layout);
    v.logical = e.type().shape;
    v.layout = layout;
    v.shape = packed_shape(layout, v.logical);
    v.dtype = e.type().dtype;
    if (constant && layout.kind != Layout::Kind::Plain)
      v.dram = std::make_shared<const std::vector<std::uint8_t>>(vta::dram_bytes(*constant));
    v.constant = std::move(constant);
    values_.push_back(std::move(v));
    return values_.size() - 1;
  }

  // The module values of a graph node: its logical form and its packed ones. The entry holds
  // the node, so that no key outlives its node (the builder makes nodes of its own: the
  // folded biases) and a later node at the same address cannot find another node's values.
  struct NodeValues {
    Expr node;
    std::optional<std::size_t> plain;
    std::vector<std::pair<Layout, std::size_t>> packed;
  };
  NodeValues& forms(const Expr& e) {
    auto& f = values_of_[e.get()];
    if (!f.node.defined()) f.node = e;
    return f;
  }

  // A host step converting value `from` into value `to` (Pack or Unpack).
  void layout_step(ModuleStep::Kind kind, std::size_t from, std::size_t to) {
    ModuleStep s;
    s.kind = kind;
    s.label = fmt::format("{} {}", kind == ModuleStep::Kind::Pack ? "pack" : "unpack",
                          values_[kind == ModuleStep::Kind::Pack ? to : from].name);
    s.inputs = {from};
    s.output = to;
    steps_.push_back(std::move(s));
  }

  // The value of node e in its logical layout, unpacking it after VTA if need be.
  std::size_t plain(const Expr& e) {
    auto& f = forms(e);
    if (f.plain) return *f.plain;
    if (const auto* c = e.as<ConstantNode>())
      return *(f.plain = add_value(e, ModuleValue::Kind::Constant, {}, c->value));
    if (f.packed.empty())
      raise<ValueError>("internal: build: {} is used before it is computed, please report",
                        names_.label(e));
    const std::size_t from = f.packed.front().second;
    const std::size_t to = add_value(e, ModuleValue::Kind::Temp, {}, nullptr);
    layout_step(ModuleStep::Kind::Unpack, from, to);
    return *(f.plain = to);
  }

  // The value of node e in layout l: constants are packed now, other values by a pack step
  // on the host (once per layout).
  std::size_t packed(const Expr& e, const Layout& l) {
    for (const auto& [layout, id] : forms(e).packed)
      if (layout == l) return id;
    std::size_t id = 0;
    if (Appended* a = appended_read(e)) {
      // the state held packed, appended to in place
      if (l != a->layout)
        raise<ValueError>("internal: build: {} is read as {}, not {}, please report",
                          names_.label(e), to_string(l), to_string(a->layout));
      const std::size_t rows = plain(a->rows);
      id = add_value(e, ModuleValue::Kind::State, l, nullptr);
      ModuleStep s;
      s.kind = ModuleStep::Kind::Append;
      s.label = fmt::format("append {} to {}", values_[rows].name, values_[id].name);
      s.inputs = {rows};
      s.output = id;
      steps_.push_back(std::move(s));
      a->packed = id;
    } else if (const auto* c = e.as<ConstantNode>()) {
      id = add_value(e, ModuleValue::Kind::Constant, l,
                     std::make_shared<const te::NDArray>(pack(*c->value, l)));
    } else {
      const std::size_t from = plain(e);
      id = add_value(e, ModuleValue::Kind::Temp, l, nullptr);
      layout_step(ModuleStep::Kind::Pack, from, id);
    }
    forms(e).packed.emplace_back(l, id);
    return id;
  }

  void host_step(const Group& g) {
    const Expr& e = g.output();
    // a state held packed is never concatenated nor transposed as a whole
    for (const auto& a : appended_)
      if (e.get() == a.concat.get() || e.get() == a.read.get()) return;
    const auto& call = *e.as<CallNode>();
    ModuleStep s;
    s.kind = ModuleStep::Kind::Host;
    s.label = fmt::format("{} {}", names_.name(e), call.op());
    s.op = call.op();
    s.attrs = call.attrs;
    for (const auto& a : call.args) s.inputs.push_back(plain(a));
    s.output = add_value(e, ModuleValue::Kind::Temp, {}, nullptr);
    forms(e).plain = s.output;
    steps_.push_back(std::move(s));
  }

  void vta_step(const Group& g) {
    const Expr& anchor = g.anchor();
    const auto& call = *anchor.as<CallNode>();
    const AnchorStrategy& strategy = *target_.strategies.find(call.op());
    const auto& env = target_.env;
    const Workload workload = workload_of(g, names_);
    const std::string name = fmt::format("{}{}", call.op(), kernels_++);
    std::optional<VtaKernel> declared;
    std::shared_ptr<const vta::Program> program;
    Knobs knobs;
    std::string tiling;
    ne::Expr traffic;
    try {
      const KnobSpace space = strategy.space(workload, env);
      knobs = options_.chooser->choose(workload, space);
      declared.emplace(strategy.declare(workload, env, knobs, name));
      tir::PrimFunc func = vta::lower(declared->schedule, declared->args, env, name);
      tiling = declared->tiling;
      traffic = declared->traffic;
      if (const auto few = min_rows_tiling(strategy, workload, space, knobs)) {
        VtaKernel second = strategy.declare(workload, env, few->knobs, name);
        func = tir::specialize(func, few->at, vta::lower(second.schedule, second.args, env, name));
        const ne::Expr when = tir::specialized_when(few->at);
        tiling = fmt::format("{}; {}: {}", tiling, when, second.tiling);
        traffic = ne::simplify(ne::select(when, second.traffic, traffic));
      }
      program = std::make_shared<const vta::Program>(env, std::move(func));
    } catch (const Error& e) {
      // the kernel's tensors are named after it; say which call of the graph it compiles
      std::vector<std::string> args;
      for (const auto& t : workload.args) args.push_back(shape_text(t.shape));
      rethrow_with_context(e, fmt::format("{} on VTA, of {} (kernel '{}')", names_.label(anchor),
                                          fmt::join(args, " and "), name));
    }
    const VtaKernel& kernel = *declared;
    ModuleStep s;
    s.kind = ModuleStep::Kind::Vta;
    std::vector<std::string> ops;
    for (const auto& c : g.calls) ops.push_back(c.name());
    s.label = fmt::format("{} {}", names_.name(g.output()), fmt::join(ops, "+"));
    s.op = fmt::format("{}", fmt::join(ops, "+"));
    for (std::size_t i = 0; i < call.args.size(); ++i)
      s.inputs.push_back(packed(call.args[i], strategy.arg_layout(workload, env, i)));
    const Layout result = strategy.result_layout(workload, env);
    for (std::size_t k = 0; k < g.operands.size(); ++k) {
      const bool channel = g.epilogue.inputs[k].kind == EpilogueInput::Kind::Channel;
      const Layout l = channel ? Layout{Layout::Kind::Channel, env.batch, env.block_out} : result;
      s.inputs.push_back(packed(g.operands[k], l));
    }
    Layout stored = result;
    if (g.epilogue.int32_result) stored.planes = Epilogue::kPlanes;
    s.output = add_value(g.output(), ModuleValue::Kind::Temp, stored, nullptr);
    values_[s.output].dtype = env.out_dtype;
    forms(g.output()).packed.emplace_back(stored, s.output);
    s.program = std::move(program);
    s.tiling = std::move(tiling);
    s.epilogue = to_string(g.epilogue);
    s.macs = kernel.macs;
    s.traffic = std::move(traffic);
    s.knobs = std::move(knobs);
    s.workload = workload;
    check_params(s, kernel);
    steps_.push_back(std::move(s));
  }

  // The second tiling of a workload whose rows are symbolic (AnchorStrategy::row_dims): the
  // knobs the chooser picks with the rows' dims at their minima (`at`), where they run. None
  // when the option is off, or when they are the knobs already chosen or ones the symbolic
  // workload does not accept.
  struct MinRowsTiling {
    std::vector<ne::Substitution> at;
    Knobs knobs;
  };
  std::optional<MinRowsTiling> min_rows_tiling(const AnchorStrategy& strategy, const Workload& w,
                                               const KnobSpace& space, const Knobs& chosen) const {
    if (!options_.specialize_min_rows || !strategy.row_dims) return std::nullopt;
    const std::vector<ne::Var> dims = strategy.row_dims(w);
    if (dims.empty()) return std::nullopt;
    std::vector<ne::Substitution> at_min;
    for (const ne::Var& v : dims) at_min.emplace_back(v, ne::Expr(v.node().min));
    Workload few = w;
    few.result.shape = substituted(few.result.shape, at_min);
    for (auto& t : few.args) t.shape = substituted(t.shape, at_min);
    Knobs knobs = options_.chooser->choose(few, strategy.space(few, target_.env));
    if (knobs == chosen || knobs.names != chosen.names || space.check(knobs.values))
      return std::nullopt;
    return MinRowsTiling{std::move(at_min), std::move(knobs)};
  }
  static std::vector<ne::Expr> substituted(const std::vector<ne::Expr>& shape,
                                           std::span<const ne::Substitution> map) {
    std::vector<ne::Expr> out;
    for (const auto& d : shape) out.push_back(ne::simplify(ne::substitute(d, map)));
    return out;
  }

  // The program's parameters are the arrays the step hands it: same dtype and shape.
  void check_params(const ModuleStep& s, const VtaKernel& kernel) const {
    std::vector<std::size_t> values = s.inputs;
    values.push_back(s.output);
    for (std::size_t k = 0; k < values.size(); ++k) {
      const auto& v = values_[values[k]];
      const auto& p = kernel.args[k];
      bool same = p.dtype() == v.dtype && p.shape().size() == v.shape.size();
      for (std::size_t d = 0; same && d < v.shape.size(); ++d)
        same = ne::can_prove(p.shape()[d] == v.shape[d]);
      if (!same)
        raise<ValueError>(
            "internal: build: {} parameter {} ('{}') is {}{}, the value {} is {}{}, please report",
            s.label, k, p.name(), p.dtype(), shape_text(p.shape()), v.name, v.dtype,
            shape_text(v.shape));
    }
  }

  // A growing state held packed (ModuleState::packed): its next value is concat(state, rows)
  // along the growing dim, read only by VTA matmuls as their weight, through `read` (the
  // concatenation, or one transpose of it).
  struct Appended {
    std::size_t state = 0;
    Expr concat, rows, read;
    std::vector<std::int64_t> perm;  // read's dim i is the state's dim perm[i]
    Layout layout;
    std::optional<std::size_t> packed;
  };

  const Appended* appended(std::size_t state) const {
    for (const auto& a : appended_)
      if (a.state == state) return &a;
    return nullptr;
  }
  Appended* appended_read(const Expr& e) {
    for (auto& a : appended_)
      if (a.read.get() == e.get()) return &a;
    return nullptr;
  }

  // The states to hold packed: those whose only reader is their concatenation with new
  // positions along the growing dim, which only VTA matmuls read as their weight, directly
  // or through one transpose, each in the same layout. Any other state stays an array.
  void find_appended() {
    struct Use {
      const Group* group;
      const Expr* call;
      std::size_t arg;
    };
    std::unordered_map<const Node*, std::vector<Use>> uses;
    for (const auto& g : part_.groups)
      for (const auto& c : g.calls)
        for (std::size_t k = 0; k < c.as<CallNode>()->args.size(); ++k)
          uses[c.as<CallNode>()->args[k].get()].push_back({&g, &c, k});
    for (const auto& r : fn_.results()) uses[r.get()].push_back({nullptr, nullptr, 0});
    for (const auto& st : fn_.state()) uses[st.next.get()].push_back({nullptr, nullptr, 0});
    // a matmul on VTA reading e as its weight: its layout
    const auto weight_of = [&](const Use& u) -> std::optional<Layout> {
      if (u.group == nullptr || u.group->device != Device::Vta ||
          u.call->get() != u.group->anchor().get() || u.arg != 1 ||
          u.call->as<CallNode>()->op() != "matmul")
        return std::nullopt;
      const AnchorStrategy& strategy = *target_.strategies.find("matmul");
      return strategy.arg_layout(workload_of(*u.group, names_), target_.env, 1);
    };
    const auto count = [&](const Expr& e) {
      auto it = uses.find(e.get());
      return it == uses.end() ? std::size_t{0} : it->second.size();
    };
    for (std::size_t i = 0; i < fn_.state().size(); ++i) {
      const auto& st = fn_.state()[i];
      const auto& shape = st.input.type().shape;
      std::optional<std::size_t> axis;
      for (std::size_t k = 0; k < shape.size(); ++k)
        if (!shape[k].is_const()) axis = k;
      const auto* concat = st.next.as<CallNode>();
      if (!axis || concat == nullptr || concat->op() != "concat" || concat->args.size() != 2 ||
          concat->args[0].get() != st.input.get() || count(st.input) != 1 ||
          count(st.next) != 2)  // the concatenation reads the state; the state and one reader
        continue;               // read the concatenation
      auto at = concat->attrs.get_int("axis");
      if (at < 0) at += static_cast<std::int64_t>(shape.size());
      if (at != static_cast<std::int64_t>(*axis)) continue;
      Appended a;
      a.state = i;
      a.concat = st.next;
      a.rows = concat->args[1];
      // the concatenation's one reader besides the state: a matmul, or a transpose that
      // matmuls read
      const Use& reader = uses[st.next.get()].front().group != nullptr ? uses[st.next.get()].front()
                                                                       : uses[st.next.get()].back();
      std::vector<const Use*> matmuls;
      if (weight_of(reader)) {
        a.read = st.next;
        for (std::size_t k = 0; k < shape.size(); ++k)
          a.perm.push_back(static_cast<std::int64_t>(k));
        matmuls.push_back(&reader);
      } else if (const auto* t = reader.call != nullptr ? reader.call->as<CallNode>() : nullptr;
                 t != nullptr && t->op() == "transpose" && reader.group->device == Device::Host) {
        a.read = *reader.call;
        if (t->attrs.contains("perm")) a.perm = t->attrs.get_ints("perm");
        for (auto& p : a.perm)
          if (p < 0) p += static_cast<std::int64_t>(shape.size());
        for (std::size_t k = a.perm.size(); k < shape.size(); ++k)  // none given: reversed
          a.perm.push_back(static_cast<std::int64_t>(shape.size() - 1 - k));
        for (const auto& u : uses[a.read.get()]) matmuls.push_back(&u);
      }
      if (matmuls.empty() || a.perm.size() != shape.size()) continue;
      // the growing dim is the weight's K or N
      const auto n = a.perm.size();
      if (a.perm[n - 1] != at && a.perm[n - 2] != at) continue;
      std::optional<Layout> layout;
      bool all = true;
      for (const auto* u : matmuls) {
        const auto l = weight_of(*u);
        all = all && l && l->kind == Layout::Kind::MatmulWeight && l->planes == 1 &&
              (!layout || *layout == *l);
        if (l) layout = l;
      }
      if (!all) continue;
      a.layout = *layout;
      appended_.push_back(std::move(a));
    }
  }

  const Function& fn_;
  const Partition& part_;
  const Target& target_;
  BuildOptions options_;
  NodeNames names_;
  std::vector<ModuleValue> values_;
  std::vector<ModuleStep> steps_;
  std::unordered_map<const Node*, NodeValues> values_of_;
  std::vector<Appended> appended_;
  std::size_t kernels_ = 0;
};

}  // namespace detail

DLAVM_INLINE Module build(const Function& fn, const Target& target, const BuildOptions& options) {
  // a function placed for this target is built as placed; any other is placed first
  const bool placed = fn.placement() && fn.placement()->config == target.env.config &&
                      fn.placement()->int32_results == target.int32_results;
  const Function typed = placed ? fn : infer_type(fn, target);
  return detail::ModuleBuilder(typed, *typed.placement(), target, options).build();
}

}  // namespace dlavm::graph
