// The graph ops strided_slice, take, broadcast_to, tile and resize2d against ONNX's own node
// test data for Slice, Gather, Expand, Tile and Resize (Debian's libonnx-testdata), whether or
// not the importer converts those operators yet: each test's node attributes read from its
// model, its inputs and expected output with onnx::read_tensor, the op's parameters taken from
// the inputs as the importer will fold them (constant starts, ends, shapes, repeats, scales,
// sizes), then the op typed and evaluated. Every test of those operators runs, apart from the
// Resize modes resize2d leaves out (cubic, tf_crop_and_resize, tf_half_pixel_for_nn), which
// are listed: a test that stops running fails here.
#include <dlavm/graph/evaluate.hpp>
#include <dlavm/graph/infer_type.hpp>
#include <dlavm/graph/ops.hpp>
#include <dlavm/onnx/import.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace onnx_movement_data_test {

using namespace dlavm;
namespace fs = std::filesystem;
namespace importer = dlavm::onnx;
using i64 = std::int64_t;

struct NodeTest {
  ::onnx::NodeProto node;
  std::map<std::string, te::NDArray> inputs;  // by the node's input names
  te::NDArray expected;
};

NodeTest read_test(const fs::path& dir) {
  ::onnx::ModelProto model;
  std::ifstream in(dir / "model.onnx", std::ios::binary);
  REQUIRE(model.ParseFromIstream(&in));
  // the operator's node last; before it, Constant nodes at most
  const int last = model.graph().node_size() - 1;
  for (int k = 0; k < last; ++k) REQUIRE(model.graph().node(k).op_type() == "Constant");
  NodeTest t{model.graph().node(last), {}, {}};
  const fs::path set = dir / "test_data_set_0";
  for (int k = 0; k < model.graph().input_size(); ++k)
    t.inputs.emplace(model.graph().input(k).name(),
                     importer::read_tensor(set / fmt::format("input_{}.pb", k)));
  t.expected = importer::read_tensor(set / "output_0.pb");
  return t;
}

// The node's input k as a list of integers or floats, or nullopt where it is absent.
std::optional<te::NDArray> input(const NodeTest& t, int k) {
  if (k >= t.node.input_size() || t.node.input(k).empty()) return std::nullopt;
  return t.inputs.at(t.node.input(k));
}
std::vector<i64> ints(const te::NDArray& a) { return {a.data().begin(), a.data().end()}; }

const ::onnx::AttributeProto* attribute(const NodeTest& t, const std::string& name) {
  for (const auto& a : t.node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
std::string string_attr(const NodeTest& t, const std::string& name, std::string fallback) {
  const auto* a = attribute(t, name);
  return a != nullptr ? a->s() : fallback;
}

// y = op(x) through the graph: typed with the default ops, evaluated on the host.
te::NDArray run(const te::NDArray& x, const std::function<graph::Expr(graph::Expr)>& op) {
  std::vector<ne::Expr> shape(x.shape().begin(), x.shape().end());
  auto in = graph::input("x", shape, x.dtype());
  auto fn = graph::infer_type(graph::function({in}, {op(in)}), graph::default_ops());
  return graph::evaluate(fn, {{"x", x}}).at(0);
}

host::Resize2dParams resize_params(const NodeTest& t) {
  host::Resize2dParams p;
  const auto mode = string_attr(t, "mode", "nearest");
  p.mode = mode == "linear" ? host::ResizeMode::Linear : host::ResizeMode::Nearest;
  const std::map<std::string, host::ResizeCoordinates> coordinates = {
      {"half_pixel", host::ResizeCoordinates::HalfPixel},
      {"asymmetric", host::ResizeCoordinates::Asymmetric},
      {"align_corners", host::ResizeCoordinates::AlignCorners},
      {"pytorch_half_pixel", host::ResizeCoordinates::PytorchHalfPixel}};
  p.coordinate_transformation_mode =
      coordinates.at(string_attr(t, "coordinate_transformation_mode", "half_pixel"));
  const std::map<std::string, host::ResizeNearest> nearest = {
      {"round_prefer_floor", host::ResizeNearest::RoundPreferFloor},
      {"round_prefer_ceil", host::ResizeNearest::RoundPreferCeil},
      {"floor", host::ResizeNearest::Floor},
      {"ceil", host::ResizeNearest::Ceil}};
  p.nearest_mode = nearest.at(string_attr(t, "nearest_mode", "round_prefer_floor"));
  // N and C are not resized: their scales are 1, their sizes N and C
  const auto& x = t.inputs.at(t.node.input(0)).shape();
  if (const auto scales = input(t, 2); scales && scales->size() == 4) {
    const auto f = scales->fdata();
    REQUIRE(f[0] == 1.0f);
    REQUIRE(f[1] == 1.0f);
    p.scales = {f[2], f[3]};
  } else {
    const auto sizes = ints(*input(t, 3));
    REQUIRE(sizes[0] == x[0]);
    REQUIRE(sizes[1] == x[1]);
    p.sizes = {sizes[2], sizes[3]};
  }
  return p;
}

// Why resize2d leaves a Resize test out, or nullopt.
std::optional<std::string> resize_left_out(const NodeTest& t) {
  const auto mode = string_attr(t, "mode", "nearest");
  if (mode == "cubic") return "mode cubic";
  const auto coordinates = string_attr(t, "coordinate_transformation_mode", "half_pixel");
  if (coordinates.rfind("tf_", 0) == 0) return "coordinate_transformation_mode " + coordinates;
  return std::nullopt;
}

// The output of the op a test's node is, or nullopt with `why` set when it is left out.
std::optional<te::NDArray> run_node(const NodeTest& t, std::string& why) {
  const auto& op = t.node.op_type();
  const te::NDArray& x = t.inputs.at(t.node.input(0));
  if (op == "Slice") {
    host::StridedSliceParams p{.begin = ints(*input(t, 1)), .end = ints(*input(t, 2))};
    if (const auto axes = input(t, 3)) p.axes = ints(*axes);
    if (const auto steps = input(t, 4)) p.step = ints(*steps);
    return run(x, [&](graph::Expr e) { return graph::strided_slice(e, p); });
  }
  if (op == "Gather") {
    const auto* axis = attribute(t, "axis");
    const host::TakeParams p{.axis = axis != nullptr ? axis->i() : 0};
    const auto indices = graph::constant("indices", *input(t, 1));
    return run(x, [&](graph::Expr e) { return graph::take(e, indices, p); });
  }
  if (op == "Expand") {
    const host::BroadcastToParams p{.shape = ints(*input(t, 1))};
    return run(x, [&](graph::Expr e) { return graph::broadcast_to(e, p); });
  }
  if (op == "Tile") {
    const host::TileParams p{.repeats = ints(*input(t, 1))};
    return run(x, [&](graph::Expr e) { return graph::tile(e, p); });
  }
  if (const auto out = resize_left_out(t)) {
    why = *out;
    return std::nullopt;
  }
  const auto p = resize_params(t);
  return run(x, [&](graph::Expr e) { return graph::resize2d(e, p); });
}

TEST_CASE("ONNX node test data: Slice, Gather, Expand, Tile and Resize through the graph ops") {
  const fs::path root = DLAVM_ONNX_NODE_TESTS;
  if (!fs::exists(root)) {
    MESSAGE("skipped: ", root.string(), " not found (tools/setup.sh installs libonnx-testdata)");
    return;
  }
  const std::set<std::string> ops = {"Slice", "Gather", "Expand", "Tile", "Resize"};
  std::set<std::string> ran, left_out;
  for (const auto& e : fs::directory_iterator(root)) {
    if (!fs::exists(e.path() / "model.onnx")) continue;
    const std::string name = e.path().filename().string();
    if (name.ends_with("_expanded")) continue;  // other operators' function bodies
    ::onnx::ModelProto model;
    std::ifstream in(e.path() / "model.onnx", std::ios::binary);
    REQUIRE(model.ParseFromIstream(&in));
    const auto& nodes = model.graph().node();
    if (nodes.empty() || ops.count(nodes.rbegin()->op_type()) == 0) continue;
    CAPTURE(name);
    const auto t = read_test(e.path());
    std::string why;
    const auto got = run_node(t, why);
    if (!got) {
      left_out.insert(name + ": " + why);
      continue;
    }
    ran.insert(name);
    REQUIRE(got->shape() == t.expected.shape());
    if (got->dtype().is_float())
      CHECK(te::allclose(*got, t.expected, 1e-6, 1e-6));
    else
      CHECK(*got == t.expected);
  }
  const std::set<std::string> expected_runs = {
      "test_expand_dim_changed",
      "test_expand_dim_unchanged",
      "test_gather_0",
      "test_gather_1",
      "test_gather_2d_indices",
      "test_gather_negative_indices",
      "test_resize_downsample_scales_linear",
      "test_resize_downsample_scales_linear_align_corners",
      "test_resize_downsample_scales_nearest",
      "test_resize_downsample_sizes_linear_pytorch_half_pixel",
      "test_resize_downsample_sizes_nearest",
      "test_resize_upsample_scales_linear",
      "test_resize_upsample_scales_linear_align_corners",
      "test_resize_upsample_scales_nearest",
      "test_resize_upsample_sizes_nearest",
      "test_resize_upsample_sizes_nearest_ceil_half_pixel",
      "test_resize_upsample_sizes_nearest_floor_align_corners",
      "test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric",
      "test_slice",
      "test_slice_default_axes",
      "test_slice_default_steps",
      "test_slice_end_out_of_bounds",
      "test_slice_neg",
      "test_slice_neg_steps",
      "test_slice_negative_axes",
      "test_slice_start_out_of_bounds",
      "test_tile",
      "test_tile_precomputed"};
  CHECK(ran == expected_runs);
  const std::set<std::string> expected_left_out = {
      "test_resize_downsample_scales_cubic: mode cubic",
      "test_resize_downsample_scales_cubic_A_n0p5_exclude_outside: mode cubic",
      "test_resize_downsample_scales_cubic_align_corners: mode cubic",
      "test_resize_downsample_sizes_cubic: mode cubic",
      "test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn: coordinate_transformation_mode "
      "tf_half_pixel_for_nn",
      "test_resize_tf_crop_and_resize: coordinate_transformation_mode tf_crop_and_resize",
      "test_resize_upsample_scales_cubic: mode cubic",
      "test_resize_upsample_scales_cubic_A_n0p5_exclude_outside: mode cubic",
      "test_resize_upsample_scales_cubic_align_corners: mode cubic",
      "test_resize_upsample_scales_cubic_asymmetric: mode cubic",
      "test_resize_upsample_sizes_cubic: mode cubic"};
  INFO(fmt::format("left out: {}", fmt::join(left_out, "; ")));
  CHECK(left_out == expected_left_out);
  MESSAGE(ran.size(), " ONNX node tests equal the expected outputs; ", left_out.size(),
          " Resize tests use modes resize2d leaves out");
}

}  // namespace onnx_movement_data_test
