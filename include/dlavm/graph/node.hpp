// The graph IR: immutable nodes with shared ownership, and the Function that holds a graph.
//
// The node set is small and closed (NodeKind):
//   Input      a named tensor the caller provides (shape of ne::Expr dims, dtype)
//   Constant   a named tensor with its value (weights), held by a shared te::NDArray
//   Call       an op applied to argument nodes, with attributes (op name = the node's name),
//              and optionally the name of the value it produces (`result_name`: from
//              GraphBuilder, an importer's node names, or graph::named), which the printer,
//              error messages and a built Module's values go by
// Every node has an optional TensorType (inputs and constants always; calls once
// graph::infer_type has typed them) and a Device (Any until placed). A node never changes:
// passes build new nodes (graph/functor.hpp). Nodes only point at nodes built before them, so
// a graph is always acyclic.
//
//   auto token = ne::var("token", 1, 2048);
//   auto x = graph::input("x", {1, token, 512}, DType::int8());
//   auto w = graph::constant("w", te::NDArray::random(DType::int8(), {256, 512}, 1));
//   auto y = graph::call("dense", {x, w});          // or graph::dense(x, w) (graph/ops.hpp)
//   auto fn = graph::function({x}, {y});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::graph {

enum class NodeKind : std::uint8_t { Input, Constant, Call };

// Where a call runs. Any: not placed yet (before infer_type).
enum class Device : std::uint8_t { Any, Host, Vta };
// "any", "host", "vta"
std::string_view device_name(Device d);

struct TensorType {
  std::vector<ne::Expr> shape;
  DType dtype;
  std::size_t ndim() const { return shape.size(); }
};
// Same dtype and structurally equal dims (ne::equal, no simplification).
bool same_type(const TensorType& a, const TensorType& b);

class Node;
class Partition;

// A handle to a node: cheap to copy, never mutated. A default-constructed Expr is undefined.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const Node* get() const { return node_.get(); }
  const Node* operator->() const { return node_.get(); }
  // The node as T (InputNode, ConstantNode, CallNode), or nullptr.
  template <class T>
  const T* as() const;
  bool same_as(const Expr& other) const { return node_ == other.node_; }
  // How many handles share the node (0 for an undefined Expr).
  long use_count() const { return node_.use_count(); }

  // Shorthands for the node's fields; ValueError on an undefined Expr.
  NodeKind kind() const;
  const std::string& name() const;
  bool has_type() const;
  // The node's type; ValueError when a call has not been typed (run graph::infer_type).
  const TensorType& type() const;
  Device device() const;

 private:
  std::shared_ptr<const Node> node_;
};

class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  virtual ~Node() = default;

  const NodeKind kind;
  const std::string name;  // input / constant name; the op name of a call
  const std::optional<TensorType> type;
  const Device device;

 protected:
  Node(NodeKind k, std::string n, std::optional<TensorType> t, Device d)
      : kind(k), name(std::move(n)), type(std::move(t)), device(d) {}
};

struct InputNode final : Node {
  InputNode(std::string n, TensorType t)
      : Node(NodeKind::Input, std::move(n), std::move(t), Device::Any) {}
  static constexpr bool classof(NodeKind k) { return k == NodeKind::Input; }
};

struct ConstantNode final : Node {
  ConstantNode(std::string n, TensorType t, std::shared_ptr<const te::NDArray> v)
      : Node(NodeKind::Constant, std::move(n), std::move(t), Device::Any), value(std::move(v)) {}
  static constexpr bool classof(NodeKind k) { return k == NodeKind::Constant; }
  const std::shared_ptr<const te::NDArray> value;
};

struct CallNode final : Node {
  CallNode(std::string op, std::vector<Expr> a, Attrs at, std::optional<TensorType> t, Device d,
           std::string result)
      : Node(NodeKind::Call, std::move(op), std::move(t), d),
        args(std::move(a)),
        attrs(std::move(at)),
        result_name(std::move(result)) {}
  // Releases the arguments iteratively: destroying the last handle of a graph thousands of
  // calls deep must not nest a destructor per call.
  DLAVM_INLINE ~CallNode() override;
  static constexpr bool classof(NodeKind k) { return k == NodeKind::Call; }
  const std::string& op() const { return name; }
  // Not const only so that the destructor can take the arguments apart; nodes are created
  // non-const (make_shared<CallNode>) and only ever handed out as const.
  std::vector<Expr> args;
  const Attrs attrs;
  const std::string result_name;  // empty: unnamed (printed by its post-order number)
};

template <class T>
const T* Expr::as() const {
  if (node_ && T::classof(node_->kind)) return static_cast<const T*>(node_.get());
  return nullptr;
}

// An input named `name`. Raises for an empty name, an undefined dim, a dim that can be < 1
// (ShapeError naming the dim and its bounds), and dtypes the host cannot hold (float types
// other than float32, vector lanes: TypeError).
Expr input(std::string name, std::vector<ne::Expr> shape, DType dtype);
// The input of a growing state (graph::State): like input(), but a dim that is one variable of
// range [0, max] may be empty (a KV cache of last_token positions, empty before the first run).
// graph::function refuses a param that can be empty.
Expr state_input(std::string name, std::vector<ne::Expr> shape, DType dtype);
// A constant holding `value` (shared, never copied again); its type comes from the array.
Expr constant(std::string name, te::NDArray value);
Expr constant(std::string name, std::shared_ptr<const te::NDArray> value);
// A call of op `op`: untyped and unplaced, as users and importers write it, optionally naming
// the value it produces. The op name and attributes are checked against an op registry by
// graph::infer_type, not here.
Expr call(std::string op, std::vector<Expr> args, Attrs attrs = {}, std::string result_name = {});
// A call with its type and device: what passes (infer_type, placement) build.
Expr typed_call(std::string op, std::vector<Expr> args, Attrs attrs, TensorType type, Device device,
                std::string result_name = {});
// The call `e` with its value named `name` (ValueError for a leaf or an empty name):
//   auto y = graph::named(graph::conv2d(x, w), "layer1.conv1");   // printed %layer1.conv1
Expr named(const Expr& e, std::string name);

// A call rebuilt with other arguments (as many), keeping op, attrs, type, device and name.
Expr with_args(const CallNode& call, std::vector<Expr> args);

// Every node of the DAG under `roots`, each once, arguments before their users: a depth-first
// post-order, arguments left to right, roots in order. Iterative, so any depth is fine.
// graph/functor.hpp builds the traversal idioms on it.
std::vector<Expr> post_order(std::span<const Expr> roots);

// A state of a function: a value that outlives a run of the module built from it (a KV cache,
// a running statistic). `input` is an Input leaf holding the state before a run (not a param:
// the module keeps it between runs); `next` is the value the state takes after the run,
// computed by the graph, of the input's type (infer_type checks it).
// A state may grow: a dim of its input may be one variable v of range [0, max] (a KV cache's
// `last_token`), and next may be longer along it (`last_token + token`, a concat). The module
// then holds the state at its current length, binds v to that length in a run, and keeps at
// most max + 1 along that dim (the longest run from max with one new position).
struct State {
  Expr input;
  Expr next;
};

// A graph with named parameters (inputs), results and states. Invariants, checked on
// construction (ValueError naming the node): every param and state input is an Input, their
// names are unique, every Input reachable from the results and the states' next values is a
// param or a state input, a state's dims are constants or variables, two different nodes (inputs,
// constants, named calls) never share a name, at least one result.
class Function {
 public:
  Function(std::vector<Expr> params, std::vector<Expr> results, std::vector<State> state = {});
  const std::vector<Expr>& params() const { return params_; }
  const std::vector<Expr>& results() const { return results_; }
  const std::vector<State>& state() const { return state_; }
  // The results, then the states' next values: every node the function computes is under them.
  const std::vector<Expr>& roots() const { return roots_; }

  // The placement the graph passes made (graph/partition.hpp: the groups over this function's
  // nodes, their layouts, the states held packed), which graph::build then uses; null for a
  // function not placed.
  const std::shared_ptr<const Partition>& placement() const { return placement_; }
  // This function with a placement attached (its groups must refer to this function's nodes).
  Function with_placement(std::shared_ptr<const Partition> p) const {
    Function f = *this;
    f.placement_ = std::move(p);
    return f;
  }

 private:
  std::vector<Expr> params_;
  std::vector<Expr> results_;
  std::vector<State> state_;
  std::vector<Expr> roots_;
  std::shared_ptr<const Partition> placement_;
};

inline Function function(std::vector<Expr> params, std::vector<Expr> results,
                         std::vector<State> state = {}) {
  return Function(std::move(params), std::move(results), std::move(state));
}

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/node-inl.hpp>
#endif
