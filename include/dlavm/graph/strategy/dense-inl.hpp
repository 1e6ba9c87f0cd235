// Definitions for graph/strategy/dense.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/strategy/dense.hpp>
#include <dlavm/graph/strategy/tiling.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/vta/hw/cycle_model.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace dlavm::graph {

namespace detail {

struct DenseTiles {
  bool rows_symbolic;        // whether the row count is symbolic
  std::int64_t m_max, k, n;  // row tiles (at most), K and N tiles
  DenseTiles(const vta::Env& env, const DenseShape& s)
      : rows_symbolic(!s.rows.is_const()),
        m_max(ceil_div(rows_symbolic ? ne::bounds(s.rows).max : *s.rows.as_int(), env.batch)),
        k(ceil_div(s.in_features, env.block_in)),
        n(ceil_div(s.out_features, env.block_out)) {}
};

}  // namespace detail

DLAVM_INLINE DenseKernel::DenseKernel(const vta::Env& env, const DenseShape& shape,
                                      const Epilogue& epilogue, const std::string& name)
    : env_(env), shape_(shape), epilogue_spec_(epilogue) {
  const detail::DenseTiles t(env, shape);
  const ne::Expr m = ne::simplify(ne::ceildiv(shape.rows, env.batch));  // row tiles
  x_ = te::placeholder({m, t.k, env.batch, env.block_in}, env.inp_dtype, name + "_x");
  w_ = te::placeholder({t.n, t.k, env.block_out, env.block_in}, env.wgt_dtype, name + "_w");
  x_buf_ = copy_stage(x_, name + "_x_buf");
  w_buf_ = copy_stage(w_, name + "_w_buf");
  ko_ = te::reduce_axis({0, t.k}, "ko");
  ki_ = te::reduce_axis({0, env.block_in}, "ki");
  const auto& x_buf = x_buf_;
  const auto& w_buf = w_buf_;
  acc_ = te::compute(te::shape(m, t.n, env.batch, env.block_out),
                     [&](auto m, auto n, auto b, auto c) {
                       return te::sum(te::cast(env.acc_dtype, x_buf(m, ko_, b, ki_)) *
                                          te::cast(env.acc_dtype, w_buf(n, ko_, c, ki_)),
                                      {ko_, ki_});
                     },
                     name + "_acc", {"m", "n", "b", "c"});
  epilogue_ = make_epilogue(env, acc_, epilogue, name);
}

DLAVM_INLINE std::vector<te::Tensor> DenseKernel::args() const {
  return epilogue_.kernel_args({x_, w_});
}

DLAVM_INLINE te::Schedule DenseKernel::schedule(const DenseTiling& t) const {
  if (auto why = check_tiling(env_, shape_, epilogue_spec_, t))
    raise<ScheduleError>("dense '{}': tiling {}x{} (k {}, {} threads): {}", epilogue_.res.name(),
                         t.row_block, t.n_block, t.k_block, t.vthreads, *why);
  const auto& res = epilogue_.res;
  auto s = te::create_schedule(res);
  auto [m_out, m_inn] = s[res].split(s[res].axis(0), t.row_block);
  auto [n_out, n_inn] = s[res].split(s[res].axis(1), t.n_block);
  // the column blocks alternate between the threads: tx outermost, a thread's blocks inside
  te::IterVar attach = n_out;
  const auto planes = epilogue_.plane_axes(s);
  // (the block axes copied: clang 14 cannot capture structured bindings)
  const auto order = [&planes, m_inn = m_inn, n_inn = n_inn](std::vector<te::IterVar> outer) {
    outer.insert(outer.end(), planes.begin(), planes.end());
    outer.insert(outer.end(), {m_inn, n_inn});
    return outer;
  };
  if (t.vthreads > 1) {
    auto [n_o, tx] = s[res].split(n_out, t.vthreads);
    s[res].reorder(order({tx, m_out, n_o}));
    s[res].bind(tx, te::thread_axis("cthread"));
    attach = n_o;
  } else {
    s[res].reorder(order({m_out, n_out}));
  }
  s[acc_].compute_at(s[res], attach);
  epilogue_.schedule(s, env_, attach);
  const auto c = s[acc_].node()->root;  // m, n, b, c
  auto [ko_out, ko_inn] = s[acc_].split(ko_, t.k_block);
  s[acc_].reorder({ko_out, c[0], c[1], ko_inn, c[2], c[3], ki_});
  schedule_gemm(s, env_, x_buf_, w_buf_, acc_, ko_out, c[2]);
  s[res].pragma(m_inn, env_.dma_copy);
  return s;
}

DLAVM_INLINE std::optional<std::string> check_tiling(const vta::Env& env, const DenseShape& shape,
                                                     const Epilogue& epilogue,
                                                     const DenseTiling& t) {
  const detail::DenseTiles n(env, shape);
  if (t.row_block < 1 || t.row_block > n.m_max)
    return fmt::format("a block of {} row tiles is outside [1, {}]", t.row_block, n.m_max);
  if (!n.rows_symbolic && n.m_max % t.row_block != 0)
    return fmt::format("a block of {} does not divide the {} row tiles", t.row_block, n.m_max);
  if (auto why = check_block("output column tiles", n.n, t.n_block)) return why;
  if (auto why = check_block("K tiles", n.k, t.k_block)) return why;
  if (t.vthreads < 1 || (n.n / t.n_block) % t.vthreads != 0)
    return fmt::format("{} virtual threads do not divide the {} column blocks", t.vthreads,
                       n.n / t.n_block);
  return check_footprint(env.config, footprint(env, shape, epilogue, t));
}

DLAVM_INLINE SramFootprint footprint(const vta::Env& env, const DenseShape& shape,
                                     const Epilogue& epilogue, const DenseTiling& t) {
  const detail::DenseTiles n(env, shape);
  const std::int64_t block = t.row_block * t.n_block;
  SramFootprint f;
  f.acc = block * t.vthreads + EpilogueStages::acc_entries(epilogue, block, n.n, t.vthreads);
  f.inp = t.row_block * t.k_block * t.vthreads;
  f.wgt = t.n_block * t.k_block * t.vthreads;
  f.uop_kernel = t.k_block * t.vthreads;
  return f;
}

namespace detail {

// The DRAM bytes and block counts of a tiling at `rows` rows (int64, the estimates, or the
// shape's symbolic row count, the traffic per binding): x once per column block, w once per
// row block, the result and the epilogue's operands once.
template <class Int>
struct DenseCounts {
  Int inp_bytes, wgt_bytes, out_bytes, acc_bytes, blocks, steps;
};

template <class Int>
DenseCounts<Int> dense_counts(const vta::Env& env, const DenseShape& shape,
                              const Epilogue& epilogue, const DenseTiling& t, const Int& rows) {
  const DenseTiles n(env, shape);
  const Int m = vceil_div(rows, env.batch);
  const Int row_blocks = vceil_div(m, t.row_block);
  const std::int64_t col_blocks = n.n / t.n_block;
  DenseCounts<Int> c{0, 0, 0, 0, 0, 0};
  c.inp_bytes = m * (n.k * env.inp_tile() * env.inp_dtype.bytes() * col_blocks);
  c.wgt_bytes = row_blocks * (n.n * n.k * env.wgt_tile() * env.wgt_dtype.bytes());
  c.out_bytes = m * (n.n * env.acc_tile() * env.out_dtype.bytes() * epilogue.result_bytes());
  for (const auto& in : epilogue.inputs)
    c.acc_bytes = c.acc_bytes + (in.kind == EpilogueInput::Kind::Channel
                                     ? Int(n.n * env.acc_tile() * in.dtype.bytes())
                                     : m * (n.n * env.acc_tile() * in.dtype.bytes()));
  c.blocks = row_blocks * col_blocks;
  c.steps = c.blocks * (n.k / t.k_block);
  return c;
}

}  // namespace detail

DLAVM_INLINE ne::Expr tiling_traffic(const vta::Env& env, const DenseShape& shape,
                                     const Epilogue& epilogue, const DenseTiling& t) {
  const auto c = detail::dense_counts<ne::Expr>(env, shape, epilogue, t, shape.rows);
  return ne::simplify(c.inp_bytes + c.wgt_bytes + c.out_bytes + c.acc_bytes);
}

DLAVM_INLINE double estimate_cycles(const vta::Env& env, const DenseShape& shape,
                                    const Epilogue& epilogue, const DenseTiling& t) {
  const auto p = vta::CycleParams::for_config(env.config);
  const detail::DenseTiles n(env, shape);
  const std::int64_t rows = ne::bounds(shape.rows).max;
  const auto c = detail::dense_counts<std::int64_t>(env, shape, epilogue, t, rows);
  const double bus = static_cast<double>(p.bus_bytes_per_cycle);
  const double transfer = static_cast<double>(p.dram_latency + p.insn_overhead);
  const double load = static_cast<double>(c.inp_bytes + c.wgt_bytes) / bus +
                      static_cast<double>(c.steps * 2) * transfer;
  const std::int64_t out_tiles = ceil_div(rows, env.batch) * n.n;
  const double gemm = static_cast<double>(out_tiles * n.k);
  const double alu = static_cast<double>(epilogue.alu_passes() * out_tiles * p.alu_cycles_per_uop);
  const double insns = static_cast<double>(c.steps + c.blocks * (epilogue.alu_passes() + 1));
  const double compute = gemm + alu +
                         insns * static_cast<double>(p.insn_overhead + p.gemm_latency) +
                         static_cast<double>(c.acc_bytes) / bus;
  const double store = static_cast<double>(c.out_bytes) / bus +
                       static_cast<double>(c.blocks * epilogue.result_bytes()) * transfer;
  if (t.vthreads == 1) return load + compute + store / static_cast<double>(c.blocks);
  return std::max({load, compute, store}) + (load + compute) / static_cast<double>(c.steps) +
         store / static_cast<double>(c.blocks);
}

DLAVM_INLINE KnobSpace knob_space(const vta::Env& env, const DenseShape& shape,
                                  const Epilogue& epilogue) {
  const detail::DenseTiles n(env, shape);
  // a constant row count is tiled by its divisors; a symbolic one by powers of two up to its
  // maximum (the last block runs partially)
  std::vector<std::int64_t> row_blocks;
  if (!n.rows_symbolic) {
    row_blocks = divisors(n.m_max);
  } else {
    for (std::int64_t r = 1; r < n.m_max; r *= 2) row_blocks.push_back(r);
    row_blocks.push_back(n.m_max);
  }
  return tiling_space<DenseTiling>(
      {{"rows", row_blocks}, {"n", divisors(n.n)}, {"k", divisors(n.k)}, {"threads", {2, 1}}},
      [env, shape, epilogue](const DenseTiling& t) {
        return check_tiling(env, shape, epilogue, t);
      },
      [env, shape, epilogue](const DenseTiling& t) {
        return estimate_cycles(env, shape, epilogue, t);
      });
}

DLAVM_INLINE DenseTiling default_dense_tiling(const vta::Env& env, const DenseShape& shape,
                                              const Epilogue& epilogue) {
  const auto space = knob_space(env, shape, epilogue);
  if (const auto best = least_cost_point(space)) return DenseTiling::of(space.knobs_of(*best));
  raise<CapacityError>(
      "dense {} x {} -> {}: no tiling fits the SRAMs (the accumulator has {} entries, the "
      "input buffer {}, the weight buffer {})",
      shape.rows, shape.in_features, shape.out_features, env.config.acc_depth(),
      env.config.inp_depth(), env.config.wgt_depth());
}

}  // namespace dlavm::graph
