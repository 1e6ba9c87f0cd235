// The ONNX importer: a model file (or its bytes) as a graph::Function with its constants,
// ready for graph::infer_type and graph::build. It is a compiled library of its own
// (dlavm::onnx, built with DLAVM_WITH_ONNX), so that the header-only core keeps no protobuf
// dependency; this header needs only the graph layer.
//
//   dlavm::onnx::ImportOptions o;
//   o.dims = {{"batch", {1, 64}}};                     // the range of each dim_param
//   graph::Function fn = dlavm::onnx::import("model.onnx", o);
//   auto typed = graph::infer_type(fn, graph::Target{});
//
// What becomes what (docs/onnx.md has the operator table and the node tests it passes):
//   - graph inputs that are not initializers become graph::input params, in the model's
//     order; a dim_param becomes an ne::var whose range options.dims gives; initializers
//     and Constant nodes become graph::constant; each node's output keeps its ONNX name as
//     the value's name (graph::named), so that printed graphs and errors speak the model's
//     names;
//   - options.constants gives values for graph inputs that are known when importing (a
//     Reshape's shape, a Clip's bounds, the quantization parameters a test feeds as inputs):
//     they become constants, not params.
// Every mistake in the bytes or the model is a dlavm::Error naming the file and the node
// (`node 'conv1' (Conv)`, or `node #3 (Conv)` when it has no name) and the numbers:
// ParseError for bytes that are not an ONNX model, ValueError for a model that breaks ONNX's
// rules (a cycle, a value used before any node makes it, initializers whose data disagrees
// with their shape, a dim_param without a range), TypeError for element types dlavm does not
// compute on, and one NotSupported listing every node whose operator or attributes the
// importer does not handle.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::onnx {

// A model uses operators or attributes the importer does not handle: the message lists every
// such node (name and op type) with the reason.
class NotSupported : public ValueError {
 public:
  using ValueError::ValueError;
};

// The range of a symbolic dim, inclusive.
struct DimRange {
  std::int64_t min = 1;
  std::int64_t max = 1;
};

struct ImportOptions {
  std::map<std::string, DimRange, std::less<>> dims = {};          // by dim_param
  std::map<std::string, te::NDArray, std::less<>> constants = {};  // inputs known at import
  // A fixed shape for an input, in place of the model's (which it must agree with where the
  // model gives a value): for dims that have neither a value nor a name, or a symbolic dim
  // held to one value (as TVM's from_onnx takes a shape dict).
  std::map<std::string, std::vector<std::int64_t>, std::less<>> shapes = {};
  // QDQ-wrapped Conv and MatMul nodes as the QLinearConv / QLinearMatMul they stand for
  // (docs/onnx.md): exact integer sums, as ONNX Runtime runs QDQ models
  bool fold_qdq = true;
};

// The newest opset of the default domain ("" / "ai.onnx") whose operator history the importer
// holds (ONNX 1.23). A model's opset selects each operator's version from that history; a
// model of any opset up to this one imports when the versions its operators have there are
// ones the importer converts, and a newer opset is refused (the importer cannot tell what
// changed in it).
inline constexpr std::int64_t kLatestOpset = 28;

// An operator of the default domain: the versions ONNX has (the opsets that introduced or
// changed it) and those the importer converts, with what a node becomes. docs/onnx.md's table
// is this list.
struct OperatorSupport {
  std::string op;
  std::vector<std::int64_t> versions = {};
  std::vector<std::int64_t> converted = {};
  std::string becomes = {};  // empty when no version is converted
};
// Every operator of the default domain, by name.
std::vector<OperatorSupport> operator_support();

graph::Function import(const std::filesystem::path& path, const ImportOptions& options = {});
// `source` names the bytes in messages (a file name, "<memory>").
graph::Function import(std::span<const std::uint8_t> bytes, const ImportOptions& options = {},
                       std::string_view source = "<memory>");

// A serialized TensorProto (the .pb files of ONNX's node tests) as an array; `source` names
// it in messages.
te::NDArray read_tensor(const std::filesystem::path& path);
te::NDArray read_tensor(std::span<const std::uint8_t> bytes, std::string_view source = "<memory>");

// An ONNX model's initializers (its weights) by name, without importing its graph: the arrays
// a model built in C++ takes, such as graph::llm::decoder_weights. ParseError for bytes that are
// no model, a tensor that cannot be read, or a name given twice (each named).
std::map<std::string, te::NDArray> read_initializers(const std::filesystem::path& path);
std::map<std::string, te::NDArray> read_initializers(std::span<const std::uint8_t> bytes,
                                                     std::string_view source = "<memory>");

}  // namespace dlavm::onnx
