// Host kernels for products of matrices: dense and matmul. The semantics below are the
// definition the graph ops and every accelerator strategy must reproduce.
//
//   dense(x[..., K], w[N, K]) -> y[..., N]        y[..., n] = sum_k x[..., k] * w[n, k]
//   matmul(a[A..., M, K], b[B..., K, N]) -> y[C..., M, N]
//       C = numpy broadcast of the batch dims A and B (aligned at the end, 1 stretches);
//       y[c, m, n] = sum_k a[c|A, m, k] * b[c|B, k, n]   (c|A: c with stretched dims at 0)
//
// Element types (host::accumulate_dtype): int8 x int8 -> int32 and int32 x int32 -> int32;
// the integer result is the exact sum of exact products reduced modulo 2^32 into int32
// (two's-complement wrap-around, as VTA's int32 accumulator), so the order of the sum does
// not matter. float32 x float32 -> float32: each product and partial sum is a float32, added
// in ascending k (a compiler may contract a multiply and an add into an FMA on targets that
// have one; compare float results with te::allclose). Other pairs are a TypeError.
//
//   // x int8 [1, 16, 64], w int8 [32, 64] -> int32 [1, 16, 32]
//   auto y = host::dense(x, w);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/te/ndarray.hpp>

namespace dlavm::host {

te::NDArray dense(const te::NDArray& x, const te::NDArray& w);
te::NDArray matmul(const te::NDArray& a, const te::NDArray& b);

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/linear-inl.hpp>
#endif
