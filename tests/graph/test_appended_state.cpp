// graph::AppendedState against its definition: after any sequence of appends (some never
// committed, as after a run that failed), its bytes are those of the concatenated state,
// permuted and packed as matmul_weight (graph::pack, vta::dram_bytes), and logical() is the
// concatenation; a copy that follows take_written's ranges alone stays equal to its bytes, and
// an append that moves no tile lists only the bytes it wrote.
#include <dlavm/graph/appended_state.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/host/transform.hpp>
#include <dlavm/vta/program.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <random>

namespace graph = dlavm::graph;
namespace host = dlavm::host;
namespace te = dlavm::te;
using dlavm::DType;

namespace {

std::vector<std::uint8_t> packed_bytes(const te::NDArray& state,
                                       const std::vector<std::int64_t>& perm,
                                       const graph::Layout& l) {
  return dlavm::vta::dram_bytes(graph::pack(host::transpose(state, {.perm = perm}), l));
}

}  // namespace

TEST_CASE("appended state: random appends equal packing the concatenated state") {
  std::mt19937_64 rng(7);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int trial = 0; trial < 60; ++trial) {
    const auto rank = static_cast<std::size_t>(pick(2, 4));
    std::vector<std::int64_t> shape(rank);
    for (auto& d : shape) d = pick(1, 5);
    // the packed array's dims: a random order of the state's, with the growing dim last or
    // second to last (the matmul weight's N or K)
    std::vector<std::int64_t> perm(rank);
    for (std::size_t i = 0; i < rank; ++i) perm[i] = static_cast<std::int64_t>(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    const std::size_t axis = static_cast<std::size_t>(perm[rank - 1 - pick(0, 1)]);
    shape[axis] = pick(0, 3);
    const graph::Layout layout{graph::Layout::Kind::MatmulWeight, pick(1, 3), pick(1, 4)};
    const DType dtype = trial % 3 == 0 ? DType::int32() : DType::int8();
    CAPTURE(trial);
    CAPTURE(shape);
    CAPTURE(perm);
    CAPTURE(axis);
    CAPTURE(layout.rows);
    CAPTURE(layout.cols);
    te::NDArray state = te::NDArray::random(dtype, shape, 100 + trial);
    graph::AppendedState held(dtype, shape, axis, perm, layout, "cache");
    held.assign(state);
    REQUIRE(held.logical() == state);
    // a copy kept as the executor keeps the device's: only the ranges take_written gives
    std::vector<std::uint8_t> copy;
    const auto follow = [&] {
      const auto written = held.take_written();
      copy.resize(held.bytes().size());
      for (const auto& w : written) {
        REQUIRE(w.offset + w.size <= copy.size());
        std::copy_n(held.bytes().begin() + static_cast<std::ptrdiff_t>(w.offset), w.size,
                    copy.begin() + static_cast<std::ptrdiff_t>(w.offset));
      }
      REQUIRE(std::equal(copy.begin(), copy.end(), held.bytes().begin()));
      std::size_t total = 0;
      for (const auto& w : written) total += w.size;
      return total;
    };
    follow();
    bool failed_before = false;
    for (int step = 0; step < 6; ++step) {
      std::vector<std::int64_t> rows_shape = shape;
      rows_shape[axis] = pick(0, 7);
      const auto rows = te::NDArray::random(dtype, rows_shape, 1000 * trial + step);
      const auto size_before = held.bytes().size();
      held.append(rows);
      const auto written = follow();
      // no tile moved and nothing left over from a failed run: the new elements' bytes, and
      // between ranges merged at most kMergeGap unchanged bytes each
      const auto bytes = static_cast<std::size_t>(rows.size()) * dtype.bytes();
      if (held.bytes().size() == size_before && !failed_before) {
        REQUIRE(written >= bytes);
        REQUIRE(written <=
                bytes + static_cast<std::size_t>(rows.size()) * graph::AppendedState::kMergeGap);
      }
      const te::NDArray* parts[] = {&state, &rows};
      const auto longer = host::concat(parts, {.axis = static_cast<std::int64_t>(axis)});
      const auto expected = packed_bytes(longer, perm, layout);
      REQUIRE(std::vector<std::uint8_t>(held.bytes().begin(), held.bytes().end()) == expected);
      failed_before = pick(0, 3) == 0;
      if (failed_before) continue;  // a run that failed after its append: nothing changes
      held.commit();
      state = longer;
      REQUIRE(held.length() == state.shape()[axis]);
      REQUIRE(held.logical() == state);
    }
  }
}

TEST_CASE("appended state: reserved, appends up to the reserve never move its buffer") {
  // a K cache [1, 2, T, 16] held transposed as [1, 2, 16, T] in 4 x 4 tiles: a new tile of
  // positions every 4; reserved for 40 positions, the bytes stay where they are through 40
  // appends of one position and an assign, and equal the packed state after each
  const graph::Layout layout{graph::Layout::Kind::MatmulWeight, 4, 4};
  graph::AppendedState held(DType::int8(), {1, 2, 0, 16}, 2, {0, 1, 3, 2}, layout, "k");
  held.reserve(40);
  held.assign(te::NDArray::random(DType::int8(), {1, 2, 1, 16}, 3));
  const std::uint8_t* at = held.bytes().data();
  te::NDArray state = held.logical();
  for (std::uint64_t k = 1; k < 40; ++k) {
    const auto row = te::NDArray::random(DType::int8(), {1, 2, 1, 16}, 10 + k);
    held.append(row);
    held.commit();
    const te::NDArray* parts[] = {&state, &row};
    state = host::concat(parts, {.axis = 2});
    CHECK(held.bytes().data() == at);
    CHECK(held.logical() == state);
  }
  held.assign(te::NDArray::random(DType::int8(), {1, 2, 3, 16}, 4));
  CHECK(held.bytes().data() == at);
}

TEST_CASE("appended state: rows of another shape or dtype name the state") {
  graph::AppendedState held(DType::int8(), {1, 2, 0, 4}, 2, {0, 1, 3, 2},
                            {graph::Layout::Kind::MatmulWeight, 16, 16}, "k_cache");
  CHECK_THROWS_WITH_AS(held.append(te::NDArray(DType::int8(), {1, 3, 1, 4})),
                       "state 'k_cache': the appended rows are int8[1, 3, 1, 4], the state is "
                       "int8[1, 2, *, 4] (any length along dim 2)",
                       dlavm::ShapeError);
  CHECK_THROWS_AS(held.assign(te::NDArray(DType::int32(), {1, 2, 1, 4})), dlavm::ShapeError);
  CHECK(held.length() == 0);
}

TEST_CASE("appended state: written ranges merge across kMergeGap bytes, not one more") {
  // a state [3, N] growing along N, packed as [N / R, 3, R, 1]: one position is a byte in each
  // of the 3 tiles, R bytes apart, so R - 1 unchanged bytes lie between them. After assigning
  // one position, appending the second (the same tiles) writes bytes 1, R + 1 and 2R + 1.
  constexpr auto gap = static_cast<std::int64_t>(graph::AppendedState::kMergeGap);
  for (const std::int64_t rows : {gap + 1, gap + 2}) {
    CAPTURE(rows);
    graph::AppendedState held(DType::int8(), {3, 0}, 1, {0, 1},
                              {graph::Layout::Kind::MatmulWeight, rows, 1}, "v");
    held.assign(te::NDArray::random(DType::int8(), {3, 1}, 5));
    REQUIRE(held.take_written().size() == 1);  // all of it
    held.append(te::NDArray::random(DType::int8(), {3, 1}, 6));
    const auto written = held.take_written();
    if (rows == gap + 1) {
      // kMergeGap bytes between: one range over the three bytes
      REQUIRE(written.size() == 1);
      CHECK(written[0].offset == 1);
      CHECK(written[0].size == static_cast<std::size_t>(2 * rows + 1));
    } else {
      REQUIRE(written.size() == 3);
      for (std::size_t t = 0; t < 3; ++t) {
        CHECK(written[t].offset == static_cast<std::size_t>(t * rows + 1));
        CHECK(written[t].size == 1);
      }
    }
  }
}
