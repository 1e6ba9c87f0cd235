// Definitions for dlavm/deploy/emit.hpp (see core/api.hpp).
#pragma once

#include <dlavm/deploy/emit.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/host/elementwise.hpp>
#include <dlavm/runtime/model_file.hpp>
#include <dlavm/vta/codegen.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

namespace dlavm::deploy {

namespace detail {

// The C++ type firmware holds a dtype in.
inline std::optional<std::string> ctype(DType t) {
  if (t == DType::float32()) return "float";
  if (t.lanes() != 1 || t.is_float()) return std::nullopt;
  if (t.bits() != 8 && t.bits() != 16 && t.bits() != 32 && t.bits() != 64) return std::nullopt;
  return fmt::format("std::{}int{}_t", t.is_uint() ? "u" : "", t.bits());
}

inline std::string identifier(std::string_view name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v" + s;
  return s;
}

template <class... Args>
void put(fmt::memory_buffer& out, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

// A float as a C++ expression of exactly its value (a hexadecimal literal).
inline std::string float_literal(float v) {
  if (std::isnan(v)) return "(0.0f / 0.0f)";
  if (std::isinf(v)) return v > 0 ? "(1.0f / 0.0f)" : "(-1.0f / 0.0f)";
  return fmt::format("{:a}f", v);
}

// A string as the inside of a C++ string literal.
inline std::string escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

inline void write_file(const std::string& path, const void* data, std::size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) raise<ValueError>("deploy::emit: cannot write '{}'", path);
  const bool ok = std::fwrite(data, 1, n, f) == n;
  if (std::fclose(f) != 0 || !ok) raise<ValueError>("deploy::emit: writing '{}' failed", path);
}

// One stream the firmware places once: VTA steps whose dims are all static (one, or with lite
// a run of them joined by barriers).
struct StaticGroup {
  std::vector<std::size_t> steps;
  runtime::Stream stream;
  std::vector<std::uint32_t> relocs;
  std::int64_t insn_at = 0, uop_at = 0;  // offsets in the insts and uop regions
};

class Emitter {
 public:
  Emitter(const graph::Module& m, const EmitOptions& o) : m_(m), o_(o), sig_(m.signature()) {
    ns_ = identifier(o.ns.empty() ? m.name() : o.ns);
    collect_dims();
    check_steps();
  }

  EmitResult run(const std::string& dir) {
    group_steps();
    size_streams();
    auto request = graph::memory_request(m_);
    request.insts_bytes = insts_bytes_;
    request.uop_bytes = uop_bytes_;
    plan_ = graph::plan_memory(request, o_.plan);
    encode_static();
    const auto weights = weights_file();
    const auto insts = insts_file();
    const auto header = header_text();
    EmitResult r;
    const std::string stem = dir + "/" + m_.name();
    r.header = stem + ".hpp";
    r.weights = stem + ".weights.bin";
    r.insts = stem + ".insts.bin";
    write_file(r.header, header.data(), header.size());
    write_file(r.weights, weights.data(), weights.size());
    write_file(r.insts, insts.data(), insts.size());
    r.plan = plan_;
    r.static_streams = groups_.size();
    r.replayed_steps = replayed_.size();
    for (const auto& g : groups_) r.static_instructions += g.stream.insns.size();
    r.header_bytes = header.size();
    return r;
  }

 private:
  // ---- what the module needs ------------------------------------------------------------

  void collect_dims() {
    for (auto p : m_.signature().params)
      for (const auto& d : m_.values()[p].logical)
        for (const auto& v : ne::free_vars(d))
          if (std::none_of(dims_.begin(), dims_.end(),
                           [&](const ne::Var& x) { return x.id() == v.id(); }))
            dims_.push_back(v);
    params_dims_ = dims_.size();
    // after them, the growing dims of the states held packed: what each holds, not arguments
    const auto sig = m_.signature();
    for (std::size_t i = 0; i < sig.state.size(); ++i) {
      if (!sig.state[i].packed) continue;
      for (const auto& d : m_.values()[sig.state[i].value].shape)
        if (d.as<ne::VarNode>() != nullptr) {
          dims_.push_back(ne::Var(d));
          held_by_.push_back(i);
        }
    }
  }
  // The counters of state i held packed: {positions held, laid out for, written}.
  std::string held(std::size_t i) const {
    return fmt::format("s.template at<std::int64_t>({:#x}ULL)", plan_.address(sig_.state[i].value));
  }
  std::string dim_name(const ne::VarNode& v) const {
    for (std::size_t k = 0; k < dims_.size(); ++k)
      if (dims_[k].name() == v.name) return fmt::format("d{}", k);
    raise<ValueError>("deploy::emit: module '{}' reads the dim '{}', which no input has", m_.name(),
                      v.name);
  }
  std::string expr(const ne::Expr& e) const {
    return vta::cpp_expr(ne::simplify(e), [&](const ne::VarNode& v) { return dim_name(v); });
  }
  std::string count(const std::vector<ne::Expr>& shape) const {
    ne::Expr n = 1;
    for (const auto& d : shape) n = n * d;
    return expr(n);
  }
  std::string type_of(std::size_t v) const {
    const auto& value = m_.values()[v];
    const auto t = ctype(value.dtype);
    if (!t)
      raise<TypeError>(
          "deploy::emit: value {} is {}, which firmware does not hold (8 to 64-bit "
          "integers and float32)",
          value.name, value.dtype);
    return *t;
  }
  std::string ptr(std::size_t v) const {
    return fmt::format("s.template at<{}>({:#x}ULL)", type_of(v), plan_.address(v));
  }

  [[noreturn]] void refuse(const graph::ModuleStep& s, std::string_view why) const {
    raise<ValueError>("deploy::emit: module '{}', step {}: {}", m_.name(), s.label, why);
  }

  // Every host step has a firmware kernel for its dtypes and shapes; every state has a
  // constant shape (the firmware copies a state's whole buffer after a run).
  void check_steps() const {
    for (const auto& st : m_.signature().state)
      for (const auto& d : m_.values()[st.value].shape)
        if (!d.is_const() && !st.packed)
          raise<ValueError>(
              "deploy::emit: module '{}': state {} grows along `{}`; the firmware header keeps "
              "states of constant shape, or a growing state that only VTA matmuls read (held "
              "packed, appended to in place)",
              m_.name(), m_.values()[st.value].name, d);
    for (const auto& s : m_.steps()) {
      for (auto in : s.inputs) type_of(in);
      type_of(s.output);
      const auto& in = m_.values()[s.inputs.empty() ? s.output : s.inputs[0]];
      const auto& out = m_.values()[s.output];
      using K = graph::Layout::Kind;
      switch (s.kind) {
        case graph::ModuleStep::Kind::Vta:
          break;
        case graph::ModuleStep::Kind::Pack:
          if (out.layout.kind != K::Activation && out.layout.kind != K::Matrix &&
              out.layout.kind != K::UnfoldedActivation && out.layout.kind != K::BatchedMatrix &&
              out.layout.kind != K::MatmulWeight)
            refuse(s, fmt::format("packing into layout {} has no firmware kernel",
                                  graph::to_string(out.layout)));
          break;
        case graph::ModuleStep::Kind::Unpack:
          if ((in.layout.kind != K::Activation && in.layout.kind != K::Matrix &&
               in.layout.kind != K::BatchedMatrix) ||
              in.layout.planes != 1)
            refuse(s, fmt::format("unpacking layout {} has no firmware kernel",
                                  graph::to_string(in.layout)));
          break;
        case graph::ModuleStep::Kind::Host:
          check_host(s);
          break;
        case graph::ModuleStep::Kind::Append:
          if (m_.values()[s.output].shape.size() > 8)
            refuse(s, "appending to a state of rank over 8 has no firmware kernel");
          break;
      }
    }
  }
  void check_host(const graph::ModuleStep& s) const {
    static constexpr std::string_view supported[] = {"global_avg_pool2d",
                                                     "max_pool2d",
                                                     "avg_pool2d",
                                                     "flatten",
                                                     "reshape",
                                                     "dense",
                                                     "cast",
                                                     "softmax",
                                                     "relu",
                                                     "clip",
                                                     "requantize",
                                                     "add",
                                                     "mul",
                                                     "bias_add",
                                                     "transpose",
                                                     "quantize_linear",
                                                     "dequantize_linear",
                                                     "layer_norm",
                                                     "causal_mask",
                                                     "integer_softmax"};
    if (std::find(std::begin(supported), std::end(supported), s.op) == std::end(supported))
      refuse(s, fmt::format("op '{}' has no firmware kernel (firmware runs {})", s.op,
                            fmt::join(supported, ", ")));
    const auto& x = m_.values()[s.inputs[0]];
    if ((s.op == "add" || s.op == "mul") &&
        (x.logical.size() != m_.values()[s.inputs[1]].logical.size() ||
         !std::equal(x.logical.begin(), x.logical.end(), m_.values()[s.inputs[1]].logical.begin(),
                     [](const ne::Expr& a, const ne::Expr& b) { return ne::equal(a, b); })))
      refuse(s,
             fmt::format("'{}' of different shapes (broadcasting) has no firmware kernel", s.op));
    if (s.op == "requantize" && !x.dtype.is_int())
      refuse(s, fmt::format("requantize of {} has no firmware kernel (signed integers only)",
                            x.dtype));
    if (s.op == "softmax" && x.dtype != DType::float32())
      refuse(s, fmt::format("softmax of {} has no firmware kernel", x.dtype));
    if (s.op == "transpose" && x.logical.size() > 8)
      refuse(s, fmt::format("transpose of rank {} has no firmware kernel (rank 8 at most)",
                            x.logical.size()));
  }

  // ---- streams --------------------------------------------------------------------------

  bool is_static(std::size_t step) const {
    const auto& s = m_.steps()[step];
    return s.kind == graph::ModuleStep::Kind::Vta && vta::dims_read(*s.program).empty();
  }
  void group_steps() {
    for (std::size_t i = 0; i < m_.steps().size(); ++i) {
      const auto& s = m_.steps()[i];
      if (s.kind != graph::ModuleStep::Kind::Vta) continue;
      if (!is_static(i)) {
        replayed_.push_back(i);
        continue;
      }
      const bool join = o_.lite && !groups_.empty() && groups_.back().steps.back() + 1 == i;
      if (!join) groups_.emplace_back();
      groups_.back().steps.push_back(i);
    }
  }
  std::vector<std::uint64_t> phys_of(const graph::ModuleStep& s, bool planned) const {
    std::vector<std::uint64_t> phys;
    for (auto in : s.inputs) phys.push_back(planned ? plan_.address(in) : 0);
    phys.push_back(planned ? plan_.address(s.output) : 0);
    return phys;
  }
  runtime::Stream group_stream(const StaticGroup& g, bool planned) const {
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
    for (auto& g : groups_) {
      const auto s = group_stream(g, false);
      g.insn_at = insts_bytes_;
      g.uop_at = uop_bytes_;
      insts_bytes_ += static_cast<std::int64_t>(s.insn_bytes());
      uop_bytes_ += static_cast<std::int64_t>(s.uop_bytes());
    }
    replay_insn_at_ = insts_bytes_;
    replay_uop_at_ = uop_bytes_;
    for (auto i : replayed_) {
      const auto& p = *m_.steps()[i].program;
      replay_insns_ = std::max(replay_insns_, p.stream_bound().insns);
      replay_uops_ = std::max(replay_uops_, p.stream_bound().uops);
      replay_ops_ = std::max(replay_ops_, p.max_kernel_ops());
      replay_regions_ = std::max(replay_regions_, p.regions().size());
      replay_params_ = std::max(replay_params_, p.func().params.size());
    }
    insts_bytes_ += replay_insns_ * 16;
    uop_bytes_ += replay_uops_ * 4;
  }
  // The static streams at their planned addresses, LOAD UOPs pointing at their slots.
  void encode_static() {
    const auto& layout = m_.env().config.layout();
    const auto uops = plan_.region(graph::RegionKind::Uop).base;
    for (auto& g : groups_) {
      g.stream = group_stream(g, true);
      std::vector<runtime::InsnWord> words(g.stream.insns.size());
      if (!g.stream.relocate((uops + static_cast<std::uint64_t>(g.uop_at)) / 4, words.data()))
        raise<CapacityError>(
            "deploy::emit: module '{}': a micro-op address past 0x{:x} does not "
            "fit a LOAD's dram_base",
            m_.name(), uops + static_cast<std::uint64_t>(g.uop_at));
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

  // ---- files ------------------------------------------------------------------------------

  runtime::ConfigId config_id() const {
    const auto& c = m_.env().config;
    const int logs[12] = {c.log_inp_width,     c.log_wgt_width,     c.log_acc_width,
                          c.log_out_width,     c.log_batch,         c.log_block_in,
                          c.log_block_out,     c.log_uop_buff_size, c.log_inp_buff_size,
                          c.log_wgt_buff_size, c.log_acc_buff_size, c.log_bus_width};
    runtime::ConfigId id;
    for (int i = 0; i < 12; ++i) id.logs[i] = static_cast<std::uint8_t>(logs[i]);
    return id;
  }
  std::vector<std::uint8_t> file(runtime::FileKind kind, std::vector<std::uint8_t> payload,
                                 const std::uint32_t* queues, std::uint32_t uop_words) const {
    runtime::FileHeader h;
    h.kind = kind;
    h.config = config_id();
    for (int q = 0; q < 3; ++q) h.queue_insns[q] = queues != nullptr ? queues[q] : 0;
    h.uop_words = uop_words;
    h.payload_bytes = payload.size();
    h.checksum = runtime::fnv1a(payload.data(), payload.size());
    std::snprintf(h.name, sizeof h.name, "%s", m_.name().c_str());
    std::vector<std::uint8_t> out(runtime::kFileHeaderBytes + payload.size());
    runtime::write_file_header(h, out.data());
    if (!payload.empty())
      std::memcpy(out.data() + runtime::kFileHeaderBytes, payload.data(), payload.size());
    return out;
  }
  std::vector<std::uint8_t> weights_file() {
    const auto& region = plan_.region(graph::RegionKind::Weight);
    std::vector<std::uint8_t> image(static_cast<std::size_t>(region.bytes), 0);
    for (std::size_t v = 0; v < m_.values().size(); ++v) {
      const auto& value = m_.values()[v];
      if (value.kind != graph::ModuleValue::Kind::Constant) continue;
      const auto offset = static_cast<std::size_t>(plan_.buffers[v].offset);
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
    weights_checksum_ = runtime::fnv1a(image.data(), image.size());
    weights_bytes_ = image.size();
    return file(runtime::FileKind::Weights, std::move(image), nullptr, 0);
  }
  std::vector<std::uint8_t> insts_file() {
    std::vector<std::uint8_t> payload;
    std::uint32_t queues[3] = {}, uops = 0;
    const auto& layout = m_.env().config.layout();
    for (const auto& g : groups_) {
      for (const auto& w : g.stream.insns) {
        for (int h = 0; h < 2; ++h)
          for (int b = 0; b < 8; ++b)
            payload.push_back(static_cast<std::uint8_t>(w.word[h] >> (8 * b)));
        ++queues[static_cast<int>(runtime::queue_of(runtime::unpack(layout, w))) - 1];
      }
      for (auto u : g.stream.uops)
        for (int b = 0; b < 4; ++b) payload.push_back(static_cast<std::uint8_t>(u >> (8 * b)));
      uops += static_cast<std::uint32_t>(g.stream.uops.size());
    }
    insts_checksum_ = runtime::fnv1a(payload.data(), payload.size());
    insts_payload_ = payload.size();
    return file(runtime::FileKind::Insts, std::move(payload), queues, uops);
  }

  // ---- the header -------------------------------------------------------------------------

  std::string header_text() const {
    fmt::memory_buffer out;
    const auto& c = m_.env().config;
    put(out,
        "// Generated by dlavm::deploy::emit: model '{}' for a VTA of BATCH {}, BLOCK_IN {}, "
        "BLOCK_OUT {}. Do not edit.\n",
        m_.name(), c.batch(), c.block_in(), c.block_out());
    put(out, "// Needs only <dlavm/runtime/...> (C++17, no exceptions, no RTTI, no heap).\n");
    put(out,
        "//\n//   {0}::Session s;\n//   {0}::open(s); {0}::load_params(s, weights, size); "
        "{0}::prepare(s);\n//   ... write the inputs at {0}::input_*(s) ...\n//   {0}::run(s{1});"
        "\n#pragma once\n\n",
        ns_, dims_.empty() ? "" : ", dims...");
    put(out, "#include <dlavm/runtime/kernels.hpp>\n#include <dlavm/runtime/session.hpp>\n\n");
    put(out, "#include <cstddef>\n#include <cstdint>\n#include <cstring>\n#include <iterator>\n\n");
    put(out,
        "#ifndef DLAVM_MODEL_DRIVER_API\n#define DLAVM_MODEL_DRIVER_API "
        "dlavm::runtime::VtaDriverApi\n"
        "#endif\n\n");
    put(out,
        "namespace {} {{\n\nusing Session = dlavm::runtime::Session<DLAVM_MODEL_DRIVER_API>;\n\n",
        ns_);
    put(out, "{}", vta::config_source(c));
    const auto id = config_id();
    put(out, "inline constexpr dlavm::runtime::ConfigId kConfig = {{{{{}}}}};\n",
        fmt::join(id.logs, ", "));
    region_table(out);
    values_table(out);
    static_streams(out);
    replays(out);
    functions(out);
    put(out, "\n}}  // namespace {}\n", ns_);
    return fmt::to_string(out);
  }

  void region_table(fmt::memory_buffer& out) const {
    put(out, "\n// The memory plan: regions [base, base + bytes) at planned addresses.\n");
    const auto span = [&](graph::RegionKind r) {
      const auto& x = plan_.region(r);
      return fmt::format("{{{:#x}ULL, {}ULL}}", x.base, x.bytes);
    };
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (const auto& r : plan_.regions) {
      lo = std::min(lo, r.base);
      hi = std::max(hi, r.end());
    }
    put(out,
        "inline constexpr dlavm::runtime::ModelInfo kInfo = {{\n    \"{}\", kConfig, {:#x}ULL, "
        "{:#x}ULL,\n    {}, {}, {},\n    {}, {},\n    {}ULL, {}ULL, {:#x}ULL, {}ULL, {:#x}ULL}};\n",
        m_.name(), lo, hi, span(graph::RegionKind::Weight), span(graph::RegionKind::Runtime),
        span(graph::RegionKind::Cache), span(graph::RegionKind::Insts),
        span(graph::RegionKind::Uop), plan_.alignment, weights_bytes_, weights_checksum_,
        insts_payload_, insts_checksum_);
  }

  void values_table(fmt::memory_buffer& out) const {
    put(out, "\n// Dims: {}\n", dims_.empty() ? std::string("none (every dim is static)") : "");
    for (std::size_t k = 0; k < dims_.size(); ++k)
      put(out, "//   d{} = {} in [{}, {}]\n", k, dims_[k].name(), dims_[k].min(), dims_[k].max());
    put(out, "\n// Inputs, outputs and states: row-major arrays in the runtime (cache) region.\n");
    const auto sig = m_.signature();
    const auto describe = [&](std::size_t v) {
      const auto& value = m_.values()[v];
      std::vector<std::string> dims;
      for (const auto& d : value.logical) dims.push_back(fmt::format("{}", d));
      return fmt::format("{} {}[{}] at {:#x}, at most {} bytes", value.name, value.dtype,
                         fmt::join(dims, ", "), plan_.address(v), plan_.buffers[v].bytes);
    };
    for (auto p : sig.params)
      put(out, "// {}\ninline {}* input_{}(Session& s) {{ return {}; }}\n", describe(p), type_of(p),
          identifier(m_.values()[p].param), ptr(p));
    for (std::size_t k = 0; k < sig.results.size(); ++k)
      put(out, "// {}\ninline const {}* output_{}(Session& s) {{ return {}; }}\n",
          describe(sig.results[k]), type_of(sig.results[k]), k, ptr(sig.results[k]));
    for (std::size_t i = 0; i < sig.state.size(); ++i) {
      const auto& st = sig.state[i];
      const auto name = identifier(m_.values()[st.value].param);
      if (st.packed) {
        put(out,
            "// {}: held packed as {}\ninline std::int64_t state_{}_length(Session& s) {{ return "
            "{}[0]; }}\ninline const {}* state_{}_packed(Session& s) {{ return {}; }}\n",
            m_.values()[st.value].name, describe(*st.packed), name, held(i), type_of(*st.packed),
            name, ptr(*st.packed));
        continue;
      }
      put(out, "// {}\ninline {}* state_{}(Session& s) {{ return {}; }}\n", describe(st.value),
          type_of(st.value), name, ptr(st.value));
    }
  }

  void static_streams(fmt::memory_buffer& out) const {
    if (groups_.empty()) return;
    put(out, "\n// The static streams: words at planned addresses, placed once by prepare().\n");
    const auto insts = plan_.region(graph::RegionKind::Insts).base;
    const auto uops = plan_.region(graph::RegionKind::Uop).base;
    for (std::size_t k = 0; k < groups_.size(); ++k) {
      const auto& g = groups_[k];
      std::vector<std::string> labels;
      for (auto i : g.steps) labels.push_back(fmt::format("step {} ({})", i, m_.steps()[i].label));
      put(out, "namespace stream{} {{  // {}\n", k, fmt::join(labels, ", "));
      put(out, "inline constexpr dlavm::runtime::InsnWord kInsns[] = {{\n");
      for (const auto& w : g.stream.insns)
        put(out, "    {{{{{:#x}ULL, {:#x}ULL}}}},\n", w.word[0], w.word[1]);
      put(out, "}};\nstatic_assert(std::size(kInsns) == {});\n", g.stream.insns.size());
      put(out, "inline constexpr std::uint32_t kUops[] = {{{:#x}}};\n",
          fmt::join(g.stream.uops, ", "));
      put(out, "static_assert(std::size(kUops) == {});\n", g.stream.uops.size());
      put(out, "inline constexpr std::uint32_t kRelocs[] = {{{}}};\n}}  // namespace stream{}\n",
          fmt::join(g.relocs, ", "), k);
    }
    put(out, "inline constexpr dlavm::runtime::StaticStream kStreams[] = {{\n");
    for (std::size_t k = 0; k < groups_.size(); ++k) {
      const auto& g = groups_[k];
      put(out,
          "    {{stream{0}::kInsns, {1}, stream{0}::kUops, {2}, {3:#x}ULL, {4:#x}ULL, "
          "stream{0}::kRelocs, {5}}},\n",
          k, g.stream.insns.size(), g.stream.uops.size(),
          insts + static_cast<std::uint64_t>(g.insn_at),
          uops + static_cast<std::uint64_t>(g.uop_at), g.relocs.size());
    }
    put(out, "}};\n");
  }

  void replays(fmt::memory_buffer& out) const {
    if (replayed_.empty()) return;
    std::vector<std::string> dim_names;
    for (const auto& d : dims_) dim_names.push_back(d.name());
    put(out,
        "\n// The replayed steps: their loops for the dims of each run (vta::replay_source).\n");
    for (auto i : replayed_) {
      const auto& s = m_.steps()[i];
      put(out, "namespace step{} {{  // {}\n", i, s.label);
      put(out, "inline constexpr dlavm::runtime::SramRegion kRegions[] = {};\n",
          vta::regions_source(*s.program));
      std::vector<std::string> params;
      for (auto in : s.inputs) params.push_back(fmt::format("{:#x}ULL", plan_.address(in)));
      params.push_back(fmt::format("{:#x}ULL", plan_.address(s.output)));
      put(out, "inline constexpr std::uint64_t kParams[] = {{{}}};\n", fmt::join(params, ", "));
      put(out, "{}", vta::replay_source(*s.program, "replay", dim_names));
      put(out, "}}  // namespace step{}\n", i);
    }
    const auto slot_insts =
        plan_.region(graph::RegionKind::Insts).base + static_cast<std::uint64_t>(replay_insn_at_);
    const auto slot_uops =
        plan_.region(graph::RegionKind::Uop).base + static_cast<std::uint64_t>(replay_uop_at_);
    const auto kernels = std::max<std::int64_t>(replay_insns_, 1);
    put(out,
        "\n// What a replay works in: the largest step's tables (static storage: one run at a "
        "time).\nstruct Workspace {{\n"
        "  std::uint32_t relocs[{0}];\n"
        "  dlavm::runtime::KernelSlot kernels[{0}], resident[{0}];\n"
        "  dlavm::runtime::UopOp ops[{1}];\n"
        "  dlavm::runtime::RegionState states[{2}];\n"
        "  std::uint64_t params[{3}];\n"
        "}};\n"
        "inline dlavm::runtime::ReplaySlots replay_slots(Workspace& w) {{\n"
        "  return {{{4:#x}ULL, {5}ULL, {6:#x}ULL, {7}ULL, w.relocs, w.kernels, w.resident, {0}, "
        "w.ops, {1}, w.states}};\n}}\n",
        kernels, std::max<std::size_t>(replay_ops_, 1), std::max<std::size_t>(replay_regions_, 1),
        std::max<std::size_t>(replay_params_, 1), slot_insts, replay_insns_, slot_uops,
        replay_uops_);
  }

  void functions(fmt::memory_buffer& out) const {
    put(out,
        "\n// Allocates the model's memory on the device (one block) and zeroes the states.\n"
        "inline dlavm::runtime::ModelStatus open(Session& s) {{\n"
        "  s.set_target(kLayout, kUopDepth, kElemBytes);\n"
        "  const auto st = s.open(kInfo);\n"
        "  if (st == dlavm::runtime::ModelStatus::Ok && kInfo.cache.bytes > 0)\n"
        "    std::memset(s.template at<std::uint8_t>(kInfo.cache.base), 0, "
        "static_cast<std::size_t>(kInfo.cache.bytes));\n"
        "  return st;\n}}\n");
    put(out,
        "// Checks the weights file and copies it to the weight region.\n"
        "inline dlavm::runtime::ModelStatus load_params(Session& s, const std::uint8_t* file, "
        "std::size_t size) {{\n  return s.load_params(file, size);\n}}\n");
    const auto n = groups_.size();
    put(out,
        "// Places the static streams: from the words above, or from the insts file.\n"
        "inline dlavm::runtime::ModelStatus prepare(Session& s) {{\n  return s.place({}, {});\n}}\n"
        "inline dlavm::runtime::ModelStatus prepare(Session& s, const std::uint8_t* file, "
        "std::size_t size) {{\n  return s.place({}, {}, file, size);\n}}\n",
        n ? "kStreams" : "nullptr", n, n ? "kStreams" : "nullptr", n);
    // run
    std::vector<std::string> args = {"Session& s"};
    for (std::size_t k = 0; k < params_dims_; ++k)
      args.push_back(fmt::format("std::int64_t {}", identifier(dims_[k].name())));
    put(out,
        "\n// Runs the model for the dims given: every step in order.\n"
        "inline dlavm::runtime::ModelStatus run({}) {{\n"
        "  using dlavm::runtime::ModelStatus;\n"
        "  if (!s.ready()) return ModelStatus::NotLoaded;\n",
        fmt::join(args, ", "));
    for (std::size_t k = 0; k < params_dims_; ++k) {
      const auto name = identifier(dims_[k].name());
      put(out,
          "  if ({0} < {1} || {0} > {2}) return ModelStatus::DimOutOfRange;\n"
          "  const std::int64_t d{3} = {0};\n",
          name, dims_[k].min(), dims_[k].max(), k);
    }
    for (std::size_t k = params_dims_; k < dims_.size(); ++k) {
      // a growing dim: the positions its state holds, and room for this run's
      const std::size_t i = held_by_[k - params_dims_];
      const auto& st = sig_.state[i];
      const auto& rows = m_.values()[st.next].logical[m_.growing_dim(i)];
      put(out,
          "  const std::int64_t d{0} = {1}[0];  // {2}: the positions state '{3}' holds\n"
          "  if (d{0} > {4} || d{0} + {5} > {6}) return ModelStatus::DimOutOfRange;\n",
          k, held(i), dims_[k].name(), m_.values()[st.value].param, dims_[k].max(), expr(rows),
          dims_[k].max() + 1);
    }
    if (!dims_.empty() && !replayed_.empty()) {  // what the replays read
      std::vector<std::string> ds;
      for (std::size_t k = 0; k < dims_.size(); ++k) ds.push_back(fmt::format("d{}", k));
      put(out, "  const std::int64_t dims[] = {{{}}};\n", fmt::join(ds, ", "));
    }
    if (!replayed_.empty()) put(out, "  static Workspace workspace;\n");
    put(out, "  ModelStatus st = ModelStatus::Ok;\n");
    std::size_t group = 0;
    for (std::size_t i = 0; i < m_.steps().size(); ++i) {
      const auto& s = m_.steps()[i];
      if (o_.debug) put(out, "  s.log(\"step {}: {}\");\n", i, escaped(s.label));
      if (s.kind == graph::ModuleStep::Kind::Vta) {
        if (!is_static(i)) {
          put(out,
              "  st = s.replay(WriterLayout{{}}, [](auto& r, const std::int64_t* d) {{ return "
              "step{0}::replay(r, d); "
              "}},\n               step{0}::kRegions, std::size(step{0}::kRegions), "
              "step{0}::kParams, workspace.params,\n               std::size(step{0}::kParams), "
              "dims, replay_slots(workspace));\n  if (st != ModelStatus::Ok) return st;\n",
              i);
        } else if (groups_[group].steps.front() == i) {
          put(out, "  st = s.run(kStreams[{}]);\n  if (st != ModelStatus::Ok) return st;\n", group);
        }
        if (group < groups_.size() && groups_[group].steps.back() == i) ++group;
        continue;
      }
      put(out, "  {}\n", host_call(s));
    }
    for (std::size_t i = 0; i < sig_.state.size(); ++i) {
      const auto& st = sig_.state[i];
      if (st.packed)  // the run succeeded: the appended positions are held
        put(out, "  {}[0] += {};\n", held(i),
            expr(m_.values()[st.next].logical[m_.growing_dim(i)]));
      else
        put(out, "  std::memcpy({}, {}, {});\n", ptr(st.value), ptr(st.next),
            plan_.buffers[st.value].bytes);
    }
    put(out, "  return st;\n}}\n");
  }

  // The firmware call of a step that converts a layout: pack, unpack, or an append to a state
  // held packed.
  std::string layout_call(const graph::ModuleStep& s) const {
    const auto& x = m_.values()[s.inputs[0]];
    const auto& y = m_.values()[s.output];
    const auto& xs = x.logical;
    using K = graph::Layout::Kind;
    if (s.kind == graph::ModuleStep::Kind::Append) {
      const std::size_t i = m_.appended_by(static_cast<std::size_t>(&s - m_.steps().data()));
      const auto& st = sig_.state[i];
      const auto& state = m_.values()[st.value];
      const std::size_t axis = m_.growing_dim(i);
      std::vector<std::int64_t> shape;
      for (const auto& d : state.shape) shape.push_back(d.is_const() ? *d.as_int() : 0);
      return fmt::format(
          "{{ static constexpr dlavm::runtime::PackedStateShape shape{{{}, {{{}}}, {{{}}}, {}, {}, "
          "{}, {}}};\n    dlavm::runtime::append_packed(reinterpret_cast<std::uint8_t*>({}), "
          "reinterpret_cast<const std::uint8_t*>({}), {}, {}, shape); }}",
          shape.size(), fmt::join(shape, ", "), fmt::join(st.perm, ", "), axis, y.layout.rows,
          y.layout.cols, state.dtype.bytes(), ptr(s.output), ptr(s.inputs[0]), expr(xs[axis]),
          held(i));
    }
    if (s.kind == graph::ModuleStep::Kind::Pack) {
      const auto& l = y.layout;
      if (l.kind == K::UnfoldedActivation) {
        const auto ow = ne::floordiv(xs[3] + l.unfold.pad_left + l.unfold.pad_right - l.unfold.kw,
                                     l.unfold.stride) +
                        1;
        return fmt::format(
            "dlavm::runtime::pack_unfolded({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
            "{}, {});",
            ptr(s.inputs[0]), ptr(s.output), expr(xs[0]), expr(xs[1]), expr(xs[2]), expr(xs[3]),
            l.unfold.kw, l.unfold.stride, l.unfold.pad_left, expr(ow), l.rows, l.cols);
      }
      if (l.kind == K::BatchedMatrix || l.kind == K::MatmulWeight) {
        const auto [products, m, c] = batched3(xs);
        return fmt::format("dlavm::runtime::{}({}, {}, {}, {}, {}, {}, {});",
                           l.kind == K::BatchedMatrix ? "pack_batched" : "pack_matmul_weight",
                           ptr(s.inputs[0]), ptr(s.output), products, m, c, l.rows, l.cols);
      }
      const auto [a, b, h, w] = tiled4(l, xs);
      return fmt::format("dlavm::runtime::pack_tiled({}, {}, {}, {}, {}, {}, {}, {});",
                         ptr(s.inputs[0]), ptr(s.output), a, b, h, w, l.rows, l.cols);
    }
    if (s.kind == graph::ModuleStep::Kind::Unpack && x.layout.kind == K::BatchedMatrix) {
      const auto [products, m, c] = batched3(y.logical);
      return fmt::format("dlavm::runtime::unpack_batched({}, {}, {}, {}, {}, {}, {});",
                         ptr(s.inputs[0]), ptr(s.output), products, m, c, x.layout.rows,
                         x.layout.cols);
    }
    const auto [a, b, h, w] = tiled4(x.layout, xs);
    return fmt::format("dlavm::runtime::unpack_tiled({}, {}, {}, {}, {}, {}, {}, {});",
                       ptr(s.inputs[0]), ptr(s.output), a, b, h, w, x.layout.rows, x.layout.cols);
  }

  // The firmware call of one host step.
  std::string host_call(const graph::ModuleStep& s) const {
    if (s.kind != graph::ModuleStep::Kind::Host) return layout_call(s);
    const auto& x = m_.values()[s.inputs[0]];
    const auto& y = m_.values()[s.output];
    const auto& xs = x.logical;
    const auto in = [&](std::size_t k) { return ptr(s.inputs[k]); };
    const auto out = ptr(s.output);
    const auto& op = s.op;
    if (op == "global_avg_pool2d" || op == "max_pool2d" || op == "avg_pool2d") {
      host::Pool2dParams p;
      if (op == "global_avg_pool2d") {
        p.count_include_pad = true;
      } else {
        p = graph::pool2d_params(s.attrs);
      }
      const auto kh = op == "global_avg_pool2d" ? expr(xs[2]) : std::to_string(p.pool_size[0]);
      const auto kw = op == "global_avg_pool2d" ? expr(xs[3]) : std::to_string(p.pool_size[1]);
      const auto shape =
          fmt::format("{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}}", expr(xs[0] * xs[1]),
                      expr(xs[2]), expr(xs[3]), expr(y.logical[2]), expr(y.logical[3]), kh, kw,
                      p.strides[0], p.strides[1], p.padding[0], p.padding[1]);
      if (op == "max_pool2d")
        return fmt::format("dlavm::runtime::pool_window_max({}, {}, dlavm::runtime::PoolShape{});",
                           in(0), out, shape);
      return fmt::format(
          "dlavm::runtime::pool_window_avg({}, {}, dlavm::runtime::PoolShape{}, {});", in(0), out,
          shape, p.count_include_pad ? "true" : "false");
    }
    if (op == "flatten" || op == "reshape")
      return fmt::format("dlavm::runtime::copy({}, {}, {});", in(0), out, count(xs));
    if (op == "dense") {
      std::vector<ne::Expr> rows(xs.begin(), xs.end() - 1);
      return fmt::format("dlavm::runtime::dense({}, {}, {}, {}, {}, {});", in(0), in(1), out,
                         count(rows), expr(m_.values()[s.inputs[1]].logical[0]), expr(xs.back()));
    }
    if (op == "cast") {
      const auto t = y.dtype;
      const auto lo = t.is_float() ? 0 : t.min_value(), hi = t.is_float() ? 0 : t.max_value();
      return fmt::format("dlavm::runtime::cast({}, {}, {}, {}LL, {}LL);", in(0), out, count(xs),
                         lo == INT64_MIN ? INT64_MIN + 1 : lo, hi);
    }
    if (op == "softmax") {
      const auto axis = static_cast<std::size_t>(
          host::normalize_axis(s.attrs.get_int("axis"), xs.size()).value());
      std::vector<ne::Expr> outer(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(axis));
      std::vector<ne::Expr> inner(xs.begin() + static_cast<std::ptrdiff_t>(axis) + 1, xs.end());
      return fmt::format("dlavm::runtime::softmax({}, {}, {}, {}, {});", in(0), out, count(outer),
                         expr(xs[axis]), count(inner));
    }
    if (op == "integer_softmax") {
      const auto p = graph::integer_softmax_params(s.attrs);
      const auto fixed = host::integer_exp_for(p.scale);
      const auto axis = static_cast<std::size_t>(host::normalize_axis(p.axis, xs.size()).value());
      std::vector<ne::Expr> outer(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(axis));
      std::vector<ne::Expr> inner(xs.begin() + static_cast<std::ptrdiff_t>(axis) + 1, xs.end());
      const auto query = host::integer_softmax_causal_queries(p, axis, xs.size());
      const ne::Expr queries = query ? xs[query->axis] : ne::Expr(0);
      return fmt::format(
          "dlavm::runtime::integer_softmax({}, {}, {}, {}, {}, dlavm::runtime::IntegerExp{{{}, "
          "{}}}, {}, {});",
          in(0), out, count(outer), expr(xs[axis]), count(inner), fixed.multiplier, fixed.frac_bits,
          expr(queries), query && query->inner);
    }
    if (op == "relu")
      return fmt::format("dlavm::runtime::relu({}, {}, {});", in(0), out, count(xs));
    if (op == "clip") {
      const auto p = graph::clip_params(s.attrs);
      if (x.dtype.is_float())
        return fmt::format("dlavm::runtime::clip({}, {}, {}, {}, {});", in(0), out, count(xs),
                           float_literal(static_cast<float>(p.lo)),
                           float_literal(static_cast<float>(p.hi)));
      const auto [lo, hi] = host::clip_int_bounds(p, x.dtype, "clip");
      return fmt::format("dlavm::runtime::clip({0}, {1}, {2}, {3}({4}LL), {3}({5}LL));", in(0), out,
                         count(xs), type_of(s.inputs[0]), lo, hi);
    }
    if (op == "requantize") {
      const auto p = graph::requantize_params(s.attrs);
      const std::uint64_t round = p.rounding == host::Rounding::Nearest && p.shift > 0
                                      ? std::uint64_t{1} << (p.shift - 1)
                                      : 0;
      return fmt::format("dlavm::runtime::requantize({}, {}, {}, {}, {}, {}ULL, {}LL, {}LL);",
                         in(0), out, count(xs), x.dtype.bits(), p.shift, round, p.lo, p.hi);
    }
    if (op == "add" || op == "mul")
      return fmt::format("dlavm::runtime::{}({}, {}, {}, {});", op, in(0), in(1), out, count(xs));
    if (op == "bias_add") {
      const auto axis = static_cast<std::size_t>(
          host::normalize_axis(graph::bias_add_params(s.attrs).axis, xs.size()).value());
      std::vector<ne::Expr> outer(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(axis));
      std::vector<ne::Expr> inner(xs.begin() + static_cast<std::ptrdiff_t>(axis) + 1, xs.end());
      return fmt::format("dlavm::runtime::bias_add({}, {}, {}, {}, {}, {});", in(0), in(1), out,
                         count(outer), expr(xs[axis]), count(inner));
    }
    if (op == "transpose") {
      const auto perm =
          host::transpose_perm(graph::transpose_params(s.attrs).perm, xs.size(), "transpose");
      std::vector<std::string> dims;
      for (const auto& d : xs) dims.push_back(expr(d));
      return fmt::format(
          "{{ const std::int64_t shape[] = {{{}}}, perm[] = {{{}}}; "
          "dlavm::runtime::transpose({}, {}, shape, perm, {}); }}",
          fmt::join(dims, ", "), fmt::join(perm, ", "), in(0), out, xs.size());
    }
    if (op == "quantize_linear" || op == "dequantize_linear") {
      const auto [outer, channels, inner] =
          channel_split(xs, xs.empty() || m_.values()[s.inputs[1]].logical.empty(),
                        graph::linear_quant_params(s.attrs).axis);
      if (op == "dequantize_linear")
        return fmt::format("dlavm::runtime::dequantize_linear({}, {}, {}, {}, {}, {}, {});", in(0),
                           in(1), in(2), out, outer, channels, inner);
      return fmt::format("dlavm::runtime::quantize_linear({}, {}, {}, {}, {}, {}, {}, {}LL, {}LL);",
                         in(0), in(1), in(2), out, outer, channels, inner, y.dtype.min_value(),
                         y.dtype.max_value());
    }
    if (op == "layer_norm") {
      const auto p = graph::layer_norm_params(s.attrs);
      const auto axis = static_cast<std::size_t>(host::normalize_axis(p.axis, xs.size()).value());
      std::vector<ne::Expr> outer(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(axis));
      std::vector<ne::Expr> group(xs.begin() + static_cast<std::ptrdiff_t>(axis), xs.end());
      return fmt::format("dlavm::runtime::layer_norm({}, {}, {}, {}, {}, {}, {});", in(0), in(1),
                         in(2), out, count(outer), count(group),
                         float_literal(static_cast<float>(p.epsilon)));
    }
    if (op == "causal_mask") {
      std::vector<ne::Expr> rows(xs.begin(), xs.end() - 1);
      return fmt::format("dlavm::runtime::causal_mask({}, {}, {}, {}, {});", in(0), out,
                         count(rows), expr(xs[xs.size() - 2]), expr(xs.back()));
    }
    refuse(s, fmt::format("op '{}' has no firmware kernel", op));
  }
  // A batched matmul operand [B..., M, C] as products, M and C.
  std::array<std::string, 3> batched3(const std::vector<ne::Expr>& s) const {
    std::vector<ne::Expr> batch(s.begin(), s.end() - 2);
    return {count(batch), expr(s[s.size() - 2]), expr(s.back())};
  }
  // x seen as [outer, channels, inner] for a linear (de)quantization's scale: one for all
  // (`per_tensor`), or one per channel of dim `axis`.
  std::array<std::string, 3> channel_split(const std::vector<ne::Expr>& xs, bool per_tensor,
                                           std::int64_t axis) const {
    if (per_tensor) return {"1", "1", count(xs)};
    const auto a = static_cast<std::size_t>(host::normalize_axis(axis, xs.size()).value());
    std::vector<ne::Expr> outer(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(a));
    std::vector<ne::Expr> inner(xs.begin() + static_cast<std::ptrdiff_t>(a) + 1, xs.end());
    return {count(outer), expr(xs[a]), count(inner)};
  }
  // A value seen as [A, B, H, W] for a tiled layout (graph/layout.hpp).
  std::array<std::string, 4> tiled4(const graph::Layout& l, const std::vector<ne::Expr>& s) const {
    if (l.kind == graph::Layout::Kind::Matrix) {
      std::vector<ne::Expr> rows(s.begin(), s.end() - 1);
      return {count(rows), expr(s.back()), "1", "1"};
    }
    return {expr(s[0]), expr(s[1]), expr(s[2]), expr(s[3])};
  }

  const graph::Module& m_;
  EmitOptions o_;
  graph::ModuleSignature sig_;
  std::string ns_;
  std::vector<ne::Var> dims_;  // the params' dims, then the growing dims of states held packed
  std::size_t params_dims_ = 0;
  std::vector<std::size_t> held_by_;  // the state of each growing dim
  graph::MemoryPlan plan_;
  std::vector<StaticGroup> groups_;
  std::vector<std::size_t> replayed_;
  std::int64_t insts_bytes_ = 0, uop_bytes_ = 0, replay_insn_at_ = 0, replay_uop_at_ = 0;
  std::int64_t replay_insns_ = 0, replay_uops_ = 0;
  std::size_t replay_ops_ = 0, replay_regions_ = 0, replay_params_ = 0;
  std::uint64_t weights_checksum_ = 0, weights_bytes_ = 0, insts_checksum_ = 0, insts_payload_ = 0;
};

}  // namespace detail

DLAVM_INLINE EmitResult emit(const graph::Module& m, const std::string& dir,
                             const EmitOptions& options) {
  return detail::Emitter(m, options).run(dir);
}

}  // namespace dlavm::deploy
