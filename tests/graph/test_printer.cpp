// The printer: golden text before and after infer_type, names, attributes, several results.
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/graph/place.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/expr.hpp>

#include <doctest/doctest.h>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
using dlavm::DType;

TEST_CASE("printer: a dense layer before and after infer_type") {
  auto token = ne::var("token", 1, 2048);
  auto x = graph::input("x", {1, token, 512}, DType::int8());
  auto w = graph::constant("w", te::NDArray::random(DType::int8(), {256, 512}, 1));
  auto y = graph::requantize(graph::dense(x, w),
                             {.shift = 8, .rounding = dlavm::host::Rounding::Nearest});
  auto fn = graph::function({x}, {y});
  CHECK(fmt::format("{}", fn) ==
        "fn (%x: Tensor[(1, token, 512), int8]) {\n"
        "  %w = constant Tensor[(256, 512), int8]\n"
        "  %0 = dense(%x, %w)\n"
        "  %1 = requantize(%0, hi=127, lo=-128, out_dtype=int8, rounding=\"nearest\", shift=8)\n"
        "  return %1\n"
        "}");
  // with the op registry alone every call runs on the host
  CHECK(
      fmt::format("{}", graph::infer_type(fn, graph::default_ops())) ==
      "fn (%x: Tensor[(1, token, 512), int8]) {\n"
      "  %w = constant Tensor[(256, 512), int8]\n"
      "  %0 = host.dense(%x, %w) /* ret=(1, token, 256), dtype=int32, device=host */\n"
      "  %1 = host.requantize(%0, hi=127, lo=-128, out_dtype=int8, rounding=\"nearest\", shift=8) "
      "/* ret=(1, token, 256), dtype=int8, device=host */\n"
      "  return %1\n"
      "}");
  // with a target, the dense layer and its requantize fuse into one VTA kernel
  graph::Target target;
  CHECK(fmt::format("{}", graph::infer_type(fn, target)) ==
        "fn (%x: Tensor[(1, token, 512), int8]) {\n"
        "  %w = constant Tensor[(256, 512), int8]\n"
        "  %0 = vta.dense(%x, %w) /* ret=(1, token, 256), dtype=int32, device=vta */\n"
        "  %1 = vta.requantize(%0, hi=127, lo=-128, out_dtype=int8, rounding=\"nearest\", shift=8) "
        "/* ret=(1, token, 256), dtype=int8, device=vta */\n"
        "  return %1\n"
        "}");
}

TEST_CASE("printer: a conv block with defaults filled in, several results, shared nodes") {
  auto x = graph::input("data", {1, 3, 32, 32}, DType::int8());
  auto w = graph::constant("conv1.weight", te::NDArray(DType::int8(), {8, 3, 3, 3}));
  auto c = graph::conv2d(x, w, {.strides = {2, 2}, .padding = {1, 1, 1, 1}});
  auto r = graph::relu(graph::requantize(c, {.shift = 6, .lo = 0}));
  auto p = graph::avg_pool2d(r, {.pool_size = {2, 2}, .strides = {2, 2}});
  auto fn = graph::function({x}, {p, r});
  CHECK(fmt::format("{}", fn) ==
        "fn (%data: Tensor[(1, 3, 32, 32), int8]) {\n"
        "  %conv1.weight = constant Tensor[(8, 3, 3, 3), int8]\n"
        "  %0 = conv2d(%data, %conv1.weight, dilations=[1, 1], groups=1, padding=[1, 1, 1, 1], "
        "strides=[2, 2])\n"
        "  %1 = requantize(%0, hi=127, lo=0, out_dtype=int8, rounding=\"floor\", shift=6)\n"
        "  %2 = relu(%1)\n"
        "  %3 = avg_pool2d(%2, count_include_pad=1, padding=[0, 0, 0, 0], pool_size=[2, 2], "
        "strides=[2, 2])\n"
        "  return %3, %2\n"
        "}");
  auto typed = graph::infer_type(fn, graph::default_ops());
  CHECK(fmt::format("{}", typed.results()[0])
            .find("%0 = host.conv2d(%data, %conv1.weight, dilations=[1, 1], groups=1, padding=[1, "
                  "1, 1, 1], "
                  "strides=[2, 2]) "
                  "/* ret=(1, 8, 16, 16), dtype=int32, device=host */") != std::string::npos);
}

TEST_CASE("printer: names that are not identifiers are quoted, floats keep a decimal point") {
  auto a = graph::input("0", {2}, DType::float32());
  auto b = graph::constant("onnx::Add_3", te::NDArray(DType::float32(), {2}));
  auto c = graph::clip(graph::add(a, b), {.lo = 0, .hi = 6});
  CHECK(fmt::format("{}", graph::function({a}, {c})) ==
        "fn (%\"0\": Tensor[(2), float32]) {\n"
        "  %\"onnx::Add_3\" = constant Tensor[(2), float32]\n"
        "  %0 = add(%\"0\", %\"onnx::Add_3\")\n"
        "  %1 = clip(%0, hi=6.0, lo=0.0)\n"
        "  return %1\n"
        "}");
  // an Expr prints as the function of the inputs it uses; a leaf result prints by name
  CHECK(fmt::format("{}", graph::relu(a)) ==
        "fn (%\"0\": Tensor[(2), float32]) {\n  %0 = relu(%\"0\")\n  return %0\n}");
  CHECK(fmt::format("{}", graph::function({a}, {a})) ==
        "fn (%\"0\": Tensor[(2), float32]) {\n  return %\"0\"\n}");
  graph::NodeNames names(std::vector<graph::Expr>{c});
  CHECK(names.label(c) == "%1 (clip)");
  CHECK(names.label(b) == "%\"onnx::Add_3\"");
  CHECK(names.name(graph::relu(a)) == "%?");  // not under the roots
  CHECK(fmt::format("{}", graph::TensorType{{}, DType::int8()}) == "Tensor[(), int8]");
}
