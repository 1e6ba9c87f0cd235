// VTA strategies: how a fused group of graph calls (an anchor such as conv2d or dense, and an
// epilogue of element-wise calls, graph/partition.hpp) becomes a scheduled te program for
// VTA, as TVM's topi computes and VTA schedules do for Relay.
//
//   AnchorStrategy    per anchor op: whether a call can run on VTA (`support`), the packed
//                     layout of each argument, the knob space of its schedule for a workload
//                     (graph/strategy/workload.hpp), and `declare`, which builds the compute
//                     in packed layouts with the epilogue and the schedule for chosen knobs
//   EpilogueRule      per element-wise op: how it joins a group's epilogue
//                     (graph/strategy/fusion.hpp)
//   VtaStrategies     both tables by op name (default_vta_strategies()), in graph::Target next
//                     to the op registry; the fusion pass asks them, so it holds no VTA rules
//
// The strategies are kept apart from the op records (graph/op.hpp) so that typing a graph
// does not include the VTA layer; a custom op gets a VTA strategy with strategies.add().
//
//   graph::Target target;                              // default ops and strategies
//   const auto* s = target.strategies.find(w.op);
//   auto knobs = graph::Chooser().choose(w, s->space(w, target.env));
//   auto kernel = s->declare(w, target.env, knobs, "conv2d0");
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/strategy/conv2d.hpp>
#include <dlavm/graph/strategy/dense.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/graph/strategy/fusion.hpp>
#include <dlavm/graph/strategy/integer_softmax.hpp>
#include <dlavm/graph/strategy/pool2d.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/te/tensor.hpp>
#include <dlavm/tir/stmt.hpp>
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

// A declared and scheduled VTA kernel. `args` are the program's parameters: the anchor's
// arguments in order, then the epilogue's operands, then the kernel's constants, then the result.
struct VtaKernel {
  te::Schedule schedule;
  std::vector<te::Tensor> args;
  std::string tiling;  // the chosen knobs as the strategy prints them ("oc 2, h 7, ..., 2 threads")
  ne::Expr traffic;    // DRAM bytes the tiling must move, in the symbolic dims
  ne::Expr macs;       // multiply-accumulates of the operation (padding excluded)
  // A rewrite of the lowered function, applied before the program is made (what te stages
  // cannot say: the integer softmax's store of a constant chunk), or none.
  std::function<tir::PrimFunc(const tir::PrimFunc&)> rewrite{};
  // The data of the parameters after the epilogue's operands, which no graph value holds (an
  // integer softmax's lane masks: VTA's ALU has no lane index, so what differs by lane comes
  // from DRAM), each in its DRAM form: the parameter's shape and dtype. graph::build places
  // them with the module's constants; the tuner's verify hands them to the kernel.
  std::vector<te::NDArray> constants{};
};

// The kernel lowered for VTA (vta::lower), then its rewrite applied: what graph::build and the
// tuner both build a program from. An argument no stage reads, which the rewrite alone does
// (the integer softmax's weight tile), is a parameter in its place all the same.
tir::PrimFunc lower_kernel(VtaKernel& kernel, const vta::Env& env, const std::string& name);

// What a strategy's support rule sees of the anchor call: its type rule's view (argument types
// and names, normalized attributes, the label naming the node) and its result type.
struct AnchorCall {
  std::string_view op;  // the op's name
  const TypeCall& call;
  const TensorType& result;
};

// The workload of an anchor call with an epilogue.
Workload workload_of(const AnchorCall& a, const Epilogue& epilogue);

struct AnchorStrategy {
  std::string op{};
  // The revision of the strategy's schedule, stamped on each tuning record (tune/record.hpp):
  // bump it when the knob space or what a knob means changes, so that logs made for the old
  // schedule are skipped, not misapplied. The default strategies start at 1.
  int revision = 1;
  // Why this call cannot be the anchor of a VTA kernel with this epilogue (nullopt: it can).
  // Partition asks with an empty epilogue, then again with the group's final one. Raises for
  // a call no device can run as written (a symbolic dim without a usable maximum).
  std::function<std::optional<std::string>(const AnchorCall&, const vta::Env&, const Epilogue&)>
      support{};
  // The packed layout of argument i.
  std::function<Layout(const Workload&, const vta::Env&, std::size_t i)> arg_layout{};
  // The layout of the result (and of the epilogue's Tensor operands).
  std::function<Layout(const Workload&, const vta::Env&)> result_layout{};
  // The knobs of the kernel's schedule for a workload, with their check and estimate.
  std::function<KnobSpace(const Workload&, const vta::Env&)> space{};
  // Declares the kernel with chosen knobs (`name` prefixes its tensors).
  std::function<VtaKernel(const Workload&, const vta::Env&, const Knobs&, const std::string& name)>
      declare{};
  // The symbolic dims of the workload's rows (dense, matmul: the left operand's rows, a token
  // count), or none. build chooses a second tiling for the workload with those dims at their
  // minima (one token: a decode step), which runs when they take those values; any tiling
  // `declare` accepts is correct for every value, the second is only faster there.
  std::function<std::vector<ne::Var>(const Workload&)> row_dims{};
  // Whether `declare` handles Epilogue::int32_result (orders the planes' axis, EpilogueStages::
  // plane_axes): only then does Target::int32_results give its groups an int32 result.
  bool int32_results = false;
  // Whether `declare` handles an epilogue's ChannelWeights operands (a bias the GEMM core
  // adds, graph/channel_weights.hpp): only then does the `channel_weights` pass give its
  // groups one.
  bool channel_weights = false;
};

class VtaStrategies {
 public:
  // ValueError when the op already has one, or a function is missing.
  void add(AnchorStrategy s);
  const AnchorStrategy* find(std::string_view op) const;
  std::vector<std::string> names() const;
  // How an element-wise op joins a group's epilogue (graph/strategy/fusion.hpp); ValueError
  // when the op has a rule already.
  void add_epilogue(std::string op, EpilogueRule rule);
  const EpilogueRule* epilogue_rule(std::string_view op) const;
  // Why an op without a strategy stays on the host, for the placement's note in place of "no
  // VTA strategy" (rescale: its multiplier is not one VTA's ALU can apply exactly).
  void set_host_reason(std::string op, std::string why);
  const std::string* host_reason(std::string_view op) const;

 private:
  std::map<std::string, AnchorStrategy, std::less<>> strategies_;
  std::map<std::string, EpilogueRule, std::less<>> epilogue_rules_;
  std::map<std::string, std::string, std::less<>> host_reasons_;
};

// conv2d, dense, matmul, max_pool2d, avg_pool2d, global_avg_pool2d, integer_softmax and its
// halves integer_softmax_exp and integer_softmax_normalize (keys along dim -2:
// graph/strategy/integer_softmax.hpp), the epilogue rules of
// bias_add, add, requantize, relu, clip and cast, and the host reasons of rescale,
// quantize_linear and dequantize_linear.
VtaStrategies default_vta_strategies();

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy-inl.hpp>
#endif
