// QDQ folding: a Conv or MatMul whose operands come from DequantizeLinear nodes and whose
// only user is a QuantizeLinear becomes the QLinearConv / QLinearMatMul it stands for, as
// ONNX Runtime fuses QDQ models. The folded node computes the sum exactly in integers and
// rescales it once (rescale's definition); the unfolded float graph rounds every float32
// partial sum instead. A Conv's float bias folds when it is the dequantized int32 bias a
// quantizer writes (zero point 0, scale x_scale * w_scale per channel, checked).
#include "importer.hpp"
#include <map>
#include <set>
#include <string>

namespace dlavm::onnx::detail {

namespace {

using Graph = ::onnx::GraphProto;
using Node = ::onnx::NodeProto;

struct Uses {
  std::map<std::string, const Node*, std::less<>> producer;
  std::map<std::string, std::vector<const Node*>, std::less<>> users;  // one entry per use
  std::set<std::string, std::less<>> outputs;
};

Uses uses_of(const Graph& g) {
  Uses u;
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) u.producer[o] = &n;
    for (const auto& i : n.input()) u.users[i].push_back(&n);
  }
  for (const auto& o : g.output()) u.outputs.insert(o.name());
  return u;
}

// The DequantizeLinear node making `value`, with its value and scale inputs (one without them
// does not fold: its converter reports it).
const Node* dequantize_of(const Uses& u, const std::string& value) {
  const auto it = u.producer.find(value);
  if (it == u.producer.end() || it->second->op_type() != "DequantizeLinear" ||
      it->second->input_size() < 2)
    return nullptr;
  return it->second;
}

std::int64_t axis_of(const Node& n) {
  for (const auto& a : n.attribute())
    if (a.name() == "axis") return a.i();
  return 1;
}

const ::onnx::TensorProto* initializer(const Graph& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

// The scale of DQ node d (its input 1) as an array, when it is an initializer.
std::optional<te::NDArray> scale_of(const Graph& g, const Node& d) {
  const auto* t = d.input_size() > 1 ? initializer(g, d.input(1)) : nullptr;
  if (t == nullptr) return std::nullopt;
  return to_array(*t, "scale");
}

// Whether bias DQ node `db` dequantizes an int32 bias with zero point 0 and scale
// float32(x_scale * w_scale[c]) for every channel c.
bool is_quantized_bias(const Graph& g, const Node& db, const Node& dx, const Node& dw) {
  const auto* bq = initializer(g, db.input(0));
  if (bq == nullptr || bq->data_type() != ::onnx::TensorProto::INT32) return false;
  if (db.input_size() > 2 && !db.input(2).empty()) {
    const auto* z = initializer(g, db.input(2));
    if (z == nullptr) return false;
    const auto zb = to_array(*z, "bias zero point");
    for (auto v : zb.data())
      if (v != 0) return false;
  }
  const auto sb = scale_of(g, db), sx = scale_of(g, dx), sw = scale_of(g, dw);
  if (!sb || !sx || !sw || sx->size() != 1) return false;
  const auto channels = sw->size();
  if (sb->size() != channels && sb->size() != 1) return false;
  for (std::size_t c = 0; c < channels; ++c) {
    const float want = sx->fdata()[0] * sw->fdata()[c];
    if (sb->fdata()[sb->size() == 1 ? 0 : c] != want) return false;
  }
  return true;
}

// The operand inputs of DQ node d for a QLinear node: value, scale, zero point ("" if absent).
void add_operand(Node& q, const Node& d) {
  q.add_input(d.input(0));
  q.add_input(d.input(1));
  q.add_input(d.input_size() > 2 ? d.input(2) : "");
}

}  // namespace

Graph fold_qdq(const Graph& g) {
  const Uses u = uses_of(g);
  std::set<const Node*> folded;      // Conv / MatMul nodes replaced
  std::map<const Node*, Node> into;  // their QuantizeLinear user -> the QLinear node
  for (const auto& n : g.node()) {
    const bool conv = n.op_type() == "Conv", matmul = n.op_type() == "MatMul";
    if ((!conv && !matmul) || n.output_size() != 1 || n.input_size() < 2) continue;
    const std::string& out = n.output(0);
    // its only use: input 0 of a QuantizeLinear (a dead node's output has no use)
    const auto users = u.users.find(out);
    if (u.outputs.count(out) > 0 || users == u.users.end() || users->second.size() != 1) continue;
    const Node* q = users->second.front();
    if (q->op_type() != "QuantizeLinear" || q->input_size() < 2 || q->input(0) != out ||
        q->output_size() < 1)
      continue;
    const Node* dx = dequantize_of(u, n.input(0));
    const Node* dw = dequantize_of(u, n.input(1));
    if (dx == nullptr || dw == nullptr) continue;
    // per-channel weights along the output channels only (axis 0 of a Conv weight, the last
    // axis of a 2-D MatMul operand)
    const auto sw = scale_of(g, *dw);
    if (!sw) continue;
    if (sw->size() > 1 && axis_of(*dw) != (conv ? 0 : 1)) continue;
    const Node* db =
        conv && n.input_size() > 2 && !n.input(2).empty() ? dequantize_of(u, n.input(2)) : nullptr;
    if (conv && n.input_size() > 2 && !n.input(2).empty() &&
        (db == nullptr || !is_quantized_bias(g, *db, *dx, *dw)))
      continue;
    Node f;
    f.set_op_type(conv ? "QLinearConv" : "QLinearMatMul");
    f.set_name(n.name());
    add_operand(f, *dx);
    add_operand(f, *dw);
    f.add_input(q->input(1));
    f.add_input(q->input_size() > 2 ? q->input(2) : "");
    if (db != nullptr) f.add_input(db->input(0));
    f.add_output(q->output(0));
    if (conv)
      for (const auto& a : n.attribute()) *f.add_attribute() = a;
    folded.insert(&n);
    into.emplace(q, std::move(f));
  }
  if (into.empty()) return g;
  Graph out = g;
  out.clear_node();
  for (const auto& n : g.node()) {
    if (folded.count(&n) > 0) continue;
    const auto it = into.find(&n);
    *out.add_node() = it != into.end() ? it->second : n;
  }
  return out;
}

}  // namespace dlavm::onnx::detail
