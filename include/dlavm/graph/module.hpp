// graph::Module: a built model (graph::build), as immutable plain data. It holds values (the
// params, the constants, already packed for VTA where VTA reads them, and the intermediates),
// each with a storage slot, and steps in execution order: host op calls (by op name and
// attributes, run with the target's op registry), layout conversions (pack / unpack, on the
// host), appends to a growing state held packed, and VTA programs (vta::Program, one per fused
// group, with its workload, knobs, MACs and traffic). Symbolic dims stay expressions. A module
// never changes once built: graph::Executor (graph/executor.hpp) runs it on a device, holding
// the states, the device memory and the last run, as runtime::Session does in firmware; and
// deploy::emit writes it for firmware.
//
// Storage: the module plans its memory (graph::plan_memory over memory_request(module)): the
// constants in the `weight` region, the params, intermediates and results in the `runtime`
// region, where a value's bytes go to a later one once its last reader has run, the states in
// `cache`, the streams in `insts` and `uop` (one stream at a time, the largest any step
// writes); every slot sized for the dims' maxima.
//
//   auto mod = graph::build(fn, target, {.name = "mlp"});
//   fmt::print("{}", mod);                                   // the values and steps
//   fmt::print("{}", mod.plan().report(mod.name()));         // where each value lives
//   graph::Executor exec(mod, dev);                          // graph/executor.hpp
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/memory_plan.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/te/ndarray.hpp>
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
  std::vector<std::string> fused;   // VTA: the calls fused before its result ("%1", "%2")
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

class Module {
 public:
  // Plans the memory (graph::plan_memory with `plan`) and fills each value's storage.
  Module(std::string name, vta::Env env, std::shared_ptr<const OpRegistry> ops,
         std::vector<ModuleValue> values, std::vector<ModuleStep> steps, ModuleSignature signature,
         const PlanOptions& plan = {});

  const std::string& name() const { return name_; }
  const vta::Env& env() const { return env_; }
  const std::vector<ModuleValue>& values() const { return values_; }
  const std::vector<ModuleStep>& steps() const { return steps_; }
  const OpRegistry& ops() const { return *ops_; }
  const ModuleSignature& signature() const { return signature_; }
  // Where the values and streams live.
  const MemoryPlan& plan() const { return plan_; }

  // The state named `name` (the input's name, as Executor::state takes it): its index in
  // signature().state; ValueError listing the states for a name that is none.
  std::size_t state_index(std::string_view name) const;
  // The growing dim of state i held packed (ModuleState::packed), and the state an Append
  // step writes (ValueError for a state without a variable dim, or a step that is no append).
  std::size_t growing_dim(std::size_t i) const;
  std::size_t appended_by(std::size_t step) const;
  // The value holding graph node `node` (its printed name "%3", "%fc1", as graph::NodeNames
  // prints it, or the name of a named call or leaf, "fc1"), its plain form where there is one;
  // ValueError when no value holds it.
  std::size_t value_of(std::string_view node) const;

  // The values and steps, one line each.
  std::string to_string() const;

 private:
  std::string name_;
  vta::Env env_;
  std::shared_ptr<const OpRegistry> ops_;
  std::vector<ModuleValue> values_;
  std::vector<ModuleStep> steps_;
  ModuleSignature signature_;
  MemoryPlan plan_;
};

// The memory requests of a module's values (by value index, graph/memory_plan.hpp), with its
// stream regions sized for one stream at a time, the largest any step writes
// (vta::Program::stream_bound); and the plan they give.
PlanRequest memory_request(const Module& m);
MemoryPlan plan_memory(const Module& m, const PlanOptions& options = {});

}  // namespace dlavm::graph

template <>
struct fmt::formatter<dlavm::graph::Module> : fmt::formatter<std::string_view> {
  auto format(const dlavm::graph::Module& m, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(m.to_string(), ctx);
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/module-inl.hpp>
#endif
