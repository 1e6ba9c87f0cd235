// Host kernel for 2-D convolution (NCHW activations, OIHW weights). The semantics below are
// the definition the graph's conv2d and every accelerator strategy must reproduce.
//
//   conv2d(x[N, C, H, W], w[O, C / G, KH, KW], {strides = {sh, sw}, padding = {pt, pl, pb, pr},
//          groups = G, dilations = {dh, dw}})
//     -> y[N, O, OH, OW],  OH = floor((H + pt + pb - ((KH - 1) * dh + 1)) / sh) + 1,
//                          OW likewise
//     y[n, o, oy, ox] = sum over c < C / G, ky, kx of
//         x[n, g * C / G + c, oy*sh - pt + ky*dh, ox*sw - pl + kx*dw] * w[o, c, ky, kx]
//     with g = o / (O / G), the group of output channel o, where positions outside x (the zero
//     padding) contribute nothing. G divides C and O (a depthwise convolution: G = C).
// Element types as host::dense: int8 x int8 -> int32 and int32 x int32 -> int32, the exact sum
// reduced modulo 2^32; float32 -> float32 summed in float32: by oneDNN when dlavm is built
// with it (host/onednn.hpp), in an order of its own, and otherwise over c, then ky, then kx
// ascending, padding positions skipped.
// strides, dilations and groups >= 1, padding >= 0, and OH, OW >= 1, or ValueError/ShapeError.
//
//   auto y = host::conv2d(x, w, {.strides = {2, 2}, .padding = {3, 3, 3, 3}});
//
//   conv2d_transpose(x[N, C, H, W], w[C, O / G, KH, KW], {strides, padding, output_padding =
//                    {oph, opw}, groups = G, dilations})
//     -> y[N, O, OH, OW],  OH = sh * (H - 1) + oph + (KH - 1) * dh + 1 - pt - pb, OW likewise
//     the gradient of conv2d with respect to its input (ONNX's ConvTranspose): every input
//     element scatters x[n, c, iy, ix] * w[c, o, ky, kx] onto
//     y[n, g * O / G + o, iy*sh - pt + ky*dh, ix*sw - pl + kx*dw] (g = c / (C / G)), the
//     positions outside y dropped. float32 only, summed in float32 (by oneDNN when built with
//     it, otherwise in the order of n, c, iy, ix, o, ky, kx). output_padding < max(stride,
//     dilation) per dim; OH, OW >= 1.
//
//   auto up = host::conv2d_transpose(x, w, {.strides = {2, 2}, .padding = {1, 1, 1, 1}});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/te/ndarray.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace dlavm::host {

struct Conv2dParams {
  std::array<std::int64_t, 2> strides{1, 1};        // (height, width)
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  // (top, left, bottom, right)
  std::int64_t groups = 1;                          // G: channels in G independent groups
  std::array<std::int64_t, 2> dilations{1, 1};      // (height, width): kernel taps' spacing
};

// ValueError naming `who` and the attribute when a parameter is out of its domain.
void validate(const Conv2dParams& p, std::string_view who);
// The extent a kernel of k taps spaced `dilation` apart covers: (k - 1) * dilation + 1.
std::int64_t dilated_extent(std::int64_t k, std::int64_t dilation);

te::NDArray conv2d(const te::NDArray& x, const te::NDArray& w, const Conv2dParams& p = {});

struct ConvTranspose2dParams {
  std::array<std::int64_t, 2> strides{1, 1};
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};   // (top, left, bottom, right), cropped
  std::array<std::int64_t, 2> output_padding{0, 0};  // rows and columns added at the end
  std::int64_t groups = 1;
  std::array<std::int64_t, 2> dilations{1, 1};
};

void validate(const ConvTranspose2dParams& p, std::string_view who);
// OH (k = 0) or OW (k = 1) for an input extent `in` and a kernel extent `kernel` (the header
// comment), without the check that it is >= 1.
std::int64_t transposed_extent(const ConvTranspose2dParams& p, std::size_t k, std::int64_t in,
                               std::int64_t kernel);

te::NDArray conv2d_transpose(const te::NDArray& x, const te::NDArray& w,
                             const ConvTranspose2dParams& p = {});

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/conv-inl.hpp>
#endif
