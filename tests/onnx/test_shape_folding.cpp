// Shape subgraphs as exporters write them, folded at import: PyTorch's
// Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) over a symbolic batch, Paddle's
// dim_params, a transformer's head split, Squeeze/Unsqueeze, Size, constants folded through the
// host kernels, and the refusals of what cannot fold. Each imported function is checked for
// what is left in it (no shape arithmetic) and evaluated against the input's own values.
#include <dlavm/graph.hpp>
#include <dlavm/onnx/import.hpp>

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include "model_builder.hpp"
#include <map>
#include <string>
#include <vector>

namespace onnx_shape_folding {

using namespace dlavm;
namespace importer = dlavm::onnx;
using onnx_test::ModelBuilder;
using onnx_test::set_int;
using onnx_test::set_ints;
using TP = ::onnx::TensorProto;

// The ops of the function's calls, in post-order.
std::vector<std::string> ops_of(const graph::Function& fn) {
  std::vector<std::string> ops;
  for (const auto& e : graph::post_order(fn.results()))
    if (const auto* c = e.as<graph::CallNode>()) ops.emplace_back(c->op());
  return ops;
}

// fn evaluated on x (its one param), with `dims` bound.
te::NDArray run(const graph::Function& fn, const te::NDArray& x,
                const std::map<std::string, std::int64_t, std::less<>>& dims) {
  const auto typed = graph::infer_type(fn, graph::default_ops());
  std::vector<ne::Binding> bound;
  for (const auto& [name, value] : dims) bound.push_back({name, value});
  const graph::NamedArray in{typed.params()[0]->name, x};
  return graph::evaluate(typed, std::span(&in, 1), bound).front();
}

// PyTorch's flatten before a classifier: x.view(x.size(0), -1), as opset `opset` writes it
// (Unsqueeze's axes an attribute before 13, an input since).
ModelBuilder torch_flatten(const std::string& batch, std::int64_t opset = 13) {
  ModelBuilder mb(opset);
  mb.input("x", {batch, 3, 4, 4});
  mb.ints("zero", {0}, true);
  mb.ints("minus_one", {-1});
  mb.node("Shape", {"x"}, {"s"});
  mb.node("Gather", {"s", "zero"}, {"n"});
  if (opset < 13) {
    set_ints(mb.node("Unsqueeze", {"n"}, {"n1"}), "axes", {0});
  } else {
    mb.ints("axes0", {0});
    mb.node("Unsqueeze", {"n", "axes0"}, {"n1"});
  }
  set_int(mb.node("Concat", {"n1", "minus_one"}, {"target"}), "axis", 0);
  mb.node("Reshape", {"x", "target"}, {"y"}, "flatten");
  mb.output("y");
  return mb;
}

TEST_CASE("shape folding: PyTorch's view(size(0), -1) over a symbolic batch is one reshape") {
  for (const auto& export_ : {std::pair<std::string, std::int64_t>{"batch_size", 9},
                              {"batch_size", 11},
                              {"batch_size", 13},
                              {"p2o.DynamicDimension.0", 18}}) {
    // (not bindings: CAPTURE reads its argument in a lambda, which cannot capture a binding in
    // Clang before 16)
    const std::string& batch = export_.first;
    const std::int64_t opset = export_.second;
    CAPTURE(batch);
    CAPTURE(opset);
    importer::ImportOptions o;
    o.dims = {{batch, {1, 8}}};
    const auto fn = torch_flatten(batch, opset).import(o);
    CHECK(ops_of(fn) == std::vector<std::string>{"reshape"});
    CHECK(fn.results()[0].as<graph::CallNode>()->attrs.get_ints("newshape") ==
          std::vector<std::int64_t>{0, -1});
    const auto typed = graph::infer_type(fn, graph::default_ops());
    const auto& shape = typed.results()[0].type().shape;
    REQUIRE(shape.size() == 2);
    CHECK(fmt::format("{}", shape[0]) == batch);
    CHECK(shape[1].as_int() == 48);
    const auto x = te::NDArray::random(DType::float32(), {3, 3, 4, 4}, 7);
    const auto y = run(fn, x, {{batch, 3}});
    CHECK(y.shape() == std::vector<std::int64_t>{3, 48});
    CHECK(std::equal(y.fdata().begin(), y.fdata().end(), x.fdata().begin()));
  }
  // with the batch fixed, the shape folds into constants
  const auto fn = torch_flatten("b").import({.dims = {{"b", {2, 2}}}});
  CHECK(ops_of(fn) == std::vector<std::string>{"reshape"});
}

TEST_CASE("shape folding: a transformer's head split keeps batch and sequence symbolic") {
  // x [B, S, 64] -> [B, S, 4, 16] with B and S gathered from Shape(x), and S / 1 * 1 on the way
  ModelBuilder mb(17);
  mb.input("x", {std::string("batch"), std::string("seq"), 64});
  mb.ints("i0", {0}, true);
  mb.ints("i1", {1}, true);
  mb.ints("one", {1}, true);
  mb.ints("heads", {4, 16});
  mb.node("Shape", {"x"}, {"s"});
  mb.node("Gather", {"s", "i0"}, {"b"});
  mb.node("Gather", {"s", "i1"}, {"t"});
  mb.node("Div", {"t", "one"}, {"t1"});
  mb.node("Mul", {"t1", "one"}, {"t2"});
  mb.ints("axes0", {0});
  mb.node("Unsqueeze", {"b", "axes0"}, {"b1"});
  mb.node("Unsqueeze", {"t2", "axes0"}, {"t3"});
  set_int(mb.node("Concat", {"b1", "t3", "heads"}, {"target"}), "axis", 0);
  mb.node("Reshape", {"x", "target"}, {"y"}, "split_heads");
  mb.output("y");
  importer::ImportOptions o;
  o.dims = {{"batch", {1, 4}}, {"seq", {1, 128}}};
  const auto fn = mb.import(o);
  CHECK(ops_of(fn) == std::vector<std::string>{"reshape"});
  CHECK(fn.results()[0].as<graph::CallNode>()->attrs.get_ints("newshape") ==
        std::vector<std::int64_t>{0, 0, 4, 16});
  const auto x = te::NDArray::random(DType::float32(), {2, 5, 64}, 3);
  const auto y = run(fn, x, {{"batch", 2}, {"seq", 5}});
  CHECK(y.shape() == std::vector<std::int64_t>{2, 5, 4, 16});
}

TEST_CASE("shape folding: Unsqueeze, Squeeze, Size, Identity, Dropout, constants folded") {
  ModelBuilder mb(13);
  mb.input("x", {std::string("n"), 6});
  mb.ints("axes", {1, 3});
  mb.node("Unsqueeze", {"x", "axes"}, {"u"});  // [n, 1, 6, 1]
  mb.node("Identity", {"u"}, {"i"});
  mb.node("Dropout", {"i"}, {"d"});
  mb.node("Squeeze", {"d", "axes"}, {"y"});  // [n, 6]
  mb.output("y");
  const auto fn = mb.import({.dims = {{"n", {1, 9}}}});
  CHECK(ops_of(fn) == std::vector<std::string>{"reshape", "reshape"});
  const auto x = te::NDArray::random(DType::float32(), {4, 6}, 1);
  const auto y = run(fn, x, {{"n", 4}});
  CHECK(y.shape() == x.shape());
  CHECK(std::equal(y.fdata().begin(), y.fdata().end(), x.fdata().begin()));

  // a Squeeze without axes over a symbolic dim cannot know which dims are 1
  ModelBuilder sym(13);
  sym.input("x", {std::string("n"), 1});
  sym.node("Squeeze", {"x"}, {"y"}, "sq");
  sym.output("y");
  CHECK_THROWS_WITH_AS(sym.import({.dims = {{"n", {1, 9}}}}),
                       doctest::Contains("node 'sq' (Squeeze): a Squeeze without axes over the "
                                         "symbolic dim n"),
                       importer::NotSupported);

  // constant subgraphs fold through the host kernels: a transposed, scaled weight is one constant
  ModelBuilder w(13);
  w.input("x", {2, 3});
  w.initializer("w", {4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  w.initializer("two", {}, {2});
  set_ints(w.node("Transpose", {"w"}, {"wt"}), "perm", {1, 0});
  w.node("Mul", {"wt", "two"}, {"w2"});
  w.node("MatMul", {"x", "w2"}, {"y"});
  w.output("y");
  const auto wf = w.import();
  CHECK(ops_of(wf) == std::vector<std::string>{"matmul"});
  const auto* mm = wf.results()[0].as<graph::CallNode>();
  const auto* folded = mm->args[1].as<graph::ConstantNode>();
  REQUIRE(folded != nullptr);
  CHECK(folded->name == "w2");
  CHECK(folded->value->shape() == std::vector<std::int64_t>{3, 4});
  CHECK(folded->value->fdata()[1] == 8.0f);  // w[1][0] * 2
}

TEST_CASE("shape folding: what cannot fold is refused by name") {
  // a computed shape where a tensor is needed
  ModelBuilder mb(13);
  mb.input("x", {std::string("n"), 4});
  mb.node("Shape", {"x"}, {"s"});
  mb.node("Relu", {"s"}, {"y"}, "relu_of_shape");
  mb.output("y");
  CHECK_THROWS_WITH_AS(mb.import({.dims = {{"n", {1, 9}}}}),
                       doctest::Contains("node 'relu_of_shape' (Relu): input 0 's' holds dims "
                                         "computed from symbolic ones ([n, 4])"),
                       importer::NotSupported);
  // a reshape with two symbolic dims that moved: [a, b, 4] -> [b * a, 4] is inferable, but
  // [a, b] -> [b, a] is not sayable with 0 and one -1
  ModelBuilder swap(13);
  swap.input("x", {std::string("a"), std::string("b")});
  swap.ints("i0", {0});
  swap.ints("i1", {1});
  swap.node("Shape", {"x"}, {"s"});
  swap.node("Gather", {"s", "i1"}, {"sb"});
  swap.node("Gather", {"s", "i0"}, {"sa"});
  set_int(swap.node("Concat", {"sb", "sa"}, {"target"}), "axis", 0);
  swap.node("Reshape", {"x", "target"}, {"y"}, "swap");
  swap.output("y");
  CHECK_THROWS_WITH_AS(swap.import({.dims = {{"a", {1, 9}}, {"b", {1, 9}}}}),
                       doctest::Contains("node 'swap' (Reshape): a reshape to [b, a]"),
                       importer::NotSupported);
  // a computed shape as a graph output
  ModelBuilder out(13);
  out.input("x", {std::string("n"), 4});
  out.node("Shape", {"x"}, {"s"});
  out.output("s");
  CHECK_THROWS_WITH_AS(
      out.import({.dims = {{"n", {1, 9}}}}),
      "test.onnx: graph output 's' is a shape computed from symbolic dims ([n, 4])",
      importer::NotSupported);
}

}  // namespace onnx_shape_folding
