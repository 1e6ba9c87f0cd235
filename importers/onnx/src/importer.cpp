// The model walk: opsets, initializers, inputs, a checked topological order of the nodes, the
// conversion of each by the converter its version selects, one NotSupported for every node
// refused.
#include "importer.hpp"

#include <dlavm/core/error.hpp>
#include <dlavm/core/file.hpp>
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/ne/simplify.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "converters.hpp"
#include "onnx_versions.hpp"
#include <algorithm>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

namespace dlavm::onnx {

namespace detail {

namespace {

// "node 'conv1' (Conv)", or "node #3 (Conv)" (its index in its graph) for a node without a name.
std::string base_label(const ::onnx::NodeProto& n, int index) {
  if (!n.name().empty()) return fmt::format("node '{}' ({})", n.name(), n.op_type());
  return fmt::format("node #{} ({})", index, n.op_type());
}

// The names a node's subgraphs (an If's branches, a Loop's body) read from the scopes around
// them: what they use and do not define themselves, nested subgraphs included.
void implicit_inputs(const ::onnx::NodeProto& n, std::set<std::string, std::less<>>& out);

void implicit_inputs(const ::onnx::GraphProto& g, std::set<std::string, std::less<>>& out) {
  std::set<std::string, std::less<>> defined, used;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) defined.insert(o);
    for (const auto& i : n.input()) used.insert(i);
    implicit_inputs(n, used);
  }
  for (const auto& v : g.output()) used.insert(v.name());
  for (const auto& u : used)
    if (!u.empty() && defined.count(u) == 0) out.insert(u);
}

void implicit_inputs(const ::onnx::NodeProto& n, std::set<std::string, std::less<>>& out) {
  for (const auto& a : n.attribute()) {
    if (a.has_g()) implicit_inputs(a.g(), out);
    for (const auto& g : a.graphs()) implicit_inputs(g, out);
  }
}

// "where: " before a message, or nothing for an empty `where`.
std::string prefix(std::string_view where) {
  return where.empty() ? std::string() : fmt::format("{}: ", where);
}

}  // namespace

std::string Importer::label(const ::onnx::NodeProto& n) const {
  const auto it = n.output_size() > 0 ? node_index_.find(n.output(0)) : node_index_.end();
  return base_label(n, it != node_index_.end() ? it->second : current_node_) + scope_;
}

// (Converters call it: the import loop puts the file and the node in front of its messages.)
const Value& Importer::input(const ::onnx::NodeProto& n, int k) {
  if (!has_input(n, k)) raise<ValueError>("input {} is missing", k);
  const auto it = values_.find(n.input(k));
  if (it == values_.end())
    raise<ValueError>("input {} '{}' is not an input, an initializer or an earlier node's output",
                      k, n.input(k));
  if (it->second.refused) throw ReadsRefused{};
  return it->second;
}

graph::Expr Importer::expr(const ::onnx::NodeProto& n, int k) {
  const Value& v = input(n, k);
  if (v.dims)
    throw Unsupported{fmt::format(
        "input {} '{}' holds dims computed from symbolic ones ([{}]), which only the shape "
        "operators take (docs/onnx.md)",
        k, n.input(k), fmt::join(*v.dims, ", "))};
  if (!v.expr.defined())
    throw Unsupported{
        fmt::format("input {} '{}' is an empty tensor (shape [{}]), which only an "
                    "operator that ignores it may take",
                    k, n.input(k), fmt::join(v.constant->shape(), ", "))};
  return v.expr;
}

const te::NDArray& Importer::constant(const ::onnx::NodeProto& n, int k, std::string_view role) {
  const Value& v = input(n, k);
  if (v.constant == nullptr)
    throw Unsupported{
        fmt::format("its {} (input {} '{}') is not a constant; give it as an "
                    "initializer, or in ImportOptions::constants",
                    role, k, n.input(k))};
  return *v.constant;
}

Value Importer::constant_value(const ::onnx::NodeProto& n, std::string_view suffix, te::NDArray a) {
  std::string name = fmt::format("{}.{}", n.output_size() > 0 ? n.output(0) : n.name(), suffix);
  while (values_.count(name) > 0 || call_names_.count(name) > 0) name += "_";
  auto arr = std::make_shared<const te::NDArray>(std::move(a));
  Value v{arr->size() > 0 ? graph::constant(name, arr) : graph::Expr(), arr};
  values_[name] = v;
  return v;
}

std::optional<DimValues> Importer::dims_of(const ::onnx::NodeProto& n, int k) {
  const Value& v = input(n, k);
  if (v.dims) return DimValues{*v.dims, v.dims_scalar};
  if (v.constant == nullptr || !v.constant->dtype().is_integral() || v.constant->shape().size() > 1)
    return std::nullopt;
  DimValues d{.scalar = v.constant->shape().empty()};
  for (const auto x : v.constant->data()) d.values.emplace_back(x);
  return d;
}

Value Importer::dims_value(const ::onnx::NodeProto& n, DimValues d) {
  std::vector<std::int64_t> ints;
  for (auto& e : d.values) {
    e = ne::simplify(e);
    if (const auto c = e.as_int()) ints.push_back(*c);
  }
  if (ints.size() == d.values.size()) {
    std::vector<std::int64_t> shape;
    if (!d.scalar) shape.push_back(static_cast<std::int64_t>(ints.size()));
    return constant_value(n, "dims", te::NDArray::from_ints(DType::int64(), shape, ints));
  }
  Value v;
  v.dims = std::move(d.values);
  v.dims_scalar = d.scalar;
  return v;
}

graph::Expr Importer::make_constant(const ::onnx::NodeProto& n, std::string_view suffix,
                                    te::NDArray a) {
  if (a.size() == 0)
    throw Unsupported{fmt::format("its {} would be an empty tensor (shape [{}])", suffix,
                                  fmt::join(a.shape(), ", "))};
  return constant_value(n, suffix, std::move(a)).expr;
}

graph::TensorType Importer::type_of(const graph::Expr& e) {
  if (e.has_type()) return e.type();
  const auto known = types_.find(e.get());
  if (known != types_.end()) return known->second.second;
  const auto* call = e.as<graph::CallNode>();
  // the call alone, over inputs of its arguments' types: a call is typed once, however many
  // later calls read it
  std::vector<graph::Expr> params, args;
  for (std::size_t i = 0; i < call->args.size(); ++i) {
    const auto& a = call->args[i];
    const auto t = type_of(a);
    // named as the model names it, for the type rule's messages
    std::string name =
        a.kind() == graph::NodeKind::Call ? a.as<graph::CallNode>()->result_name : a->name;
    if (name.empty() || std::any_of(params.begin(), params.end(),
                                    [&](const graph::Expr& p) { return p->name == name; }))
      name = fmt::format("{}#{}", name.empty() ? "arg" : name, i);
    auto p = graph::input(name, t.shape, t.dtype);
    params.push_back(p);
    args.push_back(p);
  }
  const auto one =
      graph::call(std::string(call->op()), std::move(args), call->attrs, call->result_name);
  const auto typed = graph::detail::infer_types(
      graph::function(params, {one}), graph::default_ops(), {}, graph::detail::HostSupport::Defer);
  auto type = typed.results().front().type();
  types_.emplace(e.get(), std::make_pair(e, type));
  return type;
}

void Importer::read_opset(const ::onnx::ModelProto& model) {
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      opset_ = o.version();
    } else if (o.domain() == "com.microsoft") {
      microsoft_opset_ = o.version();
    } else if (o.domain() != "ai.onnx.ml") {
      // operators of other domains are refused per node; the import itself is fine
      continue;
    }
  }
  if (opset_ == 0) {
    // a model of other domains only (training operators): each node is refused by its domain
    for (const auto& n : model.graph().node())
      if (n.domain().empty() || n.domain() == "ai.onnx")
        raise<ValueError>(
            "{}: node '{}' ({}) is of the default ONNX domain, which the model "
            "imports no opset of",
            source_, n.name(), n.op_type());
    return;
  }
  if (opset_ < 0)
    raise<ValueError>("{}: opset {} of the default domain; opsets count from 1", source_, opset_);
  // beyond the history the importer holds, it cannot tell which operators changed
  if (opset_ > kLatestOpset)
    raise<NotSupported>(
        "{}: opset {} of the default domain is newer than the operator history the importer "
        "holds (ONNX's opsets 1 to {}), so it cannot tell which of the model's operators "
        "changed",
        source_, opset_, kLatestOpset);
}

void Importer::add_initializers(const ::onnx::GraphProto& g, std::string_view where) {
  const std::string at = prefix(where);
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) raise<ValueError>("{}an initializer has no name", at);
    if (values_.count(t.name()) > 0)
      raise<ValueError>("{}initializer '{}' is defined twice", at, t.name());
    auto arr = std::make_shared<const te::NDArray>(
        to_array(t, fmt::format("{}initializer '{}'", at, t.name())));
    values_[t.name()] =
        Value{arr->size() > 0 ? graph::constant(t.name(), arr) : graph::Expr(), arr};
  }
  if (g.sparse_initializer_size() > 0)
    raise<NotSupported>("{}sparse initializers ('{}')", at,
                        g.sparse_initializer(0).values().name());
}

graph::Expr Importer::input_of(const ::onnx::ValueInfoProto& v) {
  const std::string where = fmt::format("{}: input '{}'", source_, v.name());
  if (!v.type().has_tensor_type())
    raise<NotSupported>("{} is not a tensor (sequences, maps and optionals are not handled)",
                        where);
  const auto& tt = v.type().tensor_type();
  const auto dtype = dtype_of(tt.elem_type());
  if (!dtype)
    raise<TypeError>(
        "{} has element type {}; dlavm computes on float32, int8, uint8, int32 and "
        "int64 (and BOOL as uint8)",
        where, onnx_type_name(tt.elem_type()));
  const auto fixed = options_.shapes.find(v.name());
  if (fixed != options_.shapes.end()) {
    // the user's shape replaces the model's, which it must agree with where that is known
    const auto& want = fixed->second;
    if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(want.size()))
      raise<ShapeError>("{} has {} dims, but ImportOptions::shapes gives it [{}]", where,
                        tt.shape().dim_size(), fmt::join(want, ", "));
    std::vector<ne::Expr> shape;
    for (std::size_t k = 0; k < want.size(); ++k) {
      if (want[k] < 1)
        raise<ValueError>("{}: ImportOptions::shapes gives it the shape [{}]; dims are >= 1", where,
                          fmt::join(want, ", "));
      if (tt.has_shape() && tt.shape().dim(static_cast<int>(k)).has_dim_value() &&
          tt.shape().dim(static_cast<int>(k)).dim_value() != want[k])
        raise<ShapeError>("{}: dim {} is {}, but ImportOptions::shapes gives it {}", where, k,
                          tt.shape().dim(static_cast<int>(k)).dim_value(), want[k]);
      shape.push_back(ne::Expr(want[k]));
    }
    return graph::input(v.name(), std::move(shape), *dtype);
  }
  if (!tt.has_shape())
    raise<NotSupported>("{} has no shape (unknown rank): give it in ImportOptions::shapes", where);
  std::vector<ne::Expr> shape;
  for (int k = 0; k < tt.shape().dim_size(); ++k) {
    const auto& d = tt.shape().dim(k);
    if (d.has_dim_value()) {
      if (d.dim_value() == 0)
        raise<NotSupported>("{}: dim {} is 0 (empty tensors are not handled)", where, k);
      if (d.dim_value() < 0)
        raise<ShapeError>("{}: dim {} is {}; dims must be >= 0", where, k, d.dim_value());
      shape.push_back(ne::Expr(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      const auto r = options_.dims.find(d.dim_param());
      if (r == options_.dims.end())
        raise<ValueError>(
            "{}: dim {} is '{}', which has no range: give it in "
            "ImportOptions::dims (e.g. {{\"{}\", {{1, 64}}}})",
            where, k, d.dim_param(), d.dim_param());
      if (r->second.min < 1 || r->second.min > r->second.max)
        raise<ValueError>("{}: dim '{}' has range [{}, {}]; a range is 1 <= min <= max", where,
                          d.dim_param(), r->second.min, r->second.max);
      if (r->second.min == r->second.max) {
        shape.push_back(ne::Expr(r->second.min));
      } else {
        auto known = dim_vars_.find(d.dim_param());
        if (known == dim_vars_.end())
          known =
              dim_vars_.emplace(d.dim_param(), ne::var(d.dim_param(), r->second.min, r->second.max))
                  .first;
        shape.push_back(known->second);
      }
    } else {
      raise<NotSupported>(
          "{}: dim {} has neither a value nor a name: give the input's shape in "
          "ImportOptions::shapes (e.g. {{\"{}\", {{...}}}})",
          where, k, v.name());
    }
  }
  return graph::input(v.name(), std::move(shape), *dtype);
}

std::vector<graph::Expr> Importer::add_inputs(const ::onnx::GraphProto& g) {
  // (not a structured binding: clang 14 cannot capture one in a lambda)
  for (const auto& frozen : options_.constants) {
    const std::string& name = frozen.first;
    if (std::none_of(g.input().begin(), g.input().end(),
                     [&](const auto& v) { return v.name() == name; }))
      raise<ValueError>("{}: ImportOptions::constants names '{}', which is not a graph input",
                        source_, name);
  }
  for (const auto& fixed : options_.shapes) {
    const std::string& name = fixed.first;
    if (std::none_of(g.input().begin(), g.input().end(),
                     [&](const auto& v) { return v.name() == name; }))
      raise<ValueError>("{}: ImportOptions::shapes names '{}', which is not a graph input", source_,
                        name);
  }
  std::vector<graph::Expr> params;
  for (const auto& v : g.input()) {
    if (values_.count(v.name()) > 0) continue;  // an initializer with a default value
    const auto frozen = options_.constants.find(v.name());
    if (frozen != options_.constants.end()) {
      const auto want = dtype_of(v.type().tensor_type().elem_type());
      if (want && frozen->second.dtype() != *want)
        raise<TypeError>("{}: ImportOptions::constants gives input '{}' as {}; the model says {}",
                         source_, v.name(), frozen->second.dtype(), *want);
      auto arr = std::make_shared<const te::NDArray>(frozen->second);
      values_[v.name()] =
          Value{arr->size() > 0 ? graph::constant(v.name(), arr) : graph::Expr(), arr};
      continue;
    }
    auto e = input_of(v);
    values_[v.name()] = Value{e, nullptr};
    params.push_back(e);
  }
  return params;
}

// Kahn's algorithm over the values the nodes read and write: ONNX requires the nodes in
// topological order, but exporters do not always keep it, so the order is computed, and a
// cycle (or an input nobody makes) is an error naming the nodes. A node with subgraphs also
// waits for the nodes making the values they read from outside (a name no node makes is left
// to the subgraph's own conversion, if it is converted).
std::vector<int> Importer::node_order(const ::onnx::GraphProto& g, std::string_view where) {
  const std::string at = prefix(where);
  const int n = g.node_size();
  std::map<std::string, int, std::less<>> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& out : g.node(i).output()) {
      if (out.empty()) continue;
      if (values_.count(out) > 0 || !producer.emplace(out, i).second)
        raise<ValueError>("{}value '{}' is defined twice (node #{} ({}) and before)", at, out, i,
                          g.node(i).op_type());
      node_index_.emplace(out, i);
    }
  std::vector<std::vector<int>> users(static_cast<std::size_t>(n));
  std::vector<int> waiting(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    current_node_ = i;
    std::set<int> deps;
    for (const auto& in : g.node(i).input()) {
      if (in.empty() || values_.count(in) > 0) continue;
      const auto p = producer.find(in);
      if (p == producer.end())
        raise<ValueError>("{}{}: input '{}' is not an input, an initializer or a node's output", at,
                          label(g.node(i)), in);
      deps.insert(p->second);
    }
    std::set<std::string, std::less<>> outer;
    implicit_inputs(g.node(i), outer);
    for (const auto& in : outer)
      if (const auto p = producer.find(in); p != producer.end() && p->second != i)
        deps.insert(p->second);
    waiting[static_cast<std::size_t>(i)] = static_cast<int>(deps.size());
    for (int d : deps) users[static_cast<std::size_t>(d)].push_back(i);
  }
  std::deque<int> ready;
  for (int i = 0; i < n; ++i)
    if (waiting[static_cast<std::size_t>(i)] == 0) ready.push_back(i);
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (int u : users[static_cast<std::size_t>(i)])
      if (--waiting[static_cast<std::size_t>(u)] == 0) ready.push_back(u);
  }
  if (static_cast<int>(order.size()) != n) {
    std::vector<std::string> stuck;
    for (int i = 0; i < n; ++i)
      if (waiting[static_cast<std::size_t>(i)] > 0) {
        current_node_ = i;
        stuck.push_back(label(g.node(i)));
      }
    raise<ValueError>("{}the graph has a cycle through {}", at, fmt::join(stuck, ", "));
  }
  return order;
}

void Importer::convert_nodes(const ::onnx::GraphProto& g, std::string_view where) {
  const auto order = node_order(g, where);
  for (int i : order) {
    current_node_ = i;
    if (!convert(g.node(i))) mark_refused(g.node(i));
  }
}

std::vector<Value> Importer::inline_branch(const ::onnx::NodeProto& n, const ::onnx::GraphProto& g,
                                           std::string_view which) {
  if (g.input_size() > 0)
    raise<ValueError>("its {} has {} inputs; an If's branches take none", which, g.input_size());
  if (g.output_size() != n.output_size())
    raise<ValueError>("its {} has {} outputs for the node's {}", which, g.output_size(),
                      n.output_size());
  {
    // the branch's labels end with where it is; the If's own come back after it
    struct Restore {
      Importer& im;
      std::string scope;
      int node;
      ~Restore() {
        im.scope_ = std::move(scope);
        im.current_node_ = node;
      }
    } restore{*this, scope_, current_node_};
    scope_ = fmt::format(" in the {} of {}", which, label(n));
    try {
      add_initializers(g, "");
      convert_nodes(g, "");
    } catch (const Error& e) {
      rethrow_with_context(e, fmt::format("its {}", which));
    }
  }
  std::vector<Value> outs;
  for (const auto& out : g.output()) {
    const auto it = values_.find(out.name());
    if (it == values_.end())
      raise<ValueError>("its {}'s output '{}' is made by none of its nodes, nor outside it", which,
                        out.name());
    outs.push_back(it->second);
  }
  return outs;
}

void Importer::mark_refused(const ::onnx::NodeProto& node) {
  for (const auto& out : node.output())
    if (!out.empty()) {
      Value v;
      v.refused = true;
      values_[out] = v;
    }
}

graph::Expr Importer::name_new_calls(const graph::Expr& e, const std::string& out) {
  const auto* call = e.as<graph::CallNode>();
  if (call == nullptr || converted_.count(e.get()) > 0) return e;
  std::vector<graph::Expr> args;
  for (const auto& a : call->args) args.push_back(name_new_calls(a, out));
  std::string name = call->result_name;
  if (name.empty()) {
    name = fmt::format("{}.{}", out, call->op());
    while (values_.count(name) > 0 || call_names_.count(name) > 0) name += "_";
  }
  call_names_.insert(name);
  auto named = graph::call(std::string(call->op()), std::move(args), call->attrs, name);
  converted_.insert(named.get());
  return named;
}

std::optional<Value> Importer::fold(const ::onnx::NodeProto& node, const Value& v,
                                    const std::string& out) {
  for (int k = 0; k < node.input_size(); ++k)
    if (has_input(node, k) && values_.at(node.input(k)).constant == nullptr) return std::nullopt;
  for (const auto& e : graph::post_order(std::span(&v.expr, 1)))
    if (e.kind() == graph::NodeKind::Input) return std::nullopt;
  try {
    const auto typed = graph::infer_type(graph::function({}, {v.expr}), graph::default_ops());
    auto arr = std::make_shared<const te::NDArray>(graph::evaluate(typed, {}).front());
    if (arr->size() == 0) return Value{graph::Expr(), arr};
    return Value{graph::constant(out, arr), arr};
  } catch (const Error&) {
    return std::nullopt;  // a call the host does not run: build places it, or says why
  }
}

void Importer::finish_output(const ::onnx::NodeProto& node, const std::string& out, Value& v) {
  if (!v.expr.defined()) return;  // an empty constant, or a computed shape
  if (const auto* c = v.expr.as<graph::ConstantNode>()) {
    if (!v.constant) v.constant = c->value;
    return;
  }
  if (v.expr.kind() != graph::NodeKind::Call) return;
  // the last call keeps the model's name (unless it is an earlier node's), the others are named
  // after it, so that every message names the model's value
  const std::string& name = out.empty() ? node.output(0) : out;
  if (v.expr.as<graph::CallNode>()->result_name.empty() && converted_.count(v.expr.get()) == 0 &&
      !out.empty())
    v.expr = graph::named(v.expr, out);
  v.expr = name_new_calls(v.expr, name);
  type_of(v.expr);  // a shape error is the node's
  if (auto folded = fold(node, v, name)) v = *folded;
}

bool Importer::convert(const ::onnx::NodeProto& node) {
  const bool microsoft = node.domain() == "com.microsoft";
  if (!node.domain().empty() && node.domain() != "ai.onnx" && !microsoft) {
    refused_.push_back(
        fmt::format("{}: operators of domain '{}' are not handled", label(node), node.domain()));
    return false;
  }
  // (a QGemm the QDQ fold wrote is of com.microsoft's version 1 whatever the model imports)
  const Selection selected =
      microsoft
          ? select_microsoft_converter(node.op_type(), std::max<std::int64_t>(microsoft_opset_, 1))
          : select_converter(node.op_type(), opset_);
  if (selected.row == nullptr) {
    refused_.push_back(fmt::format("{}: {}", label(node), selected.refusal));
    return false;
  }
  std::vector<Value> outs;
  try {
    outs = selected.row->convert(*this, node);
    if (outs.size() < static_cast<std::size_t>(node.output_size()))
      for (int k = static_cast<int>(outs.size()); k < node.output_size(); ++k)
        if (!node.output(k).empty())
          throw Unsupported{fmt::format("output {} '{}'", k, node.output(k))};
    for (int k = 0; k < node.output_size(); ++k) {
      auto& out = outs[static_cast<std::size_t>(k)];
      // a folded QDQ activation, as a clamp of the quantized output
      if (const auto c = clamps_.find(node.output(k)); c != clamps_.end())
        out.expr = graph::clip(out.expr, {.lo = static_cast<double>(c->second.first),
                                          .hi = static_cast<double>(c->second.second)});
      finish_output(node, node.output(k), out);
    }
  } catch (const Unsupported& u) {
    refused_.push_back(fmt::format("{}: {}", label(node), u.reason));
    return false;
  } catch (const ReadsRefused&) {
    return false;  // the refusal of the node it reads names the cause
  } catch (const Error& e) {
    // inside a branch, inline_branch and the If's own conversion add where the node is
    if (!scope_.empty()) {
      const auto it = node_index_.find(node.output_size() > 0 ? node.output(0) : "");
      rethrow_with_context(e,
                           base_label(node, it != node_index_.end() ? it->second : current_node_));
    }
    rethrow_with_context(e, fmt::format("{}: {}", source_, label(node)));
  }
  for (int k = 0; k < node.output_size(); ++k)
    if (!node.output(k).empty()) values_[node.output(k)] = outs[static_cast<std::size_t>(k)];
  return true;
}

namespace {

// The model's names and string attributes are quoted in messages, and its names become the
// graph's: one holding a control character (ONNX names are identifiers, string attributes of
// its operators are words) is a ValueError giving where, without quoting it.
void check_text(std::string_view source, const std::string& text, std::string_view owner, int k,
                std::string_view field) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F)
      raise<ValueError>(
          "{}: {} #{}: its {} holds the control character {:#04x} at byte {} (a model's names "
          "and string attributes are printable)",
          source, owner, k, field, static_cast<unsigned>(c), i);
  }
}

void check_names(std::string_view source, const ::onnx::GraphProto& g) {
  for (int k = 0; k < g.input_size(); ++k) {
    const auto& v = g.input(k);
    check_text(source, v.name(), "graph input", k, "name");
    if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
      for (const auto& d : v.type().tensor_type().shape().dim())
        check_text(source, d.dim_param(), "graph input", k, "dim_param");
  }
  for (int k = 0; k < g.output_size(); ++k)
    check_text(source, g.output(k).name(), "graph output", k, "name");
  for (int k = 0; k < g.initializer_size(); ++k)
    check_text(source, g.initializer(k).name(), "initializer", k, "name");
  for (int k = 0; k < g.sparse_initializer_size(); ++k)
    check_text(source, g.sparse_initializer(k).values().name(), "sparse initializer", k, "name");
  for (int k = 0; k < g.node_size(); ++k) {
    const auto& n = g.node(k);
    check_text(source, n.name(), "node", k, "name");
    check_text(source, n.op_type(), "node", k, "op_type");
    check_text(source, n.domain(), "node", k, "domain");
    for (const auto& in : n.input()) check_text(source, in, "node", k, "input");
    for (const auto& out : n.output()) check_text(source, out, "node", k, "output");
    for (const auto& a : n.attribute()) {
      check_text(source, a.name(), "node", k, "attribute name");
      check_text(source, a.s(), "node", k, "string attribute");
    }
  }
  // subgraphs (an If's branches), named by their attribute and node
  for (int k = 0; k < g.node_size(); ++k)
    for (const auto& a : g.node(k).attribute()) {
      const auto where = fmt::format("{}: attribute '{}' of node #{}", source, a.name(), k);
      if (a.has_g()) check_names(where, a.g());
      for (const auto& sub : a.graphs()) check_names(where, sub);
    }
}

}  // namespace

graph::Function Importer::run(const ::onnx::ModelProto& model) {
  if (!model.has_graph()) raise<ValueError>("{}: the model has no graph", source_);
  check_names(source_, model.graph());
  read_opset(model);
  QdqFold folded;
  if (options_.fold_qdq) {
    folded = fold_qdq(model.graph(), opset_);
    clamps_ = std::move(folded.clamps);
  }
  const ::onnx::GraphProto& g = options_.fold_qdq ? folded.graph : model.graph();
  add_initializers(g, source_);
  auto params = add_inputs(g);
  convert_nodes(g, source_);
  if (!refused_.empty())
    raise<NotSupported>("{}: {} node{} the importer does not handle: {}", source_, refused_.size(),
                        refused_.size() == 1 ? "" : "s", fmt::join(refused_, "; "));
  std::vector<graph::Expr> results;
  for (const auto& out : g.output()) {
    const auto it = values_.find(out.name());
    if (it == values_.end())
      raise<ValueError>("{}: graph output '{}' is not made by any node", source_, out.name());
    if (it->second.dims)
      raise<NotSupported>("{}: graph output '{}' is a shape computed from symbolic dims ([{}])",
                          source_, out.name(), fmt::join(*it->second.dims, ", "));
    if (!it->second.expr.defined())
      raise<NotSupported>("{}: graph output '{}' is an empty tensor", source_, out.name());
    results.push_back(it->second.expr);
  }
  if (results.empty()) raise<ValueError>("{}: the graph has no outputs", source_);
  return graph::function(std::move(params), std::move(results));
}

const ::onnx::AttributeProto* find_attr(const ::onnx::NodeProto& n, std::string_view name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

namespace {
// (Converters call it: the import loop puts the file and the node in front of its messages.)
const ::onnx::AttributeProto* typed_attr(const Importer&, const ::onnx::NodeProto& n,
                                         std::string_view name,
                                         ::onnx::AttributeProto::AttributeType type,
                                         std::string_view kind) {
  const auto* a = find_attr(n, name);
  if (a != nullptr && a->type() != type) raise<ValueError>("attribute '{}' is not {}", name, kind);
  return a;
}
}  // namespace

std::int64_t attr_int(const Importer& im, const ::onnx::NodeProto& n, std::string_view name,
                      std::int64_t fallback) {
  const auto* a = typed_attr(im, n, name, ::onnx::AttributeProto::INT, "an integer");
  return a != nullptr ? a->i() : fallback;
}

float attr_float(const Importer& im, const ::onnx::NodeProto& n, std::string_view name,
                 float fallback) {
  const auto* a = typed_attr(im, n, name, ::onnx::AttributeProto::FLOAT, "a float");
  return a != nullptr ? a->f() : fallback;
}

std::string attr_string(const Importer& im, const ::onnx::NodeProto& n, std::string_view name,
                        std::string_view fallback) {
  const auto* a = typed_attr(im, n, name, ::onnx::AttributeProto::STRING, "a string");
  return a != nullptr ? a->s() : std::string(fallback);
}

std::vector<std::int64_t> attr_ints(const Importer& im, const ::onnx::NodeProto& n,
                                    std::string_view name, std::vector<std::int64_t> fallback) {
  const auto* a = typed_attr(im, n, name, ::onnx::AttributeProto::INTS, "a list of integers");
  return a != nullptr ? std::vector<std::int64_t>(a->ints().begin(), a->ints().end())
                      : std::move(fallback);
}

namespace {
std::vector<std::uint8_t> read_file(const std::filesystem::path& path, std::string_view what) {
  if (const auto problem = not_a_file(path))
    raise<ValueError>("{} '{}' is {}, not a file", what, path.string(), *problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) raise<ValueError>("{} '{}' cannot be opened", what, path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

}  // namespace detail

graph::Function import(std::span<const std::uint8_t> bytes, const ImportOptions& options,
                       std::string_view source) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    raise<ParseError>("{}: {} bytes; protobuf reads at most 2 GiB", source, bytes.size());
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    raise<ParseError>("{}: {} bytes that are not an ONNX model (protobuf parse failed)", source,
                      bytes.size());
  if (!model.has_ir_version() || !model.has_graph())
    raise<ParseError>("{}: {} bytes that are not an ONNX model (no ir_version or graph)", source,
                      bytes.size());
  return detail::Importer(options, std::string(source)).run(model);
}

graph::Function import(const std::filesystem::path& path, const ImportOptions& options) {
  const auto bytes = detail::read_file(path, "ONNX model");
  return import(std::span<const std::uint8_t>(bytes), options, path.string());
}

te::NDArray read_tensor(std::span<const std::uint8_t> bytes, std::string_view source) {
  ::onnx::TensorProto t;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    raise<ParseError>("{}: {} bytes that are not an ONNX tensor", source, bytes.size());
  return detail::to_array(t, fmt::format("{}: tensor '{}'", source, t.name()));
}

te::NDArray read_tensor(const std::filesystem::path& path) {
  const auto bytes = detail::read_file(path, "ONNX tensor");
  return read_tensor(std::span<const std::uint8_t>(bytes), path.string());
}

std::map<std::string, te::NDArray> read_initializers(std::span<const std::uint8_t> bytes,
                                                     std::string_view source) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !model.has_graph())
    raise<ParseError>("{}: {} bytes that are not an ONNX model", source, bytes.size());
  std::map<std::string, te::NDArray> out;
  for (const auto& t : model.graph().initializer()) {
    auto a = detail::to_array(t, fmt::format("{}: initializer '{}'", source, t.name()));
    if (!out.emplace(t.name(), std::move(a)).second)
      raise<ParseError>("{}: initializer '{}' is given twice", source, t.name());
  }
  return out;
}

std::map<std::string, te::NDArray> read_initializers(const std::filesystem::path& path) {
  const auto bytes = detail::read_file(path, "ONNX model");
  return read_initializers(std::span<const std::uint8_t>(bytes), path.string());
}

}  // namespace dlavm::onnx
