// Float32 convolutions through oneDNN, when dlavm is built with it (DLAVM_WITH_ONEDNN, which
// the CMake target dlavm::dlavm defines when it finds the library; docs/design.md says why
// oneDNN). host::conv2d and host::conv2d_transpose call these for float32 and keep their own
// loops otherwise, so the result is the same sum in another order (float32 rounding apart).
//
// oneDNN generates its kernels for the CPU it runs on (AVX2, AVX-512) and picks blocked
// layouts for them; the activations are reordered from and to NCHW around each call. Threads:
// oneDNN's OpenMP runtime (OMP_NUM_THREADS).
//
//   host::onednn::ConvShape s{.n = 1, .c = 3, .h = 224, ...};
//   if (!host::onednn::convolution(s, x, w, y)) { /* oneDNN has no kernel for it: loops */ }
#pragma once

#include <dlavm/core/api.hpp>

#include <array>
#include <cstdint>

namespace dlavm::host::onednn {

// One convolution over NCHW data. Forward: w is [O, C / G, KH, KW] and y [N, O, OH, OW].
// Transposed (ONNX's ConvTranspose): w is [C, O / G, KH, KW]. Padding is (top, left, bottom,
// right); for a transposed one, output_padding is already taken from bottom and right.
struct ConvShape {
  std::int64_t n = 1, c = 1, h = 1, w = 1, o = 1, kh = 1, kw = 1, oh = 1, ow = 1;
  std::array<std::int64_t, 2> strides{1, 1};
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};
  std::array<std::int64_t, 2> dilations{1, 1};
  std::int64_t groups = 1;
  bool transposed = false;
};

// Whether dlavm was built with oneDNN.
constexpr bool available() {
#ifdef DLAVM_WITH_ONEDNN
  return true;
#else
  return false;
#endif
}

// y = the convolution of x by w (y is overwritten). False, with y untouched, when dlavm is
// built without oneDNN or oneDNN has no kernel for the shape (negative padding, say).
bool convolution(const ConvShape& s, const float* x, const float* w, float* y);

}  // namespace dlavm::host::onednn

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/onednn-inl.hpp>
#endif
