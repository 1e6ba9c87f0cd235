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
// graph::infer_type(fn, target) (graph/place.hpp) runs this pass and attaches its result to
// the function it returns (Function::placement), so that build uses the placement printed.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/graph/target.hpp>

#include <string>
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

  const Expr& output() const { return calls.back(); }
  const Expr& anchor() const { return calls.front(); }
};

class Partition {
 public:
  std::vector<Group> groups;   // execution order
  vta::Config config;          // the VTA configuration it was made for
  bool int32_results = false;  // and its Target::int32_results

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

// `fn` must be typed (graph::infer_type). Raises what the strategies raise for bad input (a
// symbolic dim without a usable maximum).
Partition partition(const Function& fn, const Target& target);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/partition-inl.hpp>
#endif
