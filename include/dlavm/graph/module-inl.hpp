// Definitions for graph/module.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/bounds.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace dlavm::graph {

namespace detail {

// The bytes of a value at the maxima of its dims (saturating far past any address space).
inline std::int64_t max_bytes(const ModuleValue& v) {
  std::int64_t bytes = v.dtype.bytes();
  for (const auto& d : v.shape) {
    const auto n = std::max<std::int64_t>(ne::bounds(d).max, 0);
    bytes = n != 0 && bytes > (std::int64_t{1} << 50) / n ? std::int64_t{1} << 50 : bytes * n;
  }
  return bytes;
}

// The bytes of a state held packed (ModuleState::packed) at its capacity: its growing dim's
// maximum + 1 positions, permuted and packed.
inline std::int64_t appended_bytes(const ModuleValue& state, const ModuleState& s,
                                   const ModuleValue& packed) {
  std::vector<ne::Expr> dims;
  for (const auto p : s.perm) {
    const auto& d = state.shape[static_cast<std::size_t>(p)];
    const auto* v = d.as<ne::VarNode>();
    dims.emplace_back(v != nullptr ? v->max + 1 : *d.as_int());
  }
  std::int64_t n = packed.dtype.bytes();
  for (const auto& d : packed_shape(packed.layout, dims)) n *= ne::bounds(d).max;
  return n;
}

inline RegionKind region_of(ModuleValue::Kind k) {
  switch (k) {
    case ModuleValue::Kind::Constant:
      return RegionKind::Weight;
    case ModuleValue::Kind::State:
      return RegionKind::Cache;
    case ModuleValue::Kind::Param:
    case ModuleValue::Kind::Temp:
      return RegionKind::Runtime;
  }
  return RegionKind::Runtime;
}

// One request per value: its region, its bytes at the dims' maxima, its lifetime (written by a
// step, params and constants before the first; read by steps, results and the states' next
// values after the last).
inline PlanRequest memory_request(const vta::Env& env, const std::vector<ModuleValue>& values,
                                  const std::vector<ModuleStep>& steps,
                                  const ModuleSignature& sig) {
  PlanRequest req;
  req.steps = static_cast<std::int64_t>(steps.size());
  for (const auto& v : values)
    req.buffers.push_back({v.name, region_of(v.kind), max_bytes(v), -1, -1});
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto t = static_cast<std::int64_t>(i);
    for (auto in : steps[i].inputs) req.buffers[in].last = std::max(req.buffers[in].last, t);
    auto& out = req.buffers[steps[i].output];
    out.first = t;
    out.last = std::max(out.last, t);
  }
  for (auto r : sig.results) req.buffers[r].last = req.steps;
  for (const auto& s : sig.state) {
    if (!s.packed) {
      req.buffers[s.next].last = req.steps;
      continue;
    }
    // held packed: the packed value at the state's capacity, and in the state's own slot its
    // counters (positions held, laid out for, written: runtime::append_packed's `held`)
    req.buffers[s.value].bytes = 3 * 8;
    req.buffers[*s.packed].bytes = appended_bytes(values[s.value], s, values[*s.packed]);
  }
  vta::StreamBound streams;
  for (const auto& s : steps)
    if (s.kind == ModuleStep::Kind::Vta) {
      const auto bound = s.program->stream_bound();
      streams.insns = std::max(streams.insns, bound.insns);
      streams.uops = std::max(streams.uops, bound.uops);
    }
  req.insts_bytes = streams.insns * 16;
  req.uop_bytes = streams.uops * 4;
  // every DRAM address VTA reads is a whole number of its elements
  for (int mem = 0; mem < runtime::kMemIdCount; ++mem)
    req.min_alignment = std::max<std::int64_t>(
        req.min_alignment,
        static_cast<std::int64_t>(env.config.elem_bytes(static_cast<runtime::MemId>(mem))));
  return req;
}

}  // namespace detail

DLAVM_INLINE Module::Module(std::string name, vta::Env env, std::shared_ptr<const OpRegistry> ops,
                            std::vector<ModuleValue> values, std::vector<ModuleStep> steps,
                            ModuleSignature signature, const PlanOptions& plan)
    : name_(std::move(name)),
      env_(std::move(env)),
      ops_(std::move(ops)),
      values_(std::move(values)),
      steps_(std::move(steps)),
      signature_(std::move(signature)) {
  plan_ = plan_memory(detail::memory_request(env_, values_, steps_, signature_), plan);
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

DLAVM_INLINE PlanRequest memory_request(const Module& m) {
  return detail::memory_request(m.env(), m.values(), m.steps(), m.signature());
}

DLAVM_INLINE MemoryPlan plan_memory(const Module& m, const PlanOptions& options) {
  return plan_memory(memory_request(m), options);
}

DLAVM_INLINE std::size_t Module::state_index(std::string_view name) const {
  const auto& states = signature_.state;
  for (std::size_t i = 0; i < states.size(); ++i)
    if (values_[states[i].value].param == name) return i;
  std::vector<std::string_view> names;
  for (const auto& s : states) names.push_back(values_[s.value].param);
  raise<ValueError>(
      "module '{}': '{}' is not a state (its states: {})", name_, name,
      names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
}

DLAVM_INLINE std::size_t Module::growing_dim(std::size_t i) const {
  const auto& shape = values_[signature_.state[i].value].shape;
  for (std::size_t k = 0; k < shape.size(); ++k)
    if (!shape[k].is_const()) return k;
  raise<ValueError>("internal: module '{}': state {} held packed has no growing dim, please report",
                    name_, values_[signature_.state[i].value].name);
}

DLAVM_INLINE std::size_t Module::appended_by(std::size_t step) const {
  const auto& states = signature_.state;
  for (std::size_t i = 0; i < states.size(); ++i)
    if (states[i].packed == steps_[step].output) return i;
  raise<ValueError>("internal: module '{}': append step {} writes no state, please report", name_,
                    step);
}

DLAVM_INLINE std::size_t Module::value_of(std::string_view node) const {
  // "%3", "%fc1", or the bare name "fc1"
  const std::string printed =
      !node.empty() && node.front() == '%' ? std::string(node) : printed_name(node);
  std::optional<std::size_t> found;
  for (std::size_t v = 0; v < values_.size(); ++v)
    if (values_[v].node == printed &&
        (!found || values_[*found].layout.kind != Layout::Kind::Plain))
      found = v;
  if (!found) {
    for (std::size_t k = 0; k < steps_.size(); ++k)
      if (std::ranges::find(steps_[k].fused, printed) != steps_[k].fused.end())
        raise<ValueError>(
            "module '{}': node {} was fused into VTA step {} ({}), which keeps only its result; "
            "graph::evaluate_trace gives every node's value",
            name_, printed, k, steps_[k].label);
    raise<ValueError>("module '{}': no value holds node {}", name_, node);
  }
  return *found;
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

DLAVM_INLINE std::string Module::to_string() const {
  std::string out = fmt::format("module {} {{\n", name_);
  const auto type_of = [&](const ModuleValue& v) {
    return fmt::format("{} {}", shape_text(v.shape), v.dtype);
  };
  for (auto p : signature_.params)
    out += fmt::format("  {} = param {}\n", values_[p].name, type_of(values_[p]));
  for (const auto& s : signature_.state)
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
  for (const auto& s : signature_.state)
    out += s.packed
               ? fmt::format("  next {} = {} with {} appended, held as {}\n", values_[s.value].name,
                             values_[s.value].name, values_[s.next].name, values_[*s.packed].name)
               : fmt::format("  next {} = {}\n", values_[s.value].name, values_[s.next].name);
  std::vector<std::string> results;
  for (auto r : signature_.results) results.push_back(values_[r].name);
  out += fmt::format("  return {}\n}}\n", fmt::join(results, ", "));
  return out;
}

}  // namespace dlavm::graph
