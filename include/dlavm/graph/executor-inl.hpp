// Definitions for graph/executor.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/executor.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/ne/functor.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/te/block_cache.hpp>
#include <dlavm/vta/hw/dump.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <functional>
#include <numeric>
#include <set>
#include <string>

namespace dlavm::graph {

namespace detail {

inline constexpr std::size_t kNoChain = static_cast<std::size_t>(-1);

// The most a state's dim holds: a constant, or a growing dim's maximum + 1.
inline std::int64_t state_capacity(const ne::Expr& dim) {
  if (const auto* v = dim.as<ne::VarNode>()) return v->max + 1;
  return *dim.as_int();
}

// A shape with each growing dim at its minimum (where a state starts).
inline std::vector<std::int64_t> initial_shape(const std::vector<ne::Expr>& shape) {
  std::vector<std::int64_t> out;
  for (const auto& d : shape) out.push_back(d.is_const() ? *d.as_int() : d.as<ne::VarNode>()->min);
  return out;
}

}  // namespace detail

// The regions of the executor's device, allocated once with the weights copied in, and each
// VTA step's last stream; freed with the executor, if the device still exists.
class Executor::Resident {
 public:
  Resident(const Module& m, vta::Device& dev) : dev_(&dev), alive_(dev.alive()) {
    for (std::size_t r = 0; r < kRegionCount; ++r) {
      const auto bytes = static_cast<std::size_t>(
          std::max<std::int64_t>(m.plan().region(static_cast<RegionKind>(r)).bytes, 1));
      buffers_[r] = dev.alloc(bytes);
      allocated_[r] = true;
    }
    for (const auto& v : m.values())
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

  // The stream of VTA step `step` for `bindings`: its DRAM addresses are fixed on this device,
  // and the program sees the symbolic dims only through its operands' packed shapes, so the
  // stream of the last shapes a step ran with is kept and reused (a decode step whose new
  // position stays within the last tile of keys instantiates nothing); for new shapes it is
  // rewritten in place where its shape stays (`reinstantiated`: vta::Program::reinstantiate).
  const vta::Stream& stream(const Module& m, std::size_t step,
                            std::span<const ne::Binding> bindings, bool& instantiated,
                            bool& reinstantiated) {
    if (streams_.size() <= step) streams_.resize(step + 1);
    auto& cached = streams_[step];
    const auto& s = m.steps()[step];
    std::vector<std::int64_t> key;
    for (std::size_t i = 0; i <= s.inputs.size(); ++i)
      for (const auto& d : m.values()[i < s.inputs.size() ? s.inputs[i] : s.output].shape)
        key.push_back(d.is_const() ? *d.as_int() : ne::eval(d, bindings));
    instantiated = !cached || cached->key != key;
    reinstantiated = false;
    if (!instantiated) return cached->stream;
    if (cached && s.program->reinstantiate(cached->stream, cached->tape, bindings)) {
      reinstantiated = true;
      cached->key = std::move(key);
      return cached->stream;
    }
    std::vector<std::uint64_t> phys;
    for (const auto in : s.inputs) phys.push_back(this->phys(m.values()[in].storage));
    phys.push_back(this->phys(m.values()[s.output].storage));
    vta::StreamTape tape;
    auto written = s.program->instantiate(bindings, phys, tape);
    cached = CachedStream{std::move(key), std::move(written), std::move(tape)};
    return cached->stream;
  }
  vta::Device& device() const { return *dev_; }
  // Whether the device still exists (the executor may outlive it).
  bool alive() const { return *alive_; }
  vta::Buffer buffer(RegionKind r) const { return buffers_[static_cast<std::size_t>(r)]; }
  // Where VTA steps' streams go: the insts and uop regions, one stream at a time.
  vta::StreamPlacement streams() const {
    return {buffer(RegionKind::Insts), 0, buffer(RegionKind::Uop), 0};
  }
  std::uint64_t phys(const Storage& s) const {
    return buffer(s.region).phys + static_cast<std::uint64_t>(s.offset);
  }
  void copy_in(const Storage& s, const void* data, std::size_t bytes) const {
    copy_in(s, 0, data, bytes);
  }
  // `bytes` at `offset` into the value's storage
  void copy_in(const Storage& s, std::size_t offset, const void* data, std::size_t bytes) const {
    dev_->copy_in(buffer(s.region), static_cast<std::size_t>(s.offset) + offset, data, bytes);
  }
  void copy_out(const Storage& s, void* data, std::size_t bytes) const {
    dev_->copy_out(buffer(s.region), static_cast<std::size_t>(s.offset), data, bytes);
  }

 private:
  vta::Device* dev_;
  std::shared_ptr<const bool> alive_;
  vta::Buffer buffers_[kRegionCount]{};
  bool allocated_[kRegionCount]{};
  // per VTA step: the packed shapes of its operands its stream was written for, and what
  // rewriting it for others needs
  struct CachedStream {
    std::vector<std::int64_t> key;
    vta::Stream stream;
    vta::StreamTape tape;
  };
  std::vector<std::optional<CachedStream>> streams_;
};

// One run: the host copies of the values (a value VTA wrote stays in device memory until a
// reader asks for it), and a function per kind of step.
class Executor::Run {
 public:
  Run(Executor& e, std::span<const ne::Binding> bindings, const RunOptions& options)
      : e_(e),
        m_(*e.module_),
        r_(*e.resident_),
        bindings_(bindings),
        options_(options),
        arrays_(m_.values().size()) {}

  void check_inputs(std::span<const NamedArray> inputs) {
    check_input_names(inputs);
    check_bindings();
    for (auto p : m_.signature().params) {
      const auto& v = m_.values()[p];
      const NamedArray* given = nullptr;
      for (const auto& in : inputs)
        if (in.name == v.param) given = &in;
      if (given == nullptr)
        raise<ValueError>("module '{}': no array for input {}", m_.name(), v.name);
      const auto& a = given->value.get();
      const auto shape = detail::concrete_dims(v.shape, bindings_, "input ", v.name);
      if (a.dtype() != v.dtype)
        raise<TypeError>("module '{}': input {} is {}[{}], expected {}[{}]", m_.name(), v.name,
                         a.dtype(), fmt::join(a.shape(), ", "), v.dtype, fmt::join(shape, ", "));
      if (a.shape() != shape)
        raise<ShapeError>("module '{}': input {} is {}[{}], expected {}[{}]", m_.name(), v.name,
                          a.dtype(), fmt::join(a.shape(), ", "), v.dtype, fmt::join(shape, ", "));
      arrays_[p] = a;
    }
  }

  ModuleRun run() {
    load_states();
    ModuleRun run;
    const auto last_reader = last_readers();
    for (std::size_t i = 0; i < m_.steps().size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      StepStats s = relayout_step(i) ? StepStats{.relayout = true} : step(i);
      // a host array no later step reads goes back to te's block cache for the next step's
      // result: a float network's activations then reuse a few blocks, not one each
      for (const auto v : m_.steps()[i].inputs)
        if (last_reader[v] == i) arrays_[v].reset();
      if (m_.steps()[i].kind != ModuleStep::Kind::Vta)
        s.host_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      else
        run.vta_cycles += s.cycles;
      run.steps.push_back(s);
    }
    for (auto r : m_.signature().results) run.outputs.push_back(host_array(r));
    save_states();
    for (const auto& b : bindings_) run.bindings.emplace_back(std::string(b.name), b.value);
    if (options_.keep_values) {
      for (std::size_t v = 0; v < arrays_.size(); ++v) host_array(v);
      run.values = std::move(arrays_);
    }
    return run;
  }

 private:
  // For each value, the last step that reads it, or SIZE_MAX for one kept to the run's end
  // (a result, a state, every value under RunOptions::keep_values) or never read.
  std::vector<std::size_t> last_readers() const {
    constexpr auto kept = static_cast<std::size_t>(-1);
    std::vector<std::size_t> last(m_.values().size(), kept);
    if (options_.keep_values) return last;
    for (std::size_t i = 0; i < m_.steps().size(); ++i)
      for (const auto v : m_.steps()[i].inputs) last[v] = i;
    const auto& sig = m_.signature();
    for (const auto r : sig.results) last[r] = kept;
    for (const auto& st : sig.state) {
      last[st.value] = kept;
      last[st.next] = kept;
      if (st.packed) last[*st.packed] = kept;
    }
    return last;
  }

  // Every array names an input.
  void check_input_names(std::span<const NamedArray> inputs) const {
    const auto& sig = m_.signature();
    for (const auto& in : inputs) {
      bool found = false;
      for (auto p : sig.params) found = found || m_.values()[p].param == in.name;
      if (found) continue;
      for (const auto& s : sig.state)
        if (m_.values()[s.value].param == in.name)
          raise<ValueError>(
              "module '{}': '{}' is a state of the module, not an input; set it with "
              "set_state",
              m_.name(), in.name);
      std::vector<std::string> known;
      for (auto p : sig.params) known.push_back(m_.values()[p].name);
      raise<ValueError>("module '{}': '{}' is not an input (its inputs: {})", m_.name(), in.name,
                        fmt::join(known, ", "));
    }
  }

  // Every symbolic dim of the inputs is bound, once and within its range, and every binding
  // names a symbolic dim of the module.
  void check_bindings() const {
    const std::vector<std::string>& dims = e_.dim_names_;
    for (std::size_t i = 0; i < bindings_.size(); ++i) {
      const auto& b = bindings_[i];
      for (std::size_t j = 0; j < i; ++j)
        if (bindings_[j].name == b.name)
          raise<ValueError>("module '{}': symbolic dim '{}' is bound twice ({} and {})", m_.name(),
                            b.name, bindings_[j].value, b.value);
      if (!std::binary_search(dims.begin(), dims.end(), b.name, std::less<>{}))
        raise<ValueError>("module '{}': '{}' is no symbolic dim of the module ({})", m_.name(),
                          b.name,
                          dims.empty() ? std::string("it has none")
                                       : fmt::format("its dims: {}", fmt::join(dims, ", ")));
    }
    for (auto p : m_.signature().params)
      for (const auto& d : m_.values()[p].logical)
        for (const auto& v : ne::free_vars(d)) {
          const auto* var = v.as<ne::VarNode>();
          const ne::Binding* b = nullptr;
          for (const auto& x : bindings_)
            if (x.name == var->name) b = &x;
          if (b == nullptr)
            raise<ValueError>(
                "module '{}': symbolic dim '{}' of input {} has no value; pass "
                "{{\"{}\", value}} in the bindings",
                m_.name(), var->name, m_.values()[p].name, var->name);
          if (b->value < var->min || b->value > var->max)
            raise<ValueError>("module '{}': symbolic dim '{}' = {} is outside its range [{}, {}]",
                              m_.name(), var->name, b->value, var->min, var->max);
        }
  }

  // The bytes an array passes through on its way to or from device memory, in a block of te's
  // cache: a prefill's scores are 128 MiB of them, which new pages each run would cost.
  using StagingBytes = std::vector<std::uint8_t, te::CachingAllocator<std::uint8_t>>;

  // The host array of value v: a constant, one the host computed, or one VTA wrote, copied out
  // of device memory at the bindings' shape.
  const te::NDArray& host_array(std::size_t v) {
    const auto& value = m_.values()[v];
    if (value.constant) return *value.constant;
    if (!arrays_[v])
      arrays_[v] =
          from_device(value, detail::concrete_dims(value.shape, bindings_, "value ", value.name));
    return *arrays_[v];
  }

  // The bytes of `value` in device memory as an array of shape `dims`.
  te::NDArray from_device(const ModuleValue& value, std::vector<std::int64_t> dims) const {
    te::NDArray a(value.dtype, std::move(dims));
    StagingBytes bytes(a.size() * static_cast<std::size_t>(value.dtype.bytes()));
    r_.copy_out(value.storage, bytes.data(), bytes.size());
    vta::from_dram_bytes(bytes, a);
    return a;
  }

  // A host result VTA reads goes to its device slot.
  void to_device(std::size_t v) {
    const auto& value = m_.values()[v];
    if (value.storage.vta) to_device(*arrays_[v], value.storage);
  }
  void to_device(const te::NDArray& a, const Storage& storage) const {
    StagingBytes bytes(a.size() * static_cast<std::size_t>(a.dtype().bytes()));
    vta::dram_bytes(a, bytes);
    r_.copy_in(storage, bytes.data(), bytes.size());
  }

  // The states before the run: a state held packed is read only through its packed value
  // (unpacked here if the run keeps values); the others as arrays.
  void load_states() {
    const auto& sig = m_.signature();
    for (std::size_t i = 0; i < sig.state.size(); ++i)
      if (!e_.states_.appended[i] || options_.keep_values)
        arrays_[sig.state[i].value] = e_.state(m_.values()[sig.state[i].value].param);
    for (auto p : sig.params) to_device(p);
    for (const auto& s : sig.state) to_device(s.value);
  }

  // The states after the run: the appended positions committed, the others their next values.
  void save_states() {
    const auto& sig = m_.signature();
    for (std::size_t i = 0; i < sig.state.size(); ++i) {
      if (auto& appended = e_.states_.appended[i]) {
        appended->commit();
        e_.states_.stale[i] = true;
      } else {
        e_.states_.arrays[i] = host_array(sig.state[i].next);
      }
    }
  }

  StepStats step(std::size_t i) {
    const ModuleStep& s = m_.steps()[i];
    switch (s.kind) {
      case ModuleStep::Kind::Vta:
        return vta_step(i);
      case ModuleStep::Kind::Host:
        host_step(i);
        break;
      case ModuleStep::Kind::Pack: {
        // (a value whose packed bytes are its own goes to VTA as it is, and stays there unless
        // the run keeps every value: a later step may reuse its device memory)
        const auto& out = m_.values()[s.output];
        const auto& in = host_array(s.inputs[0]);
        if (out.storage.vta && !options_.keep_values && in.dtype().is_integral() &&
            keeps_row_major(out.layout, in.shape())) {
          to_device(in, out.storage);
          arrays_[s.output].reset();
        } else {
          arrays_[s.output] = pack(in, out.layout);
          to_device(s.output);
        }
        break;
      }
      case ModuleStep::Kind::Unpack: {
        const auto& v = m_.values()[s.inputs[0]];
        auto shape = detail::concrete_dims(v.logical, bindings_, "value ", v.name);
        if (!arrays_[s.inputs[0]] && !v.constant && v.storage.vta && v.dtype.is_integral() &&
            keeps_row_major(v.layout, shape))
          arrays_[s.output] = from_device(v, std::move(shape));
        else
          arrays_[s.output] = unpack(host_array(s.inputs[0]), v.layout, shape);
        to_device(s.output);
        break;
      }
      case ModuleStep::Kind::Append:
        append_step(i);
        break;
    }
    return {};
  }

  // Step i as part of its relayout chain: the unpack puts the packed bytes in their new
  // layout on the host (unless the run's shapes do not allow it: the chain's steps then run
  // one by one), the moves do nothing, the pack copies the bytes to the device.
  bool relayout_step(std::size_t i) {
    if (options_.keep_values || e_.chain_of_[i] == detail::kNoChain) return false;
    const std::size_t c = e_.chain_of_[i];
    const RelayoutChain& chain = e_.chains_[c];
    if (relaid_.size() <= c) relaid_.resize(e_.chains_.size());
    auto& moved = relaid_[c];
    if (i == chain.unpack) moved = relaid(c);
    if (!moved) return false;
    if (i == chain.pack) {
      const auto out = m_.steps()[i].output;
      if (chain.append) {
        const std::size_t state = m_.appended_by(i);
        e_.states_.appended[state]->append(moved->bytes, moved->shape);
        e_.to_device(state);
      } else {
        r_.copy_in(m_.values()[out].storage, moved->bytes.data(), moved->bytes.size());
      }
      arrays_[out].reset();  // in device memory
      e_.chain_buffers_[c].out = std::move(moved->bytes);
      moved.reset();
    }
    return true;
  }
  // A relayout chain's result: its bytes, packed for a Pack, in row-major order for an Append.
  struct Relaid {
    std::vector<std::uint8_t> bytes;
    std::vector<std::int64_t> shape;
  };

  // A relayout chain's result, from its unpack's input in device memory; nullopt where a
  // layout's offsets do not separate at these shapes.
  std::optional<Relaid> relaid(std::size_t c) const {
    const RelayoutChain& chain = e_.chains_[c];
    const auto dims = [&](const std::vector<ne::Expr>& shape, const ModuleValue& v) {
      return detail::concrete_dims(shape, bindings_, "value ", v.name);
    };
    const auto size = [](const std::vector<std::int64_t>& s) {
      return static_cast<std::size_t>(
          std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>{}));
    };
    const ModuleValue& in = m_.values()[m_.steps()[chain.unpack].inputs[0]];
    const ModuleValue& out = m_.values()[m_.steps()[chain.pack].output];
    // the dims the maps depend on: the input's, then each reshape's (each of a fixed rank)
    const auto in_dims = dims(in.logical, in);
    std::vector<std::vector<std::int64_t>> reshaped(chain.moves.size());
    std::vector<std::int64_t> key = in_dims;
    for (std::size_t k = 0; k < chain.moves.size(); ++k) {
      if (chain.perms[k]) continue;
      const ModuleValue& moved = m_.values()[m_.steps()[chain.moves[k]].output];
      reshaped[k] = dims(moved.logical, moved);
      key.insert(key.end(), reshaped[k].begin(), reshaped[k].end());
    }
    if (e_.chain_maps_.size() <= c) e_.chain_maps_.resize(e_.chains_.size());
    auto& maps = e_.chain_maps_[c];
    if (maps && maps->dims != key) {
      // (maps a retile left half done, by a failed allocation, are not kept under either dims)
      bool followed = false;
      try {
        followed = retiled(chain, in.layout, in_dims, out.layout, *maps);
      } catch (...) {
        maps.reset();
        throw;
      }
      if (followed) maps->dims = key;
    }
    if (!maps || maps->dims != key) {
      maps.reset();
      auto map = packed_offsets(in.layout, in_dims);
      if (!map) return std::nullopt;
      for (std::size_t k = 0; k < chain.moves.size(); ++k) {
        if (chain.perms[k])
          map->permute(*chain.perms[k]);
        else if (!map->reshape(reshaped[k]))
          return std::nullopt;
      }
      auto to = packed_offsets(chain.append ? Layout{} : out.layout, map->shape());
      if (!to) return std::nullopt;
      maps = ChainMaps{std::move(key), std::move(*map), std::move(*to)};
    }
    if (e_.chain_buffers_.size() <= c) e_.chain_buffers_.resize(e_.chains_.size());
    auto& buffers = e_.chain_buffers_[c];
    Relaid result{std::move(buffers.out), maps->from.shape()};
    auto& src = buffers.in;
    src.resize(size(dims(in.shape, in)));
    result.bytes.assign(chain.append ? size(result.shape) : size(dims(out.shape, out)), 0);
    r_.copy_out(in.storage, src.data(), src.size());
    copy_elements(src.data(), maps->from, result.bytes.data(), maps->to);
    return result;
  }

  // A chain's maps, made by moves that only permute, followed to new dims by their tilings
  // (ElementMap::retile: a decode step's maps differ from the last step's by a key, and every
  // 16 steps by where their tiles are); false where they cannot be (a reshape among the moves,
  // a map not of tiled dims), the maps then built anew.
  static bool retiled(const RelayoutChain& chain, const Layout& in,
                      std::span<const std::int64_t> dims, const Layout& out, ChainMaps& maps) {
    for (const auto& perm : chain.perms)
      if (!perm) return false;
    auto from = packed_tiling(in, dims);
    if (!from) return false;
    std::vector<std::int64_t> shape;
    for (const auto& perm : chain.perms) {
      std::vector<TiledDim> moved;
      for (const auto d : *perm) moved.push_back((*from)[static_cast<std::size_t>(d)]);
      *from = std::move(moved);
    }
    for (const auto& t : *from) shape.push_back(t.extent);
    const auto to = packed_tiling(chain.append ? Layout{} : out, shape);
    return to && maps.from.retile(*from) && maps.to.retile(*to);
  }

  void host_step(std::size_t i) {
    const ModuleStep& s = m_.steps()[i];
    std::vector<const te::NDArray*> args;
    for (auto in : s.inputs) args.push_back(&host_array(in));
    const OpRecord* op = e_.host_ops_[i];
    arrays_[s.output] = (op != nullptr ? *op : m_.ops().at(s.op)).host_kernel(args, s.attrs);
    to_device(s.output);
  }

  // A run's new positions written into the packed bytes of a growing state, in device memory:
  // only the bytes the append wrote, unless it moved the held tiles.
  void append_step(std::size_t i) {
    const ModuleStep& s = m_.steps()[i];
    AppendedState& held = *e_.states_.appended[m_.appended_by(i)];
    held.append(host_array(s.inputs[0]));
    e_.to_device(m_.appended_by(i));
    arrays_[s.output].reset();  // in device memory
  }

  StepStats vta_step(std::size_t index) {
    const ModuleStep& step = m_.steps()[index];
    bool instantiated = false, reinstantiated = false;
    const vta::Stream& stream = r_.stream(m_, index, bindings_, instantiated, reinstantiated);
    const std::string dir =
        options_.dump_dir.empty()
            ? std::string()
            : fmt::format("{}/step{:02}_{}", options_.dump_dir, index, step.program->name());
    std::vector<vta::ManifestBuffer> dumped;
    std::string initial;  // the output slot before the run: what the stream does not write
    if (!dir.empty()) {
      std::filesystem::create_directories(dir);
      for (auto in : step.inputs) dump(dir, in, false, dumped);
      initial = dump_initial(dir, step.output);
    }
    const vta::RunResult result = r_.device().run_at(stream, r_.streams());
    if (!dir.empty()) {
      dump(dir, step.output, true, dumped);
      dumped.back().initial_file = initial;
      vta::dump_stream(dir, m_.env().config, stream, r_.buffer(RegionKind::Uop).phys,
                       std::move(dumped));
    }
    // the plan gives its bytes to later values after its last reader: keep it now
    arrays_[step.output].reset();
    if (options_.keep_values) host_array(step.output);
    StepStats stats = vta_stats(step, stream, result, instantiated);
    stats.reinstantiated = reinstantiated;
    return stats;
  }

  // A dump of value v's slot: the parameters' as VTA reads them, the output's as it leaves it.
  void dump(const std::string& dir, std::size_t v, bool output,
            std::vector<vta::ManifestBuffer>& dumped) const {
    const auto& value = m_.values()[v];
    const auto name = dump_name(v);
    const auto bytes = write_slot(dir + "/" + name + ".bin", v);
    dumped.push_back({name, r_.phys(value.storage), bytes, value.dtype, output, name + ".bin"});
  }
  // The output slot of value v before the step runs (earlier steps' bytes where the plan
  // reuses them): its initial image's file name.
  std::string dump_initial(const std::string& dir, std::size_t v) const {
    const auto file = dump_name(v) + ".initial.bin";
    write_slot(dir + "/" + file, v);
    return file;
  }
  std::string dump_name(std::size_t v) const {
    std::string name = fmt::format("v{}", v);
    for (char c : m_.values()[v].name)
      name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return name;
  }
  std::size_t write_slot(const std::string& path, std::size_t v) const {
    const auto& storage = m_.values()[v].storage;
    std::vector<std::byte> bytes(static_cast<std::size_t>(storage.bytes));
    r_.copy_out(storage, bytes.data(), bytes.size());
    vta::write_dram_image(path, bytes);
    return bytes.size();
  }

  StepStats vta_stats(const ModuleStep& step, const vta::Stream& stream,
                      const vta::RunResult& result, bool instantiated) const {
    StepStats s;
    s.instructions = stream.insns.size();
    s.uops = stream.uops.size();
    s.cycles = result.timing.total_cycles;
    s.roofline_cycles = result.timing.roofline_cycles;
    s.dram_bytes = result.timing.counters.memory_bytes();
    s.data_bytes = s.dram_bytes - result.timing.counters.uop_load_bytes;
    s.gemm_macs = result.timing.counters.gemm_macs(m_.env().config);
    s.tiling_bytes = ne::eval(step.traffic, bindings_);
    s.macs = ne::eval(step.macs, bindings_);
    s.instantiated = instantiated;
    return s;
  }

  Executor& e_;
  const Module& m_;
  Resident& r_;
  std::span<const ne::Binding> bindings_;
  const RunOptions& options_;
  std::vector<std::optional<te::NDArray>> arrays_;
  std::vector<std::optional<Relaid>> relaid_;  // by chain: its result
};

DLAVM_INLINE Executor::Executor(Module module, vta::Device& dev)
    : Executor(std::make_shared<const Module>(std::move(module)), dev) {}

DLAVM_INLINE Executor::Executor(std::shared_ptr<const Module> module, vta::Device& dev)
    : module_(std::move(module)), dev_(&dev) {
  const Module& m = *module_;
  const auto& env = m.env();
  if (dev.config() != env.config)
    raise<ValueError>(
        "module '{}': built for a VTA of BATCH {}, BLOCK_IN {}, BLOCK_OUT {} and its SRAM sizes; "
        "the device is configured otherwise (BATCH {}, BLOCK_IN {}, BLOCK_OUT {}, or other "
        "sizes): build with graph::Target{{.env = vta::Env(device config)}}",
        m.name(), env.batch, env.block_in, env.block_out, dev.config().batch(),
        dev.config().block_in(), dev.config().block_out());
  resident_ = std::make_unique<Resident>(m, dev);
  std::set<std::string, std::less<>> dims;
  for (const auto& v : m.values())
    for (const auto* shape : {&v.shape, &v.logical})
      for (const auto& d : *shape)
        for (const auto& var : ne::free_vars(d)) dims.insert(var.as<ne::VarNode>()->name);
  dim_names_.assign(dims.begin(), dims.end());
  host_ops_.assign(m.steps().size(), nullptr);
  for (std::size_t i = 0; i < m.steps().size(); ++i)
    if (m.steps()[i].kind == ModuleStep::Kind::Host) host_ops_[i] = m.ops().find(m.steps()[i].op);
  chains_ = relayout_chains(m);
  chain_of_.assign(m.steps().size(), detail::kNoChain);
  for (std::size_t c = 0; c < chains_.size(); ++c) {
    chain_of_[chains_[c].unpack] = chain_of_[chains_[c].pack] = c;
    for (const auto s : chains_[c].moves) chain_of_[s] = c;
  }
  const auto& states = m.signature().state;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const auto& st = states[i];
    states_.appended.emplace_back();
    if (!st.packed) continue;
    const auto& v = m.values()[st.value];
    states_.appended.back().emplace(v.dtype, detail::initial_shape(v.shape), m.growing_dim(i),
                                    st.perm, m.values()[*st.packed].layout, v.param);
    // its most positions: a run's new tile moves the held ones in place, not into a new buffer
    states_.appended.back()->reserve(detail::state_capacity(v.shape[m.growing_dim(i)]));
  }
  reset_state();
}

DLAVM_INLINE Executor::~Executor() = default;
DLAVM_INLINE Executor::Executor(Executor&&) noexcept = default;
DLAVM_INLINE Executor& Executor::operator=(Executor&&) noexcept = default;

DLAVM_INLINE const te::NDArray& Executor::state(std::string_view name) const {
  const std::size_t i = module_->state_index(name);
  if (states_.stale[i]) {
    states_.arrays[i] = states_.appended[i]->logical();
    states_.stale[i] = false;
  }
  return states_.arrays[i];
}

DLAVM_INLINE void Executor::set_state(std::string_view name, te::NDArray value) {
  const Module& m = *module_;
  const std::size_t i = m.state_index(name);
  const auto& v = m.values()[m.signature().state[i].value];
  bool fits = value.dtype() == v.dtype && value.ndim() == v.shape.size();
  for (std::size_t k = 0; fits && k < v.shape.size(); ++k) {
    const auto* var = v.shape[k].as<ne::VarNode>();
    const auto n = value.shape()[k];
    fits = var != nullptr ? n >= var->min && n <= var->max + 1 : n == *v.shape[k].as_int();
  }
  if (!fits) {
    // the type as declared, then how long the state may be along its growing dims: its
    // variable's maximum + 1 (a run from the maximum appends one position)
    std::vector<std::string> dims, lengths;
    for (const auto& d : v.shape) {
      if (d.is_const()) {
        dims.push_back(fmt::format("{}", d));
        continue;
      }
      const auto* var = d.as<ne::VarNode>();
      dims.push_back(fmt::format("{} in [{}, {}]", d, var->min, var->max));
      lengths.push_back(
          fmt::format("{} to {} along {}", var->min, detail::state_capacity(d), var->name));
    }
    raise<ShapeError>("module '{}': state '{}' is {}[{}]{}, the array is {}[{}]", m.name(), name,
                      v.dtype, fmt::join(dims, ", "),
                      lengths.empty() ? std::string()
                                      : fmt::format(" (an array of {})", fmt::join(lengths, ", ")),
                      value.dtype(), fmt::join(value.shape(), ", "));
  }
  if (states_.appended[i]) {
    states_.appended[i]->assign(value);
    to_device(i);
  }
  states_.arrays[i] = std::move(value);
  states_.stale[i] = false;
}

DLAVM_INLINE void Executor::reset_state() {
  const Module& m = *module_;
  const auto& states = m.signature().state;
  states_.arrays.clear();
  states_.stale.assign(states.size(), false);
  for (std::size_t i = 0; i < states.size(); ++i) {
    const auto& v = m.values()[states[i].value];
    states_.arrays.emplace_back(v.dtype, detail::initial_shape(v.shape));
    if (states_.appended[i]) {
      states_.appended[i]->assign(states_.arrays.back());
      to_device(i);
    }
  }
}

DLAVM_INLINE void Executor::to_device(std::size_t i) {
  if (!resident_->alive()) return;  // (set_state after the device: nothing to copy into)
  const Module& m = *module_;
  AppendedState& held = *states_.appended[i];
  const auto& storage = m.values()[*m.signature().state[i].packed].storage;
  // (ranges a few bytes apart come as one: the bytes between are on the device already, every
  // byte having gone there since the layout last changed)
  for (const auto& w : held.take_written())
    resident_->copy_in(storage, w.offset, held.bytes().data() + w.offset, w.size);
}

DLAVM_INLINE std::int64_t Executor::held_length(std::size_t i, std::size_t k) const {
  return states_.appended[i] ? states_.appended[i]->length() : states_.arrays[i].shape()[k];
}

DLAVM_INLINE std::vector<ne::Binding> Executor::bind_states(
    std::span<const ne::Binding> bindings) const {
  const Module& m = *module_;
  std::vector<ne::Binding> all(bindings.begin(), bindings.end());
  const auto& states = m.signature().state;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const auto& v = m.values()[states[i].value];
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
            m.name(), v.param, held, k, var->name, var->name, given->value, var->name);
      }
    }
  }
  return all;
}

DLAVM_INLINE void Executor::check_states_fit(std::span<const ne::Binding> all) const {
  const Module& m = *module_;
  const auto& states = m.signature().state;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const auto& v = m.values()[states[i].value];
    const auto& next = m.values()[states[i].next];
    for (std::size_t k = 0; k < v.shape.size(); ++k) {
      if (v.shape[k].is_const()) continue;
      const auto* var = v.shape[k].as<ne::VarNode>();
      const std::int64_t held = held_length(i, k);
      if (held > var->max)
        raise<CapacityError>(
            "module '{}': state '{}' is full: it holds {} along dim {}, and a run starts from at "
            "most {} (`{}`'s maximum); reset_state() to start over, or build with a larger "
            "maximum",
            m.name(), v.param, held, k, var->max, var->name);
      // a state held packed: `next` holds the new positions
      const ne::Expr after =
          states_.appended[i] ? ne::simplify(v.shape[k] + next.logical[k]) : next.logical[k];
      const std::int64_t length = ne::eval(after, all);
      if (length > detail::state_capacity(v.shape[k]))
        raise<CapacityError>(
            "module '{}': state '{}' would hold {} along dim {} (`{}`) after this run, and it "
            "holds at most {} ({}'s maximum {} + 1): a cache too small for this run; "
            "reset_state() to start over, or build with a larger maximum",
            m.name(), v.param, length, k, after, detail::state_capacity(v.shape[k]), v.shape[k],
            detail::state_capacity(v.shape[k]) - 1);
    }
  }
}

DLAVM_INLINE std::vector<te::NDArray> Executor::run(std::span<const NamedArray> inputs,
                                                    std::span<const ne::Binding> given,
                                                    const RunOptions& options) {
  const std::vector<ne::Binding> bindings = bind_states(given);
  Run r(*this, bindings, options);
  r.check_inputs(inputs);
  check_states_fit(bindings);
  last_ = r.run();
  return last_->outputs;
}

DLAVM_INLINE const ModuleRun& Executor::last_run() const {
  if (!last_) raise<ValueError>("module '{}': not run yet; call run() first", module_->name());
  return *last_;
}

DLAVM_INLINE te::NDArray Executor::value_of(std::string_view node) const {
  const ModuleRun& run = last_run();
  const Module& m = *module_;
  if (run.values.empty())
    raise<ValueError>("module '{}': the last run kept no values; run with {{.keep_values = true}}",
                      m.name());
  const std::size_t found = m.value_of(node);
  const auto& v = m.values()[found];
  if (v.layout.kind == Layout::Kind::Plain) return *run.values[found];
  std::vector<ne::Binding> b;
  for (const auto& [name, value] : run.bindings) b.push_back({name, value});
  return unpack(*run.values[found], v.layout,
                detail::concrete_dims(v.logical, b, "value ", v.name));
}

DLAVM_INLINE std::string Executor::summary() const {
  const ModuleRun& run = last_run();
  const Module& m = *module_;
  const auto& env = m.env();
  std::string out = fmt::format("module '{}': {} steps\n", m.name(), m.steps().size());
  out += fmt::format("{:>3}  {:<48} {:<6} {:>7} {:>6} {:>10} {:>9} {:>11} {:>7}\n", "#", "step",
                     "device", "insns", "uops", "cycles", "roofline", "DRAM bytes", "/tiling");
  std::uint64_t roofline = 0, gemm_macs = 0;
  std::int64_t macs = 0;
  double host = 0;
  const auto share = [](double part, double whole) { return whole == 0 ? 0.0 : part / whole; };
  for (std::size_t i = 0; i < m.steps().size(); ++i) {
    const auto& step = m.steps()[i];
    const auto& s = run.steps[i];
    std::string label = step.label;
    if (label.size() > 48) label = label.substr(0, 45) + "...";
    if (step.kind == ModuleStep::Kind::Vta) {
      roofline += s.roofline_cycles;
      gemm_macs += s.gemm_macs;
      macs += s.macs;
      out += fmt::format(
          "{:>3}  {:<48} {:<6} {:>7} {:>6} {:>10} {:>8.1f}% {:>11} {:>6.2f}x\n", i, label, "vta",
          s.instructions, s.uops, s.cycles,
          100.0 * share(static_cast<double>(s.roofline_cycles), static_cast<double>(s.cycles)),
          s.dram_bytes,
          share(static_cast<double>(s.data_bytes), static_cast<double>(s.tiling_bytes)));
    } else {
      host += s.host_seconds;
      out += fmt::format("{:>3}  {:<48} {:<6} {:>7} {:>6} {:>10} {:>9} {:>11} {:>7}\n", i, label,
                         step.kind == ModuleStep::Kind::Host ? "host" : "host*", "-", "-",
                         fmt::format("{:.2f}ms", s.host_seconds * 1e3), "-", "-", "-");
    }
  }
  const double per_cycle = static_cast<double>(env.batch * env.block_in * env.block_out);
  const auto cycles = static_cast<double>(run.vta_cycles);
  out += fmt::format(
      "VTA: {} cycles (roofline bound {}, {:.1f}%); {} MACs of the model / {} per cycle = {:.0f} "
      "cycles ({:.1f}% of the VTA cycles); the GEMM core ran {} MACs (tile padding included)\n",
      run.vta_cycles, roofline, 100.0 * share(static_cast<double>(roofline), cycles), macs,
      per_cycle, static_cast<double>(macs) / per_cycle,
      100.0 * share(static_cast<double>(macs) / per_cycle, cycles), gemm_macs);
  out += fmt::format("host: {:.2f} ms (host* = layout conversions)\n", host * 1e3);
  return out;
}

}  // namespace dlavm::graph
