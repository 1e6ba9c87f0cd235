// A writer of small ONNX models for the importer's tests, with ONNX's own protobuf classes.
#pragma once

#include <dlavm/onnx/import.hpp>

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace onnx_test {

namespace importer = dlavm::onnx;
using TP = ::onnx::TensorProto;

// A model builder for the tests: opset 13, float inputs.
struct ModelBuilder {
  ::onnx::ModelProto m;
  ModelBuilder(std::int64_t opset = 13) {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    m.mutable_graph()->set_name("test");
  }
  ::onnx::GraphProto& g() { return *m.mutable_graph(); }
  void input(const std::string& name, std::vector<std::variant<std::int64_t, std::string>> dims,
             int type = TP::FLOAT) {
    auto* v = g().add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    auto* s = t->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = s->add_dim();
      if (std::holds_alternative<std::int64_t>(d))
        dim->set_dim_value(std::get<std::int64_t>(d));
      else
        dim->set_dim_param(std::get<std::string>(d));
    }
  }
  void output(const std::string& name) { g().add_output()->set_name(name); }
  ::onnx::NodeProto& node(const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out, const std::string& name = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return *n;
  }
  TP& initializer(const std::string& name, std::vector<std::int64_t> dims, std::vector<float> v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(TP::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (auto x : v) t->add_float_data(x);
    return *t;
  }
  // An int64 initializer of rank 1 (shapes, axes, indices), or of rank 0 (`scalar`).
  TP& ints(const std::string& name, std::vector<std::int64_t> v, bool scalar = false) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(TP::INT64);
    if (!scalar) t->add_dims(static_cast<std::int64_t>(v.size()));
    for (auto x : v) t->add_int64_data(x);
    return *t;
  }
  std::vector<std::uint8_t> bytes() const {
    std::string s;
    REQUIRE(m.SerializeToString(&s));
    return {s.begin(), s.end()};
  }
  dlavm::graph::Function import(const importer::ImportOptions& o = {}) const {
    const auto b = bytes();
    return importer::import(std::span<const std::uint8_t>(b), o, "test.onnx");
  }
};

void set_ints(::onnx::NodeProto& n, const std::string& name, std::vector<std::int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}

void set_int(::onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

}  // namespace onnx_test
