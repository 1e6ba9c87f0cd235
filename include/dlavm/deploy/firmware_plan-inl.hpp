// Definitions for deploy/firmware_plan.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/deploy/firmware_plan.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/runtime/model_file.hpp>
#include <dlavm/vta/codegen.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>

namespace dlavm::deploy {

DLAVM_INLINE std::optional<std::string> firmware_ctype(DType t) {
  if (t == DType::float32()) return "float";
  if (t.lanes() != 1 || t.is_float()) return std::nullopt;
  if (t.bits() != 8 && t.bits() != 16 && t.bits() != 32 && t.bits() != 64) return std::nullopt;
  return fmt::format("std::{}int{}_t", t.is_uint() ? "u" : "", t.bits());
}

namespace detail {

using graph::FirmwareArg;
using graph::FirmwareCall;
using graph::ModuleStep;
using LayoutKind = graph::Layout::Kind;

class FirmwarePlanner {
 public:
  FirmwarePlanner(const graph::Module& m, const EmitOptions& o)
      : m_(m), p_{.module = m, .ns = o.ns.empty() ? m.name() : o.ns, .options = o} {}

  FirmwarePlan run() {
    collect_dims();
    check_states();
    check_dtypes();
    group_steps();
    size_streams();
    plan_memory();
    plan_states();
    run_steps();
    encode_static();
    weights_image();
    insts_payload();
    return std::move(p_);
  }

 private:
  [[noreturn]] void refuse(const ModuleStep& s, std::string_view why) const {
    raise<ValueError>("deploy::emit: module '{}', step {}: {}", m_.name(), s.label, why);
  }
  void check_dtype(std::size_t v) const {
    const auto& value = m_.values()[v];
    if (!firmware_ctype(value.dtype))
      raise<TypeError>(
          "deploy::emit: value {} is {}, which firmware does not hold (8 to 64-bit integers and "
          "float32)",
          value.name, value.dtype);
  }

  // ---- dims and states --------------------------------------------------------------------

  void collect_dims() {
    const auto& sig = m_.signature();
    for (auto p : sig.params)
      for (const auto& d : m_.values()[p].logical)
        for (const auto& v : ne::free_vars(d))
          if (std::none_of(p_.dims.begin(), p_.dims.end(),
                           [&](const FirmwareDim& x) { return x.var.id() == v.id(); }))
            p_.dims.push_back({v, std::nullopt});
    p_.param_dims = p_.dims.size();
    // after them, the growing dims of the states held packed: what each holds, not arguments
    for (std::size_t i = 0; i < sig.state.size(); ++i) {
      if (!sig.state[i].packed) continue;
      for (const auto& d : m_.values()[sig.state[i].value].shape)
        if (d.as<ne::VarNode>() != nullptr)
          p_.dims.push_back(
              {ne::Var(d), i, 0, m_.values()[sig.state[i].next].logical[m_.growing_dim(i)]});
    }
  }

  // Every value run() reads or writes through the header (params, results, states and the
  // steps' operands) has a type firmware holds.
  void check_dtypes() const {
    const auto& sig = m_.signature();
    for (auto v : sig.params) check_dtype(v);
    for (auto v : sig.results) check_dtype(v);
    for (const auto& st : sig.state) {
      check_dtype(st.value);
      check_dtype(st.next);
      if (st.packed) check_dtype(*st.packed);
    }
    for (const auto& s : m_.steps()) {
      for (auto in : s.inputs) check_dtype(in);
      check_dtype(s.output);
    }
  }

  // The states after a run: counters advanced, or next values copied (memory planned).
  void plan_states() {
    const auto& sig = m_.signature();
    for (auto& d : p_.dims)
      if (d.state) d.counters = p_.memory.address(sig.state[*d.state].value);
    for (std::size_t i = 0; i < sig.state.size(); ++i) {
      const auto& st = sig.state[i];
      StateCommit c{.state = i};
      if (st.packed) {
        c.counters = p_.memory.address(st.value);
        c.rows = m_.values()[st.next].logical[m_.growing_dim(i)];
      } else {
        c.from = st.next;
        c.to = st.value;
        c.bytes = p_.memory.buffers[st.value].bytes;
      }
      p_.commits.push_back(std::move(c));
    }
  }

  // Every state has a constant shape (the firmware copies a state's whole buffer after a run),
  // or is a growing one held packed (appended to in place).
  void check_states() const {
    for (const auto& st : m_.signature().state)
      for (const auto& d : m_.values()[st.value].shape) {
        // open() zeroes the counters: a state starts empty, where Executor::run starts it at
        // its dim's minimum
        if (const auto* v = d.as<ne::VarNode>(); v != nullptr && v->min != 0)
          raise<ValueError>(
              "deploy::emit: module '{}': state {} grows along `{}` of minimum {}; the firmware "
              "header starts every state empty (0 positions): give the dim minimum 0",
              m_.name(), m_.values()[st.value].name, d, v->min);
        if (!d.is_const() && !st.packed)
          raise<ValueError>(
              "deploy::emit: module '{}': state {} grows along `{}`; the firmware header keeps "
              "states of constant shape, or a growing state that only VTA matmuls read (held "
              "packed, appended to in place)",
              m_.name(), m_.values()[st.value].name, d);
      }
  }

  // ---- streams ----------------------------------------------------------------------------

  bool is_static(std::size_t step) const {
    const auto& s = m_.steps()[step];
    return s.kind == ModuleStep::Kind::Vta && vta::dims_read(*s.program).empty();
  }
  void group_steps() {
    for (std::size_t i = 0; i < m_.steps().size(); ++i) {
      if (m_.steps()[i].kind != ModuleStep::Kind::Vta) continue;
      if (!is_static(i)) {
        p_.replayed.push_back(i);
        continue;
      }
      auto& streams = p_.streams;
      const bool join = p_.options.lite && !streams.empty() && streams.back().steps.back() + 1 == i;
      if (!join) streams.emplace_back();
      streams.back().steps.push_back(i);
    }
  }
  std::vector<std::uint64_t> phys_of(const ModuleStep& s, bool planned) const {
    std::vector<std::uint64_t> phys;
    for (auto in : s.inputs) phys.push_back(planned ? p_.memory.address(in) : 0);
    phys.push_back(planned ? p_.memory.address(s.output) : 0);
    return phys;
  }
  vta::Stream group_stream(const StaticStream& g, bool planned) const {
    vta::Builder b(m_.env().config);
    for (std::size_t k = 0; k < g.steps.size(); ++k) {
      const auto& s = m_.steps()[g.steps[k]];
      if (k > 0) b.barrier();
      s.program->write(b, {}, phys_of(s, planned));
    }
    b.finish();
    return b.take();
  }
  // The insts and uop regions: a slot per static stream, then one for the replayed steps.
  void size_streams() {
    for (auto& g : p_.streams) {
      const auto s = group_stream(g, false);
      g.insn_addr = static_cast<std::uint64_t>(insts_bytes_);  // offsets until the plan
      g.uop_addr = static_cast<std::uint64_t>(uop_bytes_);
      insts_bytes_ += static_cast<std::int64_t>(s.insn_bytes());
      uop_bytes_ += static_cast<std::int64_t>(s.uop_bytes());
    }
    auto& w = p_.workspace;
    w.insn_addr = static_cast<std::uint64_t>(insts_bytes_);
    w.uop_addr = static_cast<std::uint64_t>(uop_bytes_);
    for (auto i : p_.replayed) {
      const auto& prog = *m_.steps()[i].program;
      w.insns = std::max(w.insns, prog.stream_bound().insns);
      w.uops = std::max(w.uops, prog.stream_bound().uops);
      w.ops = std::max(w.ops, prog.max_kernel_ops());
      w.regions = std::max(w.regions, prog.regions().size());
      w.params = std::max(w.params, prog.func().params.size());
    }
    insts_bytes_ += w.insns * 16;
    uop_bytes_ += w.uops * 4;
  }
  void plan_memory() {
    auto request = graph::memory_request(m_);
    request.insts_bytes = insts_bytes_;
    request.uop_bytes = uop_bytes_;
    p_.memory = graph::plan_memory(request, p_.options.plan);
    const auto insts = p_.memory.region(graph::RegionKind::Insts).base;
    const auto uops = p_.memory.region(graph::RegionKind::Uop).base;
    for (auto& g : p_.streams) {
      g.insn_addr += insts;
      g.uop_addr += uops;
    }
    p_.workspace.insn_addr += insts;
    p_.workspace.uop_addr += uops;
  }
  // The static streams at their planned addresses, LOAD UOPs pointing at their slots.
  void encode_static() {
    const auto& layout = m_.env().config.layout();
    for (auto& g : p_.streams) {
      g.stream = group_stream(g, true);
      std::vector<runtime::InsnWord> words(g.stream.insns.size());
      if (!g.stream.relocate(g.uop_addr / 4, words.data()))
        raise<CapacityError>(
            "deploy::emit: module '{}': a micro-op address past 0x{:x} does not fit a LOAD's "
            "dram_base",
            m_.name(), g.uop_addr);
      g.stream.insns = std::move(words);
      g.stream.uop_relocs.clear();
      for (std::size_t i = 0; i < g.stream.insns.size(); ++i) {
        const auto f = runtime::unpack(layout, g.stream.insns[i]);
        if ((f.opcode == runtime::Opcode::Load || f.opcode == runtime::Opcode::Store) &&
            f.x_size > 0)
          g.relocs.push_back(static_cast<std::uint32_t>(i));
      }
    }
  }

  // ---- the files' payloads ----------------------------------------------------------------

  void weights_image() {
    const auto& region = p_.memory.region(graph::RegionKind::Weight);
    auto& image = p_.weights;
    image.assign(static_cast<std::size_t>(region.bytes), 0);
    for (std::size_t v = 0; v < m_.values().size(); ++v) {
      const auto& value = m_.values()[v];
      if (value.kind != graph::ModuleValue::Kind::Constant) continue;
      const auto offset = static_cast<std::size_t>(p_.memory.buffers[v].offset);
      if (value.dram) {
        std::copy(value.dram->begin(), value.dram->end(), image.begin() + offset);
      } else if (value.dtype.is_float()) {
        const auto f = value.constant->fdata();
        std::memcpy(image.data() + offset, f.data(), f.size() * sizeof(float));
      } else {
        const auto bytes = vta::dram_bytes(*value.constant);
        std::copy(bytes.begin(), bytes.end(), image.begin() + offset);
      }
    }
  }
  void insts_payload() {
    const auto& layout = m_.env().config.layout();
    for (const auto& g : p_.streams) {
      for (const auto& w : g.stream.insns) {
        for (int h = 0; h < 2; ++h)
          for (int b = 0; b < 8; ++b)
            p_.insts.push_back(static_cast<std::uint8_t>(w.word[h] >> (8 * b)));
        ++p_.queue_insns[static_cast<std::size_t>(runtime::queue_of(runtime::unpack(layout, w))) -
                         1];
      }
      for (auto u : g.stream.uops)
        for (int b = 0; b < 4; ++b) p_.insts.push_back(static_cast<std::uint8_t>(u >> (8 * b)));
      p_.uop_words += static_cast<std::uint32_t>(g.stream.uops.size());
    }
  }

  // ---- run() ------------------------------------------------------------------------------

  void run_steps() {
    std::size_t stream = 0;
    for (std::size_t i = 0; i < m_.steps().size(); ++i) {
      const auto& s = m_.steps()[i];
      PlannedStep p;
      p.step = i;
      if (s.kind == ModuleStep::Kind::Vta) {
        if (!is_static(i)) {
          p.kind = PlannedStep::Kind::Replay;
        } else {
          const bool first = p_.streams[stream].steps.front() == i;
          p.kind = first ? PlannedStep::Kind::Static : PlannedStep::Kind::Joined;
          p.stream = stream;
          if (p_.streams[stream].steps.back() == i) ++stream;
        }
      } else {
        p.call = s.kind == ModuleStep::Kind::Host ? host_call(s) : layout_call(i);
      }
      p_.run.push_back(std::move(p));
    }
  }

  // The call of a host step: its op record's firmware kernel, or a refusal naming why.
  FirmwareCall host_call(const ModuleStep& s) const {
    const graph::OpRecord& op = m_.ops().at(s.op);
    if (!op.firmware.call) {
      std::vector<std::string> with;
      for (const auto& name : m_.ops().names())
        if (m_.ops().at(name).firmware.call) with.push_back(name);
      refuse(s, fmt::format("op '{}' has no firmware kernel (firmware runs {})", s.op,
                            fmt::join(with, ", ")));
    }
    graph::TypeCall call;
    call.label = s.label;
    call.attrs = s.attrs;
    for (auto in : s.inputs) {
      call.arg_names.push_back(m_.values()[in].name);
      call.arg_types.push_back({m_.values()[in].logical, m_.values()[in].dtype});
    }
    const graph::TensorType result{m_.values()[s.output].logical, m_.values()[s.output].dtype};
    const graph::FirmwareStep step{call, result};
    if (op.firmware.support)
      if (const auto why = op.firmware.support(step)) refuse(s, *why);
    FirmwareCall c = op.firmware.call(step);
    check_call(s, c);
    return c;
  }

  // A kernel's call names the step's operands and its own locals only.
  void check_call(const ModuleStep& s, const FirmwareCall& c) const {
    if (c.function.empty())
      refuse(s, fmt::format("op '{}''s firmware kernel names no function", s.op));
    std::vector<std::string> locals;
    for (const auto& l : c.locals) locals.push_back(l.name);
    const std::function<void(const FirmwareArg&)> check = [&](const FirmwareArg& a) {
      using K = FirmwareArg::Kind;
      const bool operand = a.kind == K::Input || a.kind == K::Typed ||
                           (a.kind == K::Bytes && a.index != FirmwareArg::kOutput);
      if (operand && a.index >= s.inputs.size())
        refuse(s, fmt::format("op '{}''s firmware kernel reads input {} of a step with {}", s.op,
                              a.index, s.inputs.size()));
      if (a.kind == K::Local && std::find(locals.begin(), locals.end(), a.type) == locals.end())
        refuse(s, fmt::format("op '{}''s firmware kernel reads the local '{}', which it does "
                              "not declare",
                              s.op, a.type));
      for (const auto& item : a.items) check(item);
    };
    for (const auto& a : c.args) check(a);
    for (const auto& l : c.locals)
      for (const auto& item : l.items) check(item);
  }

  // The emitter's own kernels: a step that converts a layout (pack, unpack), or appends to a
  // state held packed.
  FirmwareCall layout_call(std::size_t i) const {
    const auto& s = m_.steps()[i];
    switch (s.kind) {
      case ModuleStep::Kind::Append:
        return append_call(i);
      case ModuleStep::Kind::Pack:
        return pack_call(s);
      case ModuleStep::Kind::Unpack:
        return unpack_call(s);
      case ModuleStep::Kind::Host:
      case ModuleStep::Kind::Vta:
        break;
    }
    raise<ValueError>("internal: deploy::emit: step {} is no layout step, please report", s.label);
  }

  static FirmwareArg dim(const ne::Expr& e) { return FirmwareArg::dim(e); }
  static FirmwareArg integer(std::int64_t v) { return FirmwareArg::integer(v); }

  // A value seen as [A, B, H, W] for a tiled layout (graph/layout.hpp).
  static std::vector<FirmwareArg> tiled4(const graph::Layout& l, const std::vector<ne::Expr>& s) {
    if (l.kind == LayoutKind::Matrix)
      return {dim(graph::element_count(std::span(s).first(s.size() - 1))), dim(s.back()),
              integer(1), integer(1)};
    return {dim(s[0]), dim(s[1]), dim(s[2]), dim(s[3])};
  }
  // A batched matmul operand [B..., M, C] as products, M and C.
  static std::vector<FirmwareArg> batched3(const std::vector<ne::Expr>& s) {
    return {dim(graph::element_count(std::span(s).first(s.size() - 2))), dim(s[s.size() - 2]),
            dim(s.back())};
  }
  // A lane-grouped BatchedMatrix's dims: [outer, queries, rows, columns, groups].
  static std::vector<FirmwareArg> grouped5(const std::vector<ne::Expr>& s, std::int64_t groups) {
    return {dim(graph::element_count(std::span(s).first(s.size() - 3))), dim(s[s.size() - 3]),
            dim(s[s.size() - 2]), dim(s.back()), integer(groups)};
  }
  static FirmwareCall tiles_call(std::string function, std::vector<FirmwareArg> dims,
                                 const graph::Layout& l) {
    FirmwareCall c{std::move(function), {FirmwareArg::input(0), FirmwareArg::output()}};
    c.args.insert(c.args.end(), dims.begin(), dims.end());
    c.args.push_back(integer(l.rows));
    c.args.push_back(integer(l.cols));
    return c;
  }

  FirmwareCall pack_call(const ModuleStep& s) const {
    const auto& xs = m_.values()[s.inputs[0]].logical;
    const auto& l = m_.values()[s.output].layout;
    switch (l.kind) {
      case LayoutKind::UnfoldedActivation: {
        const auto& u = l.unfold;
        const auto ow = ne::floordiv(xs[3] + u.pad_left + u.pad_right - u.kw, u.stride) + 1;
        return tiles_call("dlavm::runtime::pack_unfolded",
                          {dim(xs[0]), dim(xs[1]), dim(xs[2]), dim(xs[3]), integer(u.kw),
                           integer(u.stride), integer(u.pad_left), dim(ow)},
                          l);
      }
      case LayoutKind::BatchedMatrix:
        if (l.groups > 1)
          return tiles_call("dlavm::runtime::pack_batched_grouped", grouped5(xs, l.groups), l);
        return tiles_call("dlavm::runtime::pack_batched", batched3(xs), l);
      case LayoutKind::MatmulWeight:
        return tiles_call("dlavm::runtime::pack_matmul_weight", batched3(xs), l);
      case LayoutKind::Activation:
      case LayoutKind::Matrix:
        return tiles_call("dlavm::runtime::pack_tiled", tiled4(l, xs), l);
      case LayoutKind::Plain:
      case LayoutKind::ConvWeight:
      case LayoutKind::DenseWeight:
      case LayoutKind::Channel:
      case LayoutKind::UnfoldedConvWeight:
      case LayoutKind::GroupedConvWeight:
      case LayoutKind::ChannelWeights:
        break;
    }
    refuse(s, fmt::format("packing into layout {} has no firmware kernel", graph::to_string(l)));
  }

  FirmwareCall unpack_call(const ModuleStep& s) const {
    const auto& x = m_.values()[s.inputs[0]];
    const auto& l = x.layout;
    const bool tiled = l.kind == LayoutKind::Activation || l.kind == LayoutKind::Matrix;
    if (!tiled && l.kind != LayoutKind::BatchedMatrix)
      refuse(s, fmt::format("unpacking layout {} has no firmware kernel", graph::to_string(l)));
    const bool batched = l.kind == LayoutKind::BatchedMatrix;
    if (l.groups > 1)
      return tiles_call("dlavm::runtime::unpack_batched_grouped",
                        grouped5(m_.values()[s.output].logical, l.groups), l);
    auto dims = batched ? batched3(m_.values()[s.output].logical) : tiled4(l, x.logical);
    if (l.planes == 1)
      return tiles_call(batched ? "dlavm::runtime::unpack_batched" : "dlavm::runtime::unpack_tiled",
                        std::move(dims), l);
    // an int32 value VTA stored as byte planes
    dims.push_back(integer(l.planes));
    return tiles_call(
        batched ? "dlavm::runtime::unpack_batched_planes" : "dlavm::runtime::unpack_tiled_planes",
        std::move(dims), l);
  }

  // runtime::append_packed: a run's new positions written after those a state held packed
  // holds, its counters ({held, laid out for, written}) in the state's own slot.
  FirmwareCall append_call(std::size_t step) const {
    const auto& s = m_.steps()[step];
    if (m_.values()[s.output].shape.size() > 8)
      refuse(s, "appending to a state of rank over 8 has no firmware kernel");
    const std::size_t i = m_.appended_by(step);
    const auto& st = m_.signature().state[i];
    const auto& state = m_.values()[st.value];
    const auto& y = m_.values()[s.output];
    const std::size_t axis = m_.growing_dim(i);
    graph::FirmwareLocal shape{"shape", "dlavm::runtime::PackedStateShape", false, {}};
    std::vector<FirmwareArg> dims, perm;
    for (const auto& d : state.shape) dims.push_back(integer(d.is_const() ? *d.as_int() : 0));
    for (const auto p : st.perm) perm.push_back(integer(p));
    shape.items = {integer(static_cast<std::int64_t>(state.shape.size())),
                   FirmwareArg::aggregate("", std::move(dims)),
                   FirmwareArg::aggregate("", std::move(perm)),
                   integer(static_cast<std::int64_t>(axis)),
                   integer(y.layout.rows),
                   integer(y.layout.cols),
                   integer(state.dtype.bytes())};
    return {"dlavm::runtime::append_packed",
            {FirmwareArg::bytes(FirmwareArg::kOutput), FirmwareArg::bytes(0),
             dim(m_.values()[s.inputs[0]].logical[axis]),
             FirmwareArg::address("std::int64_t", *p_.commits[i].counters),
             FirmwareArg::local("shape")},
            {std::move(shape)}};
  }

  const graph::Module& m_;
  FirmwarePlan p_;
  std::int64_t insts_bytes_ = 0, uop_bytes_ = 0;
};

}  // namespace detail

DLAVM_INLINE FirmwarePlan plan_firmware(const graph::Module& m, const EmitOptions& options) {
  // the model files hold the name whole (runtime::FileHeader), and the session compares it
  if (m.name().empty() || m.name().size() > runtime::kModelNameBytes)
    raise<ValueError>(
        "deploy::emit: module name '{}' has {} bytes; the model files hold 1 to {} (name it with "
        "graph::BuildOptions::name)",
        m.name(), m.name().size(), runtime::kModelNameBytes);
  return detail::FirmwarePlanner(m, options).run();
}

}  // namespace dlavm::deploy
