// QDQ folding: a Conv, MatMul or Gemm whose operands come from DequantizeLinear nodes and
// whose only user is a QuantizeLinear, or a Relu or Clip whose only user is one, becomes the
// QLinearConv / QLinearMatMul / QGemm it stands for, as ONNX Runtime fuses QDQ models. The
// activation becomes a clamp of the quantized result: quantization is monotonic, so
// Q(relu(y)) = max(Q(y), Q(0)) and Q(clip(y, lo, hi)) = clip(Q(y), Q(lo), Q(hi)) exactly. A
// Gemm with no QuantizeLinear after it becomes a QGemm without y_scale: its float result.
// An operator that only moves or selects values (MaxPool, nearest Resize, Concat, reshapes)
// after DequantizeLinear nodes of one per-tensor quantization works on the quantized values,
// the dequantization after it; a QuantizeLinear of a dequantized value with the same
// parameters is the integers themselves. The
// folded node computes the sum exactly in integers and rescales it once (rescale's definition); the
// unfolded float graph rounds every float32 partial sum instead. A Conv's float bias folds when it
// is the dequantized int32 bias a quantizer writes (zero point 0, scale x_scale * w_scale per
// channel, checked).
#include "importer.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
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

// The float range activation node `a` keeps, when it is one a quantized output can apply
// exactly: Relu [0, inf), Clip with constant bounds (attributes before opset 11, inputs
// since).
std::optional<std::pair<float, float>> activation_range(const Graph& g, const Node& a,
                                                        std::int64_t opset) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  if (a.op_type() == "Relu") return std::pair{0.0f, inf};
  if (a.op_type() != "Clip") return std::nullopt;
  std::pair range{-inf, inf};
  if (opset < 11) {
    for (const auto& at : a.attribute()) {
      if (at.name() == "min") range.first = at.f();
      if (at.name() == "max") range.second = at.f();
    }
    return range;
  }
  for (int k = 1; k <= 2; ++k) {
    if (a.input_size() <= k || a.input(k).empty()) continue;
    const auto* t = initializer(g, a.input(k));
    if (t == nullptr || t->data_type() != ::onnx::TensorProto::FLOAT) return std::nullopt;
    const auto v = to_array(*t, "clip bound");
    if (v.size() != 1) return std::nullopt;
    (k == 1 ? range.first : range.second) = v.fdata()[0];
  }
  return range;
}

// The quantized value of float v under QuantizeLinear q (scale and zero point constants):
// round half to even of v / scale, plus the zero point, saturated; nullopt when q's
// parameters are not constants of one value.
std::optional<std::int64_t> quantized(const Graph& g, const Node& q, float v) {
  const auto s = scale_of(g, q);
  if (!s || s->size() != 1 || !s->dtype().is_float()) return std::nullopt;
  std::int64_t zp = 0, lo = 0, hi = 255;  // ONNX's default zero point: uint8 0
  if (q.input_size() > 2 && !q.input(2).empty()) {
    const auto* z = initializer(g, q.input(2));
    if (z == nullptr) return std::nullopt;
    const auto zv = to_array(*z, "zero point");
    if (zv.size() != 1) return std::nullopt;
    zp = zv.data()[0];
    if (zv.dtype() == DType::int8()) lo = -128, hi = 127;
  }
  const float r = v / s->fdata()[0];
  if (std::isnan(r)) return std::nullopt;
  if (r >= static_cast<float>(hi - zp)) return hi;
  if (r <= static_cast<float>(lo - zp)) return lo;
  return std::clamp(static_cast<std::int64_t>(std::nearbyint(r)) + zp, lo, hi);
}

// The single use of `value`: the node reading it, when that is its only reader and it is no
// graph output.
const Node* only_user(const Uses& u, const std::string& value) {
  const auto users = u.users.find(value);
  if (u.outputs.count(value) > 0 || users == u.users.end() || users->second.size() != 1)
    return nullptr;
  return users->second.front();
}

std::int64_t int_attr(const Node& n, std::string_view name, std::int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}
float float_attr(const Node& n, std::string_view name, float fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.f();
  return fallback;
}

// How a Conv, MatMul or Gemm node folds, or nullopt.
struct Fold {
  Node node;                          // the QLinear / QGemm node
  const Node* quantize = nullptr;     // the QuantizeLinear it replaces, if any
  std::vector<const Node*> replaced;  // the nodes it replaces besides that
  std::optional<std::pair<std::int64_t, std::int64_t>> clamp;  // an activation's bounds
};

std::optional<Fold> fold_node(const Graph& g, const Uses& u, const Node& n, std::int64_t opset) {
  const bool conv = n.op_type() == "Conv", matmul = n.op_type() == "MatMul",
             gemm = n.op_type() == "Gemm";
  if ((!conv && !matmul && !gemm) || n.output_size() != 1 || n.input_size() < 2) return {};
  const Node* dx = dequantize_of(u, n.input(0));
  const Node* dw = dequantize_of(u, n.input(1));
  if (dx == nullptr || dw == nullptr) return {};
  // a Gemm as a dense layer: A not transposed, alpha and beta 1
  const bool trans_b = gemm && int_attr(n, "transB", 0) != 0;
  if (gemm && (int_attr(n, "transA", 0) != 0 || float_attr(n, "alpha", 1) != 1 ||
               float_attr(n, "beta", 1) != 1))
    return {};
  // per-channel weights along the output channels only (axis 0 of a Conv weight and of a
  // transposed Gemm weight, the last axis of a 2-D MatMul operand)
  const auto sw = scale_of(g, *dw);
  if (!sw) return {};
  if (sw->size() > 1 && axis_of(*dw) != (conv || trans_b ? 0 : 1)) return {};
  const bool has_bias = (conv || gemm) && n.input_size() > 2 && !n.input(2).empty();
  const Node* db = has_bias ? dequantize_of(u, n.input(2)) : nullptr;
  if (has_bias && (db == nullptr || !is_quantized_bias(g, *db, *dx, *dw))) return {};
  // the output: an activation that commutes with quantization, then a QuantizeLinear
  Fold f;
  const Node* next = only_user(u, n.output(0));
  const Node* act = nullptr;
  std::optional<std::pair<float, float>> range;
  if (next != nullptr && next->input_size() > 0 && next->input(0) == n.output(0) &&
      (range = activation_range(g, *next, opset))) {
    act = next;
    next = only_user(u, act->output(0));
  }
  const std::string& into = act != nullptr ? act->output(0) : n.output(0);
  const bool quantizes = next != nullptr && next->op_type() == "QuantizeLinear" &&
                         next->input_size() >= 2 && next->input(0) == into &&
                         next->output_size() >= 1;
  if (!quantizes && !gemm) return {};  // (a float result: QGemm without y_scale)
  if (!quantizes && act != nullptr) act = nullptr;
  if (act != nullptr) {
    const auto lo = quantized(g, *next, range->first), hi = quantized(g, *next, range->second);
    if (!lo || !hi || *lo > *hi) return {};
    f.clamp = std::pair{*lo, *hi};
    f.replaced.push_back(act);
  }
  Node& q = f.node;
  q.set_name(n.name());
  add_operand(q, *dx);
  add_operand(q, *dw);
  if (gemm) {
    // QGemm (com.microsoft): A, B with their parameters, C, then y's
    q.set_op_type("QGemm");
    q.set_domain("com.microsoft");
    q.add_input(db != nullptr ? db->input(0) : "");
    if (quantizes) {
      q.add_input(next->input(1));
      q.add_input(next->input_size() > 2 ? next->input(2) : "");
    }
    auto* t = q.add_attribute();
    t->set_name("transB");
    t->set_type(::onnx::AttributeProto::INT);
    t->set_i(trans_b ? 1 : 0);
  } else {
    q.set_op_type(conv ? "QLinearConv" : "QLinearMatMul");
    q.add_input(next->input(1));
    q.add_input(next->input_size() > 2 ? next->input(2) : "");
    if (db != nullptr) q.add_input(db->input(0));
    if (conv)
      for (const auto& a : n.attribute()) *q.add_attribute() = a;
  }
  q.add_output(quantizes ? next->output(0) : n.output(0));
  if (quantizes) f.quantize = next;
  return f;
}

// Whether the constant inputs k of nodes a and b hold the same values (both absent: equal).
bool same_input(const Graph& g, const Node& a, int ka, const Node& b, int kb) {
  const bool ha = a.input_size() > ka && !a.input(ka).empty();
  const bool hb = b.input_size() > kb && !b.input(kb).empty();
  if (!ha || !hb) return ha == hb;
  if (a.input(ka) == b.input(kb)) return true;
  const auto *ta = initializer(g, a.input(ka)), *tb = initializer(g, b.input(kb));
  if (ta == nullptr || tb == nullptr || ta->data_type() != tb->data_type()) return false;
  const auto va = to_array(*ta, "quantization parameter"),
             vb = to_array(*tb, "quantization parameter");
  if (va.shape() != vb.shape()) return false;
  return va.dtype().is_float() ? std::ranges::equal(va.fdata(), vb.fdata())
                               : std::ranges::equal(va.data(), vb.data());
}

// Whether DequantizeLinear d and QuantizeLinear q use one scale and zero point, so that
// Q(op(DQ(x))) = op(x) for an op that only moves or selects values.
bool same_quantization(const Graph& g, const Node& d, const Node& q) {
  return same_input(g, d, 1, q, 1) && same_input(g, d, 2, q, 2) && axis_of(d) == axis_of(q);
}

// An operator that moves or selects its input's values without computing new ones (the max of
// a window, a nearest-neighbour resize, concatenation, reshapes): between a DequantizeLinear
// and a QuantizeLinear of one scale and zero point it works on the integers as they are. The
// inputs it takes as data (the rest are shapes, axes or sizes).
std::vector<int> selecting_inputs(const Graph& g, const Node& n) {
  const auto& op = n.op_type();
  if (op == "MaxPool") return n.output_size() == 1 ? std::vector{0} : std::vector<int>{};
  if (op == "Resize") {
    for (const auto& a : n.attribute())
      if (a.name() == "mode" && a.s() != "nearest") return {};
    return {0};
  }
  if (op == "Flatten" || op == "Reshape" || op == "Transpose" || op == "Squeeze" ||
      op == "Unsqueeze")
    return {0};
  if (op == "Concat") {
    std::vector<int> all(static_cast<std::size_t>(n.input_size()));
    for (int k = 0; k < n.input_size(); ++k) all[static_cast<std::size_t>(k)] = k;
    return all;
  }
  (void)g;
  return {};
}

// The graph with each selecting op whose data inputs are DequantizeLinear outputs of one
// per-tensor quantization applied to the quantized values instead, a DequantizeLinear after
// it (op(DQ(x)) = DQ(op(x))): the dequantization moves towards the Conv, Gemm or
// QuantizeLinear that reads it, where it folds. Names stay: the op's output becomes the new
// DequantizeLinear's.
Graph sink_dequantize(const Graph& g) {
  Graph out = g;
  out.clear_node();
  std::map<std::string, Node, std::less<>> dequantizes;  // by output: the DQ nodes seen
  for (const auto& n : g.node()) {
    const auto inputs = selecting_inputs(g, n);
    const Node* d0 = nullptr;
    bool sinks = !inputs.empty() && n.output_size() >= 1;
    for (const int k : inputs) {
      if (!sinks) break;
      const auto it = dequantizes.find(n.input(k));
      if (it == dequantizes.end()) {
        sinks = false;
        break;
      }
      const Node& d = it->second;
      const auto sc = scale_of(g, d);
      sinks = sc && sc->size() == 1 &&
              (d0 == nullptr || (same_input(g, d, 1, *d0, 1) && same_input(g, d, 2, *d0, 2)));
      d0 = &it->second;
    }
    if (sinks) {
      const std::string quantized_out = n.output(0) + "__quantized";
      Node moved = n;
      for (const int k : inputs) moved.set_input(k, dequantizes.at(n.input(k)).input(0));
      moved.set_output(0, quantized_out);
      Node d = *d0;
      d.set_name(n.name() + "__dequantize");
      d.set_input(0, quantized_out);
      d.set_output(0, n.output(0));
      *out.add_node() = std::move(moved);
      *out.add_node() = d;
      dequantizes[n.output(0)] = std::move(d);
      continue;
    }
    if (n.op_type() == "DequantizeLinear" && n.input_size() >= 2 && n.output_size() == 1)
      dequantizes[n.output(0)] = n;
    *out.add_node() = n;
  }
  return out;
}

// A QuantizeLinear of a DequantizeLinear's output with the same scale and zero point: the
// integers themselves (an Identity).
std::optional<Fold> fold_requantize(const Graph& g, const Uses& u, const Node& q) {
  if (q.op_type() != "QuantizeLinear" || q.input_size() < 2 || q.output_size() < 1) return {};
  const Node* d = dequantize_of(u, q.input(0));
  if (d == nullptr || !same_quantization(g, *d, q)) return {};
  const auto sc = scale_of(g, *d);
  if (!sc || sc->size() != 1) return {};
  Fold f;
  f.node.set_op_type("Identity");
  f.node.set_name(q.name());
  f.node.add_input(d->input(0));
  f.node.add_output(q.output(0));
  return f;
}

}  // namespace

QdqFold fold_qdq(const Graph& given, std::int64_t opset) {
  const Graph g = sink_dequantize(given);
  const Uses u = uses_of(g);
  QdqFold out;
  std::set<const Node*> dropped;         // nodes a fold replaces
  std::map<const Node*, Node> replaced;  // node -> the folded node standing in its place
  for (const auto& n : g.node()) {
    auto f = fold_node(g, u, n, opset);
    if (!f) f = fold_requantize(g, u, n);
    if (!f) continue;
    if (f->clamp) out.clamps.emplace(f->node.output(0), *f->clamp);
    for (const Node* r : f->replaced) dropped.insert(r);
    // the folded node takes the place of the QuantizeLinear (after every input it reads),
    // or of the node itself for a float result
    if (f->quantize != nullptr) {
      dropped.insert(&n);
      replaced.emplace(f->quantize, std::move(f->node));
    } else {
      replaced.emplace(&n, std::move(f->node));
    }
  }
  if (replaced.empty()) {
    out.graph = g;
    return out;
  }
  out.graph = g;
  out.graph.clear_node();
  for (const auto& n : g.node()) {
    if (dropped.count(&n) > 0) continue;
    const auto it = replaced.find(&n);
    *out.graph.add_node() = it != replaced.end() ? it->second : n;
  }
  return out;
}

}  // namespace dlavm::onnx::detail
