// Layouts of graph values between the host and VTA (as TVM's graph_pack): the logical
// row-major form that graph types and host kernels use, and VTA's tiled forms. Packing
// zero-pads the tiled dims to whole tiles; unpacking drops the padding again.
//
//   Plain        the logical array
//   Activation   [N, C, H, W]        -> [N/R, C/T, H, W, R, T]
//   Matrix       [d0, ..., dk, C]    -> [M/R, C/T, R, T]           (M = d0 x ... x dk)
//   ConvWeight   [O, I, KH, KW]      -> [O/R, I/T, KH, KW, R, T]
//   DenseWeight  [N, K]              -> [N/R, K/T, R, T]
//   Channel      [C]                 -> [C/T, R, T]                (each row a copy: a bias
//                                                                   for every batch row)
//   ChannelWeights [C] (int32)       -> [C/R + 1, R, T] int8       (a bias the GEMM core
//                                                                   adds: below)
//   BatchedMatrix [B..., M, C]       -> [prod(B), M/R, C/T, R, T]  (a batched matmul's left
//                                                                   operand and result: each
//                                                                   product a Matrix)
//   MatmulWeight [B..., K, N]        -> [prod(B), N/R, K/T, R, T]  (its right operand, an
//                                                                   activation: each product
//                                                                   transposed into a
//                                                                   DenseWeight)
//   BatchedMatrix with lane groups (`groups` G > 1; rank 3 or more, G x C <= T, no planes):
//     [B..., Q, M, C] -> [prod(B) x ceil(Q/G), M/R, 1, R, T]: G products of the dim before
//     the rows side by side in a tile's lanes, product q's columns from (q % G) x C in packed
//     product q / G (the queries of an integer softmax, which VTA's ALU normalizes lane by
//     lane: 8 heads fill 16 lanes with two queries)
//   UnfoldedActivation, UnfoldedConvWeight: a convolution's input and weights with its kernel
//   width folded into the channels (im2col along the width), for a convolution whose few
//   input channels would fill a fraction of each BLOCK_IN tile (an RGB image):
//     x [N, C, H, W]   -> x' [N, C*KW, H, OW] = x[n, c, y, j*sw + dx - pl] (0 outside x),
//                         channel c*KW + dx; then as Activation
//     w [O, C, KH, KW] -> w' [O, C*KW, KH, 1] = w[o, c, dy, dx]; then as ConvWeight
//   so that the convolution becomes one with a KH x 1 kernel, column stride 1 and no column
//   padding. Packing only: nothing reads these layouts back.
//   GroupedConvWeight (`groups` G): a grouped convolution's weights [O, I/G, KH, KW], each
//   output channel tile given the input channel tiles its groups read, block-diagonal:
//     w' [O, S*T, KH, KW] = w[o, c - g*(I/G)] where c = (o/R)*S*T + j is in o's group g
//     (0 elsewhere); then as ConvWeight, [O/R, S, KH, KW, R, T]
//   with S = (R / (O/G)) * (I/G) / T input tiles per output tile: the groups must tile whole,
//   O/G dividing R and S a whole number (a depthwise convolution: S = 1, each tile diagonal).
//   Packing only.
// ChannelWeights: a per-channel int32 vector b as int8 weights w against a constant input row
// u = [1, 127, ..., 127] (T columns), so that the GEMM core adds b: b[c] = sum_k u[k] w[c, k].
// Row c % R of tile c / R holds w[c] = [b - 127 S, the T - 1 parts of S as even as they go],
// S the multiple of 127 nearest b; the last tile holds u in every row (the input tile a kernel
// loads). b must lie within +-channel_weights_bound(T) (ValueError otherwise).
// Byte planes (`planes` P > 1, Activation, Matrix and BatchedMatrix only): an int32 value VTA
// computed and stored as P int8 planes, the least significant byte first, VTA's STORE keeping the
// low 8 bits of each shifted accumulator: [N/R, C/T, P, H, W, R, T], [M/R, C/T, P, R, T] or
// [prod(B), M/R, C/T, P, R, T]. Unpack
// reassembles the value (the top plane carries the sign); nothing packs into them.
//   P = 4 returns the full int32 accumulator to the host.
// R and T are the tile's rows and columns: (BATCH, BLOCK_IN) for activations and matrices
// VTA reads, (BATCH, BLOCK_OUT) for what it writes, (BLOCK_OUT, BLOCK_IN) for weights.
//
//   graph::Layout act{graph::Layout::Kind::Activation, 1, 16};
//   auto packed = graph::pack(nchw, act);                       // [1, 4, 56, 56, 1, 16]
//   auto back = graph::unpack(packed, act, nchw.shape());       // == nchw
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace dlavm::graph {

struct Layout {
  enum class Kind : std::uint8_t {
    Plain,
    Activation,
    Matrix,
    ConvWeight,
    DenseWeight,
    Channel,
    UnfoldedActivation,
    UnfoldedConvWeight,
    BatchedMatrix,
    MatmulWeight,
    GroupedConvWeight,
    ChannelWeights
  };
  // The unfolded layouts' convolution: kernel width, column stride and padding.
  struct Unfold {
    std::int64_t kw = 1, stride = 1, pad_left = 0, pad_right = 0;
    friend bool operator==(const Unfold&, const Unfold&) = default;
  };
  Kind kind = Kind::Plain;
  std::int64_t rows = 1;  // tile rows (R)
  std::int64_t cols = 1;  // tile columns (T)
  Unfold unfold{};
  std::int64_t planes = 1;  // byte planes of an int32 value (1: the int8 value itself)
  std::int64_t groups = 1;  // GroupedConvWeight's convolution groups; BatchedMatrix's lane groups
  friend bool operator==(const Layout&, const Layout&) = default;
};

// "plain", "activation[1x16]", "matrix[1x16, 4 planes]",
// "unfolded_activation[1x16, kw 7 stride 2 pad 3 3]"
std::string to_string(const Layout& l);

// GroupedConvWeight's input channel tiles per output channel tile (S above) for `out_channels`
// outputs in `groups` groups of `group_in_channels` inputs, or why the groups do not tile.
std::variant<std::int64_t, std::string> grouped_input_tiles(std::int64_t rows, std::int64_t cols,
                                                            std::int64_t groups,
                                                            std::int64_t out_channels,
                                                            std::int64_t group_in_channels);

// The largest |b| a ChannelWeights layout of `cols` columns holds: 127 x 127 x (cols - 1) + 63
// (241,998 for VTA's 16).
constexpr std::int64_t channel_weights_bound(std::int64_t cols) {
  return 127 * 127 * (cols - 1) + 63;
}

// The dtype of a value of dtype `logical` packed in the layout: int8 for ChannelWeights, the
// logical one for the others.
inline DType packed_dtype(const Layout& l, DType logical) {
  return l.kind == Layout::Kind::ChannelWeights ? DType::int8() : logical;
}

// The packed shape of a value of logical shape `shape` (ShapeError for a rank the layout does
// not take; symbolic dims stay expressions).
std::vector<ne::Expr> packed_shape(const Layout& l, const std::vector<ne::Expr>& shape);

te::NDArray pack(const te::NDArray& logical, const Layout& l);
// `shape`: the logical shape to restore. ValueError for the unfolded layouts.
te::NDArray unpack(const te::NDArray& packed, const Layout& l, std::span<const std::int64_t> shape);

// Whether a value of logical shape `shape` packs into `l` as its own row-major elements, neither
// padded nor reordered (a matrix of one-row tiles whose columns fill whole tiles: a decode
// step's activations), so that its bytes go to VTA and back without packing (graph::Executor).
// False for a shape the layout does not take.
bool keeps_row_major(const Layout& l, std::span<const std::int64_t> shape);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/layout-inl.hpp>
#endif
