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

// A dense shape's tile counts: exact where the dim is constant, the maximum where symbolic.
struct DenseTiles {
  bool rows_symbolic, k_symbolic, n_symbolic;
  std::int64_t m_max, k, n;  // row, K and N tiles (at most)
  std::int64_t batch;        // products (1 for dense)
  DenseTiles(const vta::Env& env, const DenseShape& s)
      : rows_symbolic(!s.rows.is_const()),
        k_symbolic(!s.in_features.is_const()),
        n_symbolic(!s.out_features.is_const()),
        m_max(ceil_div(max_of(s.rows), env.batch)),
        k(ceil_div(max_of(s.in_features), env.block_in)),
        n(ceil_div(max_of(s.out_features), env.block_out)),
        batch(s.batch.value_or(1)) {}
  // Whether the virtual threads alternate over the products rather than the column blocks:
  // a symbolic column count has a partial last block, which a thread split cannot take.
  bool threads_over_batch() const { return n_symbolic; }
};

// The tiles of a symbolic or constant dim, as an expression.
inline ne::Expr tiles_of(const ne::Expr& dim, std::int64_t tile) {
  return ne::simplify(ne::ceildiv(dim, tile));
}

}  // namespace detail

DLAVM_INLINE DenseKernel::DenseKernel(const vta::Env& env, const DenseShape& shape,
                                      const Epilogue& epilogue, const std::string& name)
    : env_(env), shape_(shape), epilogue_spec_(epilogue) {
  const ne::Expr m = detail::tiles_of(shape.rows, env.batch);
  const ne::Expr k = detail::tiles_of(shape.in_features, env.block_in);
  const ne::Expr n = detail::tiles_of(shape.out_features, env.block_out);
  // a batched matmul's products are a leading dim of every operand
  std::vector<ne::Expr> lead;
  if (shape.batch) lead.emplace_back(*shape.batch);
  const auto with_lead = [&lead](std::initializer_list<ne::Expr> dims) {
    std::vector<ne::Expr> out = lead;
    out.insert(out.end(), dims);
    return out;
  };
  x_ = te::placeholder(with_lead({m, k, env.batch, env.block_in}), env.inp_dtype, name + "_x");
  w_ = te::placeholder(with_lead({n, k, env.block_out, env.block_in}), env.wgt_dtype, name + "_w");
  x_buf_ = copy_stage(x_, name + "_x_buf");
  w_buf_ = copy_stage(w_, name + "_w_buf");
  ko_ = te::reduce_axis({0, k}, "ko");
  ki_ = te::reduce_axis({0, env.block_in}, "ki");
  const std::size_t l = lead.size();
  acc_ = te::compute_dynamic(
      with_lead({m, n, env.batch, env.block_out}),
      [&](std::span<const ne::Var> i) {
        std::vector<ne::Expr> xi(i.begin(), i.begin() + static_cast<std::ptrdiff_t>(l));
        std::vector<ne::Expr> wi = xi;
        xi.insert(xi.end(), {i[l], ko_.var(), i[l + 2], ki_.var()});
        wi.insert(wi.end(), {i[l + 1], ko_.var(), i[l + 3], ki_.var()});
        return te::sum(
            te::cast(env_.acc_dtype, x_buf_.read(xi)) * te::cast(env_.acc_dtype, w_buf_.read(wi)),
            {ko_, ki_});
      },
      name + "_acc");
  epilogue_ = make_epilogue(env, acc_, epilogue, name, l + 1);
}

DLAVM_INLINE std::vector<te::Tensor> DenseKernel::args() const {
  return epilogue_.kernel_args({x_, w_});
}

DLAVM_INLINE te::Schedule DenseKernel::schedule(const DenseTiling& t) const {
  if (auto why = check_tiling(env_, shape_, epilogue_spec_, t))
    raise<ScheduleError>("dense '{}': tiling {}x{} (k {}, {} threads): {}", epilogue_.res.name(),
                         t.row_block, t.n_block, t.k_block, t.vthreads, *why);
  const auto& res = epilogue_.res;
  const std::size_t l = shape_.batch ? 1 : 0;
  auto s = te::create_schedule(res);
  auto [m_out, m_inn] = s[res].split(s[res].axis(l), t.row_block);
  auto [n_out, n_inn] = s[res].split(s[res].axis(l + 1), t.n_block);
  const auto planes = epilogue_.plane_axes(s);
  // (the block axes copied: clang 14 cannot capture structured bindings)
  const auto order = [&planes, m_inn = m_inn, n_inn = n_inn](std::vector<te::IterVar> outer) {
    outer.insert(outer.end(), planes.begin(), planes.end());
    outer.insert(outer.end(), {m_inn, n_inn});
    return outer;
  };
  // the column blocks (or the products) alternate between the threads: tx outermost, a
  // thread's blocks inside
  std::vector<te::IterVar> outer;
  if (t.vthreads > 1 && detail::DenseTiles(env_, shape_).threads_over_batch()) {
    auto [b_o, tx] = s[res].split(s[res].axis(0), t.vthreads);
    s[res].bind(tx, te::thread_axis("cthread"));
    outer = {tx, b_o, m_out, n_out};
  } else if (t.vthreads > 1) {
    auto [n_o, tx] = s[res].split(n_out, t.vthreads);
    s[res].bind(tx, te::thread_axis("cthread"));
    outer = {tx, m_out, n_o};
    if (l == 1) outer.insert(outer.begin() + 1, s[res].axis(0));
  } else {
    outer = {m_out, n_out};
    if (l == 1) outer.insert(outer.begin(), s[res].axis(0));
  }
  const te::IterVar attach = outer.back();
  s[res].reorder(order(outer));
  s[acc_].compute_at(s[res], attach);
  epilogue_.schedule(s, env_, attach);
  const auto c = s[acc_].node()->root;  // [product,] m, n, b, c
  auto [ko_out, ko_inn] = s[acc_].split(ko_, t.k_block);
  std::vector<te::IterVar> acc_order{ko_out};
  acc_order.insert(acc_order.end(), c.begin(), c.begin() + static_cast<std::ptrdiff_t>(l + 2));
  acc_order.insert(acc_order.end(), {ko_inn, c[l + 2], c[l + 3], ki_});
  s[acc_].reorder(acc_order);
  schedule_gemm(s, env_, x_buf_, w_buf_, acc_, ko_out, c[l + 2]);
  s[res].pragma(m_inn, env_.dma_copy);
  return s;
}

DLAVM_INLINE std::optional<std::string> check_tiling(const vta::Env& env, const DenseShape& shape,
                                                     const Epilogue& epilogue,
                                                     const DenseTiling& t) {
  if (auto why = check_epilogue(env, epilogue)) return why;
  const detail::DenseTiles n(env, shape);
  // a constant tile count is blocked by its divisors; a symbolic one by any block up to its
  // maximum (the last block partial)
  const auto check_dim = [](const char* what, std::int64_t tiles, bool symbolic,
                            std::int64_t block) -> std::optional<std::string> {
    if (!symbolic) return check_block(what, tiles, block);
    if (block < 1 || block > tiles)
      return fmt::format("a block of {} {} is outside [1, {}]", block, what, tiles);
    return std::nullopt;
  };
  if (auto why = check_dim("row tiles", n.m_max, n.rows_symbolic, t.row_block)) return why;
  if (auto why = check_dim("output column tiles", n.n, n.n_symbolic, t.n_block)) return why;
  if (auto why = check_dim("K tiles", n.k, n.k_symbolic, t.k_block)) return why;
  if (t.vthreads < 1) return fmt::format("{} virtual threads", t.vthreads);
  if (n.threads_over_batch()) {
    if (n.batch % t.vthreads != 0)
      return fmt::format(
          "{} virtual threads do not divide the {} products (the column count "
          "is symbolic, so the threads alternate over the products)",
          t.vthreads, n.batch);
  } else if ((n.n / t.n_block) % t.vthreads != 0) {
    return fmt::format("{} virtual threads do not divide the {} column blocks", t.vthreads,
                       n.n / t.n_block);
  }
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
  const auto bias = epilogue_sram(epilogue, t.n_block);
  f.inp += bias.inp * t.vthreads;
  f.wgt += bias.wgt * t.vthreads;
  f.uop_kernel = t.k_block * t.vthreads;
  return f;
}

namespace detail {

// The DRAM bytes and block counts of a tiling (int64 at the shape's maxima, for the estimates;
// ne::Expr in its symbolic dims, the traffic per binding), over all products: x once per
// column block, w once per row block, the result and the epilogue's operands once (a
// ChannelWeights operand's weights and input row per block).
template <class Int>
struct DenseCounts {
  Int inp_bytes, wgt_bytes, out_bytes, acc_bytes, blocks, steps;
};

// `m`, `k`, `n`: the row, K and N tile counts.
template <class Int>
DenseCounts<Int> dense_counts(const vta::Env& env, const DenseShape& shape,
                              const Epilogue& epilogue, const DenseTiling& t, const Int& m,
                              const Int& k, const Int& n) {
  const std::int64_t batch = shape.batch.value_or(1);
  const Int row_blocks = vceil_div(m, t.row_block);
  const Int col_blocks = vceil_div(n, t.n_block);
  DenseCounts<Int> c{0, 0, 0, 0, 0, 0};
  c.inp_bytes = batch * (m * k * col_blocks * (env.inp_tile() * env.inp_dtype.bytes()));
  c.wgt_bytes = batch * (row_blocks * n * k * (env.wgt_tile() * env.wgt_dtype.bytes()));
  c.out_bytes =
      batch * (m * n * (env.acc_tile() * env.out_dtype.bytes() * epilogue.result_bytes()));
  c.blocks = batch * (row_blocks * col_blocks);
  for (const auto& in : epilogue.inputs) {
    if (in.kind == EpilogueInput::Kind::ChannelWeights) {
      c.wgt_bytes =
          c.wgt_bytes + batch * (row_blocks * n * (env.wgt_tile() * env.wgt_dtype.bytes()));
      c.inp_bytes = c.inp_bytes + c.blocks * (env.inp_tile() * env.inp_dtype.bytes());
      continue;
    }
    c.acc_bytes = c.acc_bytes + (in.kind == EpilogueInput::Kind::Channel
                                     ? n * (env.acc_tile() * in.dtype.bytes())
                                     : batch * (m * n * (env.acc_tile() * in.dtype.bytes())));
  }
  c.steps = c.blocks * vceil_div(k, t.k_block);
  return c;
}

}  // namespace detail

DLAVM_INLINE ne::Expr tiling_traffic(const vta::Env& env, const DenseShape& shape,
                                     const Epilogue& epilogue, const DenseTiling& t) {
  const auto c = detail::dense_counts<ne::Expr>(
      env, shape, epilogue, t, detail::tiles_of(shape.rows, env.batch),
      detail::tiles_of(shape.in_features, env.block_in),
      detail::tiles_of(shape.out_features, env.block_out));
  return ne::simplify(c.inp_bytes + c.wgt_bytes + c.out_bytes + c.acc_bytes);
}

DLAVM_INLINE double estimate_cycles(const vta::Env& env, const DenseShape& shape,
                                    const Epilogue& epilogue, const DenseTiling& t) {
  const auto p = vta::CycleParams::for_config(env.config);
  const detail::DenseTiles n(env, shape);
  const auto c = detail::dense_counts<std::int64_t>(env, shape, epilogue, t, n.m_max, n.k, n.n);
  const double bus = static_cast<double>(p.bus_bytes_per_cycle);
  const double transfer = static_cast<double>(p.dram_latency + p.insn_overhead);
  const auto gemm_passes = static_cast<std::int64_t>(epilogue.gemm_passes());
  const double load = static_cast<double>(c.inp_bytes + c.wgt_bytes) / bus +
                      static_cast<double>(c.steps * 2 + c.blocks * 2 * gemm_passes) * transfer;
  const std::int64_t out_tiles = n.batch * n.m_max * n.n;
  const double gemm = static_cast<double>(out_tiles * (n.k + gemm_passes));
  const double alu = static_cast<double>(epilogue.alu_passes() * out_tiles * p.alu_cycles_per_uop);
  const double insns = static_cast<double>(
      c.steps + c.blocks * (epilogue.alu_passes() + static_cast<std::size_t>(gemm_passes) + 1));
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
  return tiling_space<DenseTiling>(
      {{"rows", block_candidates(n.m_max, n.rows_symbolic)},
       {"n", block_candidates(n.n, n.n_symbolic)},
       {"k", block_candidates(n.k, n.k_symbolic)},
       {"threads", {2, 1}}},
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
