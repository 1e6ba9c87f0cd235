// infer_type: types and places every call of a function. For each call in post-order it
// finds the op record, checks the argument count and the attributes (defaults filled in, so
// the typed function's calls carry every attribute), runs the type rule, and places the call
// on the host (Device::Host) when the host kernel supports it. It is the `type` pass of the
// graph pipeline; infer_type(fn, target) (graph/place.hpp) runs the whole pipeline, whose
// `partition` pass moves the calls VTA runs to Device::Vta. The result is a new function; the
// input is not changed.
//
//   auto typed = graph::infer_type(graph::function({x}, {y}), graph::default_ops());
//   fmt::print("{}", typed);
//   // %0 = host.dense(%x, %w) /* ret=(1, token, 256), dtype=int32, device=host */
//
// Errors are dlavm::Errors raised at the node, naming it as the printer does (`%3 (conv2d)`)
// and the input (`input 1 (%w)`), with the numbers: an unknown op (ValueError listing the known
// ones), a wrong argument count, an unknown / missing / mistyped attribute, shape and dtype
// mismatches (ShapeError / TypeError from the type rules), a symbolic dim where a rule needs a
// constant, and a call the host cannot run (TypeError saying why; with a target, a call
// neither the host nor VTA runs, saying why for each). `global` holds
// options for the whole function; none are defined yet, so any key is an error.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>

#include <cstdint>

namespace dlavm::graph {

// With the ops of a registry; graph/place.hpp adds infer_type(fn, target, global), which runs
// the graph passes and places calls on VTA. This header does not include the vta layer.
Function infer_type(const Function& fn, const OpRegistry& ops, const Attrs& global = {});

namespace detail {
// Require: a call the host cannot run is an error; Defer: it stays unplaced (Device::Any), for
// the target's placement to give VTA or report.
enum class HostSupport : std::uint8_t { Require, Defer };
Function infer_types(const Function& fn, const OpRegistry& ops, const Attrs& global,
                     HostSupport host);
}  // namespace detail

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/infer_type-inl.hpp>
#endif
