// A picture of a graph: graph::to_dot writes a Function as Graphviz DOT text (the format TVM
// and ONNX draw graphs with; `dot -Tsvg fn.dot -o fn.svg` renders it). Every input, constant
// and call is one node, labelled as the printer names it (graph/printer.hpp: %x, %w, %3 or a
// call's result name, %"onnx::Conv_3" quoted), a call with its op (device-prefixed once
// placed, vta.conv2d) and its type once typed; constants small and grey; one edge per
// argument, from the argument to its user; results drawn with a double border; a state's
// next value joined to its input by a dashed edge labelled "next".
//
// A placed function (graph::infer_type(fn, target): fn.placement()) colours each call by its
// device, VTA blue and host orange, with the device in its tooltip (and the host's reason,
// the group's note), and boxes every fused group, each VTA kernel and any group of more than
// one call, in a `subgraph cluster_N` (N: the group's index in the partition) labelled with
// its ops and, for VTA, its epilogue:
//
//   auto placed = graph::infer_type(fn, graph::Target{});
//   std::ofstream("fn.dot") << graph::to_dot(placed, {.name = "resnet18"});
//   // digraph "resnet18" { ... subgraph cluster_0 {
//   //   label="vta: conv2d+bias_add+requantize+relu\n+channel#0, >>6, max 0, min 127"; ...
//
// An unplaced function draws without clusters. Every name reaches DOT escaped (quotes,
// backslashes, newlines, '&', bytes that are not UTF-8), so that any name is safe; nodes get
// ids of their own (n0, n1, ...), never their names. The text is deterministic: nodes in
// post-order of the function's roots, then unused params and states; clusters in group order.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>

#include <string>

namespace dlavm::graph {

struct DotOptions {
  std::string name = "fn";  // the digraph's name (an SVG's title)
  bool types = true;        // each node's type under its name, when it has one
  bool attributes = false;  // each call's attributes, as the printer prints them
};

// The DOT text of `fn` (see above).
std::string to_dot(const Function& fn, const DotOptions& options = {});

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/dot-inl.hpp>
#endif
