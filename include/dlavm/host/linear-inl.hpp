// Definitions for host/linear.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/linear.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <cstdint>
#include <vector>

namespace dlavm::host {

namespace detail {

// y[m, :] += a[m, k] * b[k, :] for ascending k: one [M, K] x [K, N] product into zeroed y.
template <class T>
void matmul_block(const T* a, const T* b, T* y, std::int64_t m_out, std::int64_t k_in,
                  std::int64_t n_out) {
  for (std::int64_t m = 0; m < m_out; ++m) {
    T* yr = y + m * n_out;
    for (std::int64_t k = 0; k < k_in; ++k) {
      const T av = a[m * k_in + k];
      const T* br = b + k * n_out;
      for (std::int64_t n = 0; n < n_out; ++n) yr[n] += av * br[n];
    }
  }
}

}  // namespace detail

DLAVM_INLINE te::NDArray dense(const te::NDArray& x, const te::NDArray& w) {
  constexpr std::string_view who = "host::dense";
  const DType out_dtype = product_dtype_or_raise(who, "x", x.dtype(), "w", w.dtype());
  detail::require_min_rank(who, "x", x, 1);
  detail::require_rank(who, "w", w, 2);
  const std::int64_t k_in = x.shape().back();
  if (w.shape()[1] != k_in)
    raise<ShapeError>("{}: x {} has K = {} but w {} has K = {}", who, detail::shape_str(x.shape()),
                      k_in, detail::shape_str(w.shape()), w.shape()[1]);
  const std::int64_t n_out = w.shape()[0];
  Shape out_shape = x.shape();
  out_shape.back() = n_out;
  te::NDArray y(out_dtype, out_shape);
  const std::int64_t rows =
      element_count(std::span<const std::int64_t>(x.shape().data(), x.ndim() - 1));
  if (out_dtype.is_float()) {
    runtime::dense(x.fdata().data(), w.fdata().data(), y.fdata().data(), rows, n_out, k_in);
  } else {
    const auto xs = detail::to_u32(x), ws = detail::to_u32(w);
    std::vector<std::uint32_t> ys(y.size());
    runtime::dense(xs.data(), ws.data(), ys.data(), rows, n_out, k_in);
    detail::store_i32(ys, y);
  }
  return y;
}

DLAVM_INLINE te::NDArray matmul(const te::NDArray& a, const te::NDArray& b) {
  constexpr std::string_view who = "host::matmul";
  const DType out_dtype = product_dtype_or_raise(who, "a", a.dtype(), "b", b.dtype());
  detail::require_min_rank(who, "a", a, 2);
  detail::require_min_rank(who, "b", b, 2);
  const auto& as = a.shape();
  const auto& bs = b.shape();
  const std::int64_t m_out = as[as.size() - 2], k_in = as.back();
  const std::int64_t n_out = bs.back();
  if (bs[bs.size() - 2] != k_in)
    raise<ShapeError>("{}: a {} has K = {} (its last dim) but b {} has K = {} (its dim -2)", who,
                      detail::shape_str(as), k_in, detail::shape_str(bs), bs[bs.size() - 2]);
  const std::span<const std::int64_t> a_batch(as.data(), as.size() - 2);
  const std::span<const std::int64_t> b_batch(bs.data(), bs.size() - 2);
  const auto batch = broadcast_shapes(a_batch, b_batch);
  if (!batch)
    raise<ShapeError>("{}: batch dims {} of a and {} of b do not broadcast", who,
                      detail::shape_str(a_batch), detail::shape_str(b_batch));
  Shape out_shape = *batch;
  out_shape.push_back(m_out);
  out_shape.push_back(n_out);
  te::NDArray y(out_dtype, out_shape);
  // Offsets of each output batch in a and b (stretched dims repeat the same block).
  const auto a_off = detail::broadcast_offsets(*batch, a_batch, m_out * k_in);
  const auto b_off = detail::broadcast_offsets(*batch, b_batch, k_in * n_out);
  const std::int64_t y_block = m_out * n_out;
  if (out_dtype.is_float()) {
    const float* ad = a.fdata().data();
    const float* bd = b.fdata().data();
    float* yd = y.fdata().data();
    for (std::size_t i = 0; i < a_off.size(); ++i)
      detail::matmul_block(ad + a_off[i], bd + b_off[i],
                           yd + static_cast<std::int64_t>(i) * y_block, m_out, k_in, n_out);
  } else {
    const auto ad = detail::to_u32(a), bd = detail::to_u32(b);
    std::vector<std::uint32_t> yd(y.size(), 0);
    for (std::size_t i = 0; i < a_off.size(); ++i)
      detail::matmul_block(ad.data() + a_off[i], bd.data() + b_off[i],
                           yd.data() + static_cast<std::int64_t>(i) * y_block, m_out, k_in, n_out);
    detail::store_i32(yd, y);
  }
  return y;
}

}  // namespace dlavm::host
