// Definitions for graph/module.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/functor.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <map>

namespace dlavm::graph {

DLAVM_INLINE Module::Module(std::string name, vta::Env env, std::vector<ModuleValue> values,
                            std::vector<ModuleStep> steps, std::vector<std::size_t> params,
                            std::vector<std::size_t> results)
    : name_(std::move(name)),
      env_(std::move(env)),
      values_(std::move(values)),
      steps_(std::move(steps)),
      params_(std::move(params)),
      results_(std::move(results)) {}

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

DLAVM_INLINE StepStats Module::run_vta(vta::Device& dev, const ModuleStep& step,
                                       std::span<const ne::Binding> bindings,
                                       std::vector<std::optional<te::NDArray>>& arrays) const {
  std::vector<vta::Buffer> buffers;
  struct Release {
    vta::Device& dev;
    std::vector<vta::Buffer>& buffers;
    ~Release() {
      for (const auto& b : buffers) dev.free(b);
    }
  } release{dev, buffers};
  std::vector<std::uint64_t> phys;
  for (const auto in : step.inputs) {
    const auto& v = values_[in];
    std::vector<std::uint8_t> serialized;
    if (!v.dram) serialized = vta::dram_bytes(*arrays[in]);
    const std::span<const std::uint8_t> bytes = v.dram ? *v.dram : serialized;
    buffers.push_back(dev.alloc(std::max<std::size_t>(bytes.size(), 1)));
    dev.copy_in(buffers.back(), 0, bytes.data(), bytes.size());
    phys.push_back(buffers.back().phys);
  }
  const auto& out = values_[step.output];
  auto out_shape = detail::concrete_dims(out.shape, bindings, "value " + out.name);
  std::size_t count = 1;
  for (auto d : out_shape) count *= static_cast<std::size_t>(d);
  const std::size_t out_bytes = count * static_cast<std::size_t>(out.dtype.bytes());
  buffers.push_back(dev.alloc(std::max<std::size_t>(out_bytes, 1)));
  phys.push_back(buffers.back().phys);
  const vta::Stream stream = step.program->instantiate(bindings, phys);
  const vta::RunResult result = dev.run(stream);
  std::vector<std::uint8_t> bytes(out_bytes);
  dev.copy_out(buffers.back(), 0, bytes.data(), bytes.size());
  te::NDArray out_array(out.dtype, std::move(out_shape));
  vta::from_dram_bytes(bytes, out_array);
  arrays[step.output] = std::move(out_array);
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
  return s;
}

DLAVM_INLINE std::vector<te::NDArray> Module::run(vta::Device& dev,
                                                  std::span<const NamedArray> inputs,
                                                  std::span<const ne::Binding> bindings,
                                                  const ModuleRunOptions& options) {
  if (dev.config() != env_.config)
    raise<ValueError>(
        "module '{}': built for a VTA of BATCH {}, BLOCK_IN {}, BLOCK_OUT {} and its SRAM sizes; "
        "the device is configured otherwise (BATCH {}, BLOCK_IN {}, BLOCK_OUT {}, or other "
        "sizes): build with graph::Target{{.env = vta::Env(device config)}}",
        name_, env_.batch, env_.block_in, env_.block_out, dev.config().batch(),
        dev.config().block_in(), dev.config().block_out());
  std::vector<std::optional<te::NDArray>> arrays(values_.size());
  check_inputs(inputs, bindings, arrays);
  const auto array_of = [&](std::size_t v) -> const te::NDArray& {
    return values_[v].constant ? *values_[v].constant : *arrays[v];
  };
  ModuleRun run;
  for (const auto& step : steps_) {
    StepStats s;
    const auto start = std::chrono::steady_clock::now();
    switch (step.kind) {
      case ModuleStep::Kind::Vta:
        s = run_vta(dev, step, bindings, arrays);
        run.vta_cycles += s.cycles;
        break;
      case ModuleStep::Kind::Host: {
        std::vector<const te::NDArray*> args;
        for (auto in : step.inputs) args.push_back(&array_of(in));
        arrays[step.output] = step.kernel(args, step.attrs);
        break;
      }
      case ModuleStep::Kind::Pack:
        arrays[step.output] = pack(array_of(step.inputs[0]), values_[step.output].layout);
        break;
      case ModuleStep::Kind::Unpack: {
        const auto& v = values_[step.inputs[0]];
        const auto shape = detail::concrete_dims(v.logical, bindings, "value " + v.name);
        arrays[step.output] = unpack(array_of(step.inputs[0]), v.layout, shape);
        break;
      }
    }
    if (step.kind != ModuleStep::Kind::Vta)
      s.host_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.steps.push_back(s);
  }
  for (auto r : results_) run.outputs.push_back(array_of(r));
  for (const auto& b : bindings) run.bindings.emplace_back(std::string(b.name), b.value);
  if (options.keep_values) {
    for (std::size_t v = 0; v < values_.size(); ++v)
      if (values_[v].constant) arrays[v] = *values_[v].constant;
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
  std::vector<std::string> results;
  for (auto r : results_) results.push_back(values_[r].name);
  out += fmt::format("  return {}\n}}\n", fmt::join(results, ", "));
  return out;
}

}  // namespace dlavm::graph
