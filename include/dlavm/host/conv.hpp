// Host kernel for 2-D convolution (NCHW activations, OIHW weights). The semantics below are
// the definition the graph's conv2d and every accelerator strategy must reproduce.
//
//   conv2d(x[N, C, H, W], w[O, C, KH, KW], {strides = {sh, sw}, padding = {pt, pl, pb, pr}})
//     -> y[N, O, OH, OW],  OH = floor((H + pt + pb - KH) / sh) + 1,
//                          OW = floor((W + pl + pr - KW) / sw) + 1
//     y[n, o, oy, ox] = sum over c, ky, kx of x[n, c, oy*sh - pt + ky, ox*sw - pl + kx] * w[o, c,
//     ky, kx] where positions outside x (the zero padding) contribute nothing.
// One group only (groups = 1). Element types as host::dense: int8 x int8 -> int32 and
// int32 x int32 -> int32, the exact sum reduced modulo 2^32; float32 -> float32 summed in
// float32 over c, then ky, then kx ascending, padding positions skipped.
// strides >= 1, padding >= 0, groups = 1, and OH, OW >= 1, or ValueError/ShapeError.
//
//   auto y = host::conv2d(x, w, {.strides = {2, 2}, .padding = {3, 3, 3, 3}});
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
  std::int64_t groups = 1;                          // 1 only
};

// ValueError naming `who` and the attribute when a parameter is out of its domain.
void validate(const Conv2dParams& p, std::string_view who);

te::NDArray conv2d(const te::NDArray& x, const te::NDArray& w, const Conv2dParams& p = {});

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/conv-inl.hpp>
#endif
