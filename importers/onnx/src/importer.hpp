// The importer's internals: the ONNX protobuf classes on one side, the graph on the other.
// An Importer walks a model's nodes in a checked topological order and asks the converter the
// table selects for each node (converters.hpp) for the graph values of its outputs. An If whose
// condition is known at import has the nodes of the branch it chooses walked in its place
// (inline_branch): one flat scope of values, since ONNX's names are unique across a graph and
// its subgraphs, so a branch reads the outer scope's values as its own. A
// converter reads its inputs through Importer (optional ones, ones that must be constants) and
// raises Unsupported for an attribute it does not handle; the importer collects those, and
// the operators and versions no row converts, from every node into one NotSupported. A node
// that reads a refused node's output is skipped, not blamed.
#pragma once

#include <dlavm/graph/node.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/onnx/import.hpp>
#include <dlavm/te/ndarray.hpp>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::onnx::detail {

// A converter cannot handle a node (an attribute value, a rank, an element type): the reason,
// collected with the other nodes' into one NotSupported.
struct Unsupported {
  std::string reason;
};

// A value of the graph being built: its node, and its contents when known at import time
// (initializers, Constant nodes, frozen inputs). An empty tensor (a dim of 0, as Resize's roi
// may be) is a constant without a node: the graph has no empty values. A refused node's
// outputs are `refused`: a node reading one is skipped (the refusal already names the cause).
struct Value {
  Value() = default;
  // (implicit: a converter returns the graph values of its outputs)
  Value(graph::Expr e) : expr(std::move(e)) {}  // NOLINT(google-explicit-constructor)
  Value(graph::Expr e, std::shared_ptr<const te::NDArray> c)
      : expr(std::move(e)), constant(std::move(c)) {}

  graph::Expr expr;
  std::shared_ptr<const te::NDArray> constant;
  bool refused = false;
  // An int64 tensor of rank 0 or 1 whose elements are dims, some symbolic: what Shape makes of
  // an input with dim_params, and what shape arithmetic makes of that (no graph node: the
  // importer folds it into the Reshape, Expand or Slice it feeds).
  std::optional<std::vector<ne::Expr>> dims;
  bool dims_scalar = false;
};

// Elements known as dims: a constant integer tensor of rank 0 or 1, or a symbolic Value::dims.
struct DimValues {
  std::vector<ne::Expr> values = {};
  bool scalar = false;
};

// Thrown by Importer::input for a refused value: the node reading it is skipped.
struct ReadsRefused {};

// An ONNX element type as a DType; nullopt for the types dlavm does not compute on.
std::optional<DType> dtype_of(std::int32_t onnx_type);
std::string_view onnx_type_name(std::int32_t onnx_type);
// A TensorProto's contents (raw_data or the typed fields), checked against its dims.
te::NDArray to_array(const ::onnx::TensorProto& t, std::string_view what);

// The graph with QDQ-wrapped Conv, MatMul and Gemm nodes replaced by QLinearConv /
// QLinearMatMul / QGemm (qdq.cpp), and the clamps (in quantized units) that folded
// activations leave on those nodes' outputs, by output name.
struct QdqFold {
  ::onnx::GraphProto graph;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>, std::less<>> clamps;
};
QdqFold fold_qdq(const ::onnx::GraphProto& g, std::int64_t opset);

class Importer {
 public:
  Importer(const ImportOptions& options, std::string source)
      : options_(options), source_(std::move(source)) {}

  graph::Function run(const ::onnx::ModelProto& model);

  // --- for converters (which do not see the opset: converters.hpp) ---
  const std::string& source() const { return source_; }
  // "node 'conv1' (Conv)", or "node #3 (Conv)" for a node without a name.
  std::string label(const ::onnx::NodeProto& n) const;
  // Whether input k is present (ONNX leaves optional inputs out, or names them "").
  static bool has_input(const ::onnx::NodeProto& n, int k) {
    return k < n.input_size() && !n.input(k).empty();
  }
  const Value& input(const ::onnx::NodeProto& n, int k);
  // Input k's graph value: Unsupported for an empty tensor.
  graph::Expr expr(const ::onnx::NodeProto& n, int k);
  // Input k's value, which must be known at import time (an Unsupported otherwise).
  const te::NDArray& constant(const ::onnx::NodeProto& n, int k, std::string_view role);
  // A constant node the converter adds, named after the node's first output and `suffix`
  // (Unsupported for an empty array).
  graph::Expr make_constant(const ::onnx::NodeProto& n, std::string_view suffix, te::NDArray a);
  // A constant output, empty or not (Constant, and folded shape computations).
  Value constant_value(const ::onnx::NodeProto& n, std::string_view suffix, te::NDArray a);
  // Input k as dims (DimValues), or nullopt when it is neither a constant integer tensor of rank
  // 0 or 1 nor a computed shape.
  std::optional<DimValues> dims_of(const ::onnx::NodeProto& n, int k);
  // A shape computation's result: an int64 constant when every element is one, else a
  // symbolic Value::dims.
  Value dims_value(const ::onnx::NodeProto& n, DimValues d);
  // The graph type of a value: inputs and constants are typed; a call is typed once, from its
  // arguments' types, by its op's type rule (each node's outputs are typed as it is converted,
  // so that a shape error names the node).
  graph::TensorType type_of(const graph::Expr& e);
  // The nodes of subgraph `g`, the branch `which` ("then_branch") of node n, converted in place
  // of n: its initializers added, its nodes walked as the model's are (a refused one is
  // listed as "... in the then_branch of node 'if' (If)"); returns the values of its outputs.
  // ValueError for a branch with inputs, or an output no node of it or of the outer scope
  // makes.
  std::vector<Value> inline_branch(const ::onnx::NodeProto& n, const ::onnx::GraphProto& g,
                                   std::string_view which);

 private:
  void read_opset(const ::onnx::ModelProto& model);
  // (`where` begins the messages: the file, or nothing inside a branch, whose node's label the
  // converter's context adds)
  void add_initializers(const ::onnx::GraphProto& g, std::string_view where);
  std::vector<graph::Expr> add_inputs(const ::onnx::GraphProto& g);
  std::vector<int> node_order(const ::onnx::GraphProto& g, std::string_view where);
  // Converts g's nodes in a checked topological order, each refused one marked.
  void convert_nodes(const ::onnx::GraphProto& g, std::string_view where);
  graph::Expr input_of(const ::onnx::ValueInfoProto& v);
  // One node's conversion; false when it is refused (the reason added to refused_) or skipped.
  bool convert(const ::onnx::NodeProto& node);
  void mark_refused(const ::onnx::NodeProto& node);
  // A converter's value for output `out`: named, typed (a shape error is the node's) and, when
  // every input is a constant, folded.
  void finish_output(const ::onnx::NodeProto& node, const std::string& out, Value& v);
  // The calls a converter made, unnamed ones named after the node's output `out`.
  graph::Expr name_new_calls(const graph::Expr& e, const std::string& out);
  // A node whose inputs are all constants: its outputs' calls evaluated on the host, as
  // constants (shape subgraphs, weight transposes). nullopt where the host cannot evaluate it
  // (the call stays, for build to place or report).
  std::optional<Value> fold(const ::onnx::NodeProto& node, const Value& v, const std::string& out);

  const ImportOptions& options_;
  // one ne::var per dim_param: inputs that name the same dim share it
  std::map<std::string, ne::Expr, std::less<>> dim_vars_;
  std::string source_;
  std::int64_t opset_ = 0;
  std::map<std::string, Value, std::less<>> values_;
  std::map<std::string, int, std::less<>> node_index_;  // by first output, for labels
  int current_node_ = -1;
  // " in the then_branch of node 'if' (If)" while a branch's nodes are converted (labels end
  // with it), empty for the model's graph
  std::string scope_;
  std::vector<std::string> refused_;  // "label: reason", in node order
  // (holding the Expr: an address is not reused while its type is remembered)
  std::map<const graph::Node*, std::pair<graph::Expr, graph::TensorType>> types_;
  std::set<const graph::Node*> converted_;  // the calls of earlier nodes
  std::set<std::string, std::less<>> call_names_;
  // folded QDQ activations: the clamp of each folded node's quantized output, by output name
  std::map<std::string, std::pair<std::int64_t, std::int64_t>, std::less<>> clamps_;
  std::int64_t microsoft_opset_ = 0;  // the com.microsoft domain's opset, 0 if not imported
};

// Attribute readers: the attribute's value, or `fallback` when absent; an attribute of the
// wrong kind is a ValueError naming the node.
std::int64_t attr_int(const Importer& im, const ::onnx::NodeProto& n, std::string_view name,
                      std::int64_t fallback);
float attr_float(const Importer& im, const ::onnx::NodeProto& n, std::string_view name,
                 float fallback);
std::string attr_string(const Importer& im, const ::onnx::NodeProto& n, std::string_view name,
                        std::string_view fallback);
std::vector<std::int64_t> attr_ints(const Importer& im, const ::onnx::NodeProto& n,
                                    std::string_view name, std::vector<std::int64_t> fallback);
const ::onnx::AttributeProto* find_attr(const ::onnx::NodeProto& n, std::string_view name);

}  // namespace dlavm::onnx::detail
