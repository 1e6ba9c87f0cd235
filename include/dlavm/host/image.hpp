// Host kernel for images: resize2d, ONNX Resize over the last two dims (height, width) of an
// NCHW array. The semantics below are the definition the graph op and the firmware kernel
// (runtime::resize2d_nearest / resize2d_linear, which this kernel runs) reproduce.
//
//   resize2d(x[N, C, H, W], {scales = [sh, sw] | sizes = [OH, OW], mode = nearest,
//            coordinate_transformation_mode = half_pixel, nearest_mode = round_prefer_floor})
//       -> y[N, C, OH, OW]
//   Exactly one of scales and sizes, two entries each. Scales are float32 values (ONNX's
//   scales input is float32; an attribute's double is rounded to float first), > 0 and
//   finite; then OH = floor(H * sh), OW likewise, computed in double. Sizes are >= 0, and the
//   scale is OH / H in double. H and W >= 1.
//   Output index i along a dim of `in` elements reads the source coordinate c(i) (s the
//   scale, L = s * in the resized length before rounding down):
//     half_pixel          c = (i + 0.5) / s - 0.5
//     asymmetric          c = i / s
//     align_corners       c = i * (in - 1) / (L - 1), 0 when L == 1
//     pytorch_half_pixel  c = (i + 0.5) / s - 0.5, 0 when L == 1
//   mode nearest: the element at c rounded by nearest_mode (an integral c is itself;
//   round_prefer_floor: floor(c) when the fraction is <= 0.5, round_prefer_ceil: floor(c) when
//   it is < 0.5, else the next; floor; ceil), clamped to [0, in - 1]; any dtype (elements are
//   copied). mode linear, float32 only: f = floor(c), r = c - f, (1 - r) * x[f] + r * x[f + 1],
//   indices clamped to [0, in - 1], along the rows and then along the columns, in double,
//   rounded to float at the end. This is ONNX's reference (onnx/reference/ops/op_resize.py)
//   with cubic mode, antialias, exclude_outside, roi and the tf_* and half_pixel_symmetric
//   transformations left out.
//
//   auto y = host::resize2d(x, {.scales = {2, 2}});   // [1, 3, 8, 8] -> [1, 3, 16, 16]
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <string_view>
#include <vector>

namespace dlavm::host {

enum class ResizeMode : std::uint8_t { Nearest, Linear };
// In runtime::ResizeShape's numbering.
enum class ResizeCoordinates : std::uint8_t {
  HalfPixel,
  Asymmetric,
  AlignCorners,
  PytorchHalfPixel
};
enum class ResizeNearest : std::uint8_t { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

struct Resize2dParams {
  std::vector<double> scales{};       // [height, width], or empty
  std::vector<std::int64_t> sizes{};  // [height, width], or empty
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoordinates coordinate_transformation_mode = ResizeCoordinates::HalfPixel;
  ResizeNearest nearest_mode = ResizeNearest::RoundPreferFloor;
};

// The parameters checked (ValueError naming `who`): one of scales and sizes, two entries,
// scales > 0 and finite as float32, sizes >= 0.
void validate(const Resize2dParams& p, std::string_view who);
// TypeError naming `who` and x (`what`) unless the mode computes on `dtype` (linear: float32
// only).
void check_resize_dtype(const Resize2dParams& p, DType dtype, std::string_view who,
                        std::string_view what);
// The scale of dim k (0: height, 1: width) as the kernels use it: the float32 value of the
// given scale, or 0 when the sizes are given (the kernels then take OH / H).
float resize_scale(const Resize2dParams& p, std::size_t k);
// The output extent of dim k for an input extent `in` (the header comment); ValueError naming
// `who` past 2^62.
std::int64_t resize_extent(const Resize2dParams& p, std::size_t k, std::int64_t in,
                           std::string_view who);

te::NDArray resize2d(const te::NDArray& x, const Resize2dParams& p);

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/image-inl.hpp>
#endif
