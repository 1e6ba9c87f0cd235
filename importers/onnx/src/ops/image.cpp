// The converter of Resize: resize2d over the height and width of a 4-D NCHW input, its scales
// or sizes constants (a shape subgraph folded into one counts).
#include <fmt/ranges.h>

#include "common.hpp"

namespace dlavm::onnx::detail {

namespace {

host::ResizeMode resize_mode(std::string_view mode) {
  if (mode == "nearest") return host::ResizeMode::Nearest;
  if (mode == "linear") return host::ResizeMode::Linear;
  unsupported(fmt::format("mode = '{}' (nearest and linear are handled)", mode));
}

host::ResizeCoordinates resize_coordinates(std::string_view mode) {
  using C = host::ResizeCoordinates;
  if (mode == "half_pixel") return C::HalfPixel;
  if (mode == "asymmetric") return C::Asymmetric;
  if (mode == "align_corners") return C::AlignCorners;
  if (mode == "pytorch_half_pixel") return C::PytorchHalfPixel;
  unsupported(fmt::format("coordinate_transformation_mode = '{}'", mode));
}

host::ResizeNearest resize_nearest(std::string_view mode) {
  using R = host::ResizeNearest;
  if (mode == "round_prefer_floor") return R::RoundPreferFloor;
  if (mode == "round_prefer_ceil") return R::RoundPreferCeil;
  if (mode == "floor") return R::Floor;
  if (mode == "ceil") return R::Ceil;
  unsupported(fmt::format("nearest_mode = '{}'", mode));
}

// The per-dim values of a scales or sizes input given for `axes` (all four dims when none),
// as four entries; `unit` fills the dims not listed.
template <class T>
std::vector<T> per_dim(const std::vector<T>& given, const std::vector<std::int64_t>& axes, T unit,
                       std::string_view what) {
  if (axes.empty()) {
    if (given.size() != 4)
      unsupported(fmt::format("{} of {} entries for a 4-D input", what, given.size()));
    return given;
  }
  if (given.size() != axes.size())
    unsupported(fmt::format("{} of {} entries for axes {}", what, given.size(), axes));
  std::vector<T> all(4, unit);
  for (std::size_t k = 0; k < axes.size(); ++k) all[static_cast<std::size_t>(axes[k])] = given[k];
  return all;
}

}  // namespace

namespace convert {

// Version 11 on: inputs X, roi, scales, sizes (one of the last two non-empty).
Outs resize(Importer& im, const Node& n) {
  const auto x = im.expr(n, 0);
  const auto type = im.type_of(x);
  if (type.ndim() != 4)
    unsupported(fmt::format("an input of rank {} (resize2d takes 4-D NCHW)", type.ndim()));
  host::Resize2dParams p{
      .mode = resize_mode(attr_string(im, n, "mode", "nearest")),
      .coordinate_transformation_mode =
          resize_coordinates(attr_string(im, n, "coordinate_transformation_mode", "half_pixel")),
      .nearest_mode = resize_nearest(attr_string(im, n, "nearest_mode", "round_prefer_floor"))};
  if (attr_int(im, n, "antialias", 0) != 0) unsupported("antialias = 1");
  std::vector<std::int64_t> axes;
  for (const auto a : attr_ints(im, n, "axes", {})) axes.push_back(normalize_axis(a, 4, "axes"));
  const bool has_scales = Importer::has_input(n, 2) && im.constant(n, 2, "scales").size() > 0;
  const bool has_sizes = Importer::has_input(n, 3) && im.constant(n, 3, "sizes").size() > 0;
  if (has_scales == has_sizes) unsupported("neither or both of scales and sizes given");
  if (has_scales) {
    const auto& given = im.constant(n, 2, "scales");
    if (given.dtype() != DType::float32()) unsupported("scales that are not float32");
    const auto scales = per_dim(std::vector<float>(given.fdata().begin(), given.fdata().end()),
                                axes, 1.0f, "scales");
    if (scales[0] != 1.0f || scales[1] != 1.0f)
      unsupported(fmt::format("scales {} (the batch and channel dims must keep scale 1)", scales));
    p.scales = {scales[2], scales[3]};
  } else {
    if (attr_string(im, n, "keep_aspect_ratio_policy", "stretch") != "stretch")
      unsupported("keep_aspect_ratio_policy other than 'stretch'");
    const auto sizes =
        per_dim(ints_of(im.constant(n, 3, "sizes")), axes, std::int64_t{-1}, "sizes");
    for (std::size_t k = 0; k < 2; ++k)
      if (sizes[k] != -1 && sizes[k] != static_dim(type.shape[k], "a resized batch or channel"))
        unsupported(
            fmt::format("sizes {} (the batch and channel dims must keep their size)", sizes));
    p.sizes = {sizes[2], sizes[3]};
  }
  return {graph::resize2d(x, p)};
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
