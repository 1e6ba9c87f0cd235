// Definitions for graph/layout.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/ne/int_math.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/vta/layout.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>

namespace dlavm::graph {

DLAVM_INLINE std::string to_string(const Layout& l) {
  if (l.planes != 1) {
    Layout value = l;
    value.planes = 1;
    auto text = to_string(value);
    text.insert(text.size() - 1, fmt::format(", {} planes", l.planes));
    return text;
  }
  switch (l.kind) {
    case Layout::Kind::Plain:
      return "plain";
    case Layout::Kind::Activation:
      return fmt::format("activation[{}x{}]", l.rows, l.cols);
    case Layout::Kind::Matrix:
      return fmt::format("matrix[{}x{}]", l.rows, l.cols);
    case Layout::Kind::ConvWeight:
      return fmt::format("conv_weight[{}x{}]", l.rows, l.cols);
    case Layout::Kind::DenseWeight:
      return fmt::format("dense_weight[{}x{}]", l.rows, l.cols);
    case Layout::Kind::Channel:
      return fmt::format("channel[{}x{}]", l.rows, l.cols);
    case Layout::Kind::BatchedMatrix:
      return l.groups == 1
                 ? fmt::format("batched_matrix[{}x{}]", l.rows, l.cols)
                 : fmt::format("batched_matrix[{}x{}, {} groups]", l.rows, l.cols, l.groups);
    case Layout::Kind::MatmulWeight:
      return fmt::format("matmul_weight[{}x{}]", l.rows, l.cols);
    case Layout::Kind::UnfoldedActivation:
    case Layout::Kind::UnfoldedConvWeight:
      return fmt::format("{}[{}x{}, kw {} stride {} pad {} {}]",
                         l.kind == Layout::Kind::UnfoldedActivation ? "unfolded_activation"
                                                                    : "unfolded_conv_weight",
                         l.rows, l.cols, l.unfold.kw, l.unfold.stride, l.unfold.pad_left,
                         l.unfold.pad_right);
    case Layout::Kind::GroupedConvWeight:
      return fmt::format("grouped_conv_weight[{}x{}, {} groups]", l.rows, l.cols, l.groups);
    case Layout::Kind::ChannelWeights:
      return fmt::format("channel_weights[{}x{}]", l.rows, l.cols);
  }
  return "?";
}

namespace detail {

// The logical shape seen as [A, B, H, W], tiled along A (rows) and B (columns).
template <class Dim>
struct Tiled4 {
  Dim a, b, h, w;
};

inline void require_tile(const Layout& l) {
  if (l.rows < 1 || l.cols < 1)
    raise<ValueError>("layout {}: tile rows and columns must be at least 1, got {}x{}",
                      to_string(l), l.rows, l.cols);
}

// Whether the layout keeps a leading dim of batched products (graph/layout.hpp).
inline bool batched(const Layout& l) {
  return l.kind == Layout::Kind::BatchedMatrix || l.kind == Layout::Kind::MatmulWeight;
}

inline void require_layout_rank(const Layout& l, std::size_t rank) {
  require_tile(l);
  if (l.planes != 1 && (l.planes < 1 || l.planes > 4 ||
                        (l.kind != Layout::Kind::Activation && l.kind != Layout::Kind::Matrix &&
                         l.kind != Layout::Kind::BatchedMatrix)))
    raise<ValueError>("layout {}: byte planes are 1 to 4, of an activation or a matrix",
                      to_string(l));
  const auto want = [&]() -> std::size_t {
    switch (l.kind) {
      case Layout::Kind::Activation:
      case Layout::Kind::ConvWeight:
      case Layout::Kind::UnfoldedActivation:
      case Layout::Kind::UnfoldedConvWeight:
      case Layout::Kind::GroupedConvWeight:
        return 4;
      case Layout::Kind::DenseWeight:
        return 2;
      case Layout::Kind::Channel:
      case Layout::Kind::ChannelWeights:
        return 1;
      default:
        return 0;
    }
  }();
  if (l.groups != 1 && l.kind != Layout::Kind::GroupedConvWeight &&
      (l.kind != Layout::Kind::BatchedMatrix || l.groups < 1 || l.planes != 1))
    raise<ValueError>(
        "layout {}: groups other than 1 are a grouped convolution's weights' or a batched "
        "matrix's (without byte planes)",
        to_string(l));
  if (l.groups > 1 && rank < 3)
    raise<ShapeError>(
        "layout {}: a value of rank {} has no dim before its rows whose products the lanes "
        "could group (it needs rank 3 or more)",
        to_string(l), rank);
  const bool matrix = l.kind == Layout::Kind::Matrix || batched(l);
  if (matrix ? rank < 2 : rank != want)
    raise<ShapeError>("layout {}: a value of rank {} cannot take it (it needs rank {}{})",
                      to_string(l), rank, matrix ? 2 : want, matrix ? " or more" : "");
}

// A lane-grouped BatchedMatrix's G products of C columns must share one column tile.
inline void require_lane_groups(const Layout& l, std::int64_t columns) {
  if (l.groups * columns > l.cols)
    raise<ValueError>("layout {}: {} groups of {} columns do not fit a tile's {} columns",
                      to_string(l), l.groups, columns, l.cols);
}

template <class Dim, class Mul>
Tiled4<Dim> as_tiled4(const Layout& l, const std::vector<Dim>& s, Mul mul) {
  require_layout_rank(l, s.size());
  switch (l.kind) {
    case Layout::Kind::Activation:
    case Layout::Kind::ConvWeight:
      return {s[0], s[1], s[2], s[3]};
    case Layout::Kind::Matrix: {
      Dim rows = s[0];
      for (std::size_t k = 1; k + 1 < s.size(); ++k) rows = mul(rows, s[k]);
      return {rows, s.back(), Dim(1), Dim(1)};
    }
    case Layout::Kind::DenseWeight:
      return {s[0], s[1], Dim(1), Dim(1)};
    default:
      raise<ValueError>("internal: layout {} is not a tiled 4-d layout, please report",
                        to_string(l));
  }
}

}  // namespace detail

DLAVM_INLINE std::variant<std::int64_t, std::string> grouped_input_tiles(
    std::int64_t rows, std::int64_t cols, std::int64_t groups, std::int64_t out_channels,
    std::int64_t group_in_channels) {
  if (groups < 1 || out_channels % groups != 0)
    return fmt::format("{} groups do not divide the {} output channels", groups, out_channels);
  const std::int64_t group_out = out_channels / groups;
  if (rows % group_out != 0)
    return fmt::format(
        "the groups' {} output channels do not divide a tile's {} (a tile must hold whole groups)",
        group_out, rows);
  const std::int64_t tile_inputs = rows / group_out * group_in_channels;
  if (tile_inputs % cols != 0)
    return fmt::format(
        "a tile's {} groups read {} input channels, not a whole number of {}-channel tiles",
        rows / group_out, tile_inputs, cols);
  return tile_inputs / cols;
}

namespace detail {

inline std::int64_t grouped_tiles_or_raise(const Layout& l, std::int64_t out_channels,
                                           std::int64_t group_in_channels) {
  auto s = grouped_input_tiles(l.rows, l.cols, l.groups, out_channels, group_in_channels);
  if (auto* why = std::get_if<std::string>(&s))
    raise<ValueError>("layout {}: weights [{}, {}, ...]: {}", to_string(l), out_channels,
                      group_in_channels, *why);
  return std::get<std::int64_t>(s);
}

// w [O, I/G, KH, KW] -> w' [O, S*T, KH, KW], block-diagonal per output tile (layout.hpp).
inline te::NDArray expand_groups(const te::NDArray& w, const Layout& l) {
  const auto& s = w.shape();
  const std::int64_t per_tile = grouped_tiles_or_raise(l, s[0], s[1]) * l.cols;
  const std::int64_t group_out = s[0] / l.groups, taps = s[2] * s[3];
  te::NDArray out(w.dtype(), {s[0], per_tile, s[2], s[3]});
  const auto src = w.data();
  auto dst = out.data();
  for (std::int64_t o = 0; o < s[0]; ++o) {
    const std::int64_t first = o / l.rows * per_tile;  // the tile's first input channel
    const std::int64_t group_first = o / group_out * s[1];
    for (std::int64_t i = 0; i < s[1]; ++i) {
      const std::int64_t j = group_first + i - first;
      for (std::int64_t k = 0; k < taps; ++k)
        dst[static_cast<std::size_t>((o * per_tile + j) * taps + k)] =
            src[static_cast<std::size_t>((o * s[1] + i) * taps + k)];
    }
  }
  return out;
}

}  // namespace detail

DLAVM_INLINE std::vector<ne::Expr> packed_shape(const Layout& l,
                                                const std::vector<ne::Expr>& shape) {
  if (l.kind == Layout::Kind::Plain) return shape;
  const auto tiles = [](const ne::Expr& n, std::int64_t t) {
    return t == 1 ? n : ne::simplify(ne::ceildiv(n, t));
  };
  if (l.kind == Layout::Kind::Channel) {
    detail::require_layout_rank(l, shape.size());
    return {tiles(shape[0], l.cols), l.rows, l.cols};
  }
  if (l.kind == Layout::Kind::ChannelWeights) {
    detail::require_layout_rank(l, shape.size());
    return {ne::simplify(tiles(shape[0], l.rows) + 1), l.rows, l.cols};
  }
  if (l.kind == Layout::Kind::UnfoldedActivation || l.kind == Layout::Kind::UnfoldedConvWeight) {
    detail::require_layout_rank(l, shape.size());
    const auto& u = l.unfold;
    const bool act = l.kind == Layout::Kind::UnfoldedActivation;
    const ne::Expr ow =
        act ? ne::simplify(ne::floordiv(shape[3] + u.pad_left + u.pad_right - u.kw, u.stride) + 1)
            : ne::Expr(1);
    const Layout tiled{act ? Layout::Kind::Activation : Layout::Kind::ConvWeight, l.rows, l.cols};
    return packed_shape(tiled, {shape[0], ne::simplify(shape[1] * u.kw), shape[2], ow});
  }
  if (l.kind == Layout::Kind::GroupedConvWeight) {
    detail::require_layout_rank(l, shape.size());
    const auto out = shape[0].as_int(), in = shape[1].as_int();
    if (!out || !in)
      raise<ShapeError>("layout {}: the weights' channels must be constants, got [{}, {}]",
                        to_string(l), shape[0], shape[1]);
    const std::int64_t in_tiles = detail::grouped_tiles_or_raise(l, *out, *in);
    return packed_shape({Layout::Kind::ConvWeight, l.rows, l.cols},
                        {shape[0], in_tiles * l.cols, shape[2], shape[3]});
  }
  if (detail::batched(l)) {
    detail::require_layout_rank(l, shape.size());
    if (l.groups > 1) {
      // the products of the dim before the rows, G at a time in the lanes
      const std::size_t r = shape.size();
      const auto c = shape[r - 1].as_int();
      if (!c)
        raise<ShapeError>("layout {}: the columns must be a constant, got {}", to_string(l),
                          shape[r - 1]);
      detail::require_lane_groups(l, *c);
      std::vector<ne::Expr> regrouped(shape.begin(), shape.end() - 3);
      regrouped.insert(regrouped.end(), {ne::simplify(ne::ceildiv(shape[r - 3], l.groups)),
                                         shape[r - 2], ne::Expr(l.groups * *c)});
      Layout plain_groups = l;
      plain_groups.groups = 1;
      return packed_shape(plain_groups, regrouped);
    }
    ne::Expr products = 1;
    for (std::size_t k = 0; k + 2 < shape.size(); ++k) products = products * shape[k];
    const bool weight = l.kind == Layout::Kind::MatmulWeight;
    const auto& rows = shape[shape.size() - (weight ? 1 : 2)];
    const auto& cols = shape[shape.size() - (weight ? 2 : 1)];
    std::vector<ne::Expr> packed{ne::simplify(products), tiles(rows, l.rows), tiles(cols, l.cols)};
    if (l.planes != 1) packed.emplace_back(l.planes);
    packed.insert(packed.end(), {ne::Expr(l.rows), ne::Expr(l.cols)});
    return packed;
  }
  const auto d = detail::as_tiled4<ne::Expr>(
      l, shape, [](const ne::Expr& a, const ne::Expr& b) { return ne::simplify(a * b); });
  std::vector<ne::Expr> packed{tiles(d.a, l.rows), tiles(d.b, l.cols)};
  if (l.planes != 1) packed.emplace_back(l.planes);
  if (l.kind != Layout::Kind::Matrix && l.kind != Layout::Kind::DenseWeight)
    packed.insert(packed.end(), {d.h, d.w});
  packed.insert(packed.end(), {ne::Expr(l.rows), ne::Expr(l.cols)});
  return packed;
}

namespace detail {

// The array with the same elements in another shape of the same size (moved, not copied).
inline te::NDArray reshaped(te::NDArray a, std::vector<std::int64_t> shape) {
  if (a.shape() == shape) return a;
  return std::move(a).reshape(std::move(shape));
}

inline void require_integral(const te::NDArray& a, const Layout& l, const char* what) {
  if (!a.dtype().is_integral())
    raise<TypeError>("{} to layout {}: VTA's layouts hold integers, the array is {}", what,
                     to_string(l), a.dtype());
}

}  // namespace detail

namespace detail {

// x [N, C, H, W] -> [N, C*KW, H, OW], or w [O, C, KH, KW] -> [O, C*KW, KH, 1] (layout.hpp).
inline te::NDArray unfold_width(const te::NDArray& a, const Layout& l) {
  const auto& s = a.shape();
  const auto& u = l.unfold;
  const bool act = l.kind == Layout::Kind::UnfoldedActivation;
  if (u.kw < 1 || u.stride < 1 || u.pad_left < 0 || u.pad_right < 0 || (!act && s[3] != u.kw))
    raise<ValueError>("layout {}: does not unfold a value of shape [{}]", to_string(l),
                      fmt::join(s, ", "));
  const std::int64_t ow = act ? (s[3] + u.pad_left + u.pad_right - u.kw) / u.stride + 1 : 1;
  if (ow < 1) raise<ShapeError>("layout {}: a width of {} holds no window", to_string(l), s[3]);
  te::NDArray out(a.dtype(), {s[0], s[1] * u.kw, s[2], ow});
  const auto src = a.data();
  auto dst = out.data();
  std::size_t o = 0;
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t c = 0; c < s[1]; ++c)
      for (std::int64_t dx = 0; dx < u.kw; ++dx)
        for (std::int64_t y = 0; y < s[2]; ++y)
          for (std::int64_t j = 0; j < ow; ++j, ++o) {
            const std::int64_t x = act ? j * u.stride + dx - u.pad_left : dx;
            const auto from = static_cast<std::size_t>(((n * s[1] + c) * s[2] + y) * s[3] + x);
            dst[o] = x < 0 || x >= s[3] ? 0 : src[from];
          }
  return out;
}

}  // namespace detail

namespace detail {

// The int32 value of byte planes [outer..., P, inner...] (`plane_dim` = P's position):
// sum over p of plane p << 8p, the low planes unsigned and the top one signed.
inline te::NDArray join_planes(const te::NDArray& a, std::size_t plane_dim) {
  std::vector<std::int64_t> shape = a.shape();
  const std::int64_t planes = shape[plane_dim];
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(plane_dim));
  const auto span = [&](std::size_t from, std::size_t to) {
    return std::accumulate(shape.begin() + static_cast<std::ptrdiff_t>(from),
                           shape.begin() + static_cast<std::ptrdiff_t>(to), std::int64_t{1},
                           std::multiplies<>{});
  };
  const std::int64_t outer = span(0, plane_dim), inner = span(plane_dim, shape.size());
  te::NDArray out(DType::int32(), std::move(shape));
  const auto src = a.data();
  auto dst = out.data();
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      std::int64_t v = 0;
      for (std::int64_t p = 0; p < planes; ++p) {
        const std::int64_t byte = src[static_cast<std::size_t>((o * planes + p) * inner + i)];
        v += (p + 1 == planes ? byte : byte & 0xff) * (std::int64_t{1} << (8 * p));
      }
      dst[static_cast<std::size_t>(o * inner + i)] = v;
    }
  return out;
}

}  // namespace detail

namespace detail {

// A batched layout's value seen as [products, M, C] (or [products, K, N]).
inline std::array<std::int64_t, 3> as_products(std::span<const std::int64_t> s) {
  const auto products =
      std::accumulate(s.begin(), s.end() - 2, std::int64_t{1}, std::multiplies<>{});
  return {products, s[s.size() - 2], s[s.size() - 1]};
}

// A BatchedMatrix value with lane groups G > 1, [B..., Q, M, C], as [prod(B), Q, M, C]: the
// dims runtime::pack_batched_grouped takes (ShapeError, ValueError as require_lane_groups).
inline std::array<std::int64_t, 4> lane_grouped(const Layout& l, std::span<const std::int64_t> s) {
  require_layout_rank(l, s.size());
  const std::size_t r = s.size();
  require_lane_groups(l, s[r - 1]);
  const auto outer = std::accumulate(s.begin(), s.end() - 3, std::int64_t{1}, std::multiplies<>{});
  return {outer, s[r - 3], s[r - 2], s[r - 1]};
}

// packed_shape at constant dims, without building expressions (every unpack checks its array
// against it), for the layouts unpack reads.
inline std::vector<std::int64_t> packed_dims(const Layout& l, std::span<const std::int64_t> shape) {
  require_layout_rank(l, shape.size());
  if (l.kind == Layout::Kind::Channel) return {ne::ceil_div(shape[0], l.cols), l.rows, l.cols};
  if (l.kind == Layout::Kind::ChannelWeights)
    return {ne::ceil_div(shape[0], l.rows) + 1, l.rows, l.cols};
  std::vector<std::int64_t> packed;
  if (l.groups > 1) {
    const auto g = lane_grouped(l, shape);  // one column tile: G x C <= T
    return {g[0] * ne::ceil_div(g[1], l.groups), ne::ceil_div(g[2], l.rows), 1, l.rows, l.cols};
  }
  if (batched(l)) {
    const auto [products, m, c] = as_products(shape);
    const bool weight = l.kind == Layout::Kind::MatmulWeight;
    packed = {products, ne::ceil_div(weight ? c : m, l.rows), ne::ceil_div(weight ? m : c, l.cols)};
  } else {
    const std::vector<std::int64_t> s(shape.begin(), shape.end());
    const auto d = as_tiled4<std::int64_t>(l, s, std::multiplies<>{});
    packed = {ne::ceil_div(d.a, l.rows), ne::ceil_div(d.b, l.cols)};
    if (l.kind != Layout::Kind::Matrix && l.kind != Layout::Kind::DenseWeight)
      packed.insert(packed.end(), {d.h, d.w});
  }
  if (l.planes != 1) packed.insert(packed.begin() + (batched(l) ? 3 : 2), l.planes);
  packed.insert(packed.end(), {l.rows, l.cols});
  return packed;
}

// Calls run(at, n) for row i of product b of a BatchedMatrix value with c columns, in column
// order: a run of n <= l.cols elements in each column tile, starting at flat offset `at` of
// the packed [products, row_tiles, col_tiles, R, T] (the tile arithmetic once per row and
// tile, not per element: a decode step's scores and probabilities pass through every step).
template <class Run>
void for_each_row_run(const Layout& l, std::int64_t b, std::int64_t i, std::int64_t c,
                      std::int64_t row_tiles, std::int64_t col_tiles, Run&& run) {
  const std::int64_t tile = l.rows * l.cols;
  const std::int64_t at = ((b * row_tiles + i / l.rows) * col_tiles * tile) + (i % l.rows) * l.cols;
  for (std::int64_t jt = 0; jt < col_tiles; ++jt)
    run(at + (jt * tile), std::min(l.cols, c - jt * l.cols));
}

// Packs a BatchedMatrix value [.., M, C] (rows M) or a MatmulWeight value [.., K, N] (rows N,
// transposed) in one pass: each product tiled, zero-padded, one after the other.
inline te::NDArray pack_products(const te::NDArray& logical, const Layout& l) {
  require_layout_rank(l, logical.ndim());
  const auto [products, m, c] = as_products(logical.shape());
  const bool weight = l.kind == Layout::Kind::MatmulWeight;
  const std::int64_t rows = weight ? c : m, cols = weight ? m : c;
  const std::int64_t row_tiles = ne::ceil_div(rows, l.rows), col_tiles = ne::ceil_div(cols, l.cols);
  te::NDArray out(logical.dtype(), {products, row_tiles, col_tiles, l.rows, l.cols});
  const auto src = logical.data();
  auto dst = out.data();
  // the source read in order: element (i, j) of product b is row i, column j of [M, C]
  const std::int64_t tile = l.rows * l.cols;
  std::size_t from = 0;
  for (std::int64_t b = 0; b < products; ++b)
    for (std::int64_t i = 0; i < m; ++i) {
      if (weight) {
        // row i of [K, N] is column i of the packed [N, K]: one element per packed row
        const std::int64_t at = (b * row_tiles * col_tiles + i / l.cols) * tile + i % l.cols;
        for (std::int64_t jt = 0; jt < row_tiles; ++jt) {
          const std::int64_t n = std::min(l.rows, c - jt * l.rows);
          for (std::int64_t r = 0; r < n; ++r, ++from)
            dst[static_cast<std::size_t>(at + (jt * col_tiles * tile) + r * l.cols)] = src[from];
        }
      } else {
        for_each_row_run(l, b, i, c, row_tiles, col_tiles, [&](std::int64_t at, std::int64_t n) {
          std::copy_n(src.begin() + static_cast<std::ptrdiff_t>(from), n, dst.begin() + at);
          from += static_cast<std::size_t>(n);
        });
      }
    }
  return out;
}

// The ChannelWeights layout (layout.hpp): each value split into int8 weights against u.
inline te::NDArray pack_channel_weights(const te::NDArray& b, const Layout& l) {
  require_layout_rank(l, b.ndim());
  const std::int64_t c = b.shape()[0], tiles = ne::ceil_div(c, l.rows), parts = l.cols - 1;
  const std::int64_t bound = channel_weights_bound(l.cols);
  te::NDArray out(DType::int8(), {tiles + 1, l.rows, l.cols});
  auto dst = out.data();
  const auto src = b.data();
  for (std::int64_t ch = 0; ch < c; ++ch) {
    const std::int64_t v = src[static_cast<std::size_t>(ch)];
    if (v < -bound || v > bound)
      raise<ValueError>(
          "pack into layout {}: channel {} holds {}, outside the +-{} its {} int8 weights can "
          "add",
          to_string(l), ch, v, bound, l.cols);
    // S, the multiple of 127 nearest v, leaves v - 127 S in [-63, 63] for u's 1
    const std::int64_t s = parts == 0 ? 0 : ne::detail::floor_div(v + 63, 127);
    const std::size_t row = static_cast<std::size_t>(ch * l.cols);
    dst[row] = v - 127 * s;
    for (std::int64_t k = 0; k < parts; ++k)
      dst[row + static_cast<std::size_t>(k + 1)] = ne::detail::floor_div(s + k, parts);
  }
  for (std::int64_t r = 0; r < l.rows; ++r)
    for (std::int64_t k = 0; k < l.cols; ++k)
      dst[static_cast<std::size_t>(((tiles * l.rows) + r) * l.cols + k)] = k == 0 ? 1 : 127;
  return out;
}

}  // namespace detail

DLAVM_INLINE bool keeps_row_major(const Layout& l, std::span<const std::int64_t> shape) {
  if (l.kind == Layout::Kind::Plain) return true;
  const bool matrix = l.kind == Layout::Kind::Matrix || l.kind == Layout::Kind::BatchedMatrix;
  if (!matrix || l.planes != 1 || l.groups != 1 || shape.size() < 2 || l.rows < 1 || l.cols < 1)
    return false;
  // [M/R, C/T, R, T] (each product's, one after the other) is [M, C] when no tile is padded
  // and a tile's rows are whole rows of the value: one row, or one column tile
  const auto [products, rows, c] = detail::as_products(shape);
  const std::int64_t m = l.kind == Layout::Kind::BatchedMatrix ? rows : products * rows;
  return c % l.cols == 0 && m % l.rows == 0 && (l.rows == 1 || c == l.cols);
}

DLAVM_INLINE te::NDArray pack(const te::NDArray& logical, const Layout& l) {
  if (l.kind == Layout::Kind::Plain) return logical;
  detail::require_integral(logical, l, "pack");
  if (l.planes != 1)
    raise<ValueError>("pack into layout {}: only VTA writes byte planes", to_string(l));
  if (l.kind == Layout::Kind::UnfoldedActivation || l.kind == Layout::Kind::UnfoldedConvWeight) {
    detail::require_layout_rank(l, logical.ndim());
    const bool act = l.kind == Layout::Kind::UnfoldedActivation;
    return pack(detail::unfold_width(logical, l),
                {act ? Layout::Kind::Activation : Layout::Kind::ConvWeight, l.rows, l.cols});
  }
  if (l.kind == Layout::Kind::GroupedConvWeight) {
    detail::require_layout_rank(l, logical.ndim());
    return pack(detail::expand_groups(logical, l), {Layout::Kind::ConvWeight, l.rows, l.cols});
  }
  if (l.groups > 1 && l.kind == Layout::Kind::BatchedMatrix) {
    const auto g = detail::lane_grouped(l, logical.shape());
    te::NDArray out(logical.dtype(), detail::packed_dims(l, logical.shape()));
    runtime::pack_batched_grouped(logical.data().data(), out.data().data(), g[0], g[1], g[2], g[3],
                                  l.groups, l.rows, l.cols);
    return out;
  }
  if (detail::batched(l)) return detail::pack_products(logical, l);
  if (l.kind == Layout::Kind::ChannelWeights) return detail::pack_channel_weights(logical, l);
  const auto& s = logical.shape();
  const auto src = logical.data();
  if (l.kind == Layout::Kind::Channel) {
    detail::require_layout_rank(l, s.size());
    te::NDArray out(logical.dtype(), {ne::ceil_div(s[0], l.cols), l.rows, l.cols});
    auto dst = out.data();
    for (std::int64_t c = 0; c < s[0]; ++c)
      for (std::int64_t r = 0; r < l.rows; ++r)
        dst[static_cast<std::size_t>(((c / l.cols) * l.rows + r) * l.cols + c % l.cols)] =
            src[static_cast<std::size_t>(c)];
    return out;
  }
  // the tiling vta::pack_tiled does, on the value seen as [A, B, H, W]
  const auto d = detail::as_tiled4<std::int64_t>(l, s, std::multiplies<>{});
  // a model's weights are its largest arrays: packed from where they are, without a copy
  std::vector<std::int64_t> four{d.a, d.b, d.h, d.w};
  auto tiled = s == four
                   ? vta::pack_tiled(logical, l.rows, l.cols)
                   : vta::pack_tiled(detail::reshaped(logical, std::move(four)), l.rows, l.cols);
  const auto t = tiled.shape();
  if (l.kind == Layout::Kind::Matrix || l.kind == Layout::Kind::DenseWeight)
    return detail::reshaped(std::move(tiled), {t[0], t[1], t[4], t[5]});
  return tiled;
}

DLAVM_INLINE te::NDArray unpack(const te::NDArray& packed, const Layout& l,
                                std::span<const std::int64_t> shape) {
  if (l.kind == Layout::Kind::UnfoldedActivation || l.kind == Layout::Kind::UnfoldedConvWeight ||
      l.kind == Layout::Kind::GroupedConvWeight)
    raise<ValueError>(
        "unpack from layout {}: it packs one convolution's operands and is never "
        "read back",
        to_string(l));
  if (l.kind == Layout::Kind::MatmulWeight)
    raise<ValueError>("unpack from layout {}: VTA only reads it", to_string(l));
  if (l.kind == Layout::Kind::Plain) {
    if (!std::equal(shape.begin(), shape.end(), packed.shape().begin(), packed.shape().end()))
      raise<ShapeError>("unpack from layout plain: the array is [{}], the shape asked [{}]",
                        fmt::join(packed.shape(), ", "), fmt::join(shape, ", "));
    return packed;
  }
  detail::require_integral(packed, l, "unpack");
  const std::vector<std::int64_t> logical_shape(shape.begin(), shape.end());
  const auto expect = detail::packed_dims(l, logical_shape);
  if (packed.shape() != expect)
    raise<ShapeError>("unpack from layout {}: the array is [{}], a logical [{}] packs to [{}]",
                      to_string(l), fmt::join(packed.shape(), ", "), fmt::join(shape, ", "),
                      fmt::join(expect, ", "));
  if (l.kind == Layout::Kind::ChannelWeights) {
    // b[c] = u . w[c], u read from the last tile
    te::NDArray out(DType::int32(), logical_shape);
    const auto src = packed.data();
    auto dst = out.data();
    const std::int64_t unit = (expect[0] - 1) * l.rows * l.cols;
    for (std::int64_t c = 0; c < shape[0]; ++c) {
      std::int64_t v = 0;
      for (std::int64_t k = 0; k < l.cols; ++k)
        v +=
            src[static_cast<std::size_t>(unit + k)] * src[static_cast<std::size_t>(c * l.cols + k)];
      dst[static_cast<std::size_t>(c)] = v;
    }
    return out;
  }
  if (l.kind == Layout::Kind::Channel) {
    te::NDArray out(packed.dtype(), logical_shape);
    const auto src = packed.data();
    auto dst = out.data();
    for (std::int64_t c = 0; c < shape[0]; ++c)
      dst[static_cast<std::size_t>(c)] =
          src[static_cast<std::size_t>((c / l.cols) * l.rows * l.cols + c % l.cols)];
    return out;
  }
  if (l.planes != 1) {
    if (packed.dtype().bytes() != 1)
      raise<TypeError>("unpack from layout {}: byte planes are 8-bit, the array is {}",
                       to_string(l), packed.dtype());
    Layout value = l;
    value.planes = 1;
    return unpack(detail::join_planes(packed, detail::batched(l) ? 3 : 2), value, shape);
  }
  if (l.groups > 1) {
    const auto g = detail::lane_grouped(l, shape);
    te::NDArray out(packed.dtype(), logical_shape);
    runtime::unpack_batched_grouped(packed.data().data(), out.data().data(), g[0], g[1], g[2], g[3],
                                    l.groups, l.rows, l.cols);
    return out;
  }
  if (l.kind == Layout::Kind::BatchedMatrix) {
    const auto [products, m, c] = detail::as_products(shape);
    const auto& p = packed.shape();
    te::NDArray out(packed.dtype(), logical_shape);
    const auto src = packed.data();
    auto dst = out.data();
    auto to = dst.begin();
    for (std::int64_t b = 0; b < products; ++b)
      for (std::int64_t i = 0; i < m; ++i)
        detail::for_each_row_run(l, b, i, c, p[1], p[2], [&](std::int64_t at, std::int64_t n) {
          to = std::copy_n(src.begin() + at, n, to);
        });
    return out;
  }
  const auto d = detail::as_tiled4<std::int64_t>(l, logical_shape, std::multiplies<>{});
  const auto p = packed.shape();
  const auto tiled = detail::reshaped(packed, {p[0], p[1], d.h, d.w, l.rows, l.cols});
  return detail::reshaped(vta::unpack_tiled(tiled, d.a, d.b), logical_shape);
}

}  // namespace dlavm::graph
