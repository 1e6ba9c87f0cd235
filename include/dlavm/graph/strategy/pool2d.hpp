// The VTA strategy of 2-D pooling on int8 (or int32) activations: max_pool2d, and avg_pool2d /
// global_avg_pool2d when the window's element count is a power of two (the average is then a
// sum and an arithmetic shift, which is host::avg_pool2d's floor division exactly). The input
// is loaded into the accumulator through VTA's ACC_8BIT path (an int32 one as it is); padding
// is filled there by the ALU (VTA's loads pad only the input buffer), with the input dtype's
// minimum for max pooling (so the padding never wins, as host::max_pool2d defines) and 0 for
// averages that count it. An int32 input's result is int32: its group ends with a cast or a
// requantize to int8, which VTA stores. The
// window is reduced by one ALU instruction per window element over a block of output tiles.
//
// Layouts (B = BATCH, BO = BLOCK_OUT: the accumulator's tile):
//   data [N/B, C/BO, H, W, B, BO] int8 | int32  ->  result [N/B, C/BO, OH, OW, B, BO] int8
//
// Schedule: blocks of c_block channel tiles x h_block output rows (whole rows), each loading
// its input rows (halo included) and pooling them; the channel blocks alternate between
// `vthreads` virtual threads.
//
//   graph::Pool2dShape shape{.batch = 1, .channels = 64, .height = 112, .width = 112,
//                            .window = {3, 3}, .strides = {2, 2}, .padding = {1, 1, 1, 1}};
//   graph::Pool2dKernel k(env, shape, {}, "pool");
//   auto s = k.schedule(graph::default_pool2d_tiling(env, shape, {}));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/graph/strategy/sram.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/te/tensor.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dlavm::graph {

// A pooling in NCHW terms. The batch and height may be symbolic dims with a maximum (the
// tiling is chosen for the maxima; a partial last block of rows runs with the rows left).
struct Pool2dShape {
  enum class Kind : std::uint8_t { Max, Average };
  Kind kind = Kind::Max;
  ne::Expr batch = 1;
  std::int64_t channels = 0;
  ne::Expr height = 0;
  std::int64_t width = 0;
  std::array<std::int64_t, 2> window{1, 1};
  std::array<std::int64_t, 2> strides{1, 1};
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  // top, left, bottom, right
  // The input's: int8 (loaded through ACC_8BIT), or int32 (an int8 value widened on the host
  // where the design has no ACC_8BIT: graph::widen_accumulator_loads)
  DType dtype = DType::int8();
  ne::Expr out_h() const;
  std::int64_t out_w() const;
  // The shape with its symbolic dims at their maxima.
  Pool2dShape at_max() const;
};

struct Pool2dTiling {
  std::int64_t c_block = 1;   // channel tiles per block
  std::int64_t h_block = 1;   // output rows per block
  std::int64_t vthreads = 1;  // virtual threads over the channel blocks
  // The knobs, in the order of the knob space (c, h, threads).
  std::array<std::int64_t*, 3> fields() { return {&c_block, &h_block, &vthreads}; }
  static Pool2dTiling of(const Knobs& k) { return {k.at("c"), k.at("h"), k.at("threads")}; }
  friend bool operator==(const Pool2dTiling&, const Pool2dTiling&) = default;
};

class Pool2dKernel {
 public:
  Pool2dKernel(const vta::Env& env, const Pool2dShape& shape, const Epilogue& epilogue,
               const std::string& name);
  // data, the epilogue's inputs in order, result.
  std::vector<te::Tensor> args() const;
  te::Schedule schedule(const Pool2dTiling& t) const;

 private:
  vta::Env env_;
  Pool2dShape shape_;
  Epilogue epilogue_spec_;
  te::Tensor data_, data_buf_, acc_;
  EpilogueStages epilogue_;
};

// Why `t` cannot run `shape`, or nullopt.
std::optional<std::string> check_tiling(const vta::Env& env, const Pool2dShape& shape,
                                        const Epilogue& epilogue, const Pool2dTiling& t);
// The SRAM entries the tiling's kernel allocates (graph/strategy/sram.hpp).
SramFootprint footprint(const vta::Env& env, const Pool2dShape& shape, const Epilogue& epilogue,
                        const Pool2dTiling& t);
double estimate_cycles(const vta::Env& env, const Pool2dShape& shape, const Epilogue& epilogue,
                       const Pool2dTiling& t);
// The knobs of the schedule: c (divisors of the channel tiles), h (divisors of the output rows,
// and powers of two of a symbolic count) and threads (2, 1).
KnobSpace knob_space(const vta::Env& env, const Pool2dShape& shape, const Epilogue& epilogue);
// The valid tiling of least estimated cycles; CapacityError when none fits.
Pool2dTiling default_pool2d_tiling(const vta::Env& env, const Pool2dShape& shape,
                                   const Epilogue& epilogue);
// DRAM bytes a tiling must move: each block's input rows (halo included, padding excluded),
// the result once. An expression in the shape's symbolic dims.
ne::Expr tiling_traffic(const vta::Env& env, const Pool2dShape& shape, const Pool2dTiling& t);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy/pool2d-inl.hpp>
#endif
