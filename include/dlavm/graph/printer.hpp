// Text form of graphs, through fmt, stable for tests. A function prints as its params with
// their types, then one line per constant and per call in post-order (calls numbered %0, %1,
// ...; a call whose value is named prints by its name: %fc1), attributes after the arguments
// in key order, and the results:
//
//   fn (%x: Tensor[(1, token, 512), int8]) {
//     %w = constant Tensor[(256, 512), int8]
//     %0 = dense(%x, %w)
//     %1 = requantize(%0, hi=127, lo=-128, out_dtype=int8, rounding="floor", shift=8)
//     return %1
//   }
//
// A function with states prints them after its params, `fn (%x: ...) state (%h: ...) {`, and
// their next values before the results, `  next %h = %4`.
// Once infer_type has typed and placed the calls, each call names its device and its type:
//     %0 = host.dense(%x, %w) /* ret=(1, token, 256), dtype=int32, device=host */
// Leaf names print as %name when they are identifiers ([A-Za-z_][A-Za-z0-9_.]*), else quoted
// (%"0", %"onnx::Conv_3") so that they never read as a call number. An Expr prints as the
// function of the inputs it uses. Error messages name nodes the same way: `%3 (conv2d)`.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>

#include <fmt/format.h>

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dlavm::graph {

// "(1, token, 256)"
std::string shape_text(const std::vector<ne::Expr>& shape);
// "Tensor[(1, token, 256), int8]"
std::string type_text(const TensorType& type);

// How a name prints: %name when it is an identifier, else quoted (%"onnx::Conv_3").
std::string printed_name(std::string_view name);

// The printed names of the nodes under some roots: %name for leaves and named calls, %N for
// the other calls numbered in post-order (every call counts, so naming one call does not
// renumber the others). infer_type and evaluate name nodes in messages with it, as the printer
// does.
class NodeNames {
 public:
  explicit NodeNames(std::span<const Expr> roots);
  explicit NodeNames(const Function& fn) : NodeNames(fn.roots()) {}
  // "%x", "%\"0\"", "%3"; a node outside the roots gets its leaf name or "%?".
  std::string name(const Expr& e) const;
  // "%3 (conv2d)" for a call, the name for a leaf.
  std::string label(const Expr& e) const;

 private:
  std::unordered_map<const Node*, std::size_t> call_number_;
};

std::string to_string(const Function& fn);
std::string to_string(const Expr& e);

}  // namespace dlavm::graph

template <>
struct fmt::formatter<dlavm::graph::TensorType> : fmt::formatter<std::string_view> {
  auto format(const dlavm::graph::TensorType& t, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(dlavm::graph::type_text(t), ctx);
  }
};

template <>
struct fmt::formatter<dlavm::graph::Function> : fmt::formatter<std::string_view> {
  auto format(const dlavm::graph::Function& f, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(dlavm::graph::to_string(f), ctx);
  }
};

template <>
struct fmt::formatter<dlavm::graph::Expr> : fmt::formatter<std::string_view> {
  auto format(const dlavm::graph::Expr& e, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(dlavm::graph::to_string(e), ctx);
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/printer-inl.hpp>
#endif
