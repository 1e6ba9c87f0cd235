// graph layer: the graph IR (immutable nodes: inputs, constants, op calls with attributes),
// the op records and typed builders, type inference and placement, the printer, name-based
// construction for importers, the reference executor on the host kernels, and the build for
// a target: fusion into VTA groups, the VTA strategies, layout packing, the Module (the built
// model, immutable) and the Executor that runs its host and VTA steps on a device;
// graph::to_dot draws a function for Graphviz.
//
//   namespace g = dlavm::graph;
//   auto token = ne::var("token", 1, 2048);
//   auto x = g::input("x", {1, token, 512}, DType::int8());
//   auto y = g::requantize(g::dense(x, g::constant("w", w_512x512)), {.shift = 8});
//   auto fn = g::infer_type(g::function({x}, {y}), g::Target{});
//   auto out = g::evaluate(fn, {{"x", x_data}}, {{"token", 37}});
//   auto mod = g::build(fn, g::Target{});
//   g::Executor exec(mod, dev);
//   auto on_vta = exec.run({{"x", x_data}}, {{"token", 37}});
#pragma once

#include <dlavm/graph/assign_layouts.hpp>
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/build.hpp>
#include <dlavm/graph/builder.hpp>
#include <dlavm/graph/dot.hpp>
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/executor.hpp>
#include <dlavm/graph/fake_quantization_to_integer.hpp>
#include <dlavm/graph/fold_batch_norm.hpp>
#include <dlavm/graph/channel_weights.hpp>
#include <dlavm/graph/fold_rounding.hpp>
#include <dlavm/graph/fold_scale_shift.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/llm.hpp>
#include <dlavm/graph/match_states.hpp>
#include <dlavm/graph/memory_plan.hpp>
#include <dlavm/graph/module.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/partition.hpp>
#include <dlavm/graph/pass.hpp>
#include <dlavm/graph/pattern.hpp>
#include <dlavm/graph/pipeline.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/graph/recognize_gelu.hpp>
#include <dlavm/graph/recognize_hard_swish.hpp>
#include <dlavm/graph/recognize_layer_norm.hpp>
#include <dlavm/graph/strategy.hpp>
#include <dlavm/graph/strategy/integer_softmax.hpp>
#include <dlavm/graph/target.hpp>
#include <dlavm/graph/widen_accumulator_loads.hpp>
