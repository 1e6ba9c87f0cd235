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
    for (const auto& g : part_.groups) {
      if (g.device == Device::Vta)
        vta_step(g);
      else
        host_step(g);
    }
    for (const auto& r : fn_.results()) results.push_back(plain(r));
    for (std::size_t i = 0; i < state.size(); ++i) {
      const HeldState* h = held(i);
      if (h == nullptr) {
        state[i].next = plain(fn_.state()[i].next);
        continue;
      }
      const auto packed = forms(h->read).packed;
      if (packed.empty())
        raise<ValueError>("internal: build: state {} is never read packed, please report",
                          names_.name(fn_.state()[i].input));
      state[i].next = plain(h->rows);
      state[i].packed = packed.front().second;
      state[i].perm = h->perm;
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
    v.dtype = packed_dtype(layout, e.type().dtype);
    if (constant && layout.kind != Layout::Kind::Plain)
      v.dram = std::make_shared<const std::vector<std::uint8_t>>(vta::dram_bytes(*constant));
    v.constant = std::move(constant);
    values_.push_back(std::move(v));
    return values_.size() - 1;
  }

  // A kernel's constant (VtaKernel::constants) for parameter `param` of the kernel computing
  // `e`: a module constant in its DRAM form, named after both ("%18:sm_masks"), holding no
  // graph node.
  std::size_t kernel_constant(const Expr& e, const te::Tensor& param, const te::NDArray& data) {
    ModuleValue v;
    v.kind = ModuleValue::Kind::Constant;
    v.name = fmt::format("{}:{}", names_.name(e), param.name());
    v.logical = param.shape();
    v.shape = param.shape();
    v.dtype = data.dtype();
    v.constant = std::make_shared<const te::NDArray>(data);
    v.dram = std::make_shared<const std::vector<std::uint8_t>>(vta::dram_bytes(data));
    values_.push_back(std::move(v));
    return values_.size() - 1;
  }

  // The module values of a graph node: its logical form and its packed ones. The entry holds
  // the node, so that no key outlives its node and a later node at the same address cannot find
  // another node's values.
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
    if (const HeldState* h = held_read(e)) {
      // the state held packed, appended to in place
      if (l != h->layout)
        raise<ValueError>("internal: build: {} is read as {}, not {}, please report",
                          names_.label(e), to_string(l), to_string(h->layout));
      const std::size_t rows = plain(h->rows);
      id = add_value(e, ModuleValue::Kind::State, l, nullptr);
      ModuleStep s;
      s.kind = ModuleStep::Kind::Append;
      s.label = fmt::format("append {} to {}", values_[rows].name, values_[id].name);
      s.inputs = {rows};
      s.output = id;
      steps_.push_back(std::move(s));
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
    // a state held packed is never concatenated nor permuted as a whole
    for (const auto& h : part_.held)
      if (e.same_as(h.next) || e.same_as(h.read)) return;
    const auto& call = *e.as<CallNode>();
    if (widened_packed(e, call)) return;
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

  // On a design without LOAD ACC_8BIT, an int8 VTA result widened to int32 for another kernel
  // (graph::widen_accumulator_loads, the add rule) is cast in its packed layout: the cast
  // commutes with the packing (the padding's zeros stay zeros), which saves an unpack and a
  // pack per widened value. Returns whether it did.
  bool widened_packed(const Expr& e, const CallNode& call) {
    const auto& env = target_.env;
    if (env.config.variant.load_acc8 || call.op() != "cast" || call.args.size() != 1 ||
        e.type().dtype != env.acc_dtype || call.args[0].type().dtype != env.inp_dtype)
      return false;
    const auto& from = forms(call.args[0]).packed;
    if (from.empty()) return false;
    const auto [layout, id] = from.front();
    ModuleStep s;
    s.kind = ModuleStep::Kind::Host;
    s.label = fmt::format("{} {}", names_.name(e), call.op());
    s.op = call.op();
    s.attrs = call.attrs;
    s.inputs = {id};
    s.output = add_value(e, ModuleValue::Kind::Temp, layout, nullptr);
    forms(e).packed.emplace_back(layout, s.output);
    steps_.push_back(std::move(s));
    return true;
  }

  // A VTA group's kernel, compiled: the declared kernel (its parameters, MACs), the program,
  // the knobs chosen, and the tiling and traffic of what runs (two tilings for symbolic rows).
  struct CompiledKernel {
    VtaKernel declared;
    std::shared_ptr<const vta::Program> program;
    Knobs knobs;
    std::string tiling;
    ne::Expr traffic;
  };

  CompiledKernel compile_kernel(const AnchorStrategy& strategy, const Workload& workload,
                                const std::string& name) const {
    const auto& env = target_.env;
    const KnobSpace space = strategy.space(workload, env);
    Knobs knobs = options_.chooser->choose(workload, space);
    VtaKernel declared = strategy.declare(workload, env, knobs, name);
    tir::PrimFunc func = lower_kernel(declared, env, name);
    std::string tiling = declared.tiling;
    ne::Expr traffic = declared.traffic;
    if (const auto few = min_rows_tiling(strategy, workload, space, knobs)) {
      VtaKernel second = strategy.declare(workload, env, few->knobs, name);
      func = tir::specialize(func, few->at, lower_kernel(second, env, name));
      const ne::Expr when = tir::specialized_when(few->at);
      tiling = fmt::format("{}; {}: {}", tiling, when, second.tiling);
      traffic = ne::simplify(ne::select(when, second.traffic, traffic));
    }
    auto program = std::make_shared<const vta::Program>(env, std::move(func));
    return {std::move(declared), std::move(program), std::move(knobs), std::move(tiling),
            std::move(traffic)};
  }

  void vta_step(const Group& g) {
    const Expr& anchor = g.anchor();
    const auto& call = *anchor.as<CallNode>();
    const Workload workload = workload_of(g, names_);
    const std::string name = fmt::format("{}{}", call.op(), kernels_++);
    std::optional<CompiledKernel> kernel;
    try {
      kernel.emplace(compile_kernel(*target_.strategies.find(call.op()), workload, name));
    } catch (const Error& e) {
      // the kernel's tensors are named after it; say which call of the graph it compiles
      std::vector<std::string> args;
      for (const auto& t : workload.args) args.push_back(shape_text(t.shape));
      rethrow_with_context(e, fmt::format("{} on VTA, of {} (kernel '{}')", names_.label(anchor),
                                          fmt::join(args, " and "), name));
    }
    ModuleStep s;
    s.kind = ModuleStep::Kind::Vta;
    std::vector<std::string> ops;
    for (const auto& c : g.calls) ops.push_back(c.name());
    s.label = fmt::format("{} {}", names_.name(g.output()), fmt::join(ops, "+"));
    for (std::size_t k = 0; k + 1 < g.calls.size(); ++k) s.fused.push_back(names_.name(g.calls[k]));
    s.op = fmt::format("{}", fmt::join(ops, "+"));
    // what the kernel reads (the anchor's arguments, then the epilogue's operands), packed
    const auto& layouts = *g.layouts;
    for (std::size_t i = 0; i < layouts.inputs.size(); ++i) {
      const Expr& in = i < call.args.size() ? call.args[i] : g.operands[i - call.args.size()];
      s.inputs.push_back(packed(in, layouts.inputs[i]));
    }
    const std::size_t first = s.inputs.size();
    for (std::size_t k = 0; k < kernel->declared.constants.size(); ++k)
      s.inputs.push_back(kernel_constant(g.output(), kernel->declared.args.at(first + k),
                                         kernel->declared.constants[k]));
    s.output = add_value(g.output(), ModuleValue::Kind::Temp, layouts.output, nullptr);
    values_[s.output].dtype = target_.env.out_dtype;
    forms(g.output()).packed.emplace_back(layouts.output, s.output);
    s.program = std::move(kernel->program);
    s.tiling = std::move(kernel->tiling);
    s.epilogue = to_string(g.epilogue);
    s.macs = kernel->declared.macs;
    s.traffic = std::move(kernel->traffic);
    s.knobs = std::move(kernel->knobs);
    s.workload = workload;
    check_params(s, kernel->declared);
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

  // The state held packed that match_states found for state i, if any; the one read as e.
  const HeldState* held(std::size_t state) const {
    for (const auto& h : part_.held)
      if (h.state == state) return &h;
    return nullptr;
  }
  const HeldState* held_read(const Expr& e) const {
    for (const auto& h : part_.held)
      if (h.read.same_as(e)) return &h;
    return nullptr;
  }

  const Function& fn_;
  const Partition& part_;
  const Target& target_;
  BuildOptions options_;
  NodeNames names_;
  std::vector<ModuleValue> values_;
  std::vector<ModuleStep> steps_;
  std::unordered_map<const Node*, NodeValues> values_of_;
  std::size_t kernels_ = 0;
};

}  // namespace detail

DLAVM_INLINE Module build(const Function& fn, const Target& target, const BuildOptions& options) {
  // a function placed for this target is built as placed; any other is placed first
  const bool placed = fn.placement() && fn.placement()->config == target.env.config &&
                      fn.placement()->int32_results == target.int32_results;
  const Function typed = placed ? fn : run_passes(fn, target, options.passes);
  if (!typed.placement())
    raise<ValueError>(
        "build: the function is not placed: its passes lacked 'partition' "
        "(graph::default_passes())");
  const Partition& part = *typed.placement();
  require_layouts(part, "build");
  return detail::ModuleBuilder(typed, part, target, options).build();
}

}  // namespace dlavm::graph
