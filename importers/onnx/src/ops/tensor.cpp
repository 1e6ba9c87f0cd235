// Converters of data-movement operators and constants: Flatten, Transpose, Concat, Pad, Cast
// (to and from BOOL too), Constant.
#include "common.hpp"
#include <span>

namespace dlavm::onnx::detail {

namespace {

Outs concat_along(Importer& im, const Node& n, std::int64_t default_axis) {
  if (n.input_size() == 0) raise<ValueError>("Concat has no inputs");
  std::vector<graph::Expr> xs;
  for (int k = 0; k < n.input_size(); ++k) {
    const Value& v = im.input(n, k);
    if (v.constant != nullptr && v.constant->size() == 0) continue;  // adds nothing
    xs.push_back(im.expr(n, k));
  }
  if (xs.empty()) unsupported("a Concat of empty tensors only");
  const auto rank = static_cast<std::int64_t>(im.type_of(xs.front()).ndim());
  const std::int64_t axis = normalize_axis(attr_int(im, n, "axis", default_axis), rank, "axis");
  return {graph::concat(std::move(xs), {.axis = axis})};
}

host::PadMode pad_mode(const std::string& name) {
  if (name == "constant") return host::PadMode::Constant;
  if (name == "edge") return host::PadMode::Edge;
  if (name == "reflect") return host::PadMode::Reflect;
  unsupported(fmt::format("mode '{}'", name));
}

Outs pad_by(Importer& im, const Node& n, const std::vector<std::int64_t>& pads, double value) {
  const auto x = im.expr(n, 0);
  const host::PadMode mode = pad_mode(attr_string(im, n, "mode", "constant"));
  const std::size_t rank = im.type_of(x).ndim();
  if (pads.size() != 2 * rank)
    raise<ValueError>("pads has {} entries for rank {} (needs {})", pads.size(), rank, 2 * rank);
  for (auto p : pads)
    if (p < 0) unsupported(fmt::format("a negative pad {} (cropping)", p));
  const auto half = static_cast<std::ptrdiff_t>(rank);
  return {graph::pad(x, {.pad_before = {pads.begin(), pads.begin() + half},
                         .pad_after = {pads.begin() + half, pads.end()},
                         .value = value,
                         .mode = mode})};
}

}  // namespace

namespace convert {

Outs flatten(Importer& im, const Node& n) {
  return {graph::flatten(im.expr(n, 0), {.axis = attr_int(im, n, "axis", 1)})};
}

Outs transpose(Importer& im, const Node& n) {
  return {graph::transpose(im.expr(n, 0), {.perm = attr_ints(im, n, "perm", {})})};
}

// Version 1: the axis is optional, 1 by default.
Outs concat_v1(Importer& im, const Node& n) { return concat_along(im, n, 1); }
// (the axis is required since version 4; a model without one gets ONNX Runtime's 0)
Outs concat(Importer& im, const Node& n) {
  if (auto dims = concat_dims(im, n)) return *dims;
  return concat_along(im, n, 0);
}

// Version 2: pads and the value are attributes.
Outs pad_v2(Importer& im, const Node& n) {
  return pad_by(im, n, attr_ints(im, n, "pads", {}), attr_float(im, n, "value", 0.0f));
}
Outs pad(Importer& im, const Node& n) {
  double value = 0;
  if (Importer::has_input(n, 2)) value = scalar_of(im.constant(n, 2, "constant_value"), "value");
  if (Importer::has_input(n, 3)) unsupported("the axes input");
  return pad_by(im, n, ints_of(im.constant(n, 1, "pads")), value);
}

// To BOOL (a uint8 0/1): x != 0, so that a NaN is true and 256 is true (a cast to uint8 would
// wrap it to 0). From BOOL: the uint8 0/1 converted.
Outs cast(Importer& im, const Node& n) {
  const auto to = static_cast<std::int32_t>(attr_int(im, n, "to", 0));
  if (to == ::onnx::TensorProto::BOOL) {
    const auto x = im.expr(n, 0);
    return {graph::not_equal(x, im.make_constant(n, "zero", te::NDArray(im.type_of(x).dtype, {})))};
  }
  const auto dtype = dtype_of(to);
  if (!dtype) unsupported(fmt::format("a cast to {}", onnx_type_name(to)));
  // a computed shape stays one through a cast to an integer type that holds its dims
  if (const auto& in = im.input(n, 0); in.dims && dtype->is_integral() && dtype->bits() >= 32)
    return {in};
  return {graph::cast(im.expr(n, 0), *dtype)};
}

Outs constant(Importer& im, const Node& n) {
  for (const auto& a : n.attribute()) {
    if (a.name() == "value")
      return {im.constant_value(n, "value", to_array(a.t(), im.label(n) + ": attribute 'value'"))};
    if (a.name() == "value_float")
      return {im.constant_value(n, "value", te::NDArray::from_floats({}, {a.f()}))};
    if (a.name() == "value_floats")
      return {im.make_constant(
          n, "value",
          te::NDArray::from_floats(
              {a.floats_size()},
              std::span(a.floats().data(), static_cast<std::size_t>(a.floats_size()))))};
    if (a.name() == "value_int")
      return {im.constant_value(n, "value", te::NDArray::from_ints(DType::int64(), {}, {a.i()}))};
    if (a.name() == "value_ints")
      return {im.make_constant(
          n, "value",
          te::NDArray::from_ints(
              DType::int64(), {a.ints_size()},
              std::span(a.ints().data(), static_cast<std::size_t>(a.ints_size()))))};
    unsupported(fmt::format("attribute '{}'", a.name()));
  }
  raise<ValueError>("a Constant without a value");
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
