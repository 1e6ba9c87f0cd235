// graph::Executor: runs a built graph::Module on a vta::Device, step by step: VTA programs on
// the device, host op calls with the module's op registry, layout conversions and appends on
// the host. The module is immutable; several executors share one through the shared_ptr
// constructor (Executor(Module) copies it, a shallow copy: programs and constants are shared),
// and what changes from
// run to run lives here, as runtime::Session holds it in firmware: the device memory of the
// module's plan (one allocation per region, the weights VTA reads copied once), the states
// (zeros, or empty for a growing one, until a run or set_state), each VTA step's instantiated
// stream, and the last run's statistics.
//
// Symbolic dims stay expressions in the module: `run` takes their values, and each VTA program
// is instantiated for a device and the packed shapes of its operands once (the program sees
// the symbolic dims only through them): a run whose bindings give the shapes of the step's
// previous run reuses its stream (StepStats::instantiated says which), and one whose new
// shapes leave the stream's shape as it was rewrites its fields in place
// (StepStats::reinstantiated). Values VTA reads or
// writes stay in device memory between VTA steps and cross to the host only where a host
// step, a result or keep_values reads them; a VTA result that the host only unpacks,
// permutes or reshapes and packs for another VTA step moves as one copy of its packed bytes
// (graph::relayout_chains; StepStats::relayout), except under keep_values. A value whose
// packed bytes are its row-major ones (graph::keeps_row_major: a decode step's activations in
// one-row tiles) crosses as those bytes, not packed or unpacked element by element.
//
//   auto mod = graph::build(fn, target, {.name = "mlp"});
//   vta::SimDevice dev(target.env.config);
//   graph::Executor exec(mod, dev);
//   auto out = exec.run({{"x", x}}, {{"batch", 37}});        // host and VTA steps in order
//   fmt::print("{}", exec.summary());                        // per step: device, insns, cycles
//
// Errors: a device configured otherwise than the build's VTA (at construction); an input
// missing, unknown, or of the wrong dtype or shape (under the bindings), a binding outside
// its dim's range, a dim left unbound, a state that is full or too small for a run: dlavm::
// Errors naming the input, dim, state or configuration.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/appended_state.hpp>
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/graph/relayout.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/te/ndarray.hpp>
#include <dlavm/vta/hw/device.hpp>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::graph {

// What one step did in a run.
struct StepStats {
  std::size_t instructions = 0, uops = 0;
  std::uint64_t cycles = 0, roofline_cycles = 0;
  std::uint64_t dram_bytes = 0;   // bytes the stream moved (loads, micro-ops, stores)
  std::uint64_t data_bytes = 0;   // of which tensor data (micro-ops excluded)
  std::int64_t tiling_bytes = 0;  // bytes its tiling must move (VTA steps)
  std::uint64_t gemm_macs = 0;    // VTA: MACs the GEMM core performed (padding included)
  std::int64_t macs = 0;          // VTA: MACs of the operation (padding excluded)
  double host_seconds = 0;        // host steps: wall time of the kernel
  // VTA: whether this run instantiated the step's stream (the first run, or new packed shapes
  // of its operands), rather than reusing it; `reinstantiated`: by rewriting the stream before
  // in place, its shape unchanged (vta::Program::reinstantiate: a decode step's softmax from
  // one position to the next), rather than writing it anew
  bool instantiated = false;
  bool reinstantiated = false;
  // Unpack, Pack and the host steps between them that only move elements: done as one copy
  // of packed bytes with the rest of its chain (graph/relayout.hpp), not one by one
  bool relayout = false;
};

struct ModuleRun {
  std::vector<te::NDArray> outputs;
  std::vector<StepStats> steps;  // one per Module::steps()
  std::uint64_t vta_cycles = 0;  // the VTA steps' cycles, in sequence
  // With RunOptions::keep_values: every value's array, by value index; and the bindings.
  std::vector<std::optional<te::NDArray>> values;
  std::vector<std::pair<std::string, std::int64_t>> bindings;
};

struct RunOptions {
  bool keep_values = false;  // keep every intermediate array (Executor::value_of)
  // When set: each VTA step's stream, micro-ops and DRAM images (its parameters' slots before
  // the run, its output's after) with a manifest of their device addresses, in
  // <dump_dir>/step<NN>_<program>/, so that VTA's functional simulator can replay the model
  // step by step (vta::load_dump, vta::replay).
  std::string dump_dir = {};
};

class Executor {
 public:
  // Allocates the module's regions on `dev` and copies the weights VTA reads; the states start
  // at zero (a growing state empty). The device must outlive the executor, or die first (then
  // its memory is not freed twice). ValueError for a device configured otherwise.
  Executor(Module module, vta::Device& dev);
  Executor(std::shared_ptr<const Module> module, vta::Device& dev);
  ~Executor();
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const Module& module() const { return *module_; }
  vta::Device& device() const { return *dev_; }

  // Runs every step in order; returns the results.
  std::vector<te::NDArray> run(std::span<const NamedArray> inputs,
                               std::span<const ne::Binding> bindings = {},
                               const RunOptions& options = {});
  std::vector<te::NDArray> run(std::initializer_list<NamedArray> inputs,
                               std::initializer_list<ne::Binding> bindings = {},
                               const RunOptions& options = {}) {
    return run(std::span(inputs.begin(), inputs.size()),
               std::span(bindings.begin(), bindings.size()), options);
  }

  // The last run's statistics; ValueError before the first run.
  const ModuleRun& last_run() const;
  // The value of graph node `node` in the last run, in its logical layout (unpacked if VTA left
  // it packed): its printed name ("%3", "%fc1") or the name of a named call or leaf ("fc1").
  // ValueError when the last run did not keep values, or no value holds that node.
  te::NDArray value_of(std::string_view node) const;

  // The states (graph::State): what each holds now (zeros until a run or set_state), set by
  // name (its dtype and shape checked), and all back to zeros. Each run reads them and leaves
  // them at their next values. ValueError naming the state for a name that is none. A state
  // held packed (ModuleState::packed) is unpacked by state() when asked for, and packed by
  // set_state.
  // A growing state (a variable dim v, a KV cache's last_token) starts empty (v at its
  // minimum); a run binds v to the length it holds (a binding that differs is a ValueError,
  // naming both), and one that would leave it longer than v's maximum + 1 is refused before
  // it runs (CapacityError naming the state and the lengths): reset_state() starts over.
  const te::NDArray& state(std::string_view name) const;
  void set_state(std::string_view name, te::NDArray value);
  void reset_state();

  // A table of the last run, one row per step (device, instructions, micro-ops, cycles, share
  // of the roofline bound, DRAM bytes against the tiling's), then the totals: VTA cycles
  // against the model's MACs / (BATCH x BLOCK_IN x BLOCK_OUT) per cycle.
  std::string summary() const;

 private:
  class Resident;
  class Run;
  // The states' arrays: for a state held packed, its packed bytes (AppendedState), and the
  // array unpacked from them when state() last asked (stale after a run).
  struct States {
    std::vector<te::NDArray> arrays;
    std::vector<std::optional<AppendedState>> appended;
    std::vector<bool> stale;
  };

  // The bindings with each growing state's variable bound to the length it holds.
  std::vector<ne::Binding> bind_states(std::span<const ne::Binding> bindings) const;
  // CapacityError unless each growing state can take its next value (state() above).
  void check_states_fit(std::span<const ne::Binding> bindings) const;
  // The bytes of packed state i written since it last went to the device memory, copied
  // there: a run's appended positions, or all of it after set_state or reset_state, so that
  // the next run's append copies only what it writes.
  void to_device(std::size_t i);
  // The length state i holds along dim k.
  std::int64_t held_length(std::size_t i, std::size_t k) const;

  std::shared_ptr<const Module> module_;
  vta::Device* dev_;
  std::unique_ptr<Resident> resident_;
  // The module's symbolic dims by name, sorted: what a run's bindings may name (collected once;
  // a decode step's check of them was 3% of its time)
  std::vector<std::string> dim_names_;
  // Each host step's op, found once (a lookup by name was 4% of a decode step's host work;
  // null for a name the registry lacks, which the step then reports)
  std::vector<const OpRecord*> host_ops_;
  // The module's relayout chains, and each step's (SIZE_MAX: none)
  std::vector<RelayoutChain> chains_;
  std::vector<std::size_t> chain_of_;
  // Each chain's element maps for the dims it last saw (its input's and its reshapes'), which
  // follow new dims by retiling (a decode step's chains see one key more each step, and
  // building the maps cost more than copying the bytes).
  struct ChainMaps {
    std::vector<std::int64_t> dims;
    ElementMap from, to;
  };
  std::vector<std::optional<ChainMaps>> chain_maps_;
  // Each chain's bytes from the device and its result's, kept from run to run: a decode
  // step's scores and probabilities are 16 to 32 KB, whose fresh pages cost more than the copy.
  struct ChainBuffers {
    std::vector<std::uint8_t> in, out;
  };
  std::vector<ChainBuffers> chain_buffers_;
  mutable States states_;
  std::optional<ModuleRun> last_;
};

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/executor-inl.hpp>
#endif
