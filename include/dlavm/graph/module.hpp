// graph::Module: a built model (graph::build), as plain data. It holds values (the params, the
// constants, already packed for VTA where VTA reads them, and the intermediates), each with a
// storage slot, and steps in execution order: host op calls (by op name and attributes, run
// with the target's op registry), layout conversions (pack / unpack, on the host), and VTA
// programs (vta::Program, one per fused group, with its workload, knobs, MACs and traffic).
// Symbolic dims stay expressions: `run` takes their values, and the VTA programs are
// instantiated for them (microseconds), never recompiled.
//
// Storage: the module plans its memory (graph::plan_memory): the constants in the `weight`
// region, the params, intermediates and results in the `runtime` region, where a value's
// bytes go to a later one once its last reader has run, the states in `cache`, the streams in
// `insts` and `uop`; every slot sized for the dims' maxima. A run on a device allocates each
// region once there and copies the weights VTA reads once; the values VTA reads or writes
// stay in device memory between VTA steps and cross to the host only where a host step, a
// result or keep_values reads them. Each VTA step's stream is instantiated for a device and
// the packed shapes of its operands once (the program sees the symbolic dims only through
// them): a run whose bindings give the shapes of the step's previous run on that device reuses
// its stream, copied to the insts and uop regions (StepStats::instantiated says which).
//
//   auto mod = graph::build(fn, target, {.name = "mlp"});
//   vta::SimDevice dev(target.env.config);
//   auto out = mod.run(dev, {{"x", x}}, {{"batch", 37}});   // host and VTA steps in order
//   fmt::print("{}", mod.summary());                         // per step: device, insns, cycles
//   fmt::print("{}", mod);                                   // the steps
//
// Errors: an input missing, unknown, or of the wrong dtype or shape (under the bindings), a
// binding outside its dim's range, a dim left unbound, a device configured otherwise than the
// build's VTA: dlavm::Errors naming the input, dim or configuration.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/appended_state.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/memory_plan.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/te/ndarray.hpp>
#include <dlavm/vta/hw/device.hpp>
#include <dlavm/vta/program.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dlavm::graph {

// Where a value lives in the module's memory plan: its region, its byte offset there and its
// size at the dims' maxima; `vta`: VTA reads or writes it, so a run on the host keeps it in
// device memory (the firmware keeps every value there).
struct Storage {
  RegionKind region = RegionKind::Runtime;
  std::int64_t offset = 0, bytes = 0;
  bool vta = false;
  friend bool operator==(const Storage&, const Storage&) = default;
};

struct ModuleValue {
  // State: a function's state (graph::State), kept by the module from one run to the next.
  enum class Kind : std::uint8_t { Param, Constant, Temp, State };
  Kind kind = Kind::Temp;
  std::string name;               // "%x", "%w0", "%3", "%3:activation[1x16]"
  std::string node;               // the graph node it holds, as the printer names it: "%3"
  std::string param;              // Param, State: the input's name, as run() takes it ("input:0")
  std::vector<ne::Expr> logical;  // the graph node's shape
  Layout layout;                  // how the array holds it (Plain: as the node's shape)
  std::vector<ne::Expr> shape;    // the array's shape: packed_shape(layout, logical)
  DType dtype;
  std::shared_ptr<const te::NDArray> constant;  // Constant: the (packed) data
  // A constant VTA reads: its DRAM bytes, serialized once at build time, not on every run
  std::shared_ptr<const std::vector<std::uint8_t>> dram;
  Storage storage;
};

struct ModuleStep {
  // Append: a growing state's new positions (inputs[0]) written after the positions it holds,
  // into the packed array VTA reads it from (output; ModuleState::packed).
  enum class Kind : std::uint8_t { Host, Pack, Unpack, Vta, Append };
  Kind kind = Kind::Host;
  std::string label;                // "%3 conv2d, bias_add, requantize, relu"
  std::vector<std::size_t> inputs;  // value indices (VTA: in the program's parameter order)
  std::size_t output = 0;
  // Host: the op (run with the module's op registry) and its attributes; VTA: the ops fused
  std::string op;
  Attrs attrs;
  // VTA
  std::shared_ptr<const vta::Program> program;
  Workload workload;   // the kernel's anchor, shapes, attributes and epilogue
  Knobs knobs;         // the schedule's chosen knobs
  std::string tiling;  // the knobs as the strategy prints them
  std::string epilogue;
  // multiply-accumulates of the unpadded operation, and the DRAM bytes its tiling must move,
  // in the symbolic dims
  ne::Expr macs = 0, traffic = 0;
};

// A state of the module: the value holding it during a run, and the value that becomes it.
// A growing state that VTA reads only as a matmul's weight (a KV cache: concatenated with a
// run's new keys, perhaps transposed, then packed) is held in that packed form instead:
// `packed` is the value VTA reads, the state's dims permuted by `perm` (packed dim i is the
// state's dim perm[i]) in matmul_weight layout, holding the state at its length after the run;
// an Append step writes the run's new positions there in place (graph::AppendedState), and
// `next` is those new positions rather than the whole next value.
struct ModuleState {
  std::size_t value = 0, next = 0;
  std::optional<std::size_t> packed;
  std::vector<std::int64_t> perm;
};

// The values a module is called with and returns, and its states.
struct ModuleSignature {
  std::vector<std::size_t> params, results;
  std::vector<ModuleState> state;
};

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
  // VTA: whether this run instantiated the step's stream (the first run on a device, or new
  // packed shapes of its operands), rather than reusing it
  bool instantiated = false;
};

struct ModuleRun {
  std::vector<te::NDArray> outputs;
  std::vector<StepStats> steps;  // one per Module::steps()
  std::uint64_t vta_cycles = 0;  // the VTA steps' cycles, in sequence
  // With RunOptions::keep_values: every value's array, by value index; and the bindings.
  std::vector<std::optional<te::NDArray>> values;
  std::vector<std::pair<std::string, std::int64_t>> bindings;
};

struct ModuleRunOptions {
  bool keep_values = false;  // keep every intermediate array (Module::value_of)
  // When set: each VTA step's stream, micro-ops and DRAM images (its parameters' slots before
  // the run, its output's after) with a manifest of their device addresses, in
  // <dump_dir>/step<NN>_<program>/, so that VTA's functional simulator can replay the model
  // step by step (vta::load_dump, vta::replay).
  std::string dump_dir = {};
};

class Module {
 public:
  // Plans the memory (graph::plan_memory with `plan`) and fills each value's storage.
  // The states start at zero.
  Module(std::string name, vta::Env env, std::shared_ptr<const OpRegistry> ops,
         std::vector<ModuleValue> values, std::vector<ModuleStep> steps, ModuleSignature signature,
         const PlanOptions& plan = {});

  const std::string& name() const { return name_; }
  const vta::Env& env() const { return env_; }
  const std::vector<ModuleValue>& values() const { return values_; }
  const std::vector<ModuleStep>& steps() const { return steps_; }
  const OpRegistry& ops() const { return *ops_; }
  ModuleSignature signature() const { return {params_, results_, state_}; }
  // Where the values and streams live (Module::run allocates each region once per device).
  const MemoryPlan& plan() const { return plan_; }

  // Runs every step in order on `dev` (VTA programs) and the host; returns the results. The
  // first run on a device allocates the regions there and copies the weights in.
  std::vector<te::NDArray> run(vta::Device& dev, std::span<const NamedArray> inputs,
                               std::span<const ne::Binding> bindings = {},
                               const ModuleRunOptions& options = {});
  std::vector<te::NDArray> run(vta::Device& dev, std::initializer_list<NamedArray> inputs,
                               std::initializer_list<ne::Binding> bindings = {},
                               const ModuleRunOptions& options = {}) {
    return run(dev, std::span(inputs.begin(), inputs.size()),
               std::span(bindings.begin(), bindings.size()), options);
  }
  // The last run's statistics; ValueError before the first run.
  const ModuleRun& last_run() const;
  // The value of graph node `node` in the last run, in its logical layout (unpacked if VTA left
  // it packed): its printed name ("%3", "%fc1", as graph::NodeNames prints it) or the name of a
  // named call or leaf ("fc1"). ValueError when the last run did not keep values, or no value
  // holds that node.
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

  // The growing dim of state i (held packed: ModuleState::packed), and the state an Append
  // step writes (ValueError for a state without a variable dim, or a step that is no append).
  std::size_t growing_dim(std::size_t i) const;
  std::size_t appended_by(std::size_t step) const;

  // A table of the last run, one row per step (device, instructions, micro-ops, cycles, share
  // of the roofline bound, DRAM bytes against the tiling's), then the totals: VTA cycles
  // against the model's MACs / (BATCH x BLOCK_IN x BLOCK_OUT) per cycle.
  std::string summary() const;
  // The values and steps, one line each.
  std::string to_string() const;

 private:
  void check_inputs(std::span<const NamedArray> inputs, std::span<const ne::Binding> bindings,
                    std::vector<std::optional<te::NDArray>>& arrays) const;
  void check_input_names(std::span<const NamedArray> inputs) const;
  void check_bindings(std::span<const ne::Binding> bindings) const;
  // The bindings with each growing state's variable bound to the length it holds.
  std::vector<ne::Binding> bind_states(std::span<const ne::Binding> bindings) const;
  // CapacityError unless each growing state can take its next value (module.hpp, state()).
  void check_states_fit(std::span<const ne::Binding> bindings) const;
  // The length state i holds along dim k.
  std::int64_t held_length(std::size_t i, std::size_t k) const;
  // The device memory of one device: its regions, the weights in them.
  class Resident;
  Resident& resident_on(vta::Device& dev);
  StepStats run_vta(Resident& r, std::size_t step, std::span<const ne::Binding> b,
                    const std::string& dump_dir) const;

  std::string name_;
  vta::Env env_;
  std::shared_ptr<const OpRegistry> ops_;
  std::vector<ModuleValue> values_;
  std::vector<ModuleStep> steps_;
  std::vector<std::size_t> params_, results_;
  std::vector<ModuleState> state_;
  // aligned with state_: the held arrays; for a state held packed, its packed bytes, and the
  // array unpacked from them when state() last asked (stale after a run)
  mutable std::vector<te::NDArray> state_values_;
  std::vector<std::optional<AppendedState>> appended_;
  mutable std::vector<bool> stale_;
  std::size_t state_index(std::string_view name) const;
  std::optional<ModuleRun> last_;
  std::shared_ptr<Resident> resident_;  // on the device of the last run
  MemoryPlan plan_;
};

}  // namespace dlavm::graph

template <>
struct fmt::formatter<dlavm::graph::Module> : fmt::formatter<std::string_view> {
  auto format(const dlavm::graph::Module& m, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(m.to_string(), ctx);
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/memory_plan-inl.hpp>
#include <dlavm/graph/module-inl.hpp>
#endif
