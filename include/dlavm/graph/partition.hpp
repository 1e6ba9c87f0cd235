// Fusion and placement: splits a typed function into groups of calls that run as one unit,
// in an order that respects every dependency. A VTA group is one kernel: an anchor call that
// has a VTA strategy (conv2d, dense, the poolings) followed by the element-wise calls VTA's
// ALU applies to its accumulator before the int8 store (TVM's FuseOps with VTA's epilogue).
// Which calls may join, and as which ALU steps, is not decided here: the pass asks the
// target's epilogue rules by op name (graph/strategy/fusion.hpp), and the anchor's strategy
// whether it supports the call with the epilogue grown so far.
//
// A call joins the group of its argument when that argument is the group's last call and has
// no other user (nor is a result), and its rule accepts it. A group whose last call is not
// int8 cannot be stored by VTA, and one whose epilogue operands leave no room in the
// accumulator cannot be tiled: it runs on the host, call by call; so does every call without
// a strategy or whose strategy refuses it (the group's `note` says why). Each host group
// holds one call.
//
//   auto part = graph::partition(typed_fn, target);
//   for (const auto& g : part.groups) fmt::print("{}\n", part.describe(g));
//   // vta: %0 conv2d, %1 bias_add, %2 requantize, %3 relu
//
// place(typed_fn, target), the `partition` pass of the pipeline (graph/pipeline.hpp), runs it,
// places every call on its group's device and attaches the partition to the function it
// returns (Function::placement), so that build uses the placement printed. The passes after it
// add to that partition: each VTA group's packed layouts (`layout`, graph/assign_layouts.hpp)
// and the growing states held packed (`match_states`, graph/match_states.hpp).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/graph/target.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dlavm::graph {

struct Group {
  Device device = Device::Host;
  // The calls, in an order that respects their dependencies; for VTA, calls[0] is the anchor
  // and the last call is the group's result.
  std::vector<Expr> calls;
  // VTA: the fused epilogue and, aligned with epilogue.inputs, the values it reads.
  Epilogue epilogue;
  std::vector<Expr> operands;
  // Host: why the call does not run on VTA ("no VTA strategy for 'softmax'", a strategy's
  // reason). Empty for VTA groups.
  std::string note;
  // VTA, once the `layout` pass ran: how the kernel holds what it reads (the anchor's
  // arguments, then the epilogue's operands) and what it writes.
  struct Layouts {
    std::vector<Layout> inputs;
    Layout output;
  };
  std::optional<Layouts> layouts;

  const Expr& output() const { return calls.back(); }
  const Expr& anchor() const { return calls.front(); }
};

// A growing state held packed (graph::ModuleState::packed), found by the `match_states` pass:
// its next value appends `rows` to it along its growing dim (`next`), and VTA kernels alone read
// that value, directly or through one permutation (`read`), as an input of layout `layout`.
struct HeldState {
  std::size_t state = 0;  // index in Function::state()
  Expr next, rows, read;
  std::vector<std::int64_t> perm;  // read's dim i is the state's dim perm[i]
  Layout layout;
};

class Partition {
 public:
  std::vector<Group> groups;    // execution order
  vta::Config config;           // the VTA configuration it was made for
  bool int32_results = false;   // and its Target::int32_results
  std::vector<HeldState> held;  // by the `match_states` pass

  // The group holding call `e`; nullptr for leaves and calls outside the function.
  const Group* group_of(const Expr& e) const;
  // "vta: %0 conv2d, %1 bias_add, ..." or "host: %5 softmax (no VTA strategy for 'softmax')".
  std::string describe(const Group& g) const;

  // Filled by partition(): the printed names of the function's nodes, and the group index
  // of every call.
  NodeNames names{std::span<const Expr>{}};
  std::unordered_map<const Node*, std::size_t> group_index;
};

// What a typed call's op sees (its label, argument names and types, attributes), as its type
// rule saw it: strategies decide on it.
TypeCall typing_of(const Expr& call, const NodeNames& names);

// The workload of a VTA group (its anchor call and epilogue).
Workload workload_of(const Group& g, const NodeNames& names);

// `fn` must be typed (graph::infer_type). Raises what the strategies raise for bad input (a
// symbolic dim without a usable maximum).
Partition partition(const Function& fn, const Target& target);

// The `partition` pass: partitions a typed function, places each call on its group's device
// and attaches the partition (over the returned function's nodes). A call neither device runs
// is a TypeError giving each device's reason.
Function place(const Function& typed, const Target& target);

// The placement of a function that went through the pipeline up to `pass`; ValueError naming
// the pass when the function carries none.
const Partition& placement_of(const Function& fn, std::string_view pass);
// ValueError naming `who` and the first VTA group without layouts (the `layout` pass's).
void require_layouts(const Partition& part, std::string_view who);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/partition-inl.hpp>
#endif
