// The model the tune suite searches: two convolutions (a 3x3 over 14 x 14 and a strided 1x1 to
// 7 x 7) and a dense layer, each with a requantizing epilogue.
#pragma once

#include <dlavm/graph.hpp>

namespace tune_test {

inline dlavm::graph::Function small_model() {
  namespace graph = dlavm::graph;
  namespace te = dlavm::te;
  using dlavm::DType;
  auto x = graph::input("x", {1, 32, 14, 14}, DType::int8());
  auto w0 = graph::constant("w0", te::NDArray::random(DType::int8(), {32, 32, 3, 3}, 1, -8, 8));
  auto w1 = graph::constant("w1", te::NDArray::random(DType::int8(), {64, 32, 1, 1}, 2, -8, 8));
  auto y = graph::requantize(graph::conv2d(x, w0, {.padding = {1, 1, 1, 1}}), {.shift = 6});
  y = graph::requantize(graph::conv2d(y, w1, {.strides = {2, 2}}), {.shift = 5});
  auto w2 = graph::constant("w2", te::NDArray::random(DType::int8(), {16, 64 * 7 * 7}, 3, -4, 4));
  auto z = graph::requantize(graph::dense(graph::flatten(y), w2), {.shift = 8});
  return graph::function({x}, {z});
}

}  // namespace tune_test
