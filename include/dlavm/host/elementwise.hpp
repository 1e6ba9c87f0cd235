// Host kernels for element-wise ops. The semantics below are the definition the graph ops and
// every accelerator strategy must reproduce.
//
//   add(a, b), mul(a, b)   numpy broadcast of the shapes (aligned at the end, 1 stretches);
//                          one dtype for both; integers wrap around (two's complement: the
//                          exact result modulo 2^bits), float32 rounds as C++ float does.
//   bias_add(x, b[C], {axis = 1})   y[..., c, ...] = x[..., c, ...] + b[c] with c along axis
//                          (negative counts from the end); same dtype, wraps like add.
//   relu(x)                x < 0 ? 0 : x (float32: NaN and -0.0 stay as they are).
//   clip(x, {lo, hi})      min(max(x, lo), hi) with lo <= hi. Integers: the bounds are
//                          ceil(lo) and floor(hi) (at least one integer must lie in [lo, hi]),
//                          taken within the dtype's range; float32: the bounds rounded to float,
//                          NaN stays NaN.
//
//   auto y = host::add(a, b);          // int8 [2, 1, 4] + int8 [3, 1] -> int8 [2, 3, 4]
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <string_view>
#include <utility>

namespace dlavm::host {

struct BiasAddParams {
  std::int64_t axis = 1;
};

struct ClipParams {
  double lo = 0;
  double hi = 0;
};

// ValueError naming `who` when lo > hi.
void validate(const ClipParams& p, std::string_view who);
// The integer bounds clip uses for an integer dtype: ceil(lo) and floor(hi) within the dtype's
// range; ValueError naming `who` when no value of the dtype lies in [lo, hi].
std::pair<std::int64_t, std::int64_t> clip_int_bounds(const ClipParams& p, DType dtype,
                                                      std::string_view who);

te::NDArray add(const te::NDArray& a, const te::NDArray& b);
te::NDArray mul(const te::NDArray& a, const te::NDArray& b);
te::NDArray bias_add(const te::NDArray& x, const te::NDArray& b, const BiasAddParams& p = {});
te::NDArray relu(const te::NDArray& x);
te::NDArray clip(const te::NDArray& x, const ClipParams& p);

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/elementwise-inl.hpp>
#endif
