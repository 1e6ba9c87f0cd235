// ONNX's boolean operators through the importer, on models written here: BOOL inputs and
// initializers read as uint8 0/1 (and a BOOL of 2 refused), comparisons, logic, Where and Cast
// to and from BOOL evaluated against hand-derived values, comparisons and Where over computed
// dims folded, and If: the branch a constant condition (an initializer, a Constant node, a
// folded shape computation) chooses inlined, both branches and a where for a condition known
// only at run time, nested Ifs reading outer-scope names, and the refusals and errors inside a
// branch named with where they are.
#include <dlavm/graph.hpp>
#include <dlavm/onnx/import.hpp>

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include "model_builder.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace onnx_logic {

using namespace dlavm;
namespace importer = dlavm::onnx;
using onnx_test::ModelBuilder;
using onnx_test::set_int;
using TP = ::onnx::TensorProto;

// A BOOL initializer of `g` (the model's graph or a branch), its values in int32_data.
TP& bools(::onnx::GraphProto& g, const std::string& name, std::vector<std::int64_t> dims,
          std::vector<int> v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(TP::BOOL);
  for (auto d : dims) t->add_dims(d);
  for (auto x : v) t->add_int32_data(x);
  return *t;
}

TP& floats(::onnx::GraphProto& g, const std::string& name, std::vector<std::int64_t> dims,
           std::vector<float> v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(TP::FLOAT);
  for (auto d : dims) t->add_dims(d);
  for (auto x : v) t->add_float_data(x);
  return *t;
}

::onnx::NodeProto& add_node(::onnx::GraphProto& g, const std::string& op,
                            std::vector<std::string> in, std::vector<std::string> out,
                            const std::string& name = "") {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return *n;
}

// The subgraph attribute `which` of an If node, with its outputs named.
::onnx::GraphProto& branch(::onnx::NodeProto& n, const std::string& which,
                           std::vector<std::string> outputs) {
  auto* a = n.add_attribute();
  a->set_name(which);
  a->set_type(::onnx::AttributeProto::GRAPH);
  auto* g = a->mutable_g();
  g->set_name(which);
  for (auto& o : outputs) g->add_output()->set_name(o);
  return *g;
}

// A Constant node making a BOOL scalar.
void constant_bool(::onnx::GraphProto& g, const std::string& out, bool v) {
  auto& n = add_node(g, "Constant", {}, {out});
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::BOOL);
  a->mutable_t()->add_int32_data(v ? 1 : 0);
}

std::vector<std::string> ops_of(const graph::Function& fn) {
  std::vector<std::string> ops;
  for (const auto& e : graph::post_order(fn.results()))
    if (const auto* c = e.as<graph::CallNode>()) ops.emplace_back(c->op());
  return ops;
}

std::vector<te::NDArray> run(const graph::Function& fn, std::vector<graph::NamedArray> in,
                             std::vector<ne::Binding> dims = {}) {
  return graph::evaluate(graph::infer_type(fn, graph::default_ops()), in, dims);
}

std::vector<std::int64_t> ints(const te::NDArray& a) { return {a.data().begin(), a.data().end()}; }
std::vector<float> values(const te::NDArray& a) { return {a.fdata().begin(), a.fdata().end()}; }

TEST_CASE("BOOL inputs and initializers are uint8 0/1; a BOOL of 2 is refused by name") {
  ModelBuilder mb;
  mb.input("m", {2, 3}, TP::BOOL);
  bools(mb.g(), "keep", {3}, {1, 0, 1});
  mb.node("And", {"m", "keep"}, {"both"});
  mb.node("Not", {"both"}, {"y"});
  mb.output("y");
  const auto fn = mb.import();
  CHECK(fn.params()[0].type().dtype == DType::uint8());
  CHECK(ops_of(fn) == std::vector<std::string>{"logical_and", "logical_not"});
  const auto m = te::NDArray::from_ints(DType::uint8(), {2, 3}, {1, 1, 0, 0, 1, 1});
  const auto y = run(fn, {{"m", m}}).at(0);
  CHECK(y.dtype() == DType::uint8());
  CHECK(ints(y) == std::vector<std::int64_t>{0, 1, 1, 1, 1, 0});
  // raw data: one byte per element
  ModelBuilder raw;
  raw.input("m", {2}, TP::BOOL);
  auto& t = bools(raw.g(), "r", {2}, {});
  t.set_raw_data(std::string("\x01\x00", 2));
  raw.node("Xor", {"m", "r"}, {"y"});
  raw.output("y");
  const auto ones = te::NDArray::from_ints(DType::uint8(), {2}, {1, 1});
  CHECK(ints(run(raw.import(), {{"m", ones}}).at(0)) == std::vector<std::int64_t>{0, 1});
  t.set_raw_data(std::string("\x01\x02", 2));
  CHECK_THROWS_WITH_AS(
      raw.import(), "test.onnx: initializer 'r': BOOL element 1 is 2, neither 0 nor 1", ValueError);
  // read_tensor reads BOOL test data so too
  TP data;
  data.set_data_type(TP::BOOL);
  data.add_dims(3);
  for (int v : {0, 1, 1}) data.add_int32_data(v);
  std::string bytes;
  REQUIRE(data.SerializeToString(&bytes));
  const auto read = importer::read_tensor(
      std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), "b.pb");
  CHECK(read.dtype() == DType::uint8());
  CHECK(ints(read) == std::vector<std::int64_t>{0, 1, 1});
}

TEST_CASE("comparisons, Where and Cast to and from BOOL, against hand-derived values") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ModelBuilder mb(16);
  mb.input("x", {2, 3});
  mb.initializer("t", {3, 1, 1}, {-1, 0, 1});  // per row of a [3, 2, 3] result
  mb.initializer("zero", {}, {0});
  mb.node("Greater", {"x", "t"}, {"gt"});
  mb.node("LessOrEqual", {"x", "zero"}, {"le"});
  mb.node("Or", {"gt", "le"}, {"any"});
  mb.node("Where", {"le", "zero", "x"}, {"relu"});
  set_int(mb.node("Cast", {"x"}, {"nonzero"}), "to", TP::BOOL);
  set_int(mb.node("Cast", {"nonzero"}, {"back"}), "to", TP::FLOAT);
  mb.node("IsNaN", {"x"}, {"nan"});
  mb.output("gt");
  mb.output("any");
  mb.output("relu");
  mb.output("back");
  mb.output("nan");
  const auto x = te::NDArray::from_floats({2, 3}, {-2.0f, -0.0f, 0.5f, nan, 1.0f, 3.0f});
  const auto out = run(mb.import(), {{"x", x}});
  REQUIRE(out.size() == 5);
  CHECK(out[0].shape() == std::vector<std::int64_t>{3, 2, 3});
  // x > -1, x > 0, x > 1 (NaN compares false)
  CHECK(ints(out[0]) == std::vector<std::int64_t>{0, 1, 1, 0, 1, 1,  //
                                                  0, 0, 1, 0, 1, 1,  //
                                                  0, 0, 0, 0, 0, 1});
  // x > t or x <= 0
  CHECK(ints(out[1]) == std::vector<std::int64_t>{1, 1, 1, 0, 1, 1,  //
                                                  1, 1, 1, 0, 1, 1,  //
                                                  1, 1, 0, 0, 0, 1});
  const auto relu = values(out[2]);
  CHECK(relu[0] == 0.0f);
  CHECK(std::isnan(relu[3]));
  CHECK(relu[5] == 3.0f);
  CHECK(values(out[3]) == std::vector<float>{1, 0, 1, 1, 1, 1});  // NaN is true, -0 false
  CHECK(ints(out[4]) == std::vector<std::int64_t>{0, 0, 0, 1, 0, 0});
}

TEST_CASE("ArgMax and ArgMin import with their attributes") {
  ModelBuilder mb(13);
  mb.input("x", {2, 4});
  auto& am = mb.node("ArgMax", {"x"}, {"i"});
  set_int(am, "axis", -1);
  set_int(am, "keepdims", 0);
  set_int(am, "select_last_index", 1);
  mb.node("ArgMin", {"x"}, {"j"});
  mb.output("i");
  mb.output("j");
  const auto x = te::NDArray::from_floats({2, 4}, {1, 7, 7, 0, 5, 5, -1, -1});
  const auto out = run(mb.import(), {{"x", x}});
  CHECK(out[0].dtype() == DType::int64());
  CHECK(ints(out[0]) == std::vector<std::int64_t>{2, 1});
  CHECK(out[1].shape() == std::vector<std::int64_t>{1, 4});  // axis 0, kept
  CHECK(ints(out[1]) == std::vector<std::int64_t>{0, 1, 1, 1});
}

TEST_CASE("comparisons and Where over computed dims fold where the dims' ranges decide them") {
  // PyTorch's x.expand(batch, -1): Where(Equal(sizes, -1), Shape(x), sizes) over a symbolic
  // batch becomes x's own shape
  ModelBuilder mb(13);
  mb.input("x", {std::string("batch"), 3});
  mb.ints("sizes", {-1, 3});
  mb.ints("minus_one", {-1}, true);
  mb.node("Shape", {"x"}, {"s"});
  mb.node("Equal", {"sizes", "minus_one"}, {"unknown"});
  mb.node("Where", {"unknown", "s", "sizes"}, {"target"});
  mb.node("Expand", {"x", "target"}, {"y"});
  mb.output("y");
  const importer::ImportOptions o{.dims = {{"batch", {1, 8}}}};
  const auto fn = mb.import(o);
  const auto x = te::NDArray::random(DType::float32(), {5, 3}, 4);
  CHECK(run(fn, {{"x", x}}, {{"batch", 5}}).at(0) == x);
  // the batch is at least 1: Greater(batch, 0) is 1, Equal(batch, 4) is not decided
  const auto batch_is = [](const std::string& op, std::int64_t v) {
    ModelBuilder cmp(13);
    cmp.input("x", {std::string("batch"), 3});
    cmp.ints("i0", {0}, true);
    cmp.ints("v", {v}, true);
    cmp.node("Shape", {"x"}, {"s"});
    cmp.node("Gather", {"s", "i0"}, {"b"});
    cmp.node(op, {"b", "v"}, {"c"}, "is_four");
    cmp.node("Identity", {"c"}, {"y"});
    cmp.output("y");
    return cmp;
  };
  const auto folded = batch_is("Greater", 0).import(o);
  REQUIRE(folded.results()[0].kind() == graph::NodeKind::Constant);
  const auto& positive = *folded.results()[0].as<graph::ConstantNode>()->value;
  CHECK(positive.dtype() == DType::uint8());
  CHECK(positive.shape().empty());
  CHECK(ints(positive) == std::vector<std::int64_t>{1});
  CHECK(ints(*batch_is("LessOrEqual", 8).import(o).results()[0].as<graph::ConstantNode>()->value) ==
        std::vector<std::int64_t>{1});
  CHECK(ints(*batch_is("Less", 1).import(o).results()[0].as<graph::ConstantNode>()->value) ==
        std::vector<std::int64_t>{0});
  CHECK_THROWS_WITH_AS(batch_is("Equal", 4).import(o),
                       doctest::Contains("node 'is_four' (Equal): it compares the computed dims "
                                         "batch and 4, which their ranges do not decide"),
                       importer::NotSupported);
}

// x [2] -> then: x + one (an initializer of the branch), else: x - x; the If's condition is
// made by `make_cond` (into the value "cond").
template <class MakeCond>
ModelBuilder if_model(MakeCond make_cond) {
  ModelBuilder mb(13);
  mb.input("x", {2});
  make_cond(mb);
  auto& n = mb.node("If", {"cond"}, {"y"}, "choose");
  auto& then = branch(n, "then_branch", {"t"});
  floats(then, "one", {}, {1});
  add_node(then, "Add", {"x", "one"}, {"t"}, "plus_one");  // x: the outer scope's
  auto& other = branch(n, "else_branch", {"e"});
  add_node(other, "Sub", {"x", "x"}, {"e"}, "zeros");
  mb.output("y");
  return mb;
}

TEST_CASE("If with a condition known at import is the branch it chooses, inlined") {
  const auto x = te::NDArray::from_floats({2}, {3.0f, -1.0f});
  // an initializer
  for (const int c : {1, 0}) {
    CAPTURE(c);
    const auto fn = if_model([&](ModelBuilder& mb) { bools(mb.g(), "cond", {}, {c}); }).import();
    CHECK(ops_of(fn) == std::vector<std::string>{c != 0 ? "add" : "sub"});
    CHECK(values(run(fn, {{"x", x}}).at(0)) ==
          (c != 0 ? std::vector<float>{4.0f, 0.0f} : std::vector<float>{0.0f, 0.0f}));
  }
  // a Constant node
  const auto fn = if_model([](ModelBuilder& mb) { constant_bool(mb.g(), "cond", false); }).import();
  CHECK(ops_of(fn) == std::vector<std::string>{"sub"});
  // the added call keeps the branch's name
  CHECK(fn.results()[0].as<graph::CallNode>()->result_name == "e");
  // a folded shape computation: x's one dim is 2
  const auto shaped = if_model([](ModelBuilder& mb) {
                        mb.ints("two", {2});
                        mb.ints("i0", {0}, true);
                        mb.node("Gather", {"c1", "i0"}, {"cond"});  // before its input's maker
                        mb.node("Shape", {"x"}, {"s"});
                        mb.node("Equal", {"s", "two"}, {"c1"});
                      }).import();
  CHECK(ops_of(shaped) == std::vector<std::string>{"add"});
}

TEST_CASE("If whose condition is computed at run time runs both branches and picks with where") {
  const auto runtime_cond = [](ModelBuilder& mb) {
    mb.input("flag", {1});
    mb.node("Greater", {"flag", "x"}, {"wide"});
    mb.ints("i0", {0}, true);
    mb.node("Gather", {"wide", "i0"}, {"cond"});
  };
  const auto fn = if_model(runtime_cond).import();
  const auto ops = ops_of(fn);
  CHECK(std::count(ops.begin(), ops.end(), "where") == 1);
  CHECK(std::count(ops.begin(), ops.end(), "add") == 1);
  CHECK(std::count(ops.begin(), ops.end(), "sub") == 1);
  const auto x = te::NDArray::from_floats({2}, {3.0f, -1.0f});
  // flag 5 > x[0] = 3: the then_branch, x + 1; flag 0: the else_branch, x - x
  const auto five = te::NDArray::from_floats({1}, {5.0f});
  const auto zero = te::NDArray::from_floats({1}, {0.0f});
  CHECK(values(run(fn, {{"x", x}, {"flag", five}}).at(0)) == std::vector<float>{4.0f, 0.0f});
  CHECK(values(run(fn, {{"x", x}, {"flag", zero}}).at(0)) == std::vector<float>{0.0f, 0.0f});
  // branches whose outputs differ in shape cannot both run: refused, naming the node
  ModelBuilder mb(13);
  mb.input("x", {2});
  runtime_cond(mb);
  auto& n = mb.node("If", {"cond"}, {"y"}, "choose");
  auto& then = branch(n, "then_branch", {"t"});
  add_node(then, "Neg", {"x"}, {"t"});
  auto& other = branch(n, "else_branch", {"e"});
  floats(other, "e", {1}, {0.0f});
  mb.output("y");
  CHECK_THROWS_WITH_AS(mb.import(),
                       doctest::Contains("node 'choose' (If): its condition is computed at run "
                                         "time (input 0 'cond'), so both branches run and where "
                                         "picks output 0, which needs one type: the then_branch "
                                         "makes float32[2], the else_branch float32[1]"),
                       importer::NotSupported);
  // a condition of more than one element
  auto wide = if_model([](ModelBuilder& mb) {
    mb.input("flag", {1});
    mb.node("Greater", {"flag", "x"}, {"cond"});
  });
  CHECK_THROWS_WITH_AS(wide.import(),
                       doctest::Contains("node 'choose' (If): its condition (input 0 'cond') has "
                                         "shape [2]; it is one boolean"),
                       ValueError);
  // a condition of two elements is a model's mistake
  auto two = if_model([](ModelBuilder& mb) { bools(mb.g(), "cond", {2}, {1, 1}); });
  CHECK_THROWS_WITH_AS(two.import(),
                       "test.onnx: node 'choose' (If): its condition (input 0 'cond') has 2 "
                       "elements; it is one boolean",
                       ValueError);
}

TEST_CASE("nested Ifs read the outer scopes' names; the model's order may put users first") {
  // y = If(true): { w = 10 (a then-branch initializer); z = If(false, a Constant of this
  // branch): { never } else: { x * w } ; t = z + h } where h is made by a node listed after the
  // outer If
  ModelBuilder mb(13);
  mb.input("x", {2});
  bools(mb.g(), "yes", {}, {1});
  auto& outer = mb.node("If", {"yes"}, {"y"}, "outer");
  mb.node("Neg", {"x"}, {"h"}, "later");  // after its user in the model's order
  auto& then = branch(outer, "then_branch", {"t"});
  floats(then, "w", {}, {10});
  constant_bool(then, "no", false);
  auto& inner = add_node(then, "If", {"no"}, {"z"}, "inner");
  auto& never = branch(inner, "then_branch", {"n"});
  add_node(never, "Det", {"x"}, {"n"});  // no converter: never converted
  auto& taken = branch(inner, "else_branch", {"p"});
  add_node(taken, "Mul", {"x", "w"}, {"p"}, "scale");
  add_node(then, "Add", {"z", "h"}, {"t"}, "sum");
  branch(outer, "else_branch", {"x"});  // the input itself
  mb.output("y");
  const auto fn = mb.import();
  const auto x = te::NDArray::from_floats({2}, {1.5f, -2.0f});
  // 10 x - x
  CHECK(values(run(fn, {{"x", x}}).at(0)) == std::vector<float>{13.5f, -18.0f});
  CHECK(ops_of(fn) == std::vector<std::string>{"mul", "neg", "add"});
}

TEST_CASE("refusals and errors inside a branch say which branch of which node") {
  auto refused = if_model([](ModelBuilder& mb) { bools(mb.g(), "cond", {}, {1}); });
  auto& then = *refused.g().mutable_node(0)->mutable_attribute(0)->mutable_g();
  add_node(then, "Det", {"t"}, {"c"}, "det");
  then.mutable_output(0)->set_name("c");
  CHECK_THROWS_WITH_AS(refused.import(),
                       doctest::Contains("1 node the importer does not handle: node 'det' "
                                         "(Det) in the then_branch of node 'choose' (If): the "
                                         "importer converts no version of Det"),
                       importer::NotSupported);
  // a shape error in a branch: the If, the branch and the node
  auto bad = if_model([](ModelBuilder& mb) { bools(mb.g(), "cond", {}, {0}); });
  auto& other = *bad.g().mutable_node(0)->mutable_attribute(1)->mutable_g();
  floats(other, "three", {3}, {1, 2, 3});
  add_node(other, "Add", {"e", "three"}, {"f"});
  other.mutable_output(0)->set_name("f");
  CHECK_THROWS_WITH_AS(bad.import(),
                       doctest::Contains("test.onnx: node 'choose' (If): its else_branch: node #1 "
                                         "(Add): %f (add): input 0 (%e) (2) and input 1 (%three) "
                                         "(3) do not broadcast"),
                       ShapeError);
  // outputs: as many as the node's, each made by the branch or outside it
  auto count = if_model([](ModelBuilder& mb) { bools(mb.g(), "cond", {}, {1}); });
  count.g().mutable_node(0)->mutable_attribute(0)->mutable_g()->add_output()->set_name("x");
  CHECK_THROWS_WITH_AS(count.import(),
                       "test.onnx: node 'choose' (If): its then_branch has 2 outputs for the "
                       "node's 1",
                       ValueError);
  auto ghost = if_model([](ModelBuilder& mb) { bools(mb.g(), "cond", {}, {1}); });
  ghost.g().mutable_node(0)->mutable_attribute(0)->mutable_g()->mutable_output(0)->set_name("g");
  CHECK_THROWS_WITH_AS(ghost.import(),
                       "test.onnx: node 'choose' (If): its then_branch's output 'g' is made by "
                       "none of its nodes, nor outside it",
                       ValueError);
}

}  // namespace onnx_logic
