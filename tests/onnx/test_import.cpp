// The importer on models written here with ONNX's protobuf classes: names, symbolic dims,
// constants, and every kind of bad input it must refuse with a dlavm::Error naming the
// object (never a crash).
#include <dlavm/graph.hpp>
#include <dlavm/onnx/import.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "model_builder.hpp"
#include <cmath>
#include <string>
#include <vector>

namespace onnx_import {

using namespace dlavm;
namespace importer = dlavm::onnx;
using onnx_test::ModelBuilder;
using onnx_test::set_int;
using onnx_test::set_ints;
using TP = ::onnx::TensorProto;

TEST_CASE("a small model imports with its names, weights and a symbolic batch") {
  ModelBuilder mb;
  mb.input("x", {std::string("batch"), 4});
  mb.initializer("w", {4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  mb.node("MatMul", {"x", "w"}, {"h"}, "fc");
  mb.node("Relu", {"h"}, {"y"}, "act");
  mb.output("y");
  const auto fn = mb.import({.dims = {{"batch", {1, 64}}}});
  REQUIRE(fn.params().size() == 1);
  CHECK(fn.params()[0].name() == "x");
  const auto* relu = fn.results()[0].as<graph::CallNode>();
  REQUIRE(relu != nullptr);
  CHECK(relu->op() == "relu");
  CHECK(relu->result_name == "y");
  const auto typed = graph::infer_type(fn, graph::default_ops());
  CHECK(fmt::format("{}", typed.results()[0].type().shape[0]) == "batch");
  // evaluated at two batches: rows of x times w, negatives cut
  for (std::int64_t batch : {1, 5}) {
    auto x = te::NDArray::random_float({batch, 4}, 3, -1.0, 1.0);
    const auto y = graph::evaluate(typed, {{"x", x}}, {{"batch", batch}});
    REQUIRE(y.size() == 1);
    for (std::int64_t r = 0; r < batch; ++r)
      for (std::int64_t c = 0; c < 3; ++c) {
        float s = 0;
        for (std::int64_t k = 0; k < 4; ++k)
          s += x.at_float({r, k}) * static_cast<float>(k * 3 + c + 1);
        CHECK(y[0].at_float({r, c}) == doctest::Approx(std::max(s, 0.0f)));
      }
  }
}

TEST_CASE("read_initializers: a model's weights by name feed graph::llm's decoder") {
  // a decoder layer's weights as an exporter writes them: initializers named layer0.<name>
  namespace llm = graph::llm;
  const llm::DecoderConfig config{.d_model = 32, .heads = 2, .ffn = 64, .max_context = 8};
  const auto drawn = llm::named_arrays(llm::random_decoder_weights(config, 3));
  ModelBuilder b;
  for (const auto& [name, a] : drawn) {
    auto* t = b.g().add_initializer();
    t->set_name("layer0." + name);
    for (auto d : a.shape()) t->add_dims(d);
    if (a.dtype() == DType::float32()) {
      t->set_data_type(TP::FLOAT);
      for (const float v : a.fdata()) t->add_float_data(v);
    } else {
      t->set_data_type(a.dtype() == DType::int8() ? TP::INT8 : TP::INT32);
      for (const std::int64_t v : a.data()) t->add_int32_data(static_cast<std::int32_t>(v));
    }
  }
  const auto bytes = b.bytes();
  const auto arrays = importer::read_initializers(std::span<const std::uint8_t>(bytes), "w.onnx");
  CHECK(arrays.size() == 16);
  const auto weights = llm::decoder_weights(arrays, "layer0.");
  CHECK(llm::named_arrays(weights) == drawn);
  CHECK(llm::Decoder(config, weights).function().params().size() == 1);
  // a name given twice, and bytes that are no model
  *b.g().add_initializer() = b.g().initializer(0);
  const auto twice = b.bytes();
  const auto message =
      fmt::format("w.onnx: initializer '{}' is given twice", b.g().initializer(0).name());
  CHECK_THROWS_WITH_AS(importer::read_initializers(std::span<const std::uint8_t>(twice), "w.onnx"),
                       message.c_str(), ParseError);
  const std::uint8_t junk[] = {0xff, 0xff, 0xff};
  CHECK_THROWS_WITH_AS(importer::read_initializers(junk, "junk.onnx"),
                       "junk.onnx: 3 bytes that are not an ONNX model", ParseError);
}

TEST_CASE("bytes that are not an ONNX model are a ParseError") {
  const std::vector<std::uint8_t> junk = {0xff, 0xff, 0xff, 0xff, 0x07, 0x01};
  CHECK_THROWS_AS(importer::import(std::span<const std::uint8_t>(junk)), ParseError);
  CHECK_THROWS_AS(importer::import(std::span<const std::uint8_t>()), ParseError);
  // every truncation of a valid model: an error, never a crash
  ModelBuilder mb;
  mb.input("x", {2, 3});
  mb.initializer("b", {3}, {1, 2, 3});
  mb.node("Add", {"x", "b"}, {"y"});
  mb.output("y");
  const auto bytes = mb.bytes();
  int errors = 0;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    try {
      importer::import(std::span<const std::uint8_t>(bytes.data(), n));
    } catch (const Error&) {
      ++errors;
    }
  }
  CHECK(errors == static_cast<int>(bytes.size()));
  CHECK_THROWS_WITH_AS(importer::import(std::filesystem::path("/nonexistent/model.onnx")),
                       doctest::Contains("/nonexistent/model.onnx"), ValueError);
  CHECK_THROWS_WITH_AS(importer::import(std::filesystem::temp_directory_path()),
                       doctest::Contains("is a directory, not a file"), ValueError);
  CHECK_THROWS_WITH_AS(importer::import(std::filesystem::path("/dev/zero")),
                       doctest::Contains("'/dev/zero' is no regular file"), ValueError);
}

TEST_CASE("unsupported opsets, unknown ops and attributes are refused, all nodes at once") {
  ModelBuilder old(0);
  old.m.mutable_opset_import(0)->set_version(99);
  old.input("x", {1});
  old.node("Relu", {"x"}, {"y"});
  old.output("y");
  CHECK_THROWS_WITH_AS(old.import(), doctest::Contains("opset 99"), importer::NotSupported);

  ModelBuilder mb;
  mb.input("x", {1, 4});
  mb.node("Det", {"x"}, {"a"}, "det");
  mb.node("Relu", {"a"}, {"b"});
  mb.node("Hardmax", {"b"}, {"y"}, "hardmax");
  mb.output("y");
  try {
    mb.import();
    FAIL("imported");
  } catch (const importer::NotSupported& e) {
    const std::string m = e.what();
    CHECK(m.find("2 nodes") != std::string::npos);
    CHECK(m.find("node 'det' (Det)") != std::string::npos);
    CHECK(m.find("node 'hardmax' (Hardmax)") != std::string::npos);
  }

  ModelBuilder attrs;
  attrs.input("x", {1, 1, 8, 8});
  auto& dilated = attrs.node("MaxPool", {"x"}, {"y"}, "dilated");
  set_ints(dilated, "kernel_shape", {2, 2});
  set_ints(dilated, "dilations", {2, 2});
  attrs.node("Relu", {"y"}, {"z"}, "relu");
  attrs.output("z");
  CHECK_THROWS_WITH_AS(attrs.import(),
                       doctest::Contains("node 'dilated' (MaxPool): dilations = [2, 2]"),
                       importer::NotSupported);
}

// The message of the NotSupported that importing `mb` raises.
std::string refusal(const ModelBuilder& mb) {
  try {
    mb.import();
  } catch (const importer::NotSupported& e) {
    return e.what();
  }
  FAIL("not refused");
  return {};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("refusals: one error lists every node once; nodes reading a refused one are not blamed") {
  // a 3-D Conv, then nodes reading it: Clip and MaxPool would fail on a stand-in value
  ModelBuilder mb;
  mb.input("x", {1, 4, 8, 8, 8});
  mb.initializer("w", {4, 4, 1, 1, 1}, std::vector<float>(16, 0.5f));
  mb.node("Conv", {"x", "w"}, {"c"}, "volume");
  mb.node("Clip", {"c"}, {"d"}, "clip");
  auto& pool = mb.node("MaxPool", {"d"}, {"e"}, "pool");
  set_ints(pool, "kernel_shape", {2, 2});
  mb.node("Det", {"e"}, {"y"}, "det");  // an unknown operator after them: refused on its own
  mb.output("y");
  const std::string m = refusal(mb);
  CHECK(m.find("test.onnx: 2 nodes the importer does not handle") == 0);
  CHECK(count(m,
              "node 'volume' (Conv): a weight of rank 5: only 1-D and 2-D convolutions are "
              "handled") == 1);
  CHECK(count(m, "node 'det' (Det): the importer converts no version of Det") == 1);
  CHECK(count(m, "'clip'") == 0);
  CHECK(count(m, "'pool'") == 0);

  // unknown operators and unsupported attributes in one round, in node order
  ModelBuilder both;
  both.input("x", {1, 1, 8, 8});
  auto& dilated_pool = both.node("MaxPool", {"x"}, {"c"}, "dilated");
  set_ints(dilated_pool, "kernel_shape", {2, 2});
  set_ints(dilated_pool, "dilations", {2, 2});
  both.node("Det", {"x"}, {"s"}, "det");
  both.node("Add", {"c", "s"}, {"y"}, "add");
  both.output("y");
  const std::string m2 = refusal(both);
  CHECK(
      m2 ==
      "test.onnx: 2 nodes the importer does not handle: node 'dilated' (MaxPool): dilations = [2, "
      "2]; node 'det' (Det): the importer converts no version of Det");

  // a node of another domain, and a version of an operator no converter covers
  ModelBuilder other(1);
  other.input("x", {1, 4});
  other.node("Gelu", {"x"}, {"g"}, "gelu").set_domain("com.microsoft");
  other.node("Foo", {"x"}, {"f"}, "foo").set_domain("org.example");
  other.node("Pad", {"x"}, {"y"}, "pad1");
  other.output("y");
  const std::string m3 = refusal(other);
  CHECK(count(m3,
              "node 'gelu' (Gelu): the importer converts com.microsoft's QGemm, QLinearAdd, "
              "QLinearConcat, QLinearGlobalAveragePool, QLinearLeakyRelu, QLinearMul, "
              "QLinearSigmoid only, not Gelu") == 1);
  CHECK(count(m3, "node 'foo' (Foo): operators of domain 'org.example' are not handled") == 1);
  CHECK(count(m3, "node 'pad1' (Pad): Pad-1 (the version opset 1 selects) is not handled") == 1);
}

TEST_CASE("refusals: empty tensors are values, not shape errors") {
  // Resize's roi as exporters write it: an empty initializer, which the Resize ignores
  ModelBuilder mb;
  mb.input("x", {1, 1, 2, 2});
  mb.initializer("roi", {0}, {});
  mb.initializer("scales", {4}, {1, 1, 2, 2});
  mb.node("Resize", {"x", "roi", "scales"}, {"y"}, "up");
  mb.output("y");
  const auto fn = graph::infer_type(mb.import(), graph::Target{});
  const auto x = te::NDArray::from_floats({1, 1, 2, 2}, {1, 2, 3, 4});
  const auto y = graph::evaluate(fn, {{"x", x}})[0];
  REQUIRE(y.shape() == std::vector<std::int64_t>{1, 1, 4, 4});
  // nearest, half_pixel, round_prefer_floor: each element repeated twice along both dims
  CHECK(y.at_float({0, 0, 1, 1}) == 1.0f);
  CHECK(y.at_float({0, 0, 2, 1}) == 3.0f);
  CHECK(y.at_float({0, 0, 3, 3}) == 4.0f);

  // an empty tensor where a converted operator needs a value: refused naming the input
  ModelBuilder add;
  add.input("x", {1, 4});
  add.initializer("nothing", {0}, {});
  add.node("Add", {"x", "nothing"}, {"y"}, "add");
  add.output("y");
  CHECK(refusal(add) ==
        "test.onnx: 1 node the importer does not handle: node 'add' (Add): input 1 'nothing' is "
        "an empty tensor (shape [0]), which only an operator that ignores it may take");

  // an empty Constant node, and an empty graph output
  ModelBuilder out;
  out.input("x", {1, 4});
  auto& c = out.node("Constant", {}, {"e"}, "empty");
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::FLOAT);
  a->mutable_t()->add_dims(0);
  out.node("Relu", {"x"}, {"y"});
  out.output("y");
  out.output("e");
  CHECK_THROWS_WITH_AS(out.import(), "test.onnx: graph output 'e' is an empty tensor",
                       importer::NotSupported);
}

// A Conv with a bias over a 1x3x8x8 image, its weight of `in` input channels.
ModelBuilder conv_with_bias(std::int64_t in) {
  ModelBuilder mb;
  mb.input("x", {1, 3, 8, 8});
  mb.initializer("w", {4, in, 3, 3}, std::vector<float>(static_cast<std::size_t>(36 * in), 0.25f));
  mb.initializer("b", {4}, {1, 2, 3, 4});
  mb.node("Conv", {"x", "w", "b"}, {"conv1_out"}, "conv1");
  mb.output("conv1_out");
  return mb;
}

TEST_CASE("names: the graph ops of a node are named after its output") {
  const auto fn = conv_with_bias(3).import();
  const auto* bias = fn.results()[0].as<graph::CallNode>();
  REQUIRE(bias != nullptr);
  CHECK(bias->result_name == "conv1_out");
  CHECK(bias->op() == "bias_add");
  const auto* conv = bias->args[0].as<graph::CallNode>();
  REQUIRE(conv != nullptr);
  CHECK(conv->result_name == "conv1_out.conv2d");

  // a weight that does not fit: the shape error names the file, the Conv and its values
  CHECK_THROWS_WITH_AS(conv_with_bias(2).import(),
                       doctest::Contains("test.onnx: node 'conv1' (Conv): %conv1_out.conv2d"),
                       ShapeError);
}

TEST_CASE("a dim_param needs a range; bad ranges and frozen names are ValueErrors") {
  ModelBuilder mb;
  mb.input("x", {std::string("tokens"), 8});
  mb.node("Relu", {"x"}, {"y"});
  mb.output("y");
  CHECK_THROWS_WITH_AS(mb.import(), doctest::Contains("'tokens', which has no range"), ValueError);
  CHECK_THROWS_WITH_AS(mb.import({.dims = {{"tokens", {5, 2}}}}), doctest::Contains("range [5, 2]"),
                       ValueError);
  importer::ImportOptions frozen;
  frozen.constants.emplace("nope", te::NDArray(DType::int8(), {1}));
  CHECK_THROWS_WITH_AS(mb.import(frozen), doctest::Contains("'nope'"), ValueError);
}

TEST_CASE("inputs naming one dim_param share one dim; ImportOptions::shapes fixes a shape") {
  // x [batch, 4] + y [batch, 4]: one ne::var, so the dims are provably equal
  ModelBuilder mb;
  mb.input("x", {std::string("batch"), 4});
  mb.input("y", {std::string("batch"), 4});
  mb.node("Add", {"x", "y"}, {"z"});
  mb.output("z");
  const auto fn = graph::infer_type(mb.import({.dims = {{"batch", {1, 8}}}}), graph::Target{});
  const auto x = te::NDArray::random_float({3, 4}, 1, -1.0, 1.0);
  const auto z = graph::evaluate(fn, {{"x", x}, {"y", x}}, {{"batch", 3}}).at(0);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(z.fdata()[i] == 2 * x.fdata()[i]);

  // a dim with neither a value nor a name (legal ONNX) takes its value from options.shapes
  ModelBuilder unnamed;
  unnamed.input("u", {std::string(""), 4});
  unnamed.node("Relu", {"u"}, {"r"});
  unnamed.output("r");
  CHECK_THROWS_WITH_AS(unnamed.import(),
                       "test.onnx: input 'u': dim 0 has neither a value nor a name: give the "
                       "input's shape in ImportOptions::shapes (e.g. {\"u\", {...}})",
                       importer::NotSupported);
  importer::ImportOptions o;
  o.shapes = {{"u", {3, 4}}};
  const auto fixed = graph::infer_type(unnamed.import(o), graph::Target{});
  CHECK(fmt::format("{}", fmt::join(fixed.results()[0].type().shape, ", ")) == "3, 4");
  o.shapes = {{"u", {3, 5}}};
  CHECK_THROWS_WITH_AS(unnamed.import(o),
                       "test.onnx: input 'u': dim 1 is 4, but ImportOptions::shapes gives it 5",
                       ShapeError);
  o.shapes = {{"u", {12}}};
  CHECK_THROWS_WITH_AS(unnamed.import(o),
                       "test.onnx: input 'u' has 2 dims, but ImportOptions::shapes gives it [12]",
                       ShapeError);
  o.shapes = {{"u", {0, 4}}};
  CHECK_THROWS_WITH_AS(unnamed.import(o), doctest::Contains("shape [0, 4]; dims are >= 1"),
                       ValueError);
  o.shapes = {{"v", {3, 4}}};
  CHECK_THROWS_WITH_AS(unnamed.import(o),
                       "test.onnx: ImportOptions::shapes names 'v', which is not a graph input",
                       ValueError);
}

TEST_CASE("Clip with a bound computed at run time is a maximum or minimum with it") {
  // y = Clip(x, max(x) - 2, 4.5): a spectrogram clamped to its peak less a range
  ModelBuilder mb;
  mb.input("x", {4});
  mb.initializer("two", {}, {2});
  mb.initializer("cap", {}, {4.5f});
  set_int(mb.node("ReduceMax", {"x"}, {"peak"}), "keepdims", 0);
  mb.node("Sub", {"peak", "two"}, {"floor"});
  mb.node("Clip", {"x", "floor", "cap"}, {"y"}, "clamp");
  mb.output("y");
  const auto fn = graph::infer_type(mb.import(), graph::Target{});
  const auto x = te::NDArray::from_floats({4}, {1.0f, 5.0f, 3.0f, 4.0f});
  const auto y = graph::evaluate(fn, {{"x", x}}).at(0);
  CHECK(std::vector<float>(y.fdata().begin(), y.fdata().end()) ==
        std::vector<float>{3.0f, 4.5f, 3.0f, 4.0f});
  // a bound of several values is the model's mistake, named
  ModelBuilder wide;
  wide.input("x", {4});
  wide.input("lo", {2});
  wide.node("Clip", {"x", "lo"}, {"y"}, "clamp");
  wide.output("y");
  CHECK_THROWS_WITH_AS(wide.import(),
                       "test.onnx: node 'clamp' (Clip): its min (input 1 'lo') has shape [2]; "
                       "a bound is one value",
                       ShapeError);
}

TEST_CASE("initializers that disagree with their shape, and unknown element types") {
  ModelBuilder mb;
  mb.input("x", {2, 3});
  mb.initializer("b", {3}, {1, 2});  // 2 values for 3 elements
  mb.node("Add", {"x", "b"}, {"y"});
  mb.output("y");
  CHECK_THROWS_WITH_AS(mb.import(), doctest::Contains("initializer 'b' has 2 values"), ValueError);

  ModelBuilder raw;
  raw.input("x", {2});
  auto& t = raw.initializer("b", {2}, {});
  t.set_raw_data(std::string(7, '\0'));  // 7 bytes for two floats
  raw.node("Add", {"x", "b"}, {"y"});
  raw.output("y");
  CHECK_THROWS_WITH_AS(raw.import(), doctest::Contains("7 bytes of raw data"), ValueError);

  ModelBuilder dbl;
  dbl.input("x", {2}, TP::DOUBLE);
  dbl.node("Relu", {"x"}, {"y"});
  dbl.output("y");
  CHECK_THROWS_WITH_AS(dbl.import(), doctest::Contains("DOUBLE"), TypeError);
}

TEST_CASE("a cycle, a value nobody makes, and a value made twice are ValueErrors") {
  ModelBuilder cyc;
  cyc.input("x", {2});
  cyc.node("Add", {"x", "b"}, {"a"}, "first");
  cyc.node("Relu", {"a"}, {"b"}, "second");
  cyc.output("b");
  CHECK_THROWS_WITH_AS(cyc.import(),
                       doctest::Contains("cycle through node 'first' (Add), node 'second' (Relu)"),
                       ValueError);

  ModelBuilder dangling;
  dangling.input("x", {2});
  dangling.node("Add", {"x", "ghost"}, {"y"}, "add");
  dangling.output("y");
  CHECK_THROWS_WITH_AS(dangling.import(), doctest::Contains("'ghost'"), ValueError);

  ModelBuilder twice;
  twice.input("x", {2});
  twice.node("Relu", {"x"}, {"y"});
  twice.node("Relu", {"x"}, {"y"});
  twice.output("y");
  CHECK_THROWS_WITH_AS(twice.import(), doctest::Contains("'y' is defined twice"), ValueError);
}

TEST_CASE("a dead node, QDQ-wrapped or not, imports and is left out of the function") {
  ModelBuilder mb;
  mb.input("x", {1, 1, 4, 4});
  mb.initializer("w", {1, 1, 1, 1}, {2});
  mb.node("Conv", {"x", "w"}, {"unused"}, "dead_conv");  // nobody reads it
  mb.node("Relu", {"x"}, {"y"});
  mb.output("y");
  const auto fn = mb.import();
  for (const auto& e : graph::post_order(fn.results()))
    CHECK((e.kind() != graph::NodeKind::Call || e.as<graph::CallNode>()->op() != "conv2d"));
}

TEST_CASE("nodes out of order are sorted; an op's type error names the node") {
  ModelBuilder mb;
  mb.input("x", {2, 2});
  mb.node("Relu", {"h"}, {"y"}, "second");
  mb.node("Relu", {"x"}, {"h"}, "first");
  mb.output("y");
  const auto fn = mb.import();
  CHECK(fn.results()[0].as<graph::CallNode>()->result_name == "y");

  ModelBuilder bad;
  bad.input("a", {2, 3});
  bad.input("b", {4, 5});
  bad.node("MatMul", {"a", "b"}, {"y"}, "mm");
  bad.output("y");
  // typed as it is converted: the error names the file, the node and the model's values
  CHECK_THROWS_WITH_AS(bad.import(),
                       doctest::Contains("test.onnx: node 'mm' (MatMul): %y (matmul): input 0 (%a) "
                                         "dim -1 (K) is 3 but input 1 (%b) dim -2 (K) is 4"),
                       ShapeError);

  // a node's error names the file and the node once
  ModelBuilder one;
  one.input("x", {2, 2}, TP::INT8);
  one.node("DequantizeLinear", {"x"}, {"y"});
  one.output("y");
  CHECK_THROWS_WITH_AS(one.import(), "test.onnx: node #0 (DequantizeLinear): input 1 is missing",
                       ValueError);
}

}  // namespace onnx_import

namespace onnx_import {

TEST_CASE("BatchNormalization: imported as batch_norm, folded into the Conv before it by build") {
  ModelBuilder mb(15);
  mb.input("x", {1, 3, 5, 5});
  mb.initializer("w", {4, 3, 3, 3}, std::vector<float>(108, 0.125f));
  mb.initializer("b", {4}, {0.5f, -0.5f, 1, 0});
  mb.initializer("gamma", {4}, {1, 2, 0.5f, 1});
  mb.initializer("beta", {4}, {0, 1, -1, 0.25f});
  mb.initializer("mean", {4}, {0.1f, 0.2f, -0.3f, 0});
  mb.initializer("var", {4}, {1, 0.5f, 2, 4});
  mb.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  mb.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"}, "bn");
  mb.output("y");
  const auto fn = mb.import();
  CHECK(fn.results()[0].as<graph::CallNode>()->op() == "batch_norm");
  const graph::Target target;
  const auto placed = graph::infer_type(fn, target);
  CHECK(placed.results()[0].as<graph::CallNode>()->op() == "bias_add");
  // against the formula, channel by channel: x of ones, so the conv is 27 * 0.125 + b inside
  const auto x = te::NDArray::from_floats({1, 3, 5, 5}, std::vector<float>(75, 1.0f));
  const auto y = graph::evaluate(placed, {{"x", x}})[0];
  const float b[] = {0.5f, -0.5f, 1, 0}, g[] = {1, 2, 0.5f, 1}, be[] = {0, 1, -1, 0.25f},
              m[] = {0.1f, 0.2f, -0.3f, 0}, v[] = {1, 0.5f, 2, 4};
  for (std::int64_t c = 0; c < 4; ++c) {
    const double conv = 27 * 0.125 + b[c];  // the centre pixel sees the whole kernel
    const double want = (conv - m[c]) / std::sqrt(v[c] + 1e-5) * g[c] + be[c];
    CHECK(y.at_float({0, c, 2, 2}) == doctest::Approx(want).epsilon(1e-5));
  }
  // training mode and its outputs are refused by name
  ModelBuilder train(15);
  train.input("x", {1, 4, 2, 2});
  for (const char* s : {"gamma", "beta", "mean", "var"}) train.initializer(s, {4}, {1, 1, 1, 1});
  set_int(train.node("BatchNormalization", {"x", "gamma", "beta", "mean", "var"}, {"y"}, "bn"),
          "training_mode", 1);
  train.output("y");
  CHECK_THROWS_WITH_AS(train.import(),
                       doctest::Contains("node 'bn' (BatchNormalization): training_mode = 1"),
                       importer::NotSupported);
}

TEST_CASE("conv: a grouped, dilated 1-D convolution as speech models write it") {
  // x [batch, 4, 9], w [4, 2, 3] in 2 groups, dilation 2, pads 2 on each side
  ModelBuilder mb(13);
  mb.input("x", {"batch_size", 4, 9});
  std::vector<float> w(24);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  mb.initializer("w", {4, 2, 3}, w);
  mb.initializer("b", {4}, {0.5f, -1, 0, 2});
  auto& conv = mb.node("Conv", {"x", "w", "b"}, {"y"}, "tdnn");
  set_int(conv, "group", 2);
  set_ints(conv, "dilations", {2});
  set_ints(conv, "pads", {2, 2});
  mb.output("y");
  const auto fn = graph::infer_type(mb.import({.dims = {{"batch_size", {1, 8}}}}), graph::Target{});
  const auto x = te::NDArray::random_float({2, 4, 9}, 5, -1.0, 1.0);
  const auto y = graph::evaluate(fn, {{"x", x}}, {{"batch_size", 2}})[0];
  REQUIRE(y.shape() == std::vector<std::int64_t>{2, 4, 9});
  const float bias[] = {0.5f, -1, 0, 2};
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t o = 0; o < 4; ++o)
      for (std::int64_t t = 0; t < 9; ++t) {
        double want = bias[o];
        for (std::int64_t c = 0; c < 2; ++c)
          for (std::int64_t k = 0; k < 3; ++k) {
            const std::int64_t at = t - 2 + 2 * k;
            if (at < 0 || at >= 9) continue;
            want += double{x.at_float({n, (o / 2) * 2 + c, at})} *
                    w[static_cast<std::size_t>((o * 2 + c) * 3 + k)];
          }
        CHECK(y.at_float({n, o, t}) == doctest::Approx(want).epsilon(1e-5));
      }
  // the grouped convolution runs on the host, and the placement says why
  const std::string text = fmt::format("{}", fn);
  CHECK(text.find("host.conv2d") != std::string::npos);
}

}  // namespace onnx_import
