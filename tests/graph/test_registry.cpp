// Op records and registries: default_ops' contents, adding a custom op (as importers and
// later layers will), its type rule, placement rule and kernel in infer_type and evaluate,
// and the registry's own checks.
#include <dlavm/graph/attr_schema.hpp>
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/host/elementwise.hpp>

#include <doctest/doctest.h>

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;

namespace {

// "scale": y = x * factor for integers, 1 or 2 inputs (the second is added), an Int attribute.
graph::OpRecord scale_op() {
  return {.name = "scale",
          .min_args = 1,
          .max_args = 2,
          .attrs = {{"factor", graph::AttrKind::Int, std::int64_t{2}},
                    {"mode", graph::AttrKind::String, std::string("wrap"), {"wrap"}}},
          .type_rule =
              [](const graph::TypeCall& c) {
                if (c.size() == 2) c.require_same_dtype(0, 1);
                return c.type(0);
              },
          .host_kernel =
              [](graph::HostArgs a, const graph::Attrs& attrs) {
                te::NDArray y = *a[0];
                for (auto& v : y.data()) v = y.dtype().wrap(v * attrs.get_int("factor"));
                return a.size() == 2 ? host::add(y, *a[1]) : y;
              },
          .host_support = [](const graph::TypeCall& c) -> std::optional<std::string> {
            if (c.type(0).dtype.is_float()) return "scales integers only";
            return std::nullopt;
          }};
}

}  // namespace

TEST_CASE("registry: default_ops holds every op of the spec with its attributes") {
  auto ops = graph::default_ops();
  CHECK(ops.size() == 97);
  CHECK(ops.at("batch_norm").min_args == 5);
  // an attention's context normalized past probabilities . V: the context and the exponentials
  CHECK(ops.at("integer_context_normalize").min_args == 2);
  CHECK(ops.at("integer_context_normalize").max_args == 2);
  CHECK(*ops.at("integer_context_normalize").find_attr("shift")->default_value ==
        graph::AttrValue{std::int64_t{7}});
  // the data movement ops ONNX needs (issue 40)
  CHECK_FALSE(ops.at("strided_slice").find_attr("begin")->default_value.has_value());
  CHECK(*ops.at("strided_slice").find_attr("step")->default_value ==
        graph::AttrValue{std::vector<std::int64_t>{}});
  CHECK(ops.at("take").min_args == 2);
  CHECK(ops.at("take").max_args == 2);
  CHECK_FALSE(ops.at("broadcast_to").find_attr("shape")->default_value.has_value());
  CHECK_FALSE(ops.at("tile").find_attr("repeats")->default_value.has_value());
  const auto& resize = ops.at("resize2d");
  CHECK(*resize.find_attr("mode")->default_value == graph::AttrValue{std::string("nearest")});
  CHECK(
      resize.find_attr("coordinate_transformation_mode")->choices ==
      std::vector<std::string>{"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"});
  CHECK(*resize.find_attr("nearest_mode")->default_value ==
        graph::AttrValue{std::string("round_prefer_floor")});
  for (const char* op : {"strided_slice", "take", "broadcast_to", "tile", "resize2d"})
    CHECK(static_cast<bool>(ops.at(op).firmware.call));
  const auto& integer_softmax = ops.at("integer_softmax");
  CHECK(*integer_softmax.find_attr("scale")->default_value == graph::AttrValue{0.125});
  CHECK(*integer_softmax.find_attr("causal")->default_value == graph::AttrValue{std::int64_t{0}});
  for (const char* linear : {"quantize_linear", "dequantize_linear", "rescale"}) {
    CHECK(ops.at(linear).min_args == 3);
    CHECK(*ops.at(linear).find_attr("axis")->default_value == graph::AttrValue{std::int64_t{1}});
  }
  const auto& conv = ops.at("conv2d");
  CHECK(conv.min_args == 2);
  CHECK(conv.max_args == 2);
  REQUIRE(conv.find_attr("groups") != nullptr);
  CHECK(*conv.find_attr("groups")->default_value == graph::AttrValue{std::int64_t{1}});
  CHECK(conv.find_attr("dilation") == nullptr);
  CHECK_FALSE(ops.at("requantize").find_attr("shift")->default_value.has_value());  // required
  CHECK(ops.at("concat").max_args == graph::OpRecord::kVariadic);
  CHECK(ops.find("conv3d") == nullptr);
  CHECK_THROWS_WITH_AS(
      ops.at("conv3d"),
      doctest::Contains("unknown op 'conv3d'; known ops: abs, acos, acosh, add, argmax"),
      dlavm::ValueError);
}

TEST_CASE("registry: a custom op types, places and evaluates like the built-in ones") {
  graph::Target target;
  target.ops.add(scale_op());
  auto x = graph::input("x", {3}, DType::int8());
  auto y = graph::call("scale", {x, x}, {{"factor", 3}});
  auto fn = graph::infer_type(graph::function({x}, {y}), target);
  CHECK(fmt::format("{}", fn).find(
            "%0 = host.scale(%x, %x, factor=3, mode=\"wrap\") /* ret=(3), dtype=int8, "
            "device=host */") != std::string::npos);
  auto a = te::NDArray::from_ints(DType::int8(), {3}, {1, -2, 100});
  auto out = graph::evaluate(fn, std::vector<graph::NamedArray>{{"x", a}}, {}, target.ops);
  CHECK(out[0].at({0}) == 4);
  CHECK(out[0].at({1}) == -8);
  CHECK(out[0].at({2}) == DType::int8().wrap(300 + 100));
  // the custom op's own rules, with the node named as the printer does
  auto f = graph::input("f", {3}, DType::float32());
  CHECK_THROWS_WITH_AS(
      graph::infer_type(graph::function({f}, {graph::call("scale", {f})}), target),
      "%0 (scale): no device supports this call; host: scales integers only; vta: no VTA strategy "
      "for 'scale'",
      dlavm::TypeError);
  CHECK_THROWS_WITH_AS(
      graph::infer_type(graph::function({x}, {graph::call("scale", {x, x, x})}), target),
      "%0 (scale): takes 1 to 2 inputs, given 3", dlavm::ValueError);
  CHECK_THROWS_WITH_AS(
      graph::infer_type(graph::function({x}, {graph::call("scale", {x}, {{"mode", "saturate"}})}),
                        target),
      "%0 (scale): attribute 'mode' is \"saturate\"; allowed: wrap", dlavm::ValueError);
  // the default registry does not know it
  CHECK_THROWS_WITH_AS(graph::infer_type(graph::function({x}, {y}), graph::default_ops()),
                       doctest::Contains("%0 (scale): unknown op 'scale'"), dlavm::ValueError);
}

TEST_CASE("registry: records are checked when added") {
  graph::OpRegistry ops = graph::default_ops();
  ops.add(scale_op());
  CHECK_THROWS_WITH_AS(ops.add(scale_op()), "OpRegistry::add: op 'scale' is already registered",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(ops.add({.name = "half"}),
                       "OpRegistry::add: op 'half' needs a type rule and a host kernel",
                       dlavm::ValueError);
  auto bad = scale_op();
  bad.name = "bad";
  bad.min_args = 3;
  CHECK_THROWS_WITH_AS(ops.add(bad),
                       "OpRegistry::add: op 'bad' takes at least 3 and at most 2 inputs",
                       dlavm::ValueError);
  bad.name = "";
  CHECK_THROWS_WITH_AS(ops.add(bad), "OpRegistry::add: the op name is empty", dlavm::ValueError);
}

TEST_CASE("registry: attributes as an importer writes them are normalized") {
  auto x = graph::input("x", {4}, DType::float32());
  // integers where floats are expected (ONNX-style), defaults filled in
  auto fn =
      graph::infer_type(graph::function({x}, {graph::call("clip", {x}, {{"lo", 0}, {"hi", 6}})}),
                        graph::default_ops());
  const auto& attrs = fn.results()[0].as<graph::CallNode>()->attrs;
  CHECK(graph::kind_of(*attrs.find("lo")) == graph::AttrKind::Float);
  CHECK(attrs.get_float("hi") == 6.0);
  std::vector<graph::AttrSpec> specs{{"a", graph::AttrKind::Ints, std::nullopt}};
  CHECK_THROWS_WITH_AS(graph::normalize_attrs(specs, {{"a", 1.5}}, "here"),
                       "here: attribute 'a' is a float (1.5), expected a list of integers",
                       dlavm::TypeError);
  CHECK(graph::normalize_attrs(specs, {{"a", {1, 2}}}, "here").get_ints("a") ==
        std::vector<std::int64_t>{1, 2});
}

namespace registry_test {

enum class Mode : std::uint8_t { Fast, Exact };

// One member of every kind an AttrSchema maps.
struct Params {
  std::int64_t count = 3;
  bool flag = true;
  double scale = 0.5;
  std::array<std::int64_t, 2> pair{1, 2};
  std::vector<std::int64_t> ints{};
  std::vector<double> scales{0.25};
  dlavm::DType dtype = dlavm::DType::int8();
  Mode mode = Mode::Exact;
  std::int64_t needed = 0;
};

const graph::AttrSchema<Params>& schema() {
  static const auto s =
      graph::AttrSchema<Params>()
          .field("count", &Params::count, "how many")
          .field("flag", &Params::flag, "on or off")
          .field("scale", &Params::scale, "a factor")
          .field("pair", &Params::pair, "two numbers")
          .field("ints", &Params::ints, "any numbers")
          .field("scales", &Params::scales, "per-channel factors")
          .field("dtype", &Params::dtype, "an element type")
          .field("mode", &Params::mode, "how", {{"fast", Mode::Fast}, {"exact", Mode::Exact}})
          .field("needed", &Params::needed, "must be given", true);
  return s;
}

}  // namespace registry_test

TEST_CASE("attr schema: one declaration gives the specs, the builder's attributes and the params") {
  using registry_test::Mode;
  using registry_test::Params;
  const auto& s = registry_test::schema();
  const auto specs = s.specs();
  REQUIRE(specs.size() == 9);
  CHECK(specs[0].kind == graph::AttrKind::Int);
  CHECK(specs[1].kind == graph::AttrKind::Int);  // a flag is 0 or 1
  CHECK(specs[2].kind == graph::AttrKind::Float);
  CHECK(specs[3].kind == graph::AttrKind::Ints);
  CHECK(specs[5].kind == graph::AttrKind::Floats);
  CHECK(specs[6].kind == graph::AttrKind::DType);
  CHECK(specs[7].kind == graph::AttrKind::String);
  CHECK(specs[7].choices == std::vector<std::string>{"fast", "exact"});
  CHECK(specs[7].default_value == graph::AttrValue(std::string("exact")));
  CHECK(specs[0].default_value == graph::AttrValue(std::int64_t{3}));
  CHECK(specs[5].default_value == graph::AttrValue(std::vector<double>{0.25}));
  CHECK_FALSE(specs[8].default_value.has_value());
  CHECK(specs[4].description == "any numbers");
  // to_attrs and from_attrs round-trip every member
  Params p{.count = 7,
           .flag = false,
           .scale = -2,
           .pair = {5, 6},
           .ints = {1, 2, 3},
           .scales = {0.5, 1.5},
           .dtype = DType::int32(),
           .mode = Mode::Fast,
           .needed = 9};
  const auto attrs = s.to_attrs(p);
  CHECK(fmt::format("{}", attrs) ==
        "count=7, dtype=int32, flag=0, ints=[1, 2, 3], mode=\"fast\", needed=9, pair=[5, 6], "
        "scale=-2.0, scales=[0.5, 1.5]");
  const auto back = s.from_attrs(graph::normalize_attrs(specs, attrs, "here"));
  CHECK(back.count == 7);
  CHECK_FALSE(back.flag);
  CHECK(back.pair == std::array<std::int64_t, 2>{5, 6});
  CHECK(back.scales == std::vector<double>{0.5, 1.5});
  CHECK(back.dtype == DType::int32());
  CHECK(back.mode == Mode::Fast);
  // defaults fill what is not given; a list of integers reads as floats
  graph::Attrs given{{"needed", 1}, {"scales", {2, 4}}};
  const auto filled = s.from_attrs(graph::normalize_attrs(specs, given, "here"));
  CHECK(filled.count == 3);
  CHECK(filled.scales == std::vector<double>{2.0, 4.0});
  // values outside a member's domain, and the required attribute with its description
  const auto bad = [&](graph::Attrs a) {
    a.set("needed", std::int64_t{1});
    return s.from_attrs(graph::normalize_attrs(specs, a, "here"));
  };
  CHECK_THROWS_WITH_AS(bad({{"flag", 2}}), "attribute 'flag' is 2; it is 0 or 1",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(bad({{"pair", {1, 2, 3}}}),
                       "attribute 'pair' is [1, 2, 3] (3 values); it takes 2", dlavm::ValueError);
  CHECK_THROWS_WITH_AS(bad({{"mode", "slow"}}),
                       "here: attribute 'mode' is \"slow\"; allowed: fast, exact",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::normalize_attrs(specs, {}, "here"),
                       "here: attribute 'needed' (an integer: must be given) is required",
                       dlavm::ValueError);
}
