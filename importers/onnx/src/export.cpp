// dlavm::onnx::export_model (onnx/export.hpp): one writer per graph op, an integer layer's
// QDQ form, the scales that reproduce its multiplier.
#include <dlavm/core/error.hpp>
#include <dlavm/graph/functor.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/host/elementwise.hpp>
#include <dlavm/host/unary.hpp>
#include <dlavm/onnx/export.hpp>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace dlavm::onnx {

namespace {

constexpr std::int64_t kOpset = 17;

using ::onnx::NodeProto;
using ::onnx::TensorProto;

int onnx_type(DType d, const std::string& what) {
  if (d == DType::float32()) return TensorProto::FLOAT;
  if (d == DType::int8()) return TensorProto::INT8;
  if (d == DType::uint8()) return TensorProto::UINT8;
  if (d == DType::int32()) return TensorProto::INT32;
  if (d == DType::int64()) return TensorProto::INT64;
  raise<TypeError>("export: {} is {}, which the exporter does not write", what, d);
}

// A call's printed name: `%name` or `%K` (its post-order number among the calls).
struct Writer {
  ::onnx::GraphProto& g;
  std::unordered_map<const graph::Node*, std::string> names;
  std::set<std::string> used;
  std::unordered_map<const graph::Node*, float> scale_of;  // of int8 values written quantized
  std::vector<std::string> refused;
  int temps = 0;

  std::string unique(const std::string& stem) {
    std::string name = fmt::format("{}", stem.empty() ? std::string_view("v") : stem);
    for (int k = 1; used.contains(name); ++k) name = fmt::format("{}_{}", stem, k);
    used.insert(name);
    return name;
  }

  std::string initializer(const std::string& stem, const te::NDArray& a) {
    auto* t = g.add_initializer();
    const std::string name = unique(stem);
    t->set_name(name);
    for (auto d : a.shape()) t->add_dims(d);
    t->set_data_type(onnx_type(a.dtype(), fmt::format("constant '{}'", stem)));
    if (a.dtype().is_float()) {
      for (float v : a.fdata()) t->add_float_data(v);
    } else if (a.dtype() == DType::int64()) {
      for (auto v : a.data()) t->add_int64_data(v);
    } else {
      for (auto v : a.data()) t->add_int32_data(static_cast<std::int32_t>(v));
    }
    return name;
  }
  std::string floats(const std::string& stem, std::vector<float> v, bool scalar) {
    std::vector<std::int64_t> shape;
    if (!scalar) shape = {static_cast<std::int64_t>(v.size())};
    return initializer(stem, te::NDArray::from_floats(shape, v));
  }
  std::string ints(const std::string& stem, DType d, std::vector<std::int64_t> v, bool scalar) {
    std::vector<std::int64_t> shape;
    if (!scalar) shape = {static_cast<std::int64_t>(v.size())};
    return initializer(stem, te::NDArray::from_ints(d, shape, v));
  }

  NodeProto& node(const std::string& op, std::vector<std::string> inputs, std::string output) {
    auto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(output);
    for (auto& i : inputs) n->add_input(i);
    n->add_output(std::move(output));
    return *n;
  }
  static void attr(NodeProto& n, const std::string& key, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(NodeProto& n, const std::string& key, float v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(NodeProto& n, const std::string& key, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  template <class Ints>
  static void attr_ints(NodeProto& n, const std::string& key, const Ints& v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(::onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }

  // A value's ONNX name; a constant becomes an initializer when first read (so that the
  // multipliers a layer's scales replace are not written).
  const std::string& name_of(const graph::Expr& e) {
    if (const auto* k = e.as<graph::ConstantNode>(); k != nullptr && !names.contains(e.get()))
      names[e.get()] = initializer(k->name, *k->value);
    return names.at(e.get());
  }
};

void value_info(::onnx::ValueInfoProto& v, const std::string& name, const graph::TensorType& t) {
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_type(t.dtype, fmt::format("value '{}'", name)));
  auto* shape = tt->mutable_shape();
  for (const auto& d : t.shape) {
    auto* dim = shape->add_dim();
    if (auto c = d.as_int())
      dim->set_dim_value(*c);
    else
      dim->set_dim_param(fmt::format("{}", d));
  }
}

const te::NDArray* constant_value(const graph::Expr& e) {
  const auto* c = e.as<graph::ConstantNode>();
  return c != nullptr ? c->value.get() : nullptr;
}

// The float32 weight scale w with float32(float32(x * w) / y) == m, the multiplier ONNX's
// quantized operators compute from the three scales: the floats nearest m * y / x tried in
// turn (the product's rounding skips some results, so a neighbour may be the one).
std::optional<float> weight_scale_for(float x, float y, float m) {
  const auto of = [&](float v) { return static_cast<float>(x * v) / y; };
  float lo = static_cast<float>(static_cast<double>(m) * y / x), hi = lo;
  for (int step = 0; step < 16 && std::isfinite(hi) && lo > 0; ++step) {
    if (of(lo) == m) return lo;
    if (of(hi) == m) return hi;
    lo = std::nextafter(lo, 0.0f);
    hi = std::nextafter(hi, std::numeric_limits<float>::infinity());
  }
  return std::nullopt;
}

// The weight scales of a layer's multipliers `m` at output scale y, or, where y is free (no
// DequantizeLinear reads the layer), at the float nearest y for which every channel has one.
std::optional<std::pair<float, std::vector<float>>> layer_scales(float x, float y, bool y_free,
                                                                 std::span<const float> m) {
  float below = y, above = y;
  for (int step = 0; step < (y_free ? 4096 : 1); ++step) {
    for (const float at : {above, below}) {
      std::vector<float> w;
      for (const float mc : m) {
        const auto s = weight_scale_for(x, at, mc);
        if (!s) break;
        w.push_back(*s);
      }
      if (w.size() == m.size()) return std::pair{at, std::move(w)};
    }
    below = std::nextafter(below, 0.0f);
    above = std::nextafter(above, std::numeric_limits<float>::infinity());
  }
  return std::nullopt;
}

using Users = std::unordered_map<const graph::Node*, std::vector<const graph::CallNode*>>;

// The layer a rescale is the output step of: conv2d or dense with a constant weight, read
// only by the rescale or by a bias_add of a constant read only by it.
struct IntegerLayer {
  const graph::CallNode* anchor = nullptr;
  std::optional<graph::Expr> bias;
  const graph::Node* bias_add = nullptr;
};

std::optional<IntegerLayer> integer_layer(const graph::CallNode& rescale, const Users& users) {
  const auto used_once = [&](const graph::Expr& e) {
    const auto it = users.find(e.get());
    return it != users.end() && it->second.size() == 1;
  };
  IntegerLayer l;
  graph::Expr acc = rescale.args[0];
  const auto* ac = acc.as<graph::CallNode>();
  if (ac != nullptr && ac->op() == "bias_add" && used_once(acc) &&
      constant_value(ac->args[1]) != nullptr) {
    l.bias = ac->args[1];
    l.bias_add = acc.get();
    acc = ac->args[0];
    ac = acc.as<graph::CallNode>();
  }
  if (ac == nullptr || (ac->op() != "conv2d" && ac->op() != "dense") || !used_once(acc) ||
      constant_value(ac->args[1]) == nullptr || constant_value(rescale.args[1]) == nullptr ||
      constant_value(rescale.args[2]) == nullptr)
    return std::nullopt;
  l.anchor = ac;
  return l;
}

// A unary element-wise op of host::kUnaryOps: its runtime enumerator is ONNX's name.
const host::UnaryOp* unary_op(std::string_view op) {
  for (const auto& u : host::kUnaryOps)
    if (u.name == op && u.kind != runtime::Unary::Mish) return &u;  // Mish: opset 18
  return nullptr;
}

std::optional<std::string> binary_onnx(std::string_view op) {
  for (const auto& b : host::kBinaryOps)
    if (b.name == op) {
      if (b.kind == runtime::Binary::Maximum) return "Max";
      if (b.kind == runtime::Binary::Minimum) return "Min";
      if (b.kind == runtime::Binary::Prelu) return "PRelu";
      return std::string(b.enumerator);
    }
  return std::nullopt;
}

// Ops whose int8 result holds its input's quantized values (so has its scale).
bool keeps_scale(std::string_view op) {
  return op == "clip" || op == "relu" || op == "max_pool2d" || op == "reshape" || op == "flatten" ||
         op == "transpose" || op == "pad";
}

}  // namespace

std::string export_model_bytes(const graph::Function& fn, const ExportOptions& options) {
  const auto typed = graph::infer_type(fn, graph::default_ops());
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("dlavm");
  model.add_opset_import()->set_version(kOpset);
  auto& g = *model.mutable_graph();
  g.set_name(options.graph_name);
  Writer w{g, {}, {}, {}, {}, 0};
  // the users of each node, and the integer layers' parts that their rescale writes
  Users users;
  const auto order = graph::post_order(typed.results());
  for (const auto& e : order)
    if (const auto* c = e.as<graph::CallNode>())
      for (const auto& a : c->args) users[a.get()].push_back(c);
  // the anchors and bias_adds the rescale of their layer writes
  std::set<const graph::Node*> absorbed;
  for (const auto& e : order)
    if (const auto* c = e.as<graph::CallNode>(); c != nullptr && c->op() == "rescale")
      if (const auto l = integer_layer(*c, users)) {
        absorbed.insert(l->anchor);
        if (l->bias_add != nullptr) absorbed.insert(l->bias_add);
      }
  for (const auto& p : typed.params()) {
    w.names[p.get()] = w.unique(p.name());
    value_info(*g.add_input(), w.names[p.get()], p.type());
  }
  int call_number = 0;
  for (const auto& e : order) {
    if (w.names.contains(e.get()) || e.as<graph::ConstantNode>() != nullptr)
      continue;  // (a constant is written when read: name_of)
    const auto* c = e.as<graph::CallNode>();
    if (c == nullptr) continue;
    const std::string printed = c->result_name.empty() ? fmt::format("%{}", call_number)
                                                       : fmt::format("%{}", c->result_name);
    ++call_number;
    if (absorbed.contains(e.get())) continue;
    const std::string out = w.unique(c->result_name.empty() ? c->op() : c->result_name);
    w.names[e.get()] = out;
    const auto in = [&](std::size_t i) { return w.name_of(c->args[i]); };
    const auto& op = c->op();
    const auto& attrs = c->attrs;
    const auto refuse = [&](const std::string& why) {
      w.refused.push_back(fmt::format("{} ({}): {}", printed, op, why));
    };
    std::vector<std::string> ins;
    if (op != "rescale")  // (a rescale's sum is written with it)
      for (std::size_t i = 0; i < c->args.size(); ++i) ins.push_back(in(i));
    if (const auto* u = unary_op(op)) {
      // the element-wise ops keep ONNX's names and attributes (alpha, beta, gamma)
      auto& n = w.node(std::string(u->enumerator), ins, out);
      for (const char* key : {"alpha", "beta", "gamma"})
        if (attrs.contains(key)) Writer::attr(n, key, static_cast<float>(attrs.get_float(key)));
    } else if (const auto b = binary_onnx(op)) {
      w.node(*b, ins, out);
    } else if (op == "relu" || op == "global_avg_pool2d") {
      w.node(op == "relu" ? "Relu" : "GlobalAveragePool", ins, out);
    } else if (op == "quantize_linear" || op == "dequantize_linear") {
      auto& n = w.node(op == "quantize_linear" ? "QuantizeLinear" : "DequantizeLinear", ins, out);
      const auto* s = constant_value(c->args[1]);
      if (s != nullptr && s->size() > 1) Writer::attr(n, "axis", attrs.get_int("axis"));
      if (op == "quantize_linear" && s != nullptr && s->size() == 1)
        w.scale_of[e.get()] = s->fdata()[0];
    } else if (op == "rescale") {
      // an integer layer: conv2d / dense (int8) -> [bias_add int32] -> rescale
      const auto* mv = constant_value(c->args[1]);
      const auto* zv = constant_value(c->args[2]);
      const auto layer = integer_layer(*c, users);
      if (!layer) {
        refuse("a rescale that is not the output step of a conv2d or dense layer of int8 operands");
        continue;
      }
      const auto* ac = layer->anchor;
      const auto& bias = layer->bias;
      const graph::Expr& x8 = ac->args[0];
      const auto& w8 = *constant_value(ac->args[1]);
      const auto sx_it = w.scale_of.find(x8.get());
      const float sx = sx_it == w.scale_of.end() ? 1.0f : sx_it->second;
      // the output's scale: a DequantizeLinear's that reads it, through the ops that keep
      // quantized values as they are (the activation's clamp, max pooling, reshapes)
      float sy = 1.0f;
      bool sy_free = true;
      std::vector<const graph::Node*> todo{e.get()};
      for (std::size_t k = 0; k < todo.size() && k < 64; ++k)
        for (const auto* u : users[todo[k]]) {
          if (u->op() == "dequantize_linear") {
            if (const auto* s = constant_value(u->args[1]); s != nullptr && s->size() == 1) {
              sy = s->fdata()[0];
              sy_free = false;
            }
          } else if (keeps_scale(u->op())) {
            todo.push_back(u);
          }
        }
      const std::int64_t channels = w8.shape()[0];
      std::vector<float> multipliers;
      for (std::int64_t k = 0; k < channels; ++k)
        multipliers.push_back(mv->fdata()[mv->size() == 1 ? 0 : static_cast<std::size_t>(k)]);
      const auto scales = layer_scales(sx, sy, sy_free, multipliers);
      if (!scales) {
        refuse("a multiplier no float32 weight scale reproduces");
        continue;
      }
      sy = scales->first;
      const std::vector<float>& sw = scales->second;
      const std::string stem = ac->result_name.empty() ? ac->op() : ac->result_name;
      // the dequantized input, weight (per output channel) and bias
      const std::string xf = w.unique(stem + ".x");
      w.node("DequantizeLinear",
             {w.name_of(x8), w.floats(stem + ".x_scale", {sx}, true),
              w.ints(stem + ".x_zero_point", DType::int8(), {0}, true)},
             xf);
      const std::string wf = w.unique(stem + ".w");
      Writer::attr(w.node("DequantizeLinear",
                          {w.name_of(ac->args[1]), w.floats(stem + ".w_scale", sw, false),
                           w.ints(stem + ".w_zero_point", DType::int8(),
                                  std::vector<std::int64_t>(sw.size(), 0), false)},
                          wf),
                   "axis", std::int64_t{0});
      std::vector<std::string> layer_ins{xf, wf};
      if (bias) {
        std::vector<float> sb;
        for (float s : sw) sb.push_back(sx * s);
        const std::string bf = w.unique(stem + ".b");
        Writer::attr(w.node("DequantizeLinear",
                            {w.name_of(*bias), w.floats(stem + ".b_scale", sb, false),
                             w.ints(stem + ".b_zero_point", DType::int32(),
                                    std::vector<std::int64_t>(sb.size(), 0), false)},
                            bf),
                     "axis", std::int64_t{0});
        layer_ins.push_back(bf);
      }
      const std::string yf = w.unique(stem);
      if (ac->op() == "conv2d") {
        const auto p = graph::conv2d_params(ac->attrs);
        auto& n = w.node("Conv", layer_ins, yf);
        Writer::attr_ints(n, "strides", p.strides);
        Writer::attr_ints(n, "pads", p.padding);
        Writer::attr_ints(n, "dilations", p.dilations);
        Writer::attr(n, "group", p.groups);
      } else {
        if (x8.type().ndim() != 2) {
          refuse("a dense layer over more than two dims (Gemm takes matrices)");
          continue;
        }
        Writer::attr(w.node("Gemm", layer_ins, yf), "transB", std::int64_t{1});
      }
      const std::int64_t zp = zv->data()[0];
      w.node("QuantizeLinear",
             {yf, w.floats(stem + ".y_scale", {sy}, true),
              w.ints(stem + ".y_zero_point", zv->dtype(), {zp}, true)},
             out);
      w.scale_of[e.get()] = sy;
    } else if (op == "conv2d") {
      const auto p = graph::conv2d_params(attrs);
      auto& n = w.node("Conv", ins, out);
      Writer::attr_ints(n, "strides", p.strides);
      Writer::attr_ints(n, "pads", p.padding);
      Writer::attr_ints(n, "dilations", p.dilations);
      Writer::attr(n, "group", p.groups);
    } else if (op == "dense") {
      if (c->args[0].type().ndim() == 2) {
        Writer::attr(w.node("Gemm", ins, out), "transB", std::int64_t{1});
      } else {
        const std::string t = w.unique(out + ".weight_t");
        Writer::attr_ints(w.node("Transpose", {ins[1]}, t), "perm",
                          std::vector<std::int64_t>{1, 0});
        w.node("MatMul", {ins[0], t}, out);
      }
    } else if (op == "bias_add") {
      const auto rank = static_cast<std::int64_t>(c->args[0].type().ndim());
      std::int64_t axis = graph::bias_add_params(attrs).axis;
      if (axis < 0) axis += rank;
      std::vector<std::int64_t> shape{-1};
      for (std::int64_t k = axis + 1; k < rank; ++k) shape.push_back(1);
      const std::string b = w.unique(out + ".bias");
      w.node("Reshape", {ins[1], w.ints(out + ".bias_shape", DType::int64(), shape, false)}, b);
      w.node("Add", {ins[0], b}, out);
    } else if (op == "clip") {
      const auto p = graph::clip_params(attrs);
      const DType d = c->args[0].type().dtype;
      const auto bound = [&](const char* which, double v) {
        return d.is_float() ? w.floats(out + which, {static_cast<float>(v)}, true)
                            : w.ints(out + which, d, {std::llround(v)}, true);
      };
      w.node("Clip", {ins[0], bound(".min", p.lo), bound(".max", p.hi)}, out);
    } else if (op == "max_pool2d" || op == "avg_pool2d") {
      const auto p = graph::pool2d_params(attrs);
      auto& n = w.node(op == "max_pool2d" ? "MaxPool" : "AveragePool", ins, out);
      Writer::attr_ints(n, "kernel_shape", p.pool_size);
      Writer::attr_ints(n, "strides", p.strides);
      Writer::attr_ints(n, "pads", p.padding);
      if (op == "avg_pool2d")
        Writer::attr(n, "count_include_pad", std::int64_t{p.count_include_pad ? 1 : 0});
    } else if (op == "reshape") {
      std::vector<std::int64_t> shape;
      for (const auto& d : e.type().shape) shape.push_back(d.as_int().value_or(-1));
      w.node("Reshape", {ins[0], w.ints(out + ".shape", DType::int64(), shape, false)}, out);
    } else if (op == "flatten") {
      Writer::attr(w.node("Flatten", ins, out), "axis", attrs.get_int("axis"));
    } else if (op == "transpose") {
      auto& n = w.node("Transpose", ins, out);
      if (const auto p = graph::transpose_params(attrs); !p.perm.empty())
        Writer::attr_ints(n, "perm", p.perm);
    } else if (op == "pad") {
      // Pad: the pads as begins then ends, the value in the data's type
      const auto p = graph::pad_params(attrs);
      std::vector<std::int64_t> pads = p.pad_before;
      pads.insert(pads.end(), p.pad_after.begin(), p.pad_after.end());
      const DType d = c->args[0].type().dtype;
      const std::string value = d.is_float()
                                    ? w.floats(out + ".value", {static_cast<float>(p.value)}, true)
                                    : w.ints(out + ".value", d, {std::llround(p.value)}, true);
      static constexpr std::array<const char*, 3> kModes{"constant", "edge", "reflect"};
      Writer::attr(
          w.node("Pad", {ins[0], w.ints(out + ".pads", DType::int64(), pads, false), value}, out),
          "mode", std::string(kModes.at(static_cast<std::size_t>(p.mode))));
    } else if (op == "concat") {
      Writer::attr(w.node("Concat", ins, out), "axis", attrs.get_int("axis"));
    } else if (op == "softmax") {
      Writer::attr(w.node("Softmax", ins, out), "axis", attrs.get_int("axis"));
    } else if (op == "cast") {
      Writer::attr(w.node("Cast", ins, out), "to",
                   std::int64_t{onnx_type(e.type().dtype, "the cast's result")});
    } else if (op == "requantize") {
      refuse(
          "a rounding right shift (Requantize::Shift) has no ONNX operator; quantize with "
          "Requantize::Multiplier to export");
    } else {
      refuse("no ONNX form is written for this op");
    }
    if (keeps_scale(op) && !c->args.empty())
      if (auto it = w.scale_of.find(c->args[0].get()); it != w.scale_of.end())
        w.scale_of[e.get()] = it->second;
  }
  if (!w.refused.empty())
    raise<NotSupported>("export: {} node{} with no ONNX form: {}", w.refused.size(),
                        w.refused.size() == 1 ? "" : "s", fmt::join(w.refused, "; "));
  for (const auto& r : typed.results()) {
    // a result that is a param or a constant, or twice a result, gets an Identity of its own
    std::string name = w.name_of(r);
    if (r.as<graph::CallNode>() == nullptr ||
        std::ranges::any_of(g.output(), [&](const auto& o) { return o.name() == name; })) {
      const std::string id = w.unique(name + ".out");
      w.node("Identity", {name}, id);
      name = id;
    }
    value_info(*g.add_output(), name, r.type());
  }
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

void export_model(const graph::Function& fn, const std::filesystem::path& path,
                  const ExportOptions& options) {
  const auto bytes = export_model_bytes(fn, options);
  std::ofstream out(path, std::ios::binary);
  if (!out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    raise<ValueError>("export: cannot write '{}'", path.string());
}

}  // namespace dlavm::onnx
