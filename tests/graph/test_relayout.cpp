// Relayouts: packed bytes moved through permutations and reshapes in one copy, against packing
// the host ops' result, over random layouts, shapes and chains; the maps that cannot separate;
// the errors.
#include <dlavm/graph.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/relayout.hpp>
#include <dlavm/host/transform.hpp>
#include <dlavm/vta/hw/sim_device.hpp>

#include <doctest/doctest.h>

#include <numeric>
#include <random>

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace te = dlavm::te;
namespace vta = dlavm::vta;
using dlavm::DType;
using Kind = graph::Layout::Kind;

namespace {

std::vector<std::uint8_t> bytes_of(const te::NDArray& a) {
  std::vector<std::uint8_t> out;
  for (const auto v : a.data()) out.push_back(static_cast<std::uint8_t>(v));
  return out;
}

// A layout that takes a value of `shape`, at random (a batched matrix's lane groups where its
// last dim leaves room for two).
graph::Layout random_layout(const std::vector<std::int64_t>& shape, std::mt19937_64& rng) {
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::size_t rank = shape.size();
  std::vector<Kind> kinds{Kind::Plain};
  if (rank >= 2) kinds.insert(kinds.end(), {Kind::Matrix, Kind::BatchedMatrix, Kind::MatmulWeight});
  if (rank == 2) kinds.push_back(Kind::DenseWeight);
  if (rank == 4) kinds.insert(kinds.end(), {Kind::Activation, Kind::ConvWeight});
  const auto kind = kinds[static_cast<std::size_t>(pick(0, std::ssize(kinds) - 1))];
  graph::Layout l{kind, pick(1, 4), pick(1, 5)};
  if (kind == Kind::BatchedMatrix && rank >= 3 && pick(0, 1) == 1) {
    l.cols = pick(2, 12);
    if (2 * shape.back() <= l.cols) l.groups = pick(2, l.cols / shape.back());
  }
  return l;
}

}  // namespace

TEST_CASE("relayout: one copy of packed bytes equals packing the moved array") {
  std::mt19937_64 rng(44);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  int copied = 0, trials = 300;
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<std::int64_t> shape(static_cast<std::size_t>(pick(2, 4)));
    for (auto& d : shape) d = pick(1, 9);
    const auto from_layout = random_layout(shape, rng);
    auto logical = te::NDArray::random(DType::int8(), shape, 500 + trial);
    const auto src = bytes_of(graph::pack(logical, from_layout));
    auto map = graph::packed_offsets(from_layout, shape);
    CAPTURE(trial);
    CAPTURE(shape);
    CAPTURE(graph::to_string(from_layout));
    bool separable = map.has_value();
    // a chain of moves, applied to the array and to the map
    for (int step = pick(0, 4); step > 0; --step) {
      const auto s = logical.shape();
      const std::size_t rank = s.size();
      std::vector<std::int64_t> next = s;
      const auto op = pick(0, 3);
      if (op == 0) {
        std::vector<std::int64_t> perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        logical = host::transpose(logical, {.perm = perm});
        if (separable) map->permute(perm);
        continue;
      }
      if (op == 1 && rank > 1) {  // two neighbours merged
        const auto k = static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(rank) - 2));
        next[k] *= next[k + 1];
        next.erase(next.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      } else if (op == 2) {  // one split in two factors
        const auto k = static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(rank) - 1));
        std::int64_t a = pick(1, next[k]);
        while (next[k] % a != 0) --a;
        next[k] /= a;
        next.insert(next.begin() + static_cast<std::ptrdiff_t>(k), a);
      } else {  // a unit dim
        next.insert(next.begin() + pick(0, static_cast<std::int64_t>(rank)), 1);
      }
      logical = host::reshape(logical, {.newshape = next});
      if (separable) {
        const auto before = map->offsets();
        separable = map->reshape(next);
        if (!separable) CHECK(map->offsets() == before);  // refused: left as it was
      }
    }
    const auto to_layout = random_layout(logical.shape(), rng);
    CAPTURE(logical.shape());
    CAPTURE(graph::to_string(to_layout));
    const auto want = bytes_of(graph::pack(logical, to_layout));
    if (!separable) continue;
    const auto to = graph::packed_offsets(to_layout, logical.shape());
    if (!to) continue;
    REQUIRE(map->shape() == logical.shape());
    std::vector<std::uint8_t> got(want.size(), 0);
    graph::copy_elements(src.data(), *map, got.data(), *to);
    CHECK(got == want);
    ++copied;
  }
  // most chains separate (those of Matrix layouts whose row tiles straddle dims, and splits of
  // tiled dims, may not)
  CHECK(copied * 10 > trials * 7);
}

namespace {

// A map's dims, offsets and strides, equal to those of a map built anew from its offsets
// (whose strides are found by scanning them).
void check_same_map(const graph::ElementMap& got, const graph::ElementMap& want) {
  REQUIRE(got.ndim() == want.ndim());
  const graph::ElementMap scanned(got.offsets());
  for (std::size_t d = 0; d < want.ndim(); ++d) {
    CAPTURE(d);
    CHECK(got.offsets()[d] == want.offsets()[d]);
    CHECK(got.stride(d) == want.stride(d));
    CHECK(got.stride(d) == scanned.stride(d));
  }
}

}  // namespace

TEST_CASE("relayout: a map retiled to new dims equals the map built for them") {
  std::mt19937_64 rng(4401);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  int retiled = 0, kept = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<std::int64_t> shape(static_cast<std::size_t>(pick(1, 4)));
    for (auto& d : shape) d = pick(1, 40);
    const auto layout = random_layout(shape, rng);
    CAPTURE(trial);
    CAPTURE(shape);
    CAPTURE(graph::to_string(layout));
    auto map = graph::packed_offsets(layout, shape);
    if (!map) continue;
    std::vector<std::int64_t> perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    map->permute(perm);
    // a few new dims in a row, as decode steps give: one dim or several grown or cut
    for (int step = 0; step < 4; ++step) {
      auto next = shape;
      for (auto& d : next)
        if (pick(0, 2) == 0) d = std::max<std::int64_t>(1, d + pick(-20, 20));
      CAPTURE(next);
      std::optional<std::vector<graph::TiledDim>> tiling;
      try {
        tiling = graph::packed_tiling(layout, next);
      } catch (const dlavm::Error&) {  // lane groups the new last dim leaves no room for
        continue;
      }
      if (!tiling) continue;
      std::vector<graph::TiledDim> moved;
      for (const auto d : perm) moved.push_back((*tiling)[static_cast<std::size_t>(d)]);
      auto want = graph::packed_offsets(layout, next);
      REQUIRE(want);
      want->permute(perm);
      REQUIRE(map->retile(moved));
      check_same_map(*map, *want);
      for (std::size_t d = 0; d < next.size(); ++d)
        kept += shape[d] != next[d] && (*tiling)[d].tile > 1 ? 1 : 0;
      shape = next;
      ++retiled;
    }
  }
  CHECK(retiled > 800);
  CHECK(kept > 100);  // tiled dims whose extent changed (their offsets extended or cut)
  // only maps of tiled dims follow: one built from offsets, or reshaped, is left as it was
  const std::vector<graph::TiledDim> dims{{6, 4, 32, 4}, {8, 4, 16, 1}};
  graph::ElementMap from_offsets({{0, 4, 8}, {0, 1}});
  CHECK_FALSE(from_offsets.retile(dims));
  CHECK(from_offsets.shape() == std::vector<std::int64_t>{3, 2});
  auto map = graph::packed_offsets({Kind::Matrix, 1, 4}, std::vector<std::int64_t>{6, 8});
  REQUIRE(map->reshape(std::vector<std::int64_t>{2, 3, 8}));
  CHECK_FALSE(
      map->retile(std::vector<graph::TiledDim>{{2, 1, 96, 0}, {3, 1, 32, 0}, {8, 4, 16, 1}}));
  CHECK(map->shape() == std::vector<std::int64_t>{2, 3, 8});
  auto tiled = graph::packed_offsets({Kind::Matrix, 4, 4}, std::vector<std::int64_t>{6, 8});
  CHECK_FALSE(tiled->retile(std::vector<graph::TiledDim>{{6, 4, 32, 4}}));  // another rank
  CHECK(tiled->retile(dims));
  CHECK(tiled->offsets()[0] == std::vector<std::int64_t>{0, 4, 8, 12, 32, 36});
  // tiles below 1 and negative extents are errors naming the dim, the map left as it was
  const std::vector<graph::TiledDim> no_tile{{6, 4, 32, 4}, {8, 0, 16, 1}};
  CHECK_THROWS_WITH_AS(tiled->retile(no_tile),
                       "element map: dim 1 is tiled by 0 over 8 indices; a tile is at least 1, "
                       "an extent at least 0",
                       dlavm::ValueError);
  CHECK(tiled->offsets()[0] == std::vector<std::int64_t>{0, 4, 8, 12, 32, 36});
  CHECK_THROWS_AS(graph::ElementMap::tiled({{-1, 1, 0, 0}}), dlavm::ValueError);
  CHECK(graph::ElementMap::tiled({{0, 1, 0, 0}}).shape() == std::vector<std::int64_t>{0});
}

TEST_CASE("relayout: which layouts separate by dim, and a split that does not") {
  // a Matrix's row tiles straddle its leading dims unless the last row dim is a multiple of R
  CHECK_FALSE(graph::packed_offsets({Kind::Matrix, 4, 16}, std::vector<std::int64_t>{3, 6, 16}));
  CHECK(graph::packed_offsets({Kind::Matrix, 4, 16}, std::vector<std::int64_t>{3, 8, 16}));
  CHECK(graph::packed_offsets({Kind::Matrix, 1, 16}, std::vector<std::int64_t>{3, 5, 7}));
  CHECK_FALSE(graph::packed_offsets({Kind::Channel, 1, 16}, std::vector<std::int64_t>{20}));
  CHECK_FALSE(
      graph::packed_offsets({Kind::Matrix, 1, 16, {}, 4}, std::vector<std::int64_t>{2, 16}));
  // rows tiled by 4, two column tiles: rows 0..5 at 0, 4, 8, 12, 32, 36; split as [2, 3], row
  // 4 would be at 12 + 4 = 16, not 32
  auto map = graph::packed_offsets({Kind::Matrix, 4, 4}, std::vector<std::int64_t>{6, 8});
  REQUIRE(map);
  CHECK(map->offsets()[0] == std::vector<std::int64_t>{0, 4, 8, 12, 32, 36});
  const std::vector<std::int64_t> split{2, 3, 8};
  CHECK_FALSE(map->reshape(split));
  CHECK(map->shape() == std::vector<std::int64_t>{6, 8});
  // the same rows in one tile each (R = 1) split
  auto rows = graph::packed_offsets({Kind::Matrix, 1, 4}, std::vector<std::int64_t>{6, 8});
  CHECK(rows->reshape(split));
  CHECK(rows->shape() == split);
}

TEST_CASE("relayout: a wrong permutation, reshape or copy is an error naming the shapes") {
  auto map =
      graph::packed_offsets({Kind::BatchedMatrix, 1, 16}, std::vector<std::int64_t>{2, 3, 5});
  REQUIRE(map);
  CHECK_THROWS_WITH_AS(map->permute(std::vector<std::int64_t>{0, 0, 1}),
                       "element map of rank 3: [0, 0, 1] is not a permutation of its dims",
                       dlavm::ValueError);
  CHECK_THROWS_WITH_AS(map->reshape(std::vector<std::int64_t>{4, 4}),
                       "element map [2, 3, 5]: cannot reshape to [4, 4] (16 elements, not 30)",
                       dlavm::ShapeError);
  const auto other = graph::packed_offsets({Kind::Plain}, std::vector<std::int64_t>{3, 2, 5});
  std::vector<std::uint8_t> src(96), dst(30);
  CHECK_THROWS_WITH_AS(graph::copy_elements(src.data(), *map, dst.data(), *other),
                       "copy_elements: the source map is [2, 3, 5], the destination's [3, 2, 5]",
                       dlavm::ShapeError);
  CHECK_THROWS_AS(graph::packed_offsets({Kind::Activation, 1, 16}, std::vector<std::int64_t>{2, 3}),
                  dlavm::ShapeError);
}

TEST_CASE("relayout: a VTA result moved into the next VTA step; not a result, nor one read twice") {
  // h = dense on VTA; t = h transposed on the host; y = dense of t on VTA
  auto x = graph::input("x", {32, 48}, DType::int8());
  auto w1 = graph::constant("w1", te::NDArray::random(DType::int8(), {32, 48}, 1, -8, 8));
  auto w2 = graph::constant("w2", te::NDArray::random(DType::int8(), {16, 32}, 2, -8, 8));
  auto t = graph::transpose(graph::requantize(graph::dense(x, w1), {.shift = 6}), {.perm = {1, 0}});
  auto y = graph::requantize(graph::dense(t, w2), {.shift = 6});
  const auto a = te::NDArray::random(DType::int8(), {32, 48}, 3);
  // the chain (unpack, transpose, pack) moves as one copy; with t a result, or read by relu
  // too, it is left to its steps
  const std::vector<graph::Expr> results[] = {{y}, {y, t}, {y, graph::relu(t)}};
  for (std::size_t k = 0; k < std::size(results); ++k) {
    CAPTURE(k);
    const auto fn = graph::function({x}, results[k]);
    const auto mod = graph::build(fn, graph::Target{});
    const auto chains = graph::relayout_chains(mod);
    CHECK(chains.size() == (k == 0 ? 1 : 0));
    vta::SimDevice dev;
    graph::Executor exec(mod, dev);
    const auto got = exec.run({{"x", a}});
    const auto want = graph::evaluate(graph::infer_type(fn, graph::Target{}), {{"x", a}});
    REQUIRE(got.size() == want.size());
    for (std::size_t r = 0; r < got.size(); ++r) CHECK(got[r] == want[r]);
    std::size_t relaid = 0;
    for (const auto& st : exec.last_run().steps) relaid += st.relayout;
    CHECK(relaid == (k == 0 ? 3 : 0));
  }
}

TEST_CASE("relayout: transposes of bytes in blocks of 8 x 8 equal host::transpose") {
  // a dim contiguous in the source and another in the destination, at least 8 long each:
  // copy_elements moves 8 x 8 blocks through 64-bit words, the edges byte by byte
  std::mt19937_64 rng(17);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 60; ++trial) {
    const std::int64_t a = pick(1, 3), ny = pick(1, 40), nx = pick(1, 40);
    CAPTURE(a);
    CAPTURE(ny);
    CAPTURE(nx);
    const auto logical = te::NDArray::random(DType::int8(), {a, ny, nx}, trial);
    auto map = graph::packed_offsets(graph::Layout{}, logical.shape());
    const std::int64_t perm[] = {0, 2, 1};
    map->permute(perm);
    const auto to = graph::packed_offsets(graph::Layout{}, map->shape());
    const auto src = bytes_of(logical);
    std::vector<std::uint8_t> got(src.size(), 0);
    graph::copy_elements(src.data(), *map, got.data(), *to);
    CHECK(got == bytes_of(host::transpose(logical, {.perm = {0, 2, 1}})));
  }
  // a dim contiguous in the source whose tiles are not evenly spaced in the destination: a
  // conv weight's output channels past one tile of 16 (its 3 x 3 taps between the tiles), the
  // input channels contiguous there: no block transpose, element by element
  for (const std::int64_t out : {17, 40}) {
    CAPTURE(out);
    const auto logical = te::NDArray::random(DType::int8(), {3, 3, 12, out}, out);
    const std::int64_t perm[] = {3, 2, 0, 1};
    auto map = graph::packed_offsets(graph::Layout{}, logical.shape());
    map->permute(perm);
    const graph::Layout weight{Kind::ConvWeight, 16, 16};
    const auto to = graph::packed_offsets(weight, map->shape());
    REQUIRE(to);
    const auto want =
        bytes_of(graph::pack(host::transpose(logical, {.perm = {3, 2, 0, 1}}), weight));
    std::vector<std::uint8_t> got(want.size(), 0);
    graph::copy_elements(bytes_of(logical).data(), *map, got.data(), *to);
    CHECK(got == want);
  }
  // a decode step's scores: [1, heads, 1, keys] with the keys in the lanes to [1, 1, keys,
  // heads] with two queries' heads a tile, and back
  for (const std::int64_t heads : {8, 4})
    for (const std::int64_t keys : {1, 7, 8, 9, 64, 2033}) {
      CAPTURE(heads);
      CAPTURE(keys);
      const graph::Layout lanes{Kind::BatchedMatrix, 1, 16};
      graph::Layout grouped{Kind::BatchedMatrix, 1, 16};
      grouped.groups = 16 / heads;
      const auto scores = te::NDArray::random(DType::int8(), {1, heads, 1, keys}, keys);
      const std::int64_t perm[] = {0, 2, 3, 1};
      auto map = graph::packed_offsets(lanes, scores.shape());
      map->permute(perm);
      const auto to = graph::packed_offsets(grouped, map->shape());
      const auto src = bytes_of(graph::pack(scores, lanes));
      const auto moved = host::transpose(scores, {.perm = {0, 2, 3, 1}});
      const auto want = bytes_of(graph::pack(moved, grouped));
      std::vector<std::uint8_t> got(want.size(), 0);
      graph::copy_elements(src.data(), *map, got.data(), *to);
      CHECK(got == want);
      auto back = graph::packed_offsets(grouped, moved.shape());
      const std::int64_t inverse[] = {0, 3, 1, 2};
      back->permute(inverse);
      const auto to_lanes = graph::packed_offsets(lanes, back->shape());
      std::vector<std::uint8_t> again(src.size(), 0);
      graph::copy_elements(want.data(), *back, again.data(), *to_lanes);
      CHECK(again == src);
    }
}
