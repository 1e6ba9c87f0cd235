// Definitions for graph/strategy/pool2d.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/strategy/pool2d.hpp>
#include <dlavm/graph/strategy/tiling.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/pad.hpp>
#include <dlavm/vta/hw/cycle_model.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <vector>

namespace dlavm::graph {

namespace detail {

// The kernel's epilogue: an average's shift by log2(window elements), then the fused steps.
inline Epilogue pool_epilogue(const Pool2dShape& shape, const Epilogue& fused,
                              const vta::Config& config) {
  Epilogue e;
  const auto count = static_cast<std::uint64_t>(shape.window[0] * shape.window[1]);
  if (shape.kind == Pool2dShape::Kind::Average && count > 1)
    e.imm(EpilogueStep::Kind::Shr, std::countr_zero(count), config);
  for (const auto& s : fused.steps) {
    if (s.kind == EpilogueStep::Kind::AddChannel || s.kind == EpilogueStep::Kind::AddTensor)
      e.steps.push_back(s);
    else
      e.imm(s.kind, s.imm, config);
  }
  e.inputs = fused.inputs;
  return e;
}

// Tiles of the packed layouts, at the dims' maxima.
struct PoolTiles {
  std::int64_t n, c, oh, ow;
  bool rows_symbolic;
  PoolTiles(const vta::Env& env, const Pool2dShape& s)
      : n(ceil_div(max_of(s.batch), env.batch)),
        c(ceil_div(s.channels, env.block_out)),
        oh(s.height.is_const()
               ? host::window_output(*s.height.as_int(), s.padding[0] + s.padding[2], s.window[0],
                                     s.strides[0])
               : max_of(s.out_h())),
        ow(s.out_w()),
        rows_symbolic(!s.height.is_const()) {}
};

}  // namespace detail

DLAVM_INLINE ne::Expr Pool2dShape::out_h() const {
  return ne::simplify(host::window_output(height, padding[0] + padding[2], window[0], strides[0]));
}

DLAVM_INLINE std::int64_t Pool2dShape::out_w() const {
  return host::window_output(width, padding[1] + padding[3], window[1], strides[1]);
}

DLAVM_INLINE Pool2dShape Pool2dShape::at_max() const {
  Pool2dShape s = *this;
  s.batch = detail::max_of(batch);
  s.height = detail::max_of(height);
  return s;
}

DLAVM_INLINE Pool2dKernel::Pool2dKernel(const vta::Env& env, const Pool2dShape& shape,
                                        const Epilogue& epilogue, const std::string& name)
    : env_(env), shape_(shape), epilogue_spec_(detail::pool_epilogue(shape, epilogue, env.config)) {
  const detail::PoolTiles t(env, shape);
  const ne::Expr batch_tiles = ne::simplify(ne::ceildiv(shape.batch, env.batch));
  const auto& p = shape.padding;
  data_ = te::placeholder({batch_tiles, t.c, shape.height, shape.width, env.batch, env.block_out},
                          shape.dtype, name + "_data");
  // The input in the accumulator (an int8 one through ACC_8BIT): a padded buffer keeps the
  // input's dtype (te::pad; the window's reads cast it), an unpadded one is the copy itself.
  if (p != std::array<std::int64_t, 4>{0, 0, 0, 0}) {
    // the pad value never wins a max; an average counts it as 0
    const std::int64_t value = shape.kind == Pool2dShape::Kind::Max ? shape.dtype.min_value() : 0;
    data_buf_ = te::pad(data_, {0, 0, p[0], p[1], 0, 0}, {0, 0, p[2], p[3], 0, 0}, value,
                        name + "_data_buf");
  } else {
    data_buf_ = copy_stage(data_, env.acc_dtype, name + "_data_buf");
  }
  auto dy = te::reduce_axis({0, shape.window[0]}, "dy");
  auto dx = te::reduce_axis({0, shape.window[1]}, "dx");
  const std::int64_t sh = shape.strides[0], sw = shape.strides[1];
  const auto& data_buf = data_buf_;
  const bool max = shape.kind == Pool2dShape::Kind::Max;
  acc_ = te::compute(te::shape(batch_tiles, t.c, shape.out_h(), t.ow, env.batch, env.block_out),
                     [&](auto n, auto c, auto i, auto j, auto b, auto l) {
                       const auto e =
                           te::cast(env.acc_dtype, data_buf(n, c, i * sh + dy, j * sw + dx, b, l));
                       return max ? te::max(e, {dy, dx}) : te::sum(e, {dy, dx});
                     },
                     name + "_acc", {"n", "c", "i", "j", "b", "l"});
  epilogue_ = make_epilogue(env, acc_, epilogue_spec_, name);
}

DLAVM_INLINE std::vector<te::Tensor> Pool2dKernel::args() const {
  return epilogue_.kernel_args({data_});
}

DLAVM_INLINE te::Schedule Pool2dKernel::schedule(const Pool2dTiling& t) const {
  if (auto why = check_tiling(env_, shape_, epilogue_spec_, t))
    raise<ScheduleError>("pool '{}': tiling {}x{} ({} threads): {}", epilogue_.res.name(),
                         t.c_block, t.h_block, t.vthreads, *why);
  const auto& res = epilogue_.res;
  auto s = te::create_schedule(res);
  auto [n_out, n_inn] = s[res].split(s[res].axis(0), 1);
  auto [c_out, c_inn] = s[res].split(s[res].axis(1), t.c_block);
  auto [y_out, y_inn] = s[res].split(s[res].axis(2), t.h_block);
  s[res].reorder({n_out, c_out, y_out, n_inn, c_inn, y_inn});
  if (t.vthreads > 1) {
    auto [c_o, tx] = s[res].split(c_out, t.vthreads);
    s[res].reorder({tx, n_out, c_o});
    s[res].bind(tx, te::thread_axis("cthread"));
  }
  s[data_buf_].set_scope(env_.acc_scope);
  s[acc_].set_scope(env_.acc_scope);
  s[data_buf_].compute_at(s[res], y_out);
  s[acc_].compute_at(s[res], y_out);
  epilogue_.schedule(s, env_, y_out);
  s[data_buf_].pragma(s[data_buf_].axis(0), env_.dma_copy);
  s[acc_].pragma(s[acc_].axis(0), env_.alu);
  s[res].pragma(n_inn, env_.dma_copy);
  return s;
}

namespace detail {

// Input rows of `block` output rows, and the columns of a whole output row (padding
// included; a stride that does not divide the padded width leaves its last columns unread).
inline std::int64_t pool_rows(const Pool2dShape& s, std::int64_t block) {
  return (block - 1) * s.strides[0] + s.window[0];
}
inline std::int64_t pool_cols(const Pool2dShape& s) {
  return (s.out_w() - 1) * s.strides[1] + s.window[1];
}

}  // namespace detail

DLAVM_INLINE std::optional<std::string> check_tiling(const vta::Env& env, const Pool2dShape& shape,
                                                     const Epilogue& epilogue,
                                                     const Pool2dTiling& t) {
  const detail::PoolTiles n(env, shape);
  if (auto why = check_block("channel tiles", n.c, t.c_block)) return why;
  if (n.rows_symbolic) {
    if (t.h_block < 1 || t.h_block > n.oh)
      return fmt::format("a block of {} output rows is outside [1, {}]", t.h_block, n.oh);
  } else if (auto why = check_block("output rows", n.oh, t.h_block)) {
    return why;
  }
  if (t.vthreads < 1 || (n.c / t.c_block) % t.vthreads != 0)
    return fmt::format("{} virtual threads do not divide the {} channel blocks", t.vthreads,
                       n.c / t.c_block);
  return check_footprint(env.config, footprint(env, shape, epilogue, t));
}

DLAVM_INLINE SramFootprint footprint(const vta::Env& env, const Pool2dShape& shape,
                                     const Epilogue& epilogue, const Pool2dTiling& t) {
  const detail::PoolTiles n(env, shape);
  const std::int64_t out = t.c_block * t.h_block * n.ow;
  const std::int64_t in =
      t.c_block * detail::pool_rows(shape, t.h_block) * detail::pool_cols(shape);
  SramFootprint f;
  f.acc = (in + out) * t.vthreads + EpilogueStages::acc_entries(epilogue, out, n.c, t.vthreads);
  // each window element's ALU instruction unrolls a row of output tiles
  f.uop_kernel = (shape.window[0] * shape.window[1] + 2) * n.ow * t.vthreads;
  return f;
}

namespace detail {

// DRAM bytes of a tiling over the batch tiles `n` and the input height (int64 or ne::Expr):
// each block's input rows (halo included, padding excluded) and the result.
template <class Int>
Int pool2d_traffic(const vta::Env& env, const Pool2dShape& shape, const Pool2dTiling& t,
                   const Int& n, const Int& height) {
  const Int oh = host::window_output(height, shape.padding[0] + shape.padding[2], shape.window[0],
                                     shape.strides[0]);
  const Int rows = window_reads(height, oh, t.h_block, shape.strides[0], shape.window[0],
                                shape.padding[0], shape.padding[2], false);
  const std::int64_t c = ceil_div(shape.channels, env.block_out);
  const std::int64_t in_tile = env.acc_tile() * shape.dtype.bytes();
  const std::int64_t out_tile = env.acc_tile() * env.out_dtype.bytes();
  return n * (rows * shape.width * in_tile + oh * shape.out_w() * out_tile) * c;
}

}  // namespace detail

DLAVM_INLINE ne::Expr tiling_traffic(const vta::Env& env, const Pool2dShape& shape,
                                     const Pool2dTiling& t) {
  return ne::simplify(detail::pool2d_traffic<ne::Expr>(
      env, shape, t, ne::ceildiv(shape.batch, env.batch), shape.height));
}

DLAVM_INLINE double estimate_cycles(const vta::Env& env, const Pool2dShape& shape,
                                    const Epilogue& epilogue, const Pool2dTiling& t) {
  const auto p = vta::CycleParams::for_config(env.config);
  const detail::PoolTiles n(env, shape);
  const double bus = static_cast<double>(p.bus_bytes_per_cycle);
  const double blocks = static_cast<double>(n.n * (n.c / t.c_block) * ceil_div(n.oh, t.h_block));
  const double out_tiles = static_cast<double>(n.n * n.c * n.oh * n.ow);
  const double passes =
      static_cast<double>(shape.window[0] * shape.window[1] + 1 + epilogue.alu_passes());
  const double bytes = static_cast<double>(
      detail::pool2d_traffic<std::int64_t>(env, shape, t, n.n, detail::max_of(shape.height)));
  const double out_bytes = out_tiles * static_cast<double>(env.acc_tile());
  // the compute module loads the input (ACC_8BIT, one load per row) and runs the ALU
  const double loads =
      blocks * static_cast<double>(t.c_block * detail::pool_rows(shape, t.h_block));
  const double compute = passes * out_tiles * static_cast<double>(p.alu_cycles_per_uop) +
                         (bytes - out_bytes) / bus +
                         loads * static_cast<double>(p.dram_latency + p.insn_overhead) +
                         blocks * passes * static_cast<double>(p.insn_overhead + p.alu_latency);
  const double store = out_bytes / bus +
                       blocks * static_cast<double>(t.c_block * (p.dram_latency + p.insn_overhead));
  if (t.vthreads == 1) return compute + store;
  return std::max(compute, store) + (compute + store) / blocks;
}

DLAVM_INLINE KnobSpace knob_space(const vta::Env& env, const Pool2dShape& shape,
                                  const Epilogue& epilogue) {
  const detail::PoolTiles n(env, shape);
  return tiling_space<Pool2dTiling>(
      {{"c", divisors(n.c)}, {"h", block_candidates(n.oh, n.rows_symbolic)}, {"threads", {2, 1}}},
      [env, shape, epilogue](const Pool2dTiling& t) {
        return check_tiling(env, shape, epilogue, t);
      },
      [env, shape, epilogue](const Pool2dTiling& t) {
        return estimate_cycles(env, shape, epilogue, t);
      });
}

DLAVM_INLINE Pool2dTiling default_pool2d_tiling(const vta::Env& env, const Pool2dShape& shape,
                                                const Epilogue& epilogue) {
  const auto space = knob_space(env, shape, epilogue);
  if (const auto best = least_cost_point(space)) return Pool2dTiling::of(space.knobs_of(*best));
  raise<CapacityError>(
      "pool {}x{} over {}x{}x{}: no tiling fits (one output row with its {} input rows of {} "
      "columns must fit the accumulator's {} entries)",
      shape.window[0], shape.window[1], shape.channels, shape.height, shape.width, shape.window[0],
      detail::pool_cols(shape), env.config.acc_depth());
}

}  // namespace dlavm::graph
