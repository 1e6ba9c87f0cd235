// Definitions for graph/strategy/conv2d.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/layout.hpp>
#include <dlavm/graph/strategy/conv2d.hpp>
#include <dlavm/graph/strategy/tiling.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/eval.hpp>
#include <dlavm/ne/ops.hpp>
#include <dlavm/ne/simplify.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/pad.hpp>
#include <dlavm/vta/hw/cycle_model.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <variant>
#include <vector>

namespace dlavm::graph {

DLAVM_INLINE ne::Expr Conv2dShape::out_h() const {
  return ne::simplify(host::window_output(height, padding[0] + padding[2], kernel[0], strides[0]));
}

DLAVM_INLINE ne::Expr Conv2dShape::out_w() const {
  return ne::simplify(host::window_output(width, padding[1] + padding[3], kernel[1], strides[1]));
}

DLAVM_INLINE ne::Expr Conv2dShape::macs() const {
  return ne::simplify(batch * out_channels * out_h() * out_w() * (in_channels / groups) *
                      kernel[0] * kernel[1]);
}

DLAVM_INLINE Conv2dShape Conv2dShape::at_max() const {
  Conv2dShape c = *this;
  c.batch = detail::max_of(batch);
  c.height = detail::max_of(height);
  c.width = detail::max_of(width);
  return c;
}

DLAVM_INLINE Conv2dTiles::Conv2dTiles(const vta::Env& env, const Conv2dShape& c)
    : n(ceil_div(detail::max_of(c.batch), env.batch)),
      ic(ceil_div(c.in_channels, env.block_in)),
      oc(ceil_div(c.out_channels, env.block_out)),
      oh(0),
      ow(0),
      data_ic(ic),
      rows_symbolic(!c.height.is_const()),
      cols_symbolic(!c.width.is_const()),
      grouped(c.groups != 1) {
  if (grouped) {
    // groups that do not tile keep every tile (check_groups refuses them before a kernel)
    const auto s = grouped_input_tiles(env.block_out, env.block_in, c.groups, c.out_channels,
                                       c.in_channels / std::max<std::int64_t>(c.groups, 1));
    if (const auto* tiles = std::get_if<std::int64_t>(&s)) ic = *tiles;
  }
  // the tiling search constructs this per candidate: constant dims stay int64 arithmetic
  const auto& p = c.padding;
  oh = rows_symbolic
           ? detail::max_of(c.out_h())
           : host::window_output(*c.height.as_int(), p[0] + p[2], c.kernel[0], c.strides[0]);
  ow = cols_symbolic
           ? detail::max_of(c.out_w())
           : host::window_output(*c.width.as_int(), p[1] + p[3], c.kernel[1], c.strides[1]);
}

namespace detail {

// A 1x1 kernel with strides and no padding reads every sh-th row and sw-th column only.
inline bool strided_window(const Conv2dShape& c) {
  const bool unpadded = c.padding == std::array<std::int64_t, 4>{0, 0, 0, 0};
  return c.kernel == std::array<std::int64_t, 2>{1, 1} && unpadded &&
         (c.strides[0] > 1 || c.strides[1] > 1);
}

// Whether the tiling's kernel loads only what such a kernel reads.
inline bool strided_reads(const Conv2dShape& c, const Conv2dTiling& t) {
  return t.strided != 0 && strided_window(c);
}

// Input rows (or columns) of the on-chip window of `block` outputs, halo included.
inline std::int64_t window_extent(const Conv2dShape& c, const Conv2dTiling& t, std::int64_t block,
                                  int dim) {
  if (strided_reads(c, t)) return block;
  return (block - 1) * c.strides[dim] + c.kernel[dim];
}

}  // namespace detail

DLAVM_INLINE std::optional<std::string> check_groups(const vta::Env& env, const Conv2dShape& c) {
  if (c.groups == 1) return std::nullopt;
  if (c.groups < 1 || c.in_channels % c.groups != 0)
    return fmt::format("{} groups do not divide the {} input channels", c.groups, c.in_channels);
  const auto s = grouped_input_tiles(env.block_out, env.block_in, c.groups, c.out_channels,
                                     c.in_channels / c.groups);
  if (const auto* why = std::get_if<std::string>(&s)) return *why;
  const Conv2dTiles t(env, c);
  if (t.oc * t.ic != t.data_ic)
    return fmt::format(
        "{} groups of {} input channels: the {} output channel tiles would read {} input channel "
        "tiles, the data has {}",
        c.groups, c.in_channels / c.groups, t.oc, t.oc * t.ic, t.data_ic);
  return std::nullopt;
}

DLAVM_INLINE bool unfolds_width(const vta::Env& env, const Conv2dShape& c) {
  return c.groups == 1 && c.kernel[1] > 1 && !detail::strided_window(c) &&
         ceil_div(c.in_channels * c.kernel[1], env.block_in) <
             c.kernel[1] * ceil_div(c.in_channels, env.block_in);
}

DLAVM_INLINE Conv2dShape vta_conv2d_shape(const vta::Env& env, const Conv2dShape& c) {
  if (!unfolds_width(env, c)) return c;
  Conv2dShape u = c;
  u.in_channels = c.in_channels * c.kernel[1];
  u.width = c.out_w();
  u.kernel = {c.kernel[0], 1};
  u.strides = {c.strides[0], 1};
  u.padding = {c.padding[0], 0, c.padding[2], 0};
  return u;
}

DLAVM_INLINE Conv2dKernel::Conv2dKernel(const vta::Env& env, const Conv2dShape& shape,
                                        const Epilogue& epilogue, const std::string& name,
                                        const Conv2dTiling& tiling)
    : env_(env),
      shape_(shape),
      epilogue_spec_(epilogue),
      tiling_(tiling),
      strided_window_(detail::strided_reads(shape, tiling)) {
  if (auto why = check_tiling(env, shape, epilogue, tiling))
    raise<ScheduleError>("conv2d '{}': tiling {}x{}x{} (ic {}, {} threads): {}", name,
                         tiling.oc_block, tiling.h_block, tiling.w_block, tiling.ic_block,
                         tiling.vthreads, *why);
  const Conv2dTiles t(env, shape);
  const ne::Expr batch_tiles = ne::simplify(ne::ceildiv(shape.batch, env.batch));
  const ne::Expr oh = shape.out_h(), ow = shape.out_w();
  const auto [kh, kw] = shape.kernel;
  const std::int64_t sh = shape.strides[0], sw = shape.strides[1];
  const auto& p = shape.padding;
  data_ =
      te::placeholder({batch_tiles, t.data_ic, shape.height, shape.width, env.batch, env.block_in},
                      env.inp_dtype, name + "_data");
  weight_ = te::placeholder({t.oc, t.ic, kh, kw, env.block_out, env.block_in}, env.wgt_dtype,
                            name + "_weight");
  const auto& data = data_;
  if (strided_window_) {
    data_buf_ = te::compute(
        te::shape(batch_tiles, t.data_ic, oh, ow, env.batch, env.block_in),
        [&](auto n, auto c, auto y, auto x, auto b, auto ci) {
          return data(n, c, y * sh, x * sw, b, ci);
        },
        name + "_data_buf");
  } else if (p != std::array<std::int64_t, 4>{0, 0, 0, 0}) {
    data_buf_ =
        te::pad(data_, {0, 0, p[0], p[1], 0, 0}, {0, 0, p[2], p[3], 0, 0}, 0, name + "_data_buf");
  } else {
    data_buf_ = copy_stage(data_, name + "_data_buf");
  }
  weight_buf_ = copy_stage(weight_, name + "_weight_buf");
  ic_ = te::reduce_axis({0, t.ic}, "ic");
  dy_ = te::reduce_axis({0, kh}, "dy");
  dx_ = te::reduce_axis({0, kw}, "dx");
  ic_tns_ = te::reduce_axis({0, env.block_in}, "ic_tns");
  const std::int64_t ry = strided_window_ ? 1 : sh, rx = strided_window_ ? 1 : sw;
  const auto& data_buf = data_buf_;
  const auto& weight_buf = weight_buf_;
  const std::int64_t group_tiles = t.ic;
  acc_ = te::compute(
      te::shape(batch_tiles, t.oc, oh, ow, env.batch, env.block_out),
      [&](auto bo, auto co, auto i, auto j, auto bi, auto ci) {
        // a grouped convolution's output tile reads its groups' data tiles only
        const ne::Expr tile = t.grouped ? ne::Expr(co * group_tiles + ic_) : ne::Expr(ic_);
        return te::sum(
            te::cast(env.acc_dtype, data_buf(bo, tile, i * ry + dy_, j * rx + dx_, bi, ic_tns_)) *
                te::cast(env.acc_dtype, weight_buf(co, ic_, dy_, dx_, ci, ic_tns_)),
            {ic_, dy_, dx_, ic_tns_});
      },
      name + "_acc", {"bo", "co", "i", "j", "bi", "ci"});
  epilogue_ = make_epilogue(env, acc_, epilogue, name);
}

DLAVM_INLINE std::vector<te::Tensor> Conv2dKernel::args() const {
  return epilogue_.kernel_args({data_, weight_});
}

DLAVM_INLINE te::Schedule Conv2dKernel::schedule() const {
  const Conv2dTiling& t = tiling_;
  const auto& res = epilogue_.res;
  auto s = te::create_schedule(res);
  auto [b_out, b_inn] = s[res].split(s[res].axis(0), 1);
  auto [oc_out, oc_inn] = s[res].split(s[res].axis(1), t.oc_block);
  const auto& ep = epilogue_;
  auto [y_out, y_inn] = s[res].split(s[res].axis(ep.res_dim(2)), t.h_block);
  auto [x_out, x_inn] = s[res].split(s[res].axis(ep.res_dim(3)), t.w_block);
  std::vector<te::IterVar> order{b_out, oc_out, y_out, x_out};
  for (const auto& p : ep.plane_axes(s)) order.push_back(p);
  order.insert(order.end(), {b_inn, oc_inn, y_inn, x_inn, s[res].axis(ep.res_dim(4)),
                             s[res].axis(ep.res_dim(5))});
  s[res].reorder(order);
  s[acc_].compute_at(s[res], x_out);
  epilogue_.schedule(s, env_, x_out);
  const auto c = s[acc_].node()->root;  // bo, co, i, j, bi, ci
  auto [ic_out, ic_inn] = s[acc_].split(ic_, t.ic_block);
  // Over a symbolic width the last column block is partial: the block's rows and columns are
  // then the GEMM's two loops (symbolic extents an instruction field holds) and the micro-ops
  // unroll the reduction only. Otherwise the columns unroll with the kernel width.
  if (Conv2dTiles(env_, shape_).cols_symbolic)
    s[acc_].reorder({ic_out, c[0], c[1], c[2], c[3], ic_inn, dy_, dx_, c[4], c[5], ic_tns_});
  else
    s[acc_].reorder({ic_out, c[0], c[1], c[2], ic_inn, dy_, dx_, c[3], c[4], c[5], ic_tns_});
  if (t.vthreads > 1) {
    auto [outer, tx] = s[res].split(t.split == 0 ? oc_out : y_out, t.vthreads);
    s[res].reorder({tx, b_out});
    s[res].bind(tx, te::thread_axis("cthread"));
    (void)outer;
  }
  schedule_gemm(s, env_, data_buf_, weight_buf_, acc_, ic_out, c[4]);
  s[res].pragma(b_inn, env_.dma_copy);
  return s;
}

DLAVM_INLINE std::optional<std::string> check_tiling(const vta::Env& env, const Conv2dShape& shape,
                                                     const Epilogue& epilogue,
                                                     const Conv2dTiling& t) {
  if (auto why = check_groups(env, shape)) return why;
  if (auto why = check_epilogue(env, epilogue)) return why;
  const Conv2dTiles n(env, shape);
  if (auto why = check_block("output channel tiles", n.oc, t.oc_block)) return why;
  if (n.rows_symbolic) {
    if (t.h_block < 1 || t.h_block > n.oh)
      return fmt::format("a block of {} output rows is outside [1, {}]", t.h_block, n.oh);
  } else if (auto why = check_block("output rows", n.oh, t.h_block)) {
    return why;
  }
  if (n.cols_symbolic) {
    if (t.w_block < 1 || t.w_block > n.ow)
      return fmt::format("a block of {} output columns is outside [1, {}]", t.w_block, n.ow);
  } else if (auto why = check_block("output columns", n.ow, t.w_block)) {
    return why;
  }
  if (auto why = check_block("input channel tiles", n.ic, t.ic_block)) return why;
  if (t.split != 0 && t.split != 1)
    return fmt::format("split {} is neither 0 (output channel blocks) nor 1 (rows)", t.split);
  if (t.vthreads == 1 && t.split != 0) return std::string("one thread splits nothing");
  if (t.vthreads < 1) return fmt::format("{} virtual threads", t.vthreads);
  if (t.split == 0 && (n.oc / t.oc_block) % t.vthreads != 0)
    return fmt::format("{} virtual threads do not divide the {} output channel blocks", t.vthreads,
                       n.oc / t.oc_block);
  // Where both splits can run they are equivalent but for the order of the blocks, and the
  // rows measured slower in every such pair of ResNet-18's layers (by 0.01% to 0.14%): rows are
  // a point of the space only where the channel blocks cannot be split, so that the ranked
  // top of a space holds no twins.
  if (t.split == 1 && (n.oc / t.oc_block) % t.vthreads == 0)
    return fmt::format(
        "the {} output channel blocks split between the {} threads: rows only "
        "where they cannot",
        n.oc / t.oc_block, t.vthreads);
  if (t.split == 1 && (n.rows_symbolic || (n.oh / t.h_block) % t.vthreads != 0))
    return n.rows_symbolic ? std::string("threads over a symbolic number of row blocks")
                           : fmt::format("{} virtual threads do not divide the {} row blocks",
                                         t.vthreads, n.oh / t.h_block);
  if (t.strided != 0 && t.strided != 1)
    return fmt::format("strided {} is neither 0 nor 1", t.strided);
  return check_footprint(env.config, footprint(env, shape, epilogue, t));
}

DLAVM_INLINE SramFootprint footprint(const vta::Env& env, const Conv2dShape& shape,
                                     const Epilogue& epilogue, const Conv2dTiling& t) {
  const Conv2dTiles n(env, shape);
  const std::int64_t block = t.oc_block * t.h_block * t.w_block;
  SramFootprint f;
  f.acc = block * t.vthreads + EpilogueStages::acc_entries(epilogue, block, n.oc, t.vthreads);
  // a grouped block's output tiles read consecutive runs of data tiles: the span they cover
  const std::int64_t data_tiles = n.grouped ? (t.oc_block - 1) * n.ic + t.ic_block : t.ic_block;
  f.inp = data_tiles * detail::window_extent(shape, t, t.h_block, 0) *
          detail::window_extent(shape, t, t.w_block, 1) * t.vthreads;
  f.wgt = t.oc_block * t.ic_block * shape.kernel[0] * shape.kernel[1] * t.vthreads;
  const auto bias = epilogue_sram(epilogue, t.oc_block);
  f.inp += bias.inp * t.vthreads;
  f.wgt += bias.wgt * t.vthreads;
  // the GEMM kernel unrolls ic_block x KH x KW micro-ops per thread, times the block's
  // columns unless a symbolic width makes them a loop of the GEMM instruction
  f.uop_kernel = t.ic_block * shape.kernel[0] * shape.kernel[1] * t.vthreads *
                 (n.cols_symbolic ? 1 : t.w_block);
  return f;
}

namespace detail {

// The DRAM bytes and block counts of a tiling, over the batch tiles `n`, the input extent and
// the output rows and columns, constant (int64, the estimates) or symbolic (ne::Expr, the
// traffic per binding): per batch tile, output channel block and spatial block, the real
// input rows x columns of every input channel tile (a partial last block reads what its
// outputs read); the weights once per spatial block; the result, the Tensor operands once;
// the Channel operands once; a ChannelWeights operand's weights and input row per block.
template <class Int>
struct Conv2dCounts {
  Int inp_bytes, wgt_bytes, out_bytes, acc_bytes, blocks, steps;
};

template <class Int>
Conv2dCounts<Int> conv2d_counts(const vta::Env& env, const Conv2dShape& shape,
                                const Epilogue& epilogue, const Conv2dTiling& t, const Int& n,
                                const Int& height, const Int& width) {
  const Conv2dTiles tiles(env, shape);
  const auto& k = shape.kernel;
  const auto& s = shape.strides;
  const auto& p = shape.padding;
  const bool strided = strided_reads(shape, t);
  const Int oh = host::window_output(height, p[0] + p[2], k[0], s[0]);
  const Int ow = host::window_output(width, p[1] + p[3], k[1], s[1]);
  const Int rows = window_reads(height, oh, t.h_block, s[0], k[0], p[0], p[2], strided);
  const Int cols = window_reads(width, ow, t.w_block, s[1], k[1], p[1], p[3], strided);
  const Int spatial = vceil_div(oh, t.h_block) * vceil_div(ow, t.w_block);
  const Int out_tiles = n * tiles.oc * oh * ow;
  const std::int64_t inp_tile = env.batch * env.block_in * env.inp_dtype.bytes();
  Conv2dCounts<Int> c{0, 0, 0, 0, 0, 0};
  // the data tiles a block loads: a grouped block the span of its output tiles' groups, per
  // reduction step
  const std::int64_t block_tiles =
      tiles.grouped ? tiles.ic / t.ic_block * ((t.oc_block - 1) * tiles.ic + t.ic_block) : tiles.ic;
  c.inp_bytes = n * (tiles.oc / t.oc_block) * rows * cols * (block_tiles * inp_tile);
  c.wgt_bytes =
      n * spatial * (tiles.oc * tiles.ic * k[0] * k[1] * env.wgt_tile() * env.wgt_dtype.bytes());
  c.out_bytes = out_tiles * (env.acc_tile() * env.out_dtype.bytes() * epilogue.result_bytes());
  c.blocks = n * (tiles.oc / t.oc_block) * spatial;
  for (const auto& in : epilogue.inputs) {
    if (in.kind == EpilogueInput::Kind::ChannelWeights) {
      c.wgt_bytes = c.wgt_bytes + c.blocks * (t.oc_block * env.wgt_tile() * env.wgt_dtype.bytes());
      c.inp_bytes = c.inp_bytes + c.blocks * inp_tile;
      continue;
    }
    c.acc_bytes = c.acc_bytes + (in.kind == EpilogueInput::Kind::Channel
                                     ? Int(tiles.oc * env.acc_tile() * in.dtype.bytes())
                                     : out_tiles * (env.acc_tile() * in.dtype.bytes()));
  }
  c.steps = c.blocks * (tiles.ic / t.ic_block);
  return c;
}

// The counts at the shape's maxima.
inline Conv2dCounts<std::int64_t> conv2d_counts_at_max(const vta::Env& env,
                                                       const Conv2dShape& shape,
                                                       const Epilogue& epilogue,
                                                       const Conv2dTiling& t) {
  const Conv2dTiles n(env, shape);
  return conv2d_counts<std::int64_t>(env, shape, epilogue, t, n.n, max_of(shape.height),
                                     max_of(shape.width));
}

}  // namespace detail

DLAVM_INLINE ne::Expr tiling_traffic(const vta::Env& env, const Conv2dShape& shape,
                                     const Epilogue& epilogue, const Conv2dTiling& t) {
  const auto c = detail::conv2d_counts<ne::Expr>(
      env, shape, epilogue, t, ne::ceildiv(shape.batch, env.batch), shape.height, shape.width);
  return ne::simplify(c.inp_bytes + c.wgt_bytes + c.out_bytes + c.acc_bytes);
}

DLAVM_INLINE double estimate_cycles(const vta::Env& env, const Conv2dShape& shape,
                                    const Epilogue& epilogue, const Conv2dTiling& t) {
  const auto p = vta::CycleParams::for_config(env.config);
  const Conv2dTiles n(env, shape);
  const auto c = detail::conv2d_counts_at_max(env, shape, epilogue, t);
  const double bus = static_cast<double>(p.bus_bytes_per_cycle);
  const double transfer = static_cast<double>(p.dram_latency + p.insn_overhead);
  // load module: per step, ic_block input windows and one weight block. A strided window's
  // columns are no DMA row (the DMA strides rows only): each of its rows is a load of its own.
  const std::int64_t window_loads =
      t.ic_block * (detail::strided_reads(shape, t) ? t.h_block : std::int64_t{1});
  // (and a ChannelWeights operand's two loads per block)
  const auto gemm_passes = static_cast<std::int64_t>(epilogue.gemm_passes());
  const double load =
      static_cast<double>(c.inp_bytes + c.wgt_bytes) / bus +
      static_cast<double>(c.steps * (window_loads + 1) + c.blocks * 2 * gemm_passes) * transfer;
  // compute module: the GEMM micro-ops, the epilogue's ALU passes, per-instruction costs
  const std::int64_t out_tiles = n.n * n.oc * n.oh * n.ow;
  const double gemm =
      static_cast<double>(out_tiles * (n.ic * shape.kernel[0] * shape.kernel[1] + gemm_passes));
  const double alu = static_cast<double>(epilogue.alu_passes() * out_tiles * p.alu_cycles_per_uop);
  const double insns = static_cast<double>(
      c.steps + c.blocks * (epilogue.alu_passes() + static_cast<std::size_t>(gemm_passes) + 1));
  const double compute = gemm + alu +
                         insns * static_cast<double>(p.insn_overhead + p.gemm_latency) +
                         static_cast<double>(c.acc_bytes) / bus;
  // store module: one 2D store per output channel tile (and byte plane) of a block
  const double store =
      static_cast<double>(c.out_bytes) / bus +
      static_cast<double>(c.blocks * t.oc_block * epilogue.result_bytes()) * transfer;
  const double busiest = std::max({load, compute, store});
  // one thread: a step's loads wait for the previous step's GEMMs (one buffer); two: only the
  // first step's loads and the last block's store are not hidden
  if (t.vthreads == 1) return load + compute + store / static_cast<double>(c.blocks);
  return busiest + (load + compute) / static_cast<double>(c.steps) +
         store / static_cast<double>(c.blocks);
}

DLAVM_INLINE KnobSpace knob_space(const vta::Env& env, const Conv2dShape& shape,
                                  const Epilogue& epilogue) {
  const Conv2dTiles n(env, shape);
  std::vector<Knob> knobs{{"oc", divisors(n.oc)},
                          {"h", block_candidates(n.oh, n.rows_symbolic)},
                          {"w", block_candidates(n.ow, n.cols_symbolic)},
                          {"ic", divisors(n.ic)},
                          {"threads", {2, 1}},
                          {"split", {0, 1}}};
  if (detail::strided_window(shape)) knobs.push_back({"strided", {1, 0}});
  return tiling_space<Conv2dTiling>(
      std::move(knobs),
      [env, shape, epilogue](const Conv2dTiling& t) {
        return check_tiling(env, shape, epilogue, t);
      },
      [env, shape, epilogue](const Conv2dTiling& t) {
        return estimate_cycles(env, shape, epilogue, t);
      });
}

DLAVM_INLINE Conv2dTiling default_conv2d_tiling(const vta::Env& env, const Conv2dShape& shape,
                                                const Epilogue& epilogue) {
  const auto space = knob_space(env, shape, epilogue);
  if (const auto best = least_cost_point(space)) return Conv2dTiling::of(space.knobs_of(*best));
  raise<CapacityError>(
      "conv2d {}x{}x{}x{} -> {} channels, kernel {}x{}: no tiling fits the SRAMs (one output "
      "channel tile needs {} weight entries per input channel tile; the weight buffer has {})",
      shape.batch, shape.in_channels, shape.height, shape.width, shape.out_channels,
      shape.kernel[0], shape.kernel[1], shape.kernel[0] * shape.kernel[1], env.config.wgt_depth());
}

}  // namespace dlavm::graph
