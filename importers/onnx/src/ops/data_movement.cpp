// Converters of data movement on tensors: Slice, Gather, Expand, Tile and Split (a computed
// shape or constants fold instead: shape.cpp).
#include <dlavm/ne/bounds.hpp>

#include <fmt/ranges.h>

#include "common.hpp"
#include <limits>

namespace dlavm::onnx::detail {

namespace {

// Slices of x along `axis`, `sizes` long each, one per output.
Outs split_by(Importer& im, const Node& n, std::int64_t axis, std::vector<std::int64_t> sizes) {
  const auto x = im.expr(n, 0);
  const auto shape = im.type_of(x).shape;
  const auto rank = static_cast<std::int64_t>(shape.size());
  axis = normalize_axis(axis, rank, "axis");
  const auto outputs = static_cast<std::int64_t>(n.output_size());
  if (sizes.empty()) {
    // equal parts (the last smaller, version 18), of a static dim
    const auto dim = static_dim(shape[static_cast<std::size_t>(axis)], "a Split into equal parts");
    const auto part = (dim + outputs - 1) / outputs;
    for (std::int64_t k = 0; k < outputs; ++k)
      sizes.push_back(std::max<std::int64_t>(std::min(part, dim - k * part), 0));
  }
  if (static_cast<std::int64_t>(sizes.size()) != outputs)
    raise<ValueError>("split has {} sizes for {} outputs", sizes.size(), outputs);
  Outs out;
  std::int64_t begin = 0;
  for (const auto s : sizes) {
    if (s < 0) raise<ValueError>("split size {} is negative", s);
    out.push_back(graph::strided_slice(x, {.begin = {begin}, .end = {begin + s}, .axes = {axis}}));
    begin += s;
  }
  return out;
}

}  // namespace

namespace convert {

Outs slice_tensor(Importer& im, const Node& n, std::vector<std::int64_t> starts,
                  std::vector<std::int64_t> ends, std::vector<std::int64_t> axes,
                  std::vector<std::int64_t> steps) {
  return {graph::strided_slice(im.expr(n, 0), {.begin = std::move(starts),
                                               .end = std::move(ends),
                                               .step = std::move(steps),
                                               .axes = std::move(axes)})};
}

Outs take(Importer& im, const Node& n) {
  return {graph::take(im.expr(n, 0), im.expr(n, 1), {.axis = attr_int(im, n, "axis", 0)})};
}

// Expand: the numpy broadcast of x and the shape; a symbolic entry that is x's own dim (aligned
// at the end) is a 1, which the broadcast turns into x's dim.
Outs expand(Importer& im, const Node& n) {
  const auto d = im.dims_of(n, 1);
  if (!d) unsupported("its shape (input 1) is not a constant or a computed shape");
  const auto x = im.expr(n, 0);
  const auto xs = im.type_of(x).shape;
  std::vector<std::int64_t> shape;
  const auto offset =
      static_cast<std::int64_t>(d->values.size()) - static_cast<std::int64_t>(xs.size());
  for (std::size_t k = 0; k < d->values.size(); ++k) {
    const auto& e = d->values[k];
    if (const auto c = e.as_int()) {
      shape.push_back(*c);
      continue;
    }
    const auto j = static_cast<std::int64_t>(k) - offset;
    if (j < 0 || !ne::can_prove(ne::simplify(e - xs[static_cast<std::size_t>(j)]) == 0))
      unsupported(fmt::format("an Expand to the symbolic dim {} that x does not have there", e));
    shape.push_back(1);
  }
  return {graph::broadcast_to(x, {.shape = std::move(shape)})};
}

Outs tile(Importer& im, const Node& n) {
  return {graph::tile(im.expr(n, 0), {.repeats = constant_ints(im, n, 1, "repeats")})};
}

// Versions 2 and 11: the sizes an attribute.
Outs split_v2(Importer& im, const Node& n) {
  return split_by(im, n, attr_int(im, n, "axis", 0), attr_ints(im, n, "split", {}));
}
// Version 13: the sizes an optional input; 18 adds num_outputs (equal parts without sizes).
Outs split(Importer& im, const Node& n) {
  return split_by(
      im, n, attr_int(im, n, "axis", 0),
      Importer::has_input(n, 1) ? constant_ints(im, n, 1, "split") : std::vector<std::int64_t>{});
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
