// The VTA strategy of dense (y[M, N] = x[M, K] . w[N, K]^T, int8 x int8 -> int32) and of a
// batched matmul whose operands are both activations (attention's Q.K^T and scores.V, one
// product per head): its compute in VTA's packed layouts with a fused epilogue, and the
// default schedule (the blocked GEMM tutorial's) with a tiling chosen from the shape and the
// SRAM sizes. M, K and N may be symbolic (a token count, the positions attended over); the
// tiling is chosen for their maxima, and a partial last block (of rows, columns or the
// reduction) runs with what is left. The zero padding of the last tiles makes a partial
// K tile exact.
//
// Layouts (B = BATCH, BI = BLOCK_IN, BO = BLOCK_OUT; rows, K and N zero-padded to whole tiles
// by graph::pack; a batched matmul has a leading dim of `batch` products on each):
//   x [M/B, K/BI, B, BI] int8    w [N/BO, K/BI, BO, BI] int8    y [M/B, N/BO, B, BO] int8
//
// Schedule: output blocks of row_block row tiles x n_block column tiles (per product); per
// block, K is reduced k_block tiles at a time (the reduction outermost, as the tutorials put
// it); the column blocks alternate between `vthreads` virtual threads, or, where the column
// count is symbolic, the products do.
//
//   graph::DenseShape shape{.rows = token, .in_features = 512, .out_features = 256};
//   graph::DenseKernel k(env, shape, epilogue, "fc");
//   auto s = k.schedule(graph::default_dense_tiling(env, shape, epilogue));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/graph/strategy/sram.hpp>
#include <dlavm/graph/strategy/workload.hpp>
#include <dlavm/ne/expr.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/te/tensor.hpp>
#include <dlavm/vta/lower/env.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlavm::graph {

struct DenseShape {
  ne::Expr rows = 1;          // M: may be symbolic, with a maximum
  ne::Expr in_features = 0;   // K: may be symbolic (the positions scores.V sums over)
  ne::Expr out_features = 0;  // N: may be symbolic (the positions Q.K^T scores)
  // A batched matmul's independent products (heads x batch), each with its own x and w;
  // dense has none (no batch dim in its layouts).
  std::optional<std::int64_t> batch{};
};

struct DenseTiling {
  std::int64_t row_block = 1;  // row tiles per block
  std::int64_t n_block = 1;    // output column tiles per block
  std::int64_t k_block = 1;    // K tiles per reduction step
  std::int64_t vthreads = 1;   // virtual threads over the column blocks
  // The knobs, in the order of the knob space (rows, n, k, threads).
  std::array<std::int64_t*, 4> fields() { return {&row_block, &n_block, &k_block, &vthreads}; }
  static DenseTiling of(const Knobs& k) {
    return {k.at("rows"), k.at("n"), k.at("k"), k.at("threads")};
  }
  friend bool operator==(const DenseTiling&, const DenseTiling&) = default;
};

class DenseKernel {
 public:
  DenseKernel(const vta::Env& env, const DenseShape& shape, const Epilogue& epilogue,
              const std::string& name);
  // x, w, the epilogue's inputs in order, result.
  std::vector<te::Tensor> args() const;
  te::Schedule schedule(const DenseTiling& t) const;

 private:
  vta::Env env_;
  DenseShape shape_;
  Epilogue epilogue_spec_;
  te::Tensor x_, w_, x_buf_, w_buf_, acc_;
  te::IterVar ko_, ki_;
  EpilogueStages epilogue_;
};

// Why `t` cannot run `shape`, or nullopt.
std::optional<std::string> check_tiling(const vta::Env& env, const DenseShape& shape,
                                        const Epilogue& epilogue, const DenseTiling& t);
// The SRAM entries the tiling's kernel allocates (graph/strategy/sram.hpp).
SramFootprint footprint(const vta::Env& env, const DenseShape& shape, const Epilogue& epilogue,
                        const DenseTiling& t);
// Estimated cycles at the shape's maxima (see estimate_cycles for conv2d).
double estimate_cycles(const vta::Env& env, const DenseShape& shape, const Epilogue& epilogue,
                       const DenseTiling& t);
// The knobs of the schedule: rows, n and k (the divisors of a constant tile count, and the
// powers of two below a symbolic one's maximum) and threads (2, 1).
KnobSpace knob_space(const vta::Env& env, const DenseShape& shape, const Epilogue& epilogue);
// The valid tiling of least estimated cycles; CapacityError when none fits.
DenseTiling default_dense_tiling(const vta::Env& env, const DenseShape& shape,
                                 const Epilogue& epilogue);
// DRAM bytes the tiling must move: x once per column block, w once per row block, the result
// and the epilogue's operands once. An expression in the symbolic dims.
ne::Expr tiling_traffic(const vta::Env& env, const DenseShape& shape, const Epilogue& epilogue,
                        const DenseTiling& t);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/strategy/dense-inl.hpp>
#endif
