// VTA strategies: how a fused group of graph calls (an anchor such as conv2d or dense, and an
// epilogue of element-wise calls, graph/partition.hpp) becomes a scheduled te program for
// VTA, as TVM's topi computes and VTA schedules do for Relay.
//
//   AnchorStrategy    per anchor op: whether a call can run on VTA (`support`), the packed
//                     layout of each argument, and `declare`, which builds the compute in
//                     packed layouts with the epilogue and a schedule whose knobs come from
//                     the ScheduleChooser
//   ScheduleChooser   the one interface through which tilings are chosen: the default picks
//                     each strategy's default tiling from the shape and the SRAM sizes; a
//                     tuner overrides it with tuned ones
//   VtaStrategies     the anchor strategies by op name (default_vta_strategies(): conv2d,
//                     dense, max_pool2d, avg_pool2d, global_avg_pool2d), in graph::Target
//                     next to the op registry
//
// The strategies are kept apart from the op records (graph/op.hpp) so that typing a graph
// does not include the VTA layer; a custom op gets a VTA strategy with strategies.add().
//
//   graph::Target target;                            // default ops and strategies
//   const auto* s = target.strategies.find("conv2d");
//   if (auto why = s->support(call, target.env, epilogue)) ...  // the host runs it, says why
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/strategy/conv2d.hpp>
#include <dlavm/graph/strategy/dense.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/graph/strategy/pool2d.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/te/tensor.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::graph {

// The knobs of every strategy's schedule. The default implementation returns the default
// tiling of each (graph/strategy/*.hpp); a tuner derives from it.
//
// The methods are declared DLAVM_INLINE: a virtual function declared without `inline` is the
// class's key function, and in header-only mode every unit that includes its definition would
// then emit the vtable and, through it, the whole tiling search, used or not.
class ScheduleChooser {
 public:
  virtual ~ScheduleChooser() = default;
  DLAVM_INLINE virtual Conv2dTiling conv2d(const vta::Env& env, const Conv2dShape& shape,
                                           const Epilogue& epilogue) const;
  DLAVM_INLINE virtual DenseTiling dense(const vta::Env& env, const DenseShape& shape,
                                         const Epilogue& epilogue) const;
  DLAVM_INLINE virtual Pool2dTiling pool2d(const vta::Env& env, const Pool2dShape& shape,
                                           const Epilogue& epilogue) const;
};

// A declared and scheduled VTA kernel. `args` are the program's parameters: the anchor's
// arguments in order, then the epilogue's operands, then the result.
struct VtaKernel {
  te::Schedule schedule;
  std::vector<te::Tensor> args;
  std::string tiling;  // the chosen knobs, printable ("oc 2, h 7, w 14, ic 1, 2 threads")
  // DRAM bytes the tiling must move, as a function of the symbolic dims' values
  std::function<std::int64_t(std::span<const ne::Binding>)> tiling_traffic;
  // Multiply-accumulates of the operation (unpadded), as a function of the dims' values
  std::function<std::int64_t(std::span<const ne::Binding>)> macs;
};

// What a strategy sees of the anchor call: its type rule's view (argument types, normalized
// attributes, the label naming the node) and its result type.
struct AnchorCall {
  std::string_view op;  // the op's name
  const TypeCall& call;
  const TensorType& result;
};

struct AnchorStrategy {
  std::string op{};
  // Why this call cannot be the anchor of a VTA kernel with this epilogue (nullopt: it can).
  // Partition asks with an empty epilogue, then again with the group's final one.
  std::function<std::optional<std::string>(const AnchorCall&, const vta::Env&, const Epilogue&)>
      support{};
  // The packed layout of argument i.
  std::function<Layout(const AnchorCall&, const vta::Env&, std::size_t i)> arg_layout{};
  // The layout of the result (and of the epilogue's Tensor operands).
  std::function<Layout(const AnchorCall&, const vta::Env&)> result_layout{};
  // Declares the kernel (`name` prefixes its tensors).
  std::function<VtaKernel(const AnchorCall&, const vta::Env&, const Epilogue&,
                          const ScheduleChooser&, const std::string& name)>
      declare{};
};

class VtaStrategies {
 public:
  // ValueError when the op already has one, or a function is missing.
  void add(AnchorStrategy s);
  const AnchorStrategy* find(std::string_view op) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, AnchorStrategy, std::less<>> strategies_;
};

// conv2d, dense, max_pool2d, avg_pool2d and global_avg_pool2d.
VtaStrategies default_vta_strategies();

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy-inl.hpp>
#endif
