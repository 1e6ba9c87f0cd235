// Layouts: packing and unpacking against the vta layout helpers and against direct index
// arithmetic, round trips over random shapes, symbolic packed shapes, and the errors.
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/printer.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/vta/layout.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <numeric>
#include <random>

namespace graph = dlavm::graph;
namespace ne = dlavm::ne;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;
using Kind = graph::Layout::Kind;

TEST_CASE("layout: packing agrees with the vta layout helpers") {
  const vta::Env env;
  const graph::Layout act{Kind::Activation, env.batch, env.block_in};
  const graph::Layout cw{Kind::ConvWeight, env.block_out, env.block_in};
  const graph::Layout mat{Kind::Matrix, env.batch, env.block_in};
  const graph::Layout dw{Kind::DenseWeight, env.block_out, env.block_in};
  const auto nchw = te::NDArray::random(DType::int8(), {2, 27, 5, 3}, 1);
  CHECK(graph::pack(nchw, act) == vta::pack_activation(nchw, env));
  const auto oihw = te::NDArray::random(DType::int8(), {20, 27, 3, 3}, 2);
  CHECK(graph::pack(oihw, cw) == vta::pack_weight(oihw, env));
  const auto mk = te::NDArray::random(DType::int8(), {7, 40}, 3);
  CHECK(graph::pack(mk, mat) == vta::pack_matrix(mk, env));
  const auto nk = te::NDArray::random(DType::int8(), {33, 40}, 4);
  CHECK(graph::pack(nk, dw) == vta::pack_matrix_weight(nk, env));
}

TEST_CASE("layout: element positions, padding and round trips over random shapes") {
  std::mt19937_64 rng(5);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 60; ++trial) {
    const graph::Layout l{Kind::Activation, pick(1, 3), pick(1, 8)};
    const std::vector<std::int64_t> shape{pick(1, 5), pick(1, 20), pick(1, 4), pick(1, 4)};
    const auto a = te::NDArray::random(DType::int32(), shape, static_cast<std::uint64_t>(trial));
    const auto p = graph::pack(a, l);
    const auto [n, c, h, w] = std::array{shape[0], shape[1], shape[2], shape[3]};
    const auto ct = (c + l.cols - 1) / l.cols;
    CHECK(p.shape() ==
          std::vector<std::int64_t>{(n + l.rows - 1) / l.rows, ct, h, w, l.rows, l.cols});
    // every element at its tile position, every padding element zero
    std::size_t nonzero = 0;
    for (auto v : p.data()) nonzero += v != 0;
    std::size_t expect_nonzero = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < c; ++j)
        for (std::int64_t y = 0; y < h; ++y)
          for (std::int64_t x = 0; x < w; ++x) {
            const auto v = a.at({i, j, y, x});
            expect_nonzero += v != 0;
            CHECK(p.at({i / l.rows, j / l.cols, y, x, i % l.rows, j % l.cols}) == v);
          }
    CHECK(nonzero == expect_nonzero);
    CHECK(graph::unpack(p, l, shape) == a);
    // a matrix of rank 3 tiles the product of its leading dims
    const graph::Layout m{Kind::Matrix, l.rows, l.cols};
    CHECK(graph::unpack(graph::pack(a, m), m, shape) == a);
  }
}

TEST_CASE("layout: batched matrices and matmul weights, element by element, random shapes") {
  std::mt19937_64 rng(11);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 60; ++trial) {
    const std::int64_t rows = pick(1, 4), cols = pick(1, 8);
    const std::vector<std::int64_t> shape{pick(1, 3), pick(1, 3), pick(1, 20), pick(1, 20)};
    const auto a = te::NDArray::random(DType::int8(), shape, static_cast<std::uint64_t>(trial));
    const std::int64_t m = shape[2], c = shape[3];
    const graph::Layout bm{Kind::BatchedMatrix, rows, cols};
    const graph::Layout mw{Kind::MatmulWeight, rows, cols};
    const auto p = graph::pack(a, bm);  // [products, M tiles, C tiles, R, T]
    const auto w = graph::pack(a, mw);  // [products, N tiles, K tiles, R, T]: rows are columns
    CHECK(p.shape() == std::vector<std::int64_t>{shape[0] * shape[1], (m + rows - 1) / rows,
                                                 (c + cols - 1) / cols, rows, cols});
    CHECK(w.shape() == std::vector<std::int64_t>{shape[0] * shape[1], (c + rows - 1) / rows,
                                                 (m + cols - 1) / cols, rows, cols});
    std::int64_t sum = 0;
    for (std::int64_t b0 = 0; b0 < shape[0]; ++b0)
      for (std::int64_t b1 = 0; b1 < shape[1]; ++b1)
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < c; ++j) {
            const auto v = a.at({b0, b1, i, j});
            const auto b = (b0 * shape[1]) + b1;
            sum += v;
            CHECK(p.at({b, i / rows, j / cols, i % rows, j % cols}) == v);
            CHECK(w.at({b, j / rows, i / cols, j % rows, i % cols}) == v);
          }
    // the padding is zero: the packed arrays sum to the value's sum
    std::int64_t packed_sum = 0, weight_sum = 0;
    for (auto v : p.data()) packed_sum += v;
    for (auto v : w.data()) weight_sum += v;
    CHECK(packed_sum == sum);
    CHECK(weight_sum == sum);
    CHECK(graph::unpack(p, bm, shape) == a);
  }
}

TEST_CASE("layout: keeps_row_major says exactly when packing leaves the elements in place") {
  // a matrix or batched matrix keeps its row-major elements iff no tile is padded and a tile's
  // rows are whole rows: checked against pack itself over random tiles and shapes (distinct
  // element values, so that any move shows)
  std::mt19937_64 rng(23);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  std::size_t kept = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Kind kind = pick(0, 1) == 0 ? Kind::Matrix : Kind::BatchedMatrix;
    const graph::Layout l{kind, pick(1, 3), std::int64_t{1} << pick(0, 3)};
    std::vector<std::int64_t> shape(static_cast<std::size_t>(pick(2, 4)));
    for (auto& d : shape) d = pick(1, 3);
    shape.back() = l.cols * pick(1, 3) - pick(0, 1) * pick(0, l.cols - 1);
    te::NDArray a(DType::int32(), shape);
    std::iota(a.data().begin(), a.data().end(), 1);
    const auto p = graph::pack(a, l);
    const bool in_place = p.data().size() == a.data().size() &&
                          std::equal(p.data().begin(), p.data().end(), a.data().begin());
    CAPTURE(graph::to_string(l));
    CAPTURE(fmt::format("[{}]", fmt::join(shape, ", ")));
    CHECK(graph::keeps_row_major(l, shape) == in_place);
    kept += in_place;
  }
  CHECK(kept > 40);  // both answers drawn often
  CHECK(kept < 360);
  // the plain layout always; the others' tiles reorder or pad, planes and lane groups too
  CHECK(graph::keeps_row_major(graph::Layout{}, std::vector<std::int64_t>{3, 5}));
  CHECK_FALSE(
      graph::keeps_row_major({Kind::Activation, 1, 16}, std::vector<std::int64_t>{1, 16, 1, 1}));
  CHECK_FALSE(graph::keeps_row_major({Kind::DenseWeight, 1, 16}, std::vector<std::int64_t>{1, 16}));
  graph::Layout planes{Kind::Matrix, 1, 16};
  planes.planes = 4;
  CHECK_FALSE(graph::keeps_row_major(planes, std::vector<std::int64_t>{2, 16}));
  graph::Layout grouped{Kind::BatchedMatrix, 1, 16};
  grouped.groups = 2;
  CHECK_FALSE(graph::keeps_row_major(grouped, std::vector<std::int64_t>{2, 1, 8}));
  // a shape the layout does not take: false, not an error (pack then says why)
  CHECK_FALSE(graph::keeps_row_major({Kind::Matrix, 1, 16}, std::vector<std::int64_t>{16}));
}

TEST_CASE(
    "layout: lane groups put G products of the queries' dim side by side, element by element") {
  // [B, Q, M, C] -> [B * ceil(Q / G), M / R, 1, R, T]: query q's columns from (q % G) * C of
  // packed product q / G; checked element by element against that arithmetic, against the
  // firmware's kernels (runtime::pack_batched_grouped and its unpack), and round trip
  std::mt19937_64 rng(12);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 60; ++trial) {
    const std::int64_t rows = pick(1, 3), cols = pick(2, 16), c = pick(1, cols / 2);
    graph::Layout l{Kind::BatchedMatrix, rows, cols};
    l.groups = pick(2, cols / c);
    const std::vector<std::int64_t> shape{pick(1, 3), pick(1, 9), pick(1, 20), c};
    CAPTURE(trial);
    CAPTURE(graph::to_string(l));
    CAPTURE(shape);
    const auto a = te::NDArray::random(DType::int8(), shape, static_cast<std::uint64_t>(trial));
    const std::int64_t g = l.groups, q = shape[1], m = shape[2], tiles = (q + g - 1) / g;
    const auto p = graph::pack(a, l);
    REQUIRE(p.shape() ==
            std::vector<std::int64_t>{shape[0] * tiles, (m + rows - 1) / rows, 1, rows, cols});
    std::int64_t sum = 0, packed_sum = 0;
    for (std::int64_t b = 0; b < shape[0]; ++b)
      for (std::int64_t i = 0; i < q; ++i)
        for (std::int64_t k = 0; k < m; ++k)
          for (std::int64_t j = 0; j < c; ++j) {
            const auto v = a.at({b, i, k, j});
            sum += v;
            CHECK(p.at({b * tiles + i / g, k / rows, 0, k % rows, (i % g) * c + j}) == v);
          }
    for (auto v : p.data()) packed_sum += v;
    CHECK(packed_sum == sum);  // the lanes of no query, and the padding, are zero
    CHECK(graph::unpack(p, l, shape) == a);
    std::vector<std::int8_t> src, packed(p.size(), 99), back(a.size(), 0);
    for (auto v : a.data()) src.push_back(static_cast<std::int8_t>(v));
    dlavm::runtime::pack_batched_grouped(src.data(), packed.data(), shape[0], q, m, c, g, rows,
                                         cols);
    bool same = true;
    for (std::size_t i = 0; i < packed.size(); ++i) same = same && packed[i] == p.data()[i];
    CHECK(same);
    dlavm::runtime::unpack_batched_grouped(packed.data(), back.data(), shape[0], q, m, c, g, rows,
                                           cols);
    CHECK(back == src);
  }
  // symbolic queries: ceil(Q / G) products
  graph::Layout l{Kind::BatchedMatrix, 1, 16};
  l.groups = 2;
  const auto q = ne::var("q", 1, 2048), n = ne::var("n", 1, 4096);
  const auto packed = graph::packed_shape(l, {1, q, n, 8});
  CHECK(graph::to_string(l) == "batched_matrix[1x16, 2 groups]");
  CHECK(ne::eval(packed[0], {{"q", 5}, {"n", 7}}) == 3);
  CHECK(ne::eval(packed[1], {{"q", 5}, {"n", 7}}) == 7);
  // what the layout refuses: groups wider than a tile, a value with no dim before its rows,
  // groups of another layout, byte planes
  CHECK_THROWS_WITH_AS(graph::pack(te::NDArray(DType::int8(), {1, 3, 4, 9}), l),
                       doctest::Contains("2 groups of 9 columns do not fit a tile's 16 columns"),
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(graph::pack(te::NDArray(DType::int8(), {3, 4}), l),
                       doctest::Contains("no dim before its rows"), dlavm::ShapeError);
  graph::Layout matrix{Kind::Matrix, 1, 16};
  matrix.groups = 2;
  CHECK_THROWS_AS(graph::pack(te::NDArray(DType::int8(), {1, 3, 4, 8}), matrix), dlavm::ValueError);
  graph::Layout planes = l;
  planes.planes = 4;
  CHECK_THROWS_AS(graph::packed_shape(planes, {1, q, n, 8}), dlavm::ValueError);
}

TEST_CASE("layout: unfolding a convolution's kernel width into the channels") {
  // x[n, c*KW + dx, y, j] = x[n, c, y, j*sw + dx - pl] (0 outside), then tiled as an activation
  const graph::Layout::Unfold u{.kw = 3, .stride = 2, .pad_left = 1, .pad_right = 1};
  const graph::Layout act{Kind::UnfoldedActivation, 1, 4, u};
  const auto x = te::NDArray::random(DType::int8(), {1, 3, 2, 7}, 3);
  const auto p = graph::pack(x, act);
  const std::int64_t ow = (7 + 2 - 3) / 2 + 1;                       // 4
  CHECK(p.shape() == std::vector<std::int64_t>{1, 3, 2, ow, 1, 4});  // 9 channels in 3 tiles
  for (std::int64_t c = 0; c < 3; ++c)
    for (std::int64_t dx = 0; dx < 3; ++dx)
      for (std::int64_t y = 0; y < 2; ++y)
        for (std::int64_t j = 0; j < ow; ++j) {
          const std::int64_t col = j * 2 + dx - 1, ch = c * 3 + dx;
          const std::int64_t want = col < 0 || col >= 7 ? 0 : x.at({0, c, y, col});
          CHECK(p.at({0, ch / 4, y, j, 0, ch % 4}) == want);
        }
  CHECK(graph::shape_text(graph::packed_shape(act, {1, 3, 2, 7})) == "(1, 3, 2, 4, 1, 4)");
  // asymmetric padding (as TensorFlow's SAME gives): the left pad shifts the columns, the
  // right one only extends the output
  for (const auto& row :
       {std::array<std::int64_t, 5>{4, 1, 2, 0, 5}, std::array<std::int64_t, 5>{5, 2, 0, 3, 6},
        std::array<std::int64_t, 5>{3, 1, 0, 2, 4}}) {
    // (not bindings: CAPTURE reads its argument in a lambda, which cannot capture a binding in
    // Clang before 16)
    const std::int64_t kw = row[0], sw = row[1], pl = row[2], pr = row[3], width = row[4];
    CAPTURE(kw);
    const graph::Layout a{Kind::UnfoldedActivation, 1, 4, {kw, sw, pl, pr}};
    const auto xa = te::NDArray::random(DType::int8(), {1, 2, 1, width}, 7);
    const auto pa = graph::pack(xa, a);
    const std::int64_t out_w = (width + pl + pr - kw) / sw + 1;
    REQUIRE(pa.shape()[3] == out_w);
    for (std::int64_t c = 0; c < 2; ++c)
      for (std::int64_t dx = 0; dx < kw; ++dx)
        for (std::int64_t j = 0; j < out_w; ++j) {
          const std::int64_t col = j * sw + dx - pl, ch = c * kw + dx;
          const std::int64_t want = col < 0 || col >= width ? 0 : xa.at({0, c, 0, col});
          CHECK(pa.at({0, ch / 4, 0, j, 0, ch % 4}) == want);
        }
  }
  // the weights: w[o, c*KW + dx, dy, 0] = w[o, c, dy, dx]
  const graph::Layout wl{Kind::UnfoldedConvWeight, 2, 4, u};
  const auto w = te::NDArray::random(DType::int8(), {2, 3, 2, 3}, 4);
  const auto pw = graph::pack(w, wl);
  CHECK(pw.shape() == std::vector<std::int64_t>{1, 3, 2, 1, 2, 4});
  for (std::int64_t o = 0; o < 2; ++o)
    for (std::int64_t c = 0; c < 3; ++c)
      for (std::int64_t dy = 0; dy < 2; ++dy)
        for (std::int64_t dx = 0; dx < 3; ++dx) {
          const std::int64_t ch = c * 3 + dx;
          CHECK(pw.at({0, ch / 4, dy, 0, o, ch % 4}) == w.at({o, c, dy, dx}));
        }
  CHECK(graph::to_string(act) == "unfolded_activation[1x4, kw 3 stride 2 pad 1 1]");
  const std::int64_t shape[] = {1, 3, 2, 7};
  CHECK_THROWS_WITH_AS(graph::unpack(p, act, shape),
                       "unpack from layout unfolded_activation[1x4, kw 3 stride 2 pad 1 1]: it "
                       "packs one convolution's operands and is never read back",
                       dlavm::ValueError);
}

TEST_CASE("layout: a channel vector is replicated over the tile rows") {
  const graph::Layout l{Kind::Channel, 2, 4};
  const auto b = te::NDArray::from_ints(DType::int32(), {6}, {1, 2, 3, 4, 5, 6});
  const auto p = graph::pack(b, l);
  CHECK(p == te::NDArray::from_ints(DType::int32(), {2, 2, 4},
                                    {1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 0, 0, 5, 6, 0, 0}));
  const std::int64_t shape[] = {6};
  CHECK(graph::unpack(p, l, shape) == b);
}

TEST_CASE("layout: packed shapes keep symbolic dims") {
  auto token = ne::var("token", 1, 2048);
  const graph::Layout m{Kind::Matrix, 1, 16};
  CHECK(graph::shape_text(graph::packed_shape(m, {1, token, 512})) == "(token, 32, 1, 16)");
  const graph::Layout a{Kind::Activation, 1, 16};
  CHECK(graph::shape_text(graph::packed_shape(a, {1, 3, 224, 224})) == "(1, 1, 224, 224, 1, 16)");
  CHECK(graph::shape_text(graph::packed_shape(graph::Layout{}, {1, token})) == "(1, token)");
  CHECK(graph::to_string(a) == "activation[1x16]");
}

TEST_CASE("layout: wrong ranks, float arrays and mismatched packed shapes are errors") {
  const graph::Layout a{Kind::Activation, 1, 16};
  CHECK_THROWS_WITH_AS(
      graph::pack(te::NDArray(DType::int8(), {2, 3}), a),
      "layout activation[1x16]: a value of rank 2 cannot take it (it needs rank 4)",
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(
      graph::pack(te::NDArray(DType::int8(), {2}), graph::Layout{Kind::Matrix, 1, 16}),
      "layout matrix[1x16]: a value of rank 1 cannot take it (it needs rank 2 or more)",
      dlavm::ShapeError);
  CHECK_THROWS_WITH_AS(graph::pack(te::NDArray(DType::float32(), {1, 1, 1, 1}), a),
                       "pack to layout activation[1x16]: VTA's layouts hold integers, the array "
                       "is float32",
                       dlavm::TypeError);
  CHECK_THROWS_WITH_AS(
      graph::pack(te::NDArray(DType::int8(), {1, 1, 1, 1}), graph::Layout{Kind::Activation, 0, 16}),
      "layout activation[0x16]: tile rows and columns must be at least 1, got 0x16",
      dlavm::ValueError);
  const std::int64_t plain_shape[] = {3};
  CHECK_THROWS_WITH_AS(
      graph::unpack(te::NDArray(DType::int8(), {2, 2}), graph::Layout{}, plain_shape),
      "unpack from layout plain: the array is [2, 2], the shape asked [3]", dlavm::ShapeError);
  const std::int64_t shape[] = {1, 20, 2, 2};
  CHECK_THROWS_WITH_AS(graph::unpack(te::NDArray(DType::int8(), {1, 1, 2, 2, 1, 16}), a, shape),
                       "unpack from layout activation[1x16]: the array is [1, 1, 2, 2, 1, 16], a "
                       "logical [1, 20, 2, 2] packs to [1, 2, 2, 2, 1, 16]",
                       dlavm::ShapeError);
}

TEST_CASE("layout: a grouped convolution's weights pack block-diagonal per output tile") {
  // 3 groups of 2 input and 2 output channels, tiles of 4 x 4: a tile holds 2 groups, which
  // read 4 input channels, one tile
  const graph::Layout l{.kind = Kind::GroupedConvWeight, .rows = 4, .cols = 4, .groups = 3};
  const auto w = te::NDArray::random(DType::int8(), {6, 2, 2, 3}, 9);
  const auto p = graph::pack(w, l);
  REQUIRE(p.shape() == std::vector<std::int64_t>{2, 1, 2, 3, 4, 4});
  CHECK(graph::shape_text(graph::packed_shape(l, {6, 2, 2, 3})) == "(2, 1, 2, 3, 4, 4)");
  for (std::int64_t o = 0; o < 8; ++o)
    for (std::int64_t t = 0; t < 4; ++t)
      for (std::int64_t dy = 0; dy < 2; ++dy)
        for (std::int64_t dx = 0; dx < 3; ++dx) {
          const std::int64_t c = o / 4 * 4 + t;  // the input channel this column multiplies
          const bool same_group = o < 6 && c < 6 && c / 2 == o / 2;
          CAPTURE(o);
          CAPTURE(t);
          CHECK(p.at({o / 4, 0, dy, dx, o % 4, t}) == (same_group ? w.at({o, c % 2, dy, dx}) : 0));
        }
  CHECK(graph::to_string(l) == "grouped_conv_weight[4x4, 3 groups]");
  // depthwise with 2 outputs per group: a tile's 2 groups read 2 input channels, half a tile
  const graph::Layout half{.kind = Kind::GroupedConvWeight, .rows = 4, .cols = 4, .groups = 3};
  CHECK_THROWS_WITH_AS(graph::pack(te::NDArray::random(DType::int8(), {6, 1, 1, 1}, 1), half),
                       "layout grouped_conv_weight[4x4, 3 groups]: weights [6, 1, ...]: a tile's "
                       "2 groups read 2 input channels, not a whole number of 4-channel tiles",
                       dlavm::ValueError);
  const std::int64_t shape[] = {6, 2, 2, 3};
  CHECK_THROWS_AS(graph::unpack(p, l, shape), dlavm::ValueError);
}
