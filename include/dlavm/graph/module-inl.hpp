// Definitions for graph/module.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/simplify.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>

namespace dlavm::graph {

DLAVM_INLINE Module::Module(std::string name, vta::Env env, std::shared_ptr<const OpRegistry> ops,
                            std::vector<ModuleValue> values, std::vector<ModuleStep> steps,
                            ModuleSignature signature, const PlanOptions& plan)
    : name_(std::move(name)),
      env_(std::move(env)),
      ops_(std::move(ops)),
      values_(std::move(values)),
      steps_(std::move(steps)),
      params_(std::move(signature.params)),
      results_(std::move(signature.results)),
      state_(std::move(signature.state)) {
  for (std::size_t i = 0; i < state_.size(); ++i) {
    const auto& st = state_[i];
    appended_.emplace_back();
    if (!st.packed) continue;
    const auto& v = values_[st.value];
    std::vector<std::int64_t> shape;
    for (const auto& d : v.shape)
      shape.push_back(d.is_const() ? *d.as_int() : d.as<ne::VarNode>()->min);
    appended_.back().emplace(v.dtype, std::move(shape), growing_dim(i), st.perm,
                             values_[*st.packed].layout, v.param);
  }
  reset_state();
  plan_ = plan_memory(*this, plan);
  std::vector<bool> vta(values_.size(), false);
  for (const auto& step : steps_) {
    if (step.kind != ModuleStep::Kind::Vta) continue;
    for (auto in : step.inputs) vta[in] = true;
    vta[step.output] = true;
  }
  for (std::size_t v = 0; v < values_.size(); ++v) {
    const auto& b = plan_.buffers[v];
    values_[v].storage = {b.region, b.offset, b.bytes, vta[v]};
  }
}

DLAVM_INLINE std::size_t Module::state_index(std::string_view name) const {
  for (std::size_t i = 0; i < state_.size(); ++i)
    if (values_[state_[i].value].param == name) return i;
  std::vector<std::string_view> names;
  for (const auto& s : state_) names.push_back(values_[s.value].param);
  raise<ValueError>(
      "module '{}': '{}' is not a state (its states: {})", name_, name,
      names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
}

DLAVM_INLINE const te::NDArray& Module::state(std::string_view name) const {
  const std::size_t i = state_index(name);
  if (stale_[i]) {
    state_values_[i] = appended_[i]->logical();
    stale_[i] = false;
  }
  return state_values_[i];
}

DLAVM_INLINE std::size_t Module::growing_dim(std::size_t i) const {
  const auto& shape = values_[state_[i].value].shape;
  for (std::size_t k = 0; k < shape.size(); ++k)
    if (!shape[k].is_const()) return k;
  raise<ValueError>("internal: module '{}': state {} held packed has no growing dim, please report",
                    name_, values_[state_[i].value].name);
}

DLAVM_INLINE std::size_t Module::appended_by(std::size_t step) const {
  for (std::size_t i = 0; i < state_.size(); ++i)
    if (state_[i].packed == steps_[step].output) return i;
  raise<ValueError>("internal: module '{}': append step {} writes no state, please report", name_,
                    step);
}

DLAVM_INLINE std::int64_t Module::held_length(std::size_t i, std::size_t k) const {
  return appended_[i] ? appended_[i]->length() : state_values_[i].shape()[k];
}

namespace detail {

// The most a state's dim holds: a constant, or a growing dim's maximum + 1.
inline std::int64_t state_capacity(const ne::Expr& dim) {
  if (const auto* v = dim.as<ne::VarNode>()) return v->max + 1;
  return *dim.as_int();
}

}  // namespace detail

DLAVM_INLINE void Module::set_state(std::string_view name, te::NDArray value) {
  const std::size_t i = state_index(name);
  const auto& v = values_[state_[i].value];
  bool fits = value.dtype() == v.dtype && value.ndim() == v.shape.size();
  for (std::size_t k = 0; fits && k < v.shape.size(); ++k) {
    const auto* var = v.shape[k].as<ne::VarNode>();
    const auto n = value.shape()[k];
    fits = var != nullptr ? n >= var->min && n <= var->max + 1 : n == *v.shape[k].as_int();
  }
  if (!fits) {
    std::vector<std::string> dims;
    for (const auto& d : v.shape)
      dims.push_back(d.is_const() ? fmt::format("{}", d)
                                  : fmt::format("{} in [{}, {}]", d, d.as<ne::VarNode>()->min,
                                                detail::state_capacity(d)));
    raise<ShapeError>("module '{}': state '{}' is {}[{}], the array is {}[{}]", name_, name,
                      v.dtype, fmt::join(dims, ", "), value.dtype(),
                      fmt::join(value.shape(), ", "));
  }
  if (appended_[i]) appended_[i]->assign(value);
  state_values_[i] = std::move(value);
  stale_[i] = false;
}

DLAVM_INLINE void Module::reset_state() {
  state_values_.clear();
  stale_.assign(state_.size(), false);
  for (std::size_t i = 0; i < state_.size(); ++i) {
    const auto& v = values_[state_[i].value];
    std::vector<std::int64_t> shape;
    // a growing dim starts at its minimum
    for (const auto& d : v.shape)
      shape.push_back(d.is_const() ? *d.as_int() : d.as<ne::VarNode>()->min);
    state_values_.emplace_back(v.dtype, std::move(shape));
    if (appended_[i]) appended_[i]->assign(state_values_.back());
  }
}

DLAVM_INLINE std::vector<ne::Binding> Module::bind_states(
    std::span<const ne::Binding> bindings) const {
  std::vector<ne::Binding> all(bindings.begin(), bindings.end());
  for (std::size_t i = 0; i < state_.size(); ++i) {
    const auto& v = values_[state_[i].value];
    for (std::size_t k = 0; k < v.shape.size(); ++k) {
      const auto* var = v.shape[k].as<ne::VarNode>();
      if (var == nullptr) continue;
      const std::int64_t held = held_length(i, k);
      const auto given = std::find_if(all.begin(), all.end(),
                                      [&](const ne::Binding& b) { return b.name == var->name; });
      if (given == all.end()) {
        all.push_back({var->name, held});
      } else if (given->value != held) {
        raise<ValueError>(
            "module '{}': state '{}' holds {} along dim {} (`{}`), but the bindings give {} = "
            "{}; leave {} out (the state gives it), or set_state / reset_state first",
            name_, v.param, held, k, var->name, var->name, given->value, var->name);
      }
    }
  }
  return all;
}

DLAVM_INLINE void Module::check_states_fit(std::span<const ne::Binding> all) const {
  for (std::size_t i = 0; i < state_.size(); ++i) {
    const auto& v = values_[state_[i].value];
    const auto& next = values_[state_[i].next];
    for (std::size_t k = 0; k < v.shape.size(); ++k) {
      if (v.shape[k].is_const()) continue;
      const auto* var = v.shape[k].as<ne::VarNode>();
      const std::int64_t held = held_length(i, k);
      if (held > var->max)
        raise<CapacityError>(
            "module '{}': state '{}' is full: it holds {} along dim {}, and a run starts from at "
            "most {} (`{}`'s maximum); reset_state() to start over, or build with a larger "
            "maximum",
            name_, v.param, held, k, var->max, var->name);
      // a state held packed: `next` holds the new positions
      const ne::Expr after =
          appended_[i] ? ne::simplify(v.shape[k] + next.logical[k]) : next.logical[k];
      const std::int64_t length = ne::eval(after, all);
      if (length > detail::state_capacity(v.shape[k]))
        raise<CapacityError>(
            "module '{}': state '{}' would hold {} along dim {} (`{}`) after this run, and it "
            "holds at most {} ({}'s maximum {} + 1): a cache too small for this run; "
            "reset_state() to start over, or build with a larger maximum",
            name_, v.param, length, k, after, detail::state_capacity(v.shape[k]), v.shape[k],
            detail::state_capacity(v.shape[k]) - 1);
    }
  }
}

// The regions of one device, allocated on the module's first run there, with the weights
// copied in; freed when the module lets go of them, if the device still exists.
class Module::Resident {
 public:
  Resident(const Module& m, vta::Device& dev) : dev_(&dev), alive_(dev.alive()) {
    for (std::size_t r = 0; r < kRegionCount; ++r) {
      const auto bytes = static_cast<std::size_t>(
          std::max<std::int64_t>(m.plan_.region(static_cast<RegionKind>(r)).bytes, 1));
      buffers_[r] = dev.alloc(bytes);
      allocated_[r] = true;
    }
    for (const auto& v : m.values_)
      if (v.storage.vta && v.storage.region == RegionKind::Weight)
        dev.copy_in(buffer(v.storage.region), static_cast<std::size_t>(v.storage.offset),
                    v.dram->data(), v.dram->size());
  }
  Resident(const Resident&) = delete;
  Resident& operator=(const Resident&) = delete;
  ~Resident() {
    if (!*alive_) return;  // the device, and its memory, are gone
    for (std::size_t r = 0; r < kRegionCount; ++r)
      if (allocated_[r]) dev_->free(buffers_[r]);
  }

  bool on(const vta::Device& dev) const { return alive_.get() == dev.alive().get(); }

  // The stream of VTA step `step` for `bindings`: its DRAM addresses are fixed on this device,
  // and the program sees the symbolic dims only through its operands' packed shapes, so the
  // stream of the last shapes a step ran with is kept and reused (a decode step whose new
  // position stays within the last tile of keys instantiates nothing).
  const vta::Stream& stream(const Module& m, std::size_t step,
                            std::span<const ne::Binding> bindings, bool& instantiated) {
    if (streams_.size() <= step) streams_.resize(step + 1);
    auto& cached = streams_[step];
    const auto& s = m.steps_[step];
    std::vector<std::int64_t> key;
    for (std::size_t i = 0; i <= s.inputs.size(); ++i)
      for (const auto& d : m.values_[i < s.inputs.size() ? s.inputs[i] : s.output].shape)
        key.push_back(d.is_const() ? *d.as_int() : ne::eval(d, bindings));
    instantiated = !cached || cached->first != key;
    if (instantiated) {
      std::vector<std::uint64_t> phys;
      for (const auto in : s.inputs) phys.push_back(this->phys(m.values_[in].storage));
      phys.push_back(this->phys(m.values_[s.output].storage));
      cached.emplace(std::move(key), s.program->instantiate(bindings, phys));
    }
    return cached->second;
  }
  vta::Device& device() const { return *dev_; }
  vta::Buffer buffer(RegionKind r) const { return buffers_[static_cast<std::size_t>(r)]; }
  // Where VTA steps' streams go: the insts and uop regions, one stream at a time.
  vta::StreamPlacement streams() const {
    return {buffer(RegionKind::Insts), 0, buffer(RegionKind::Uop), 0};
  }
  std::uint64_t phys(const Storage& s) const {
    return buffer(s.region).phys + static_cast<std::uint64_t>(s.offset);
  }

 private:
  vta::Device* dev_;
  std::shared_ptr<const bool> alive_;
  vta::Buffer buffers_[kRegionCount]{};
  bool allocated_[kRegionCount]{};
  std::vector<std::optional<std::pair<std::vector<std::int64_t>, vta::Stream>>> streams_;
};

DLAVM_INLINE Module::Resident& Module::resident_on(vta::Device& dev) {
  if (!resident_ || !resident_->on(dev)) {
    resident_.reset();  // the previous device's regions go first
    resident_ = std::make_shared<Resident>(*this, dev);
  }
  return *resident_;
}

DLAVM_INLINE void Module::check_inputs(std::span<const NamedArray> inputs,
                                       std::span<const ne::Binding> bindings,
                                       std::vector<std::optional<te::NDArray>>& arrays) const {
  check_input_names(inputs);
  check_bindings(bindings);
  for (auto p : params_) {
    const auto& v = values_[p];
    const NamedArray* given = nullptr;
    for (const auto& in : inputs)
      if (in.name == v.param) given = &in;
    if (given == nullptr) raise<ValueError>("module '{}': no array for input {}", name_, v.name);
    const auto& a = given->value.get();
    const auto shape = detail::concrete_dims(v.shape, bindings, "input " + v.name);
    if (a.dtype() != v.dtype || a.shape() != shape)
      raise<ShapeError>("module '{}': input {} is {}[{}], expected {}[{}]", name_, v.name,
                        a.dtype(), fmt::join(a.shape(), ", "), v.dtype, fmt::join(shape, ", "));
    arrays[p] = a;
  }
}

// Every array names an input.
DLAVM_INLINE void Module::check_input_names(std::span<const NamedArray> inputs) const {
  for (const auto& in : inputs) {
    bool found = false;
    for (auto p : params_) found = found || values_[p].param == in.name;
    if (found) continue;
    for (const auto& s : state_)
      if (values_[s.value].param == in.name)
        raise<ValueError>(
            "module '{}': '{}' is a state of the module, not an input; set it with "
            "set_state",
            name_, in.name);
    std::vector<std::string> known;
    for (auto p : params_) known.push_back(values_[p].name);
    raise<ValueError>("module '{}': '{}' is not an input (its inputs: {})", name_, in.name,
                      fmt::join(known, ", "));
  }
}

// Every symbolic dim of the inputs is bound, within its range.
DLAVM_INLINE void Module::check_bindings(std::span<const ne::Binding> bindings) const {
  for (auto p : params_)
    for (const auto& d : values_[p].logical)
      for (const auto& v : ne::free_vars(d)) {
        const auto* var = v.as<ne::VarNode>();
        const ne::Binding* b = nullptr;
        for (const auto& x : bindings)
          if (x.name == var->name) b = &x;
        if (b == nullptr)
          raise<ValueError>(
              "module '{}': symbolic dim '{}' of input {} has no value; pass "
              "{{\"{}\", value}} in the bindings",
              name_, var->name, values_[p].name, var->name);
        if (b->value < var->min || b->value > var->max)
          raise<ValueError>("module '{}': symbolic dim '{}' = {} is outside its range [{}, {}]",
                            name_, var->name, b->value, var->min, var->max);
      }
}

DLAVM_INLINE StepStats Module::run_vta(Resident& r, std::size_t index,
                                       std::span<const ne::Binding> bindings,
                                       const std::string& dump_dir) const {
  const ModuleStep& step = steps_[index];
  bool instantiated = false;
  const vta::Stream& stream = r.stream(*this, index, bindings, instantiated);
  // a dump: the parameters' slots as VTA reads them, the output's as it leaves it
  std::string dir;
  std::vector<vta::ManifestBuffer> dumped;
  const auto dump = [&](std::size_t v, bool output) {
    const auto& value = values_[v];
    std::vector<std::byte> bytes(static_cast<std::size_t>(value.storage.bytes));
    r.device().copy_out(r.buffer(value.storage.region),
                        static_cast<std::size_t>(value.storage.offset), bytes.data(), bytes.size());
    std::string name = fmt::format("v{}", v);
    for (char c : value.name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    vta::write_dram_image(dir + "/" + name + ".bin", bytes);
    dumped.push_back(
        {name, r.phys(value.storage), bytes.size(), value.dtype, output, name + ".bin"});
  };
  if (!dump_dir.empty()) {
    dir = fmt::format("{}/step{:02}_{}", dump_dir, index, step.program->name());
    std::filesystem::create_directories(dir);
    for (auto in : step.inputs) dump(in, false);
  }
  const vta::RunResult result = r.device().run_at(stream, r.streams());
  if (!dump_dir.empty()) {
    dump(step.output, true);
    vta::dump_stream(dir, env_.config, stream, r.buffer(RegionKind::Uop).phys, std::move(dumped));
  }
  StepStats s;
  s.instructions = stream.insns.size();
  s.uops = stream.uops.size();
  s.cycles = result.timing.total_cycles;
  s.roofline_cycles = result.timing.roofline_cycles;
  s.dram_bytes = result.timing.counters.memory_bytes();
  s.data_bytes = s.dram_bytes - result.timing.counters.uop_load_bytes;
  s.gemm_macs = result.timing.counters.gemm_macs(env_.config);
  s.tiling_bytes = ne::eval(step.traffic, bindings);
  s.macs = ne::eval(step.macs, bindings);
  s.instantiated = instantiated;
  return s;
}

DLAVM_INLINE std::vector<te::NDArray> Module::run(vta::Device& dev,
                                                  std::span<const NamedArray> inputs,
                                                  std::span<const ne::Binding> given_bindings,
                                                  const ModuleRunOptions& options) {
  if (dev.config() != env_.config)
    raise<ValueError>(
        "module '{}': built for a VTA of BATCH {}, BLOCK_IN {}, BLOCK_OUT {} and its SRAM sizes; "
        "the device is configured otherwise (BATCH {}, BLOCK_IN {}, BLOCK_OUT {}, or other "
        "sizes): build with graph::Target{{.env = vta::Env(device config)}}",
        name_, env_.batch, env_.block_in, env_.block_out, dev.config().batch(),
        dev.config().block_in(), dev.config().block_out());
  // host copies of the values; a value VTA wrote is in device memory until a reader asks
  std::vector<std::optional<te::NDArray>> arrays(values_.size());
  const std::vector<ne::Binding> with_states = bind_states(given_bindings);
  const std::span<const ne::Binding> bindings = with_states;
  check_inputs(inputs, bindings, arrays);
  check_states_fit(bindings);
  Resident& resident = resident_on(dev);
  const auto host_array = [&](std::size_t v) -> const te::NDArray& {
    const auto& value = values_[v];
    if (value.constant) return *value.constant;
    if (!arrays[v]) {  // VTA wrote it: copy it out at the bindings' shape
      te::NDArray a(value.dtype,
                    detail::concrete_dims(value.shape, bindings, "value " + value.name));
      std::vector<std::uint8_t> bytes(a.size() * static_cast<std::size_t>(value.dtype.bytes()));
      dev.copy_out(resident.buffer(value.storage.region),
                   static_cast<std::size_t>(value.storage.offset), bytes.data(), bytes.size());
      vta::from_dram_bytes(bytes, a);
      arrays[v] = std::move(a);
    }
    return *arrays[v];
  };
  // a host result VTA reads goes to its device slot
  const auto to_device = [&](std::size_t v) {
    const auto& value = values_[v];
    if (!value.storage.vta) return;
    const auto bytes = vta::dram_bytes(*arrays[v]);
    dev.copy_in(resident.buffer(value.storage.region),
                static_cast<std::size_t>(value.storage.offset), bytes.data(), bytes.size());
  };
  // a state held packed is read only through its packed value (unpacked here if kept)
  for (std::size_t i = 0; i < state_.size(); ++i)
    if (!appended_[i] || options.keep_values)
      arrays[state_[i].value] = state(values_[state_[i].value].param);
  for (auto p : params_) to_device(p);
  for (const auto& s : state_) to_device(s.value);
  ModuleRun run;
  std::vector<const te::NDArray*> args;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const ModuleStep& step = steps_[i];
    StepStats s;
    const auto start = std::chrono::steady_clock::now();
    switch (step.kind) {
      case ModuleStep::Kind::Vta:
        s = run_vta(resident, i, bindings, options.dump_dir);
        arrays[step.output].reset();
        // the plan gives its bytes to later values after its last reader: keep it now
        if (options.keep_values) host_array(step.output);
        run.vta_cycles += s.cycles;
        break;
      case ModuleStep::Kind::Host:
        args.clear();
        for (auto in : step.inputs) args.push_back(&host_array(in));
        arrays[step.output] = ops_->at(step.op).host_kernel(args, step.attrs);
        to_device(step.output);
        break;
      case ModuleStep::Kind::Pack:
        arrays[step.output] = pack(host_array(step.inputs[0]), values_[step.output].layout);
        to_device(step.output);
        break;
      case ModuleStep::Kind::Unpack: {
        const auto& v = values_[step.inputs[0]];
        const auto shape = detail::concrete_dims(v.logical, bindings, "value " + v.name);
        arrays[step.output] = unpack(host_array(step.inputs[0]), v.layout, shape);
        to_device(step.output);
        break;
      }
      case ModuleStep::Kind::Append: {
        AppendedState& held = *appended_[appended_by(i)];
        held.append(host_array(step.inputs[0]));
        const auto& slot = values_[step.output].storage;
        dev.copy_in(resident.buffer(slot.region), static_cast<std::size_t>(slot.offset),
                    held.bytes().data(), held.bytes().size());
        arrays[step.output].reset();  // in device memory
        break;
      }
    }
    if (step.kind != ModuleStep::Kind::Vta)
      s.host_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.steps.push_back(s);
  }
  for (auto r : results_) run.outputs.push_back(host_array(r));
  for (std::size_t i = 0; i < state_.size(); ++i) {
    if (appended_[i]) {
      appended_[i]->commit();
      stale_[i] = true;
    } else {
      state_values_[i] = host_array(state_[i].next);
    }
  }
  for (const auto& b : bindings) run.bindings.emplace_back(std::string(b.name), b.value);
  if (options.keep_values) {
    for (std::size_t v = 0; v < values_.size(); ++v) arrays[v] = host_array(v);
    run.values = std::move(arrays);
  }
  last_ = std::move(run);
  return last_->outputs;
}

DLAVM_INLINE te::NDArray Module::value_of(std::string_view node) const {
  const ModuleRun& run = last_run();
  if (run.values.empty())
    raise<ValueError>("module '{}': the last run kept no values; run with {{.keep_values = true}}",
                      name_);
  // "%3", "%fc1", or the bare name "fc1"
  const std::string printed =
      !node.empty() && node.front() == '%' ? std::string(node) : printed_name(node);
  std::optional<std::size_t> found;
  for (std::size_t v = 0; v < values_.size(); ++v)
    if (values_[v].node == printed && run.values[v] &&
        (!found || values_[v].layout.kind == Layout::Kind::Plain))
      found = v;
  if (!found) raise<ValueError>("module '{}': no value holds node {}", name_, node);
  const auto& v = values_[*found];
  if (v.layout.kind == Layout::Kind::Plain) return *run.values[*found];
  std::vector<ne::Binding> b;
  for (const auto& [name, value] : run.bindings) b.push_back({name, value});
  return unpack(*run.values[*found], v.layout,
                detail::concrete_dims(v.logical, b, "value " + v.name));
}

DLAVM_INLINE const ModuleRun& Module::last_run() const {
  if (!last_) raise<ValueError>("module '{}': not run yet; call run() first", name_);
  return *last_;
}

namespace detail {

inline std::string_view step_kind_name(ModuleStep::Kind k) {
  switch (k) {
    case ModuleStep::Kind::Host:
      return "host";
    case ModuleStep::Kind::Pack:
      return "pack";
    case ModuleStep::Kind::Unpack:
      return "unpack";
    case ModuleStep::Kind::Vta:
      return "vta";
    case ModuleStep::Kind::Append:
      return "append";
  }
  return "?";
}

}  // namespace detail

DLAVM_INLINE std::string Module::summary() const {
  const ModuleRun& run = last_run();
  std::string out = fmt::format("module '{}': {} steps\n", name_, steps_.size());
  out += fmt::format("{:>3}  {:<48} {:<6} {:>7} {:>6} {:>10} {:>9} {:>11} {:>7}\n", "#", "step",
                     "device", "insns", "uops", "cycles", "roofline", "DRAM bytes", "/tiling");
  std::uint64_t roofline = 0, gemm_macs = 0;
  std::int64_t macs = 0;
  double host = 0;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const auto& step = steps_[i];
    const auto& s = run.steps[i];
    std::string label = step.label;
    if (label.size() > 48) label = label.substr(0, 45) + "...";
    if (step.kind == ModuleStep::Kind::Vta) {
      roofline += s.roofline_cycles;
      gemm_macs += s.gemm_macs;
      macs += s.macs;
      out += fmt::format("{:>3}  {:<48} {:<6} {:>7} {:>6} {:>10} {:>8.1f}% {:>11} {:>6.2f}x\n", i,
                         label, "vta", s.instructions, s.uops, s.cycles,
                         s.cycles == 0 ? 0.0
                                       : 100.0 * static_cast<double>(s.roofline_cycles) /
                                             static_cast<double>(s.cycles),
                         s.dram_bytes,
                         s.tiling_bytes == 0 ? 0.0
                                             : static_cast<double>(s.data_bytes) /
                                                   static_cast<double>(s.tiling_bytes));
    } else {
      host += s.host_seconds;
      out += fmt::format("{:>3}  {:<48} {:<6} {:>7} {:>6} {:>10} {:>9} {:>11} {:>7}\n", i, label,
                         detail::step_kind_name(step.kind) == "host" ? "host" : "host*", "-", "-",
                         fmt::format("{:.2f}ms", s.host_seconds * 1e3), "-", "-", "-");
    }
  }
  const double per_cycle = static_cast<double>(env_.batch * env_.block_in * env_.block_out);
  out += fmt::format(
      "VTA: {} cycles (roofline bound {}, {:.1f}%); {} MACs of the model / {} per cycle = {:.0f} "
      "cycles ({:.1f}% of the VTA cycles); the GEMM core ran {} MACs (tile padding included)\n",
      run.vta_cycles, roofline,
      run.vta_cycles == 0
          ? 0.0
          : 100.0 * static_cast<double>(roofline) / static_cast<double>(run.vta_cycles),
      macs, per_cycle, static_cast<double>(macs) / per_cycle,
      run.vta_cycles == 0
          ? 0.0
          : 100.0 * static_cast<double>(macs) / per_cycle / static_cast<double>(run.vta_cycles),
      gemm_macs);
  out += fmt::format("host: {:.2f} ms (host* = layout conversions)\n", host * 1e3);
  return out;
}

DLAVM_INLINE std::string Module::to_string() const {
  std::string out = fmt::format("module {} {{\n", name_);
  const auto type_of = [&](const ModuleValue& v) {
    return fmt::format("{} {}", shape_text(v.shape), v.dtype);
  };
  for (auto p : params_)
    out += fmt::format("  {} = param {}\n", values_[p].name, type_of(values_[p]));
  for (const auto& s : state_)
    out += fmt::format("  {} = state {}\n", values_[s.value].name, type_of(values_[s.value]));
  for (const auto& v : values_)
    if (v.kind == ModuleValue::Kind::Constant)
      out += fmt::format("  {} = constant {}\n", v.name, type_of(v));
  for (const auto& step : steps_) {
    std::vector<std::string> args;
    for (auto in : step.inputs) args.push_back(values_[in].name);
    const auto& o = values_[step.output];
    switch (step.kind) {
      case ModuleStep::Kind::Vta:
        out += fmt::format("  {} = vta.{}({}) /* {}; {}; tiling {} */\n", o.name, step.op,
                           fmt::join(args, ", "), type_of(o),
                           step.epilogue.empty() ? "no epilogue" : step.epilogue, step.tiling);
        break;
      case ModuleStep::Kind::Host:
        out +=
            fmt::format("  {} = host.{}({}{}{}) /* {} */\n", o.name, step.op, fmt::join(args, ", "),
                        step.attrs.empty() ? "" : ", ", step.attrs, type_of(o));
        break;
      default:
        out += fmt::format("  {} = host.{}({}) /* {} */\n", o.name,
                           detail::step_kind_name(step.kind), fmt::join(args, ", "), type_of(o));
        break;
    }
  }
  for (const auto& s : state_)
    out += s.packed
               ? fmt::format("  next {} = {} with {} appended, held as {}\n", values_[s.value].name,
                             values_[s.value].name, values_[s.next].name, values_[*s.packed].name)
               : fmt::format("  next {} = {}\n", values_[s.value].name, values_[s.next].name);
  std::vector<std::string> results;
  for (auto r : results_) results.push_back(values_[r].name);
  out += fmt::format("  return {}\n}}\n", fmt::join(results, ", "));
  return out;
}

}  // namespace dlavm::graph
