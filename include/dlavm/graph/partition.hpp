// Fusion and placement: splits a typed function into groups of calls that run as one unit,
// in an order that respects every dependency. A VTA group is one kernel: an anchor call that
// has a VTA strategy (conv2d, dense) followed by the element-wise calls VTA's ALU can apply
// to its accumulator before the int8 store (TVM's FuseOps with VTA's epilogue):
//
//   bias_add(x, b)         b per output channel (int32), along the channel axis
//   add(x, y)              y of x's shape: int32, or cast(r, int32) of an int8 r, which is
//                          then loaded through VTA's ACC_8BIT path (the cast joins the group)
//   requantize(x, ...)     to int8, shift at most 15 (the ALU's shift argument)
//   relu(x), clip(x, ...)  bounds within the ALU's 16-bit immediate
//   cast(x, int8)          the store's wrap-around; nothing may follow it in the group
//
// A call joins the group of its argument when that argument is the group's last call and has
// no other user (nor is a result). A group whose last call is not int8 cannot be stored by
// VTA, and one whose epilogue operands leave no room in the accumulator cannot be tiled: it
// runs on the host, call by call; so does every call without a strategy or whose
// strategy refuses it (the group's `note` says why). Each host group holds one call.
//
//   auto part = graph::partition(typed_fn, target);
//   for (const auto& g : part.groups) fmt::print("{}\n", part.describe(g));
//   // vta: %0 conv2d, %1 bias_add, %2 requantize, %3 relu
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
  std::vector<Group> groups;  // execution order

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

namespace detail {
// A function typed for a target (host support deferred to placement) and its partition; a
// call neither device runs is a TypeError. infer_type(fn, target) and build start here.
struct TypedPartition {
  Function fn;
  Partition partition;
};
TypedPartition type_and_partition(const Function& fn, const Target& target, const Attrs& global);
}  // namespace detail

// The typed function with each call placed as the partition places it (Device::Vta for the
// calls of VTA groups, Device::Host for the others). graph::infer_type(fn, target) ends with
// this.
Function place(const Function& fn, const Partition& part);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/partition-inl.hpp>
#endif
