// The VTA strategy of conv2d: its compute in VTA's packed layouts, with a fused epilogue, and
// the default schedule (the convolution_opt tutorial's, generalized to any stride, padding
// and kernel size) with a tiling chosen from the shape and the SRAM sizes.
//
// Layouts (B = BATCH, BI = BLOCK_IN, BO = BLOCK_OUT; channels and the batch zero-padded to
// whole tiles by graph::pack):
//   data   [N/B, C/BI, H, W, B, BI]  int8      weight [O/BO, C/BI, KH, KW, BO, BI] int8
// A grouped convolution's weight is [O/BO, S, KH, KW, BO, BI]: output tile co reduces over the
// S data tiles [co*S, (co+1)*S) its groups read, with block-diagonal weights (a depthwise
// convolution: S = 1, one GEMM micro-op per output vector and kernel tap, 1/16 of its MACs
// useful at BLOCK 16).
//   result [N/B, O/BO, OH, OW, B, BO] int8, the epilogue applied to the int32 sum
// Padding is done by the input DMA (VTA pads INP loads with zeros, at most 15 rows or
// columns a side). A 1x1 convolution with strides loads only the rows and columns it reads, or
// (the tiling's choice) its whole window.
//
// Schedule: output blocks of oc_block channel tiles x h_block rows x w_block columns; per
// block, the input channels are reduced ic_block tiles at a time, each step loading its input
// window and weights; the output channel blocks, or (the tiling's split) the row blocks,
// alternate between `vthreads` virtual threads (double buffering: one thread's loads overlap
// the other's GEMMs). The GEMM instructions
// loop over the block's rows and kernel rows, their micro-ops over the kernel columns and the
// block's columns; over a symbolic width (a partial last column block) they loop over the
// block's rows and columns and the micro-ops over the reduction only.
//
//   graph::Conv2dShape shape{.batch = 1, .in_channels = 64, .height = 56, .width = 56,
//                            .out_channels = 64, .kernel = {3, 3}, .padding = {1, 1, 1, 1}};
//   graph::Conv2dKernel k(env, shape, epilogue, "conv",
//                         graph::default_conv2d_tiling(env, shape, epilogue));
//   auto s = k.schedule();
//   auto prog = vta::build(s, k.args(), env, "conv");
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

// A convolution in NCHW x OIHW terms (unpacked sizes). The batch, height and width may be
// symbolic dims with a maximum: the tiling is chosen for the maxima, a partial last block of
// rows or columns runs with what is left, and one program serves every binding.
struct Conv2dShape {
  ne::Expr batch = 1;
  std::int64_t in_channels = 0;
  ne::Expr height = 0, width = 0;
  std::int64_t out_channels = 0;
  std::array<std::int64_t, 2> kernel{1, 1};
  std::array<std::int64_t, 2> strides{1, 1};
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  // top, left, bottom, right
  // Grouped convolution: output channel o reads input channels [g*I/G, (g+1)*I/G) of its group
  // g = o / (O/G). The kernel gives each output channel tile only the input channel tiles its
  // groups read, with block-diagonal weights (graph::Layout::Kind::GroupedConvWeight).
  std::int64_t groups = 1;
  ne::Expr out_h() const;
  ne::Expr out_w() const;
  // Multiply-accumulates of the convolution (padding excluded).
  ne::Expr macs() const;
  // The shape with its symbolic dims at their maxima (every dim constant).
  Conv2dShape at_max() const;
};

struct Conv2dTiling {
  std::int64_t oc_block = 1;  // output channel tiles per block
  std::int64_t h_block = 1;   // output rows per block
  std::int64_t w_block = 1;   // output columns per block
  std::int64_t ic_block = 1;  // input channel tiles per reduction step
  std::int64_t vthreads = 1;  // virtual threads
  std::int64_t split = 0;     // what the threads alternate over: 0 output channel blocks, 1 rows
  // A 1x1 kernel with strides: 1 loads only the rows and columns it reads (a load per row: the
  // DMA strides rows, not columns), 0 its whole window (one load, stride x the bytes).
  std::int64_t strided = 1;
  // The knobs, in the order of the knob space (oc, h, w, ic, threads, split[, strided]).
  std::array<std::int64_t*, 7> fields() {
    return {&oc_block, &h_block, &w_block, &ic_block, &vthreads, &split, &strided};
  }
  static Conv2dTiling of(const Knobs& k) {
    return {k.at("oc"),      k.at("h"),         k.at("w"),          k.at("ic"),
            k.at("threads"), k.get("split", 0), k.get("strided", 1)};
  }
  friend bool operator==(const Conv2dTiling&, const Conv2dTiling&) = default;
};

// Tiles of the packed layouts, at the dims' maxima.
struct Conv2dTiles {
  // batch tiles; input channel tiles an output tile reads (all of them unless grouped); output
  // channel tiles; output size
  std::int64_t n, ic, oc, oh, ow;
  std::int64_t data_ic;               // input channel tiles of the data
  bool rows_symbolic, cols_symbolic;  // whether the output height / width is symbolic
  bool grouped;                       // output tile co reads data tiles [co*ic, (co+1)*ic)
  Conv2dTiles(const vta::Env& env, const Conv2dShape& c);
};

class Conv2dKernel {
 public:
  // The kernel of one tiling: its `strided` decides what a strided 1x1 kernel's input buffer
  // holds. ScheduleError when the tiling cannot run the shape (check_tiling).
  Conv2dKernel(const vta::Env& env, const Conv2dShape& shape, const Epilogue& epilogue,
               const std::string& name, const Conv2dTiling& tiling);

  // data, weight, the epilogue's inputs in order, result.
  std::vector<te::Tensor> args() const;
  te::Schedule schedule() const;
  const EpilogueStages& epilogue() const { return epilogue_; }

 private:
  vta::Env env_;
  Conv2dShape shape_;
  Epilogue epilogue_spec_;
  Conv2dTiling tiling_;
  te::Tensor data_, weight_, data_buf_, weight_buf_, acc_;
  te::IterVar ic_, dy_, dx_, ic_tns_;
  EpilogueStages epilogue_;
  bool strided_window_ = false;  // data_buf holds only the rows and columns a 1x1 kernel reads
};

// Why VTA's kernel cannot run `c`'s groups (they do not tile whole: grouped_input_tiles), or
// nullopt (groups = 1 included).
std::optional<std::string> check_groups(const vta::Env& env, const Conv2dShape& c);

// Whether folding the kernel width into the input channels (graph::Layout's unfolded layouts)
// takes fewer input channel tiles per output pixel: an RGB image's 3 channels under a 7-wide
// kernel need 2 tiles instead of 7 (one per kernel column).
bool unfolds_width(const vta::Env& env, const Conv2dShape& c);
// The convolution the VTA kernel computes for `c`: c itself, or with the width unfolded, a
// KH x 1 kernel over the OW unfolded columns with column stride 1 and no column padding.
Conv2dShape vta_conv2d_shape(const vta::Env& env, const Conv2dShape& c);

// Why `t` cannot run `shape` (a block that does not divide a constant output extent or exceeds
// a symbolic one's maximum, SRAM that does not hold a block with its double buffer), or
// nullopt.
std::optional<std::string> check_tiling(const vta::Env& env, const Conv2dShape& shape,
                                        const Epilogue& epilogue, const Conv2dTiling& t);

// The SRAM entries the tiling's kernel allocates (graph/strategy/tiling.hpp).
SramFootprint footprint(const vta::Env& env, const Conv2dShape& shape, const Epilogue& epilogue,
                        const Conv2dTiling& t);

// The cost the default tiling minimizes: an estimate of the cycles on VTA (the slowest of the
// load, compute and store modules, with their DRAM bytes, instruction overheads and the part
// double buffering cannot hide). Not the cycle model: a formula over the block counts.
double estimate_cycles(const vta::Env& env, const Conv2dShape& shape, const Epilogue& epilogue,
                       const Conv2dTiling& t);

// The knobs of the schedule: oc, h, w, ic (block sizes: the divisors of each tile count, and
// the powers of two of a symbolic output extent), threads (2, 1), split (0 output channel
// blocks, 1 row blocks) and, for a 1x1 kernel with strides, strided (1, 0); a point is checked
// by check_tiling and costed by estimate_cycles.
KnobSpace knob_space(const vta::Env& env, const Conv2dShape& shape, const Epilogue& epilogue);

// The valid tiling of least estimated cycles (ties: the first in knob order). CapacityError when
// no tiling fits the SRAMs (a kernel too large for the weight buffer even one tile at a time).
Conv2dTiling default_conv2d_tiling(const vta::Env& env, const Conv2dShape& shape,
                                   const Epilogue& epilogue);

// DRAM bytes a tiling must move: for each output channel block and spatial block, the input
// rows and columns its window covers (padding excluded); the weights once per spatial block;
// the epilogue's tensor operands and the result once; the channel operands once. An
// expression in the shape's symbolic dims (a constant when there are none).
ne::Expr tiling_traffic(const vta::Env& env, const Conv2dShape& shape, const Epilogue& epilogue,
                        const Conv2dTiling& t);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy/conv2d-inl.hpp>
#endif
