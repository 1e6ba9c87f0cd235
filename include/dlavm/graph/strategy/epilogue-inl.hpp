// Definitions for graph/strategy/epilogue.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/strategy/epilogue.hpp>
#include <dlavm/te/ops.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <span>

namespace dlavm::graph {

DLAVM_INLINE void Epilogue::imm(EpilogueStep::Kind kind, std::int64_t value,
                                const vta::Config& config) {
  using K = EpilogueStep::Kind;
  // A clamp absorbs a bound inside it: max(min(max(x, a), b), c) with c <= b is
  // min(max(x, max(a, c)), b) (clamps commute while the lower bound is at most the upper), and
  // likewise for min after [min, max].
  if (steps.size() >= 2) {
    auto& prev = steps[steps.size() - 2];
    const auto& last = steps.back();
    if (kind == K::Max && prev.kind == K::Max && last.kind == K::Min && value <= last.imm) {
      prev.imm = std::max(prev.imm, value);
      return;
    }
    if (kind == K::Min && prev.kind == K::Min && last.kind == K::Max && value >= last.imm) {
      prev.imm = std::min(prev.imm, value);
      return;
    }
  }
  if (!steps.empty() && steps.back().kind == kind) {
    auto& last = steps.back();
    switch (kind) {
      case K::Max:
        last.imm = std::max(last.imm, value);
        return;
      case K::Min:
        last.imm = std::min(last.imm, value);
        return;
      case K::Add: {
        // merge only while the sum still fits the ALU's immediate
        const auto [lo, hi] = vta::alu_imm_range(runtime::AluOp::Add, config);
        if (const auto sum = last.imm + value; sum >= lo && sum <= hi) {
          last.imm = sum;
          return;
        }
        break;
      }
      default:
        break;
    }
  }
  steps.push_back({kind, value, 0});
}

DLAVM_INLINE std::size_t Epilogue::add_channel(DType dtype) {
  inputs.push_back({EpilogueInput::Kind::Channel, dtype});
  steps.push_back({EpilogueStep::Kind::AddChannel, 0, inputs.size() - 1});
  return inputs.size() - 1;
}

DLAVM_INLINE std::size_t Epilogue::add_tensor(DType dtype) {
  inputs.push_back({EpilogueInput::Kind::Tensor, dtype});
  steps.push_back({EpilogueStep::Kind::AddTensor, 0, inputs.size() - 1});
  return inputs.size() - 1;
}

DLAVM_INLINE std::size_t Epilogue::gemm_passes() const {
  return static_cast<std::size_t>(std::count_if(
      inputs.begin(), inputs.end(),
      [](const EpilogueInput& in) { return in.kind == EpilogueInput::Kind::ChannelWeights; }));
}

DLAVM_INLINE std::optional<std::size_t> Epilogue::init_tensor() const {
  using K = EpilogueStep::Kind;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    if (steps[k].kind == K::AddTensor) return k;
    if (steps[k].kind != K::Add && steps[k].kind != K::AddChannel) return std::nullopt;
  }
  return std::nullopt;
}

DLAVM_INLINE std::string to_string(const Epilogue& e) {
  std::vector<std::string> parts;
  for (const auto& s : e.steps) {
    switch (s.kind) {
      case EpilogueStep::Kind::Add:
        parts.push_back(fmt::format("+{}", s.imm));
        break;
      case EpilogueStep::Kind::Shr:
        parts.push_back(fmt::format(">>{}", s.imm));
        break;
      case EpilogueStep::Kind::Max:
        parts.push_back(fmt::format("max {}", s.imm));
        break;
      case EpilogueStep::Kind::Min:
        parts.push_back(fmt::format("min {}", s.imm));
        break;
      case EpilogueStep::Kind::AddChannel:
        parts.push_back(fmt::format(
            "+channel#{}{}", s.input,
            e.inputs[s.input].kind == EpilogueInput::Kind::ChannelWeights ? " (gemm)" : ""));
        break;
      case EpilogueStep::Kind::AddTensor:
        parts.push_back(fmt::format("+tensor#{}({})", s.input, e.inputs[s.input].dtype));
        break;
    }
  }
  if (e.int32_result) parts.emplace_back("int32 planes");
  return fmt::format("{}", fmt::join(parts, ", "));
}

DLAVM_INLINE te::Tensor copy_stage(const te::Tensor& t, DType dtype, std::string name) {
  return te::compute_dynamic(
      t.shape(),
      [&](std::span<const ne::Var> i) {
        te::Expr x = t.read({i.begin(), i.end()});
        return dtype == t.dtype() ? x : te::cast(dtype, x);
      },
      std::move(name));
}

DLAVM_INLINE void schedule_gemm(te::Schedule& s, const vta::Env& env, const te::Tensor& inp_buf,
                                const te::Tensor& wgt_buf, const te::Tensor& acc,
                                const te::IterVar& reduce_step, const te::IterVar& gemm_at) {
  s[inp_buf].set_scope(env.inp_scope);
  s[wgt_buf].set_scope(env.wgt_scope);
  s[acc].set_scope(env.acc_scope);
  for (const auto& t : {inp_buf, wgt_buf}) {
    s[t].compute_at(s[acc], reduce_step);
    s[t].pragma(s[t].axis(0), env.dma_copy);
  }
  s[acc].tensorize(gemm_at, env.gemm);
}

DLAVM_INLINE te::Expr apply_immediate(const te::Expr& x, const EpilogueStep& step) {
  using K = EpilogueStep::Kind;
  switch (step.kind) {
    case K::Add:
      return x + step.imm;
    case K::Shr:
      return x >> step.imm;
    case K::Max:
      return te::max(x, te::make_const(step.imm, x.dtype()));
    case K::Min:
      return te::min(x, te::make_const(step.imm, x.dtype()));
    case K::AddChannel:
    case K::AddTensor:
      break;
  }
  raise<ValueError>("apply_immediate: epilogue step {} reads an operand, not an immediate",
                    static_cast<int>(step.kind));
}

namespace detail {

// acc(i...) op operand, one ALU stage.
inline te::Tensor epilogue_stage(const te::Tensor& prev, const EpilogueStep& step,
                                 const EpilogueStages& st, const std::string& name) {
  using K = EpilogueStep::Kind;
  return te::compute_dynamic(
      prev.shape(),
      [&](std::span<const ne::Var> i) -> te::Expr {
        const std::vector<ne::Expr> idx(i.begin(), i.end());
        const te::Expr x = prev.read(idx);
        switch (step.kind) {
          case K::Add:
          case K::Shr:
          case K::Max:
          case K::Min:
            return apply_immediate(x, step);
          case K::AddChannel: {
            const std::size_t r = idx.size();
            if (st.weights[step.input].defined()) return x + st.channels[step.input].read(idx);
            return x + st.channels[step.input].read({idx[st.channel_dim], idx[r - 2], idx[r - 1]});
          }
          case K::AddTensor:
            return x + st.tensors[step.input].read(idx);
        }
        return x;
      },
      name);
}

}  // namespace detail

DLAVM_INLINE EpilogueStages make_epilogue(const vta::Env& env, const te::Tensor& acc,
                                          const Epilogue& e, const std::string& name,
                                          std::size_t channel_dim) {
  EpilogueStages st;
  st.channel_dim = channel_dim;
  const auto& shape = acc.shape();
  const std::size_t rank = shape.size();
  if (rank < channel_dim + 3 || acc.dtype() != env.acc_dtype)
    raise<ValueError>(
        "internal: epilogue '{}' needs a packed {} accumulator of rank >= {}, got {} of rank {}, "
        "please report",
        name, env.acc_dtype, channel_dim + 3, acc.dtype(), rank);
  // Operands: placeholders in DRAM, then their copies into the accumulator. Indices into
  // st.channels / st.tensors are the inputs' indices (an unused slot stays undefined).
  st.channels.resize(e.inputs.size());
  st.tensors.resize(e.inputs.size());
  st.units.resize(e.inputs.size());
  st.weights.resize(e.inputs.size());
  for (std::size_t k = 0; k < e.inputs.size(); ++k) {
    const auto& in = e.inputs[k];
    const auto in_name = fmt::format("{}_in{}", name, k);
    if (in.kind == EpilogueInput::Kind::Channel) {
      const std::vector<ne::Expr> cshape{shape[channel_dim], shape[rank - 2], shape[rank - 1]};
      st.inputs.push_back(te::placeholder(cshape, in.dtype, in_name));
      st.channels[k] = copy_stage(st.inputs.back(), env.acc_dtype, in_name + "_buf");
    } else if (in.kind == EpilogueInput::Kind::ChannelWeights) {
      // [C/BO + 1, BLOCK_OUT, BLOCK_IN] int8: the weights, then the input row u in every row
      // (BATCH <= BLOCK_OUT: graph::channel_weights gives such operands no other kernel)
      const ne::Expr tiles = shape[channel_dim];
      const auto w = te::placeholder(
          {ne::simplify(tiles + 1), ne::Expr(env.block_out), ne::Expr(env.block_in)}, env.wgt_dtype,
          in_name);
      st.inputs.push_back(w);
      st.weights[k] = te::compute(
          te::shape(tiles, env.block_out, env.block_in),
          [&](auto c, auto o, auto i) { return w(c, o, i); }, in_name + "_wgt");
      st.units[k] = te::compute(
          te::shape(env.batch, env.block_in), [&](auto b, auto i) { return w(tiles, b, i); },
          in_name + "_unit");
      const auto& unit = st.units[k];
      const auto& wgt = st.weights[k];
      const auto kk = te::reduce_axis({0, env.block_in}, in_name + "_k");
      st.channels[k] = te::compute_dynamic(
          shape,
          [&](std::span<const ne::Var> i) {
            return te::sum(te::cast(env.acc_dtype, unit.read({i[rank - 2], kk})) *
                               te::cast(env.acc_dtype, wgt.read({i[channel_dim], i[rank - 1], kk})),
                           {kk});
          },
          in_name + "_gemm");
    } else {
      st.inputs.push_back(te::placeholder(shape, in.dtype, in_name));
      st.tensors[k] = copy_stage(st.inputs.back(), env.acc_dtype, in_name + "_buf");
    }
  }
  te::Tensor prev = acc;
  for (std::size_t k = 0; k < e.steps.size(); ++k) {
    st.alu.push_back(detail::epilogue_stage(prev, e.steps[k], st, fmt::format("{}_e{}", name, k)));
    prev = st.alu.back();
  }
  if (e.int32_result) {
    // plane p holds the value's byte p in its low 8 bits, which is what STORE keeps
    std::vector<ne::Expr> planes_shape = shape;
    const auto at = static_cast<std::ptrdiff_t>(st.plane_dim());
    planes_shape.insert(planes_shape.begin() + at, ne::Expr(Epilogue::kPlanes));
    st.planes = te::compute_dynamic(
        planes_shape,
        [&](std::span<const ne::Var> i) {
          std::vector<ne::Expr> idx(i.begin(), i.end());
          const ne::Expr plane = idx[static_cast<std::size_t>(at)];
          idx.erase(idx.begin() + at);
          return prev.read(idx) >> te::index_value(plane * 8, env.acc_dtype);
        },
        name + "_planes");
    prev = st.planes;
  }
  st.res = copy_stage(prev, env.out_dtype, name);
  return st;
}

DLAVM_INLINE std::vector<te::IterVar> EpilogueStages::plane_axes(te::Schedule& s) const {
  if (!planes.defined()) return {};
  return {s[res].axis(plane_dim())};
}

DLAVM_INLINE void EpilogueStages::schedule(te::Schedule& s, const vta::Env& env,
                                           const te::IterVar& attach) const {
  for (std::size_t k = 0; k < channels.size(); ++k) {
    const auto& c = channels[k];
    if (!c.defined()) continue;
    s[c].set_scope(env.acc_scope);
    if (!weights[k].defined()) {
      s[c].pragma(s[c].axis(0), env.dma_copy);
      continue;
    }
    // A GEMM per output tile, its operands loaded per block. The reduction (one tile) split
    // off outside the block's loops makes the reset and the GEMMs a nest each, which
    // fold_uops turns into one micro-op kernel each; the operands are allocated with the
    // block, so that the reset, the GEMMs and the ADD after them are statements of one
    // sequence (what vta::gemm_into_acc reads).
    s[c].compute_at(s[res], attach);
    const auto rank = c.shape().size();
    std::vector<te::IterVar> axes;
    for (std::size_t d = 0; d < rank; ++d) axes.push_back(s[c].axis(d));
    const auto [k_out, k_in] = s[c].split(s[c].reduce_axis(0), env.block_in);
    std::vector<te::IterVar> order{k_out};
    order.insert(order.end(), axes.begin(), axes.end());
    order.push_back(k_in);
    s[c].reorder(order);
    s[units[k]].set_scope(env.inp_scope);
    s[weights[k]].set_scope(env.wgt_scope);
    for (const auto& t : {units[k], weights[k]}) {
      s[t].compute_at(s[res], attach);
      s[t].pragma(s[t].axis(0), env.dma_copy);
    }
    s[c].tensorize(axes[rank - 2], env.gemm);
  }
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    s[t].set_scope(env.acc_scope);
    s[t].compute_at(s[res], attach);
    s[t].pragma(s[t].axis(0), env.dma_copy);
  }
  for (const auto& a : alu) {
    s[a].set_scope(env.acc_scope);
    s[a].compute_at(s[res], attach);
    s[a].pragma(s[a].axis(0), env.alu);
  }
  if (planes.defined()) {
    // one plane at a time, its shift an immediate once the plane loop is unrolled
    const auto plane = s[res].axis(plane_dim());
    s[planes].set_scope(env.acc_scope);
    s[planes].compute_at(s[res], plane);
    s[planes].pragma(s[planes].axis(0), env.alu);
    s[res].unroll(plane);
  }
}

DLAVM_INLINE std::vector<te::Tensor> EpilogueStages::kernel_args(
    std::initializer_list<te::Tensor> anchor_args) const {
  std::vector<te::Tensor> out(anchor_args);
  out.insert(out.end(), inputs.begin(), inputs.end());
  out.push_back(res);
  return out;
}

DLAVM_INLINE std::int64_t EpilogueStages::acc_entries(const Epilogue& e, std::int64_t block_tiles,
                                                      std::int64_t channel_tiles, int vthreads) {
  std::int64_t entries = e.int32_result ? block_tiles * vthreads : 0;
  for (const auto& in : e.inputs)
    entries += in.kind == EpilogueInput::Kind::Channel ? channel_tiles : block_tiles * vthreads;
  return entries;
}

DLAVM_INLINE std::optional<std::string> check_epilogue(const vta::Env& env, const Epilogue& e) {
  if (e.gemm_passes() > 0 && env.batch > env.block_out)
    return fmt::format(
        "a bias through the GEMM core (a channel_weights operand) needs BATCH <= BLOCK_OUT; the "
        "configuration has BATCH {} and BLOCK_OUT {}",
        env.batch, env.block_out);
  return std::nullopt;
}

DLAVM_INLINE EpilogueSram epilogue_sram(const Epilogue& e, std::int64_t channel_tiles) {
  const auto n = static_cast<std::int64_t>(e.gemm_passes());
  return {n, n * channel_tiles};
}

}  // namespace dlavm::graph
