// Host kernels for 2-D pooling over NCHW arrays. The semantics below are the definition the
// graph's pooling ops and every accelerator strategy must reproduce.
//
//   max_pool2d(x[N, C, H, W], {pool_size = {kh, kw}, strides = {sh, sw},
//              padding = {pt, pl, pb, pr}}) -> y[N, C, OH, OW]
//       OH = floor((H + pt + pb - kh) / sh) + 1, OW likewise;
//       y = the largest element of x in the window (rows oy*sh - pt .. +kh-1, columns
//       ox*sw - pl .. +kw-1); padding never wins: only elements inside x compete. float32: a NaN
//       in the window makes the result NaN.
//   avg_pool2d(x, {..., count_include_pad}) -> y[N, C, OH, OW]
//       sum of the elements of x in the window divided by the count: kh*kw when
//       count_include_pad, else the number of elements inside x. Integers: the exact sum,
//       floor-divided by the count (rounds towards minus infinity: -7 / 2 = -4), same dtype
//       as x. float32: summed in float32 row by row, then divided by the count.
//   global_avg_pool2d(x[N, C, H, W]) -> y[N, C, 1, 1]: avg_pool2d over the whole plane.
// pool_size >= 1, strides >= 1, 0 <= padding < pool_size (so every window holds at least one
// element of x), or ValueError. Integer inputs of at most 32 bits for the averages.
//
//   auto y = host::max_pool2d(x, {.pool_size = {3, 3}, .strides = {2, 2},
//                                 .padding = {1, 1, 1, 1}});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/te/ndarray.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace dlavm::host {

struct Pool2dParams {
  std::array<std::int64_t, 2> pool_size{0, 0};      // (height, width); required
  std::array<std::int64_t, 2> strides{1, 1};        // (height, width)
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  // (top, left, bottom, right)
  bool count_include_pad = true;                    // avg_pool2d only
};

// ValueError naming `who` and the attribute when a parameter is out of its domain.
void validate(const Pool2dParams& p, std::string_view who);

te::NDArray max_pool2d(const te::NDArray& x, const Pool2dParams& p);
te::NDArray avg_pool2d(const te::NDArray& x, const Pool2dParams& p);
te::NDArray global_avg_pool2d(const te::NDArray& x);

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/pool-inl.hpp>
#endif
