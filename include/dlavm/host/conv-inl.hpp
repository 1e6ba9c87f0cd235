// Definitions for host/conv.hpp. The loops keep one weight in a register and sweep a row of
// outputs with it (contiguous when the stride is 1), so the inner loop vectorizes; the order
// of the sum for each output is still c, ky, kx ascending.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/conv.hpp>
#include <dlavm/host/onednn.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dlavm::host {

namespace detail {

// c: the input channels of one group (w's dim 1); o: all output channels.
struct Conv2dDims {
  std::int64_t n, c, h, w, o, kh, kw, oh, ow, sh, sw, pt, pl;
  std::int64_t groups = 1, dh = 1, dw = 1;
};

// The outputs [first, last) along one axis whose input position o*stride - pad + k is inside
// [0, extent).
inline std::pair<std::int64_t, std::int64_t> valid_outputs(std::int64_t extent, std::int64_t out,
                                                           std::int64_t stride, std::int64_t pad,
                                                           std::int64_t k) {
  const std::int64_t first = std::max<std::int64_t>(0, ceil_div(pad - k, stride));
  const std::int64_t last = std::min(out, floor_div(extent - 1 + pad - k, stride) + 1);
  return {first, std::max(first, last)};
}

// dst[i] += w * src[i] for i < count. The main loop's trip count is a multiple of 8 and the
// pointers do not alias, so compilers vectorize it even under GCC's -O2 cost model.
template <class T>
inline void axpy(T* __restrict dst, const T* __restrict src, T w, std::int64_t count) {
  const std::int64_t body = count - count % 8;
  for (std::int64_t i = 0; i < body; ++i) dst[i] += w * src[i];
  for (std::int64_t i = body; i < count; ++i) dst[i] += w * src[i];
}

// y (zeroed, [N, O, OH, OW]) += conv2d(x, w): T is uint32_t (wrapping) or float.
template <class T>
void conv2d_loops(const T* x, const T* w, T* y, const Conv2dDims& d) {
  const std::int64_t group_outputs = d.o / d.groups;
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t o = 0; o < d.o; ++o) {
      T* out = y + (n * d.o + o) * d.oh * d.ow;
      const std::int64_t first_channel = (o / group_outputs) * d.c;
      for (std::int64_t c = 0; c < d.c; ++c) {
        const T* plane = x + ((n * d.groups * d.c) + first_channel + c) * d.h * d.w;
        const T* kernel = w + (o * d.c + c) * d.kh * d.kw;
        for (std::int64_t ky = 0; ky < d.kh; ++ky) {
          const auto [y0, y1] = valid_outputs(d.h, d.oh, d.sh, d.pt, ky * d.dh);
          for (std::int64_t kx = 0; kx < d.kw; ++kx) {
            const auto [x0, x1] = valid_outputs(d.w, d.ow, d.sw, d.pl, kx * d.dw);
            const T wv = kernel[ky * d.kw + kx];
            const std::int64_t count = x1 - x0;
            if (count == 0) continue;
            for (std::int64_t oy = y0; oy < y1; ++oy) {
              const T* src =
                  plane + (oy * d.sh - d.pt + ky * d.dh) * d.w + (x0 * d.sw - d.pl + kx * d.dw);
              T* dst = out + oy * d.ow + x0;
              if (d.sw == 1) {
                axpy(dst, src, wv, count);
              } else {
                for (std::int64_t i = 0; i < count; ++i) dst[i] += wv * src[i * d.sw];
              }
            }
          }
        }
      }
    }
}

}  // namespace detail

DLAVM_INLINE std::int64_t dilated_extent(std::int64_t k, std::int64_t dilation) {
  return (k - 1) * dilation + 1;
}

DLAVM_INLINE void validate(const Conv2dParams& p, std::string_view who) {
  for (auto s : p.strides)
    if (s < 1)
      raise<ValueError>("{}: attribute 'strides' is [{}]; strides must be >= 1", who,
                        fmt::join(p.strides, ", "));
  for (auto v : p.padding)
    if (v < 0)
      raise<ValueError>("{}: attribute 'padding' is [{}]; padding must be >= 0", who,
                        fmt::join(p.padding, ", "));
  if (p.groups < 1)
    raise<ValueError>("{}: attribute 'groups' is {}; it must be >= 1", who, p.groups);
  for (auto d : p.dilations)
    if (d < 1)
      raise<ValueError>("{}: attribute 'dilations' is [{}]; dilations must be >= 1", who,
                        fmt::join(p.dilations, ", "));
}

DLAVM_INLINE te::NDArray conv2d(const te::NDArray& x, const te::NDArray& w, const Conv2dParams& p) {
  constexpr std::string_view who = "host::conv2d";
  validate(p, who);
  const DType out_dtype = product_dtype_or_raise(who, "x", x.dtype(), "w", w.dtype());
  detail::require_rank(who, "x", x, 4);
  detail::require_rank(who, "w", w, 4);
  const auto& xs = x.shape();
  const auto& ws = w.shape();
  if (ws[1] * p.groups != xs[1])
    raise<ShapeError>("{}: x {} has {} channels but w {} expects {} ({} per group, groups = {})",
                      who, detail::shape_str(xs), xs[1], detail::shape_str(ws), ws[1] * p.groups,
                      ws[1], p.groups);
  if (ws[0] % p.groups != 0)
    raise<ShapeError>("{}: w {} has {} output channels, not a multiple of groups = {}", who,
                      detail::shape_str(ws), ws[0], p.groups);
  detail::Conv2dDims d{xs[0],
                       ws[1],
                       xs[2],
                       xs[3],
                       ws[0],
                       ws[2],
                       ws[3],
                       0,
                       0,
                       p.strides[0],
                       p.strides[1],
                       p.padding[0],
                       p.padding[1],
                       p.groups,
                       p.dilations[0],
                       p.dilations[1]};
  const std::int64_t kh = dilated_extent(d.kh, d.dh);
  const std::int64_t kw = dilated_extent(d.kw, d.dw);
  const std::int64_t padded_h = d.h + p.padding[0] + p.padding[2];
  const std::int64_t padded_w = d.w + p.padding[1] + p.padding[3];
  if (padded_h < kh || padded_w < kw)
    raise<ShapeError>("{}: the {}x{} kernel is larger than the padded {}x{} input", who, kh, kw,
                      padded_h, padded_w);
  d.oh = window_output(d.h, p.padding[0] + p.padding[2], kh, d.sh);
  d.ow = window_output(d.w, p.padding[1] + p.padding[3], kw, d.sw);
  te::NDArray y(out_dtype, {d.n, d.o, d.oh, d.ow});
  if (out_dtype.is_float()) {
    const onednn::ConvShape s{.n = d.n,
                              .c = xs[1],
                              .h = d.h,
                              .w = d.w,
                              .o = d.o,
                              .kh = d.kh,
                              .kw = d.kw,
                              .oh = d.oh,
                              .ow = d.ow,
                              .strides = p.strides,
                              .padding = p.padding,
                              .dilations = p.dilations,
                              .groups = p.groups};
    if (!onednn::convolution(s, x.fdata().data(), w.fdata().data(), y.fdata().data()))
      detail::conv2d_loops(x.fdata().data(), w.fdata().data(), y.fdata().data(), d);
  } else {
    const auto xd = detail::to_u32(x), wd = detail::to_u32(w);
    std::vector<std::uint32_t> yd(y.size(), 0);
    detail::conv2d_loops(xd.data(), wd.data(), yd.data(), d);
    detail::store_i32(yd, y);
  }
  return y;
}

DLAVM_INLINE void validate(const ConvTranspose2dParams& p, std::string_view who) {
  validate(
      Conv2dParams{
          .strides = p.strides, .padding = p.padding, .groups = p.groups, .dilations = p.dilations},
      who);
  for (std::size_t k = 0; k < 2; ++k)
    if (p.output_padding[k] < 0 || p.output_padding[k] >= std::max(p.strides[k], p.dilations[k]))
      raise<ValueError>(
          "{}: attribute 'output_padding' is [{}]; each must be >= 0 and below the larger of "
          "the stride and the dilation",
          who, fmt::join(p.output_padding, ", "));
}

DLAVM_INLINE std::int64_t transposed_extent(const ConvTranspose2dParams& p, std::size_t k,
                                            std::int64_t in, std::int64_t kernel) {
  return p.strides[k] * (in - 1) + p.output_padding[k] + dilated_extent(kernel, p.dilations[k]) -
         p.padding[k] - p.padding[k + 2];
}

DLAVM_INLINE te::NDArray conv2d_transpose(const te::NDArray& x, const te::NDArray& w,
                                          const ConvTranspose2dParams& p) {
  constexpr std::string_view who = "host::conv2d_transpose";
  validate(p, who);
  detail::require_float32(who, "x", x);
  detail::require_float32(who, "w", w);
  detail::require_rank(who, "x", x, 4);
  detail::require_rank(who, "w", w, 4);
  const auto& xs = x.shape();
  const auto& ws = w.shape();
  if (ws[0] != xs[1] || xs[1] % p.groups != 0)
    raise<ShapeError>("{}: x {} has {} channels but w {} takes {} (in groups = {})", who,
                      detail::shape_str(xs), xs[1], detail::shape_str(ws), ws[0], p.groups);
  const std::int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  const std::int64_t og = ws[1], o = og * p.groups, kh = ws[2], kw = ws[3];
  const std::int64_t oh = transposed_extent(p, 0, h, kh), ow = transposed_extent(p, 1, wd, kw);
  if (oh < 1 || ow < 1)
    raise<ShapeError>("{}: the output would be {}x{} (the padding crops everything)", who, oh, ow);
  te::NDArray y(DType::float32(), {n, o, oh, ow});
  const onednn::ConvShape s{
      .n = n,
      .c = c,
      .h = h,
      .w = wd,
      .o = o,
      .kh = kh,
      .kw = kw,
      .oh = oh,
      .ow = ow,
      .strides = p.strides,
      .padding = {p.padding[0], p.padding[1], p.padding[2] - p.output_padding[0],
                  p.padding[3] - p.output_padding[1]},
      .dilations = p.dilations,
      .groups = p.groups,
      .transposed = true};
  if (onednn::convolution(s, x.fdata().data(), w.fdata().data(), y.fdata().data())) return y;
  const float* xd = x.fdata().data();
  const float* wdata = w.fdata().data();
  float* yd = y.fdata().data();
  const std::int64_t cg = c / p.groups;
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t ci = 0; ci < c; ++ci) {
      const std::int64_t first_output = (ci / cg) * og;
      for (std::int64_t iy = 0; iy < h; ++iy)
        for (std::int64_t ix = 0; ix < wd; ++ix) {
          const float v = xd[((b * c + ci) * h + iy) * wd + ix];
          for (std::int64_t oi = 0; oi < og; ++oi) {
            const float* kernel = wdata + (ci * og + oi) * kh * kw;
            float* plane = yd + (b * o + first_output + oi) * oh * ow;
            for (std::int64_t ky = 0; ky < kh; ++ky) {
              const std::int64_t oy = iy * p.strides[0] - p.padding[0] + ky * p.dilations[0];
              if (oy < 0 || oy >= oh) continue;
              for (std::int64_t kx = 0; kx < kw; ++kx) {
                const std::int64_t ox = ix * p.strides[1] - p.padding[1] + kx * p.dilations[1];
                if (ox >= 0 && ox < ow) plane[oy * ow + ox] += v * kernel[ky * kw + kx];
              }
            }
          }
        }
    }
  return y;
}

}  // namespace dlavm::host
