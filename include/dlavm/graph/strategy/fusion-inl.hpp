// Definitions for graph/strategy/fusion.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/ops/elementwise.hpp>
#include <dlavm/graph/ops/quantize.hpp>
#include <dlavm/graph/strategy/fusion.hpp>
#include <dlavm/host/elementwise.hpp>
#include <dlavm/ne/bounds.hpp>
#include <dlavm/vta/hw/config.hpp>

namespace dlavm::graph {

namespace detail {

using K = EpilogueStep::Kind;

inline bool accumulating(const FusionState& s, const vta::Env& env) {
  return s.logical == env.acc_dtype;
}

// Within the ALU's immediate for MAX and MIN (and ADD).
inline bool fits_alu_imm(std::int64_t v, const vta::Env& env) {
  const auto [lo, hi] = vta::alu_imm_range(runtime::AluOp::Max, env.config);
  return v >= lo && v <= hi;
}

// Same rank and provably equal dims (no broadcasting: the ALU adds tile by tile).
inline bool same_shape(const TensorType& a, const TensorType& b) {
  if (a.ndim() != b.ndim()) return false;
  for (std::size_t k = 0; k < a.ndim(); ++k)
    if (!ne::can_prove(a.shape[k] == b.shape[k])) return false;
  return true;
}

// + b[c], an int32 vector along the group's channel axis.
inline bool fuse_bias_add(FusionState& s, const FusionCall& c) {
  const auto& b = c.call.args[1];
  const auto axis = bias_add_params(c.call.attrs).axis;
  const auto rank = static_cast<std::int64_t>(c.expr.type().ndim());
  if (c.chain != 0 || !accumulating(s, c.env) || b.type().dtype != c.env.acc_dtype ||
      (axis < 0 ? axis + rank : axis) != static_cast<std::int64_t>(s.channel_axis))
    return false;
  s.epilogue.add_channel(c.env.acc_dtype);
  s.operands.push_back(b);
  return true;
}

// + other, of the result's shape: an int32 value, or the cast to int32 of an int8 one, which
// is then loaded through ACC_8BIT (sign-extended) and the cast joins the group (on a design
// with LOAD ACC_8BIT; on the others the cast is a host step and its int32 result is loaded).
inline bool fuse_add(FusionState& s, const FusionCall& c) {
  const auto& env = c.env;
  const Expr& other = c.call.args[1 - c.chain];
  if (!accumulating(s, env) || !same_shape(c.call.args[c.chain].type(), c.expr.type()) ||
      !same_shape(other.type(), c.expr.type()))
    return false;
  // without LOAD ACC_8BIT (config.variant) the cast stays on the host and VTA loads its int32
  const auto* cast = other.as<CallNode>();
  if (cast != nullptr && cast->op() == "cast" && env.config.variant.load_acc8 &&
      c.absorbable(other) && cast->args[0].type().dtype == env.inp_dtype &&
      other.type().dtype == env.acc_dtype) {
    s.epilogue.add_tensor(env.inp_dtype);
    s.operands.push_back(cast->args[0]);
    s.absorbed.push_back(other);
    return true;
  }
  if (other.type().dtype != env.acc_dtype) return false;
  s.epilogue.add_tensor(env.acc_dtype);
  s.operands.push_back(other);
  return true;
}

// (x + r) >> shift, clamped: the ALU's shift argument and immediates bound it.
inline bool fuse_requantize(FusionState& s, const FusionCall& c) {
  const auto& env = c.env;
  const auto p = requantize_params(c.call.attrs);
  const auto shr = vta::alu_imm_range(runtime::AluOp::Shr, env.config);
  if (!accumulating(s, env) || p.out_dtype != env.out_dtype || p.shift > shr.second ||
      !fits_alu_imm(p.lo, env) || !fits_alu_imm(p.hi, env))
    return false;
  if (p.rounding == host::Rounding::Nearest && p.shift > 0)
    s.epilogue.imm(K::Add, std::int64_t{1} << (p.shift - 1), env.config);
  if (p.shift > 0) s.epilogue.imm(K::Shr, p.shift, env.config);
  s.epilogue.imm(K::Max, p.lo, env.config);
  s.epilogue.imm(K::Min, p.hi, env.config);
  s.logical = p.out_dtype;
  return true;
}

inline bool fuse_relu(FusionState& s, const FusionCall& c) {
  s.epilogue.imm(K::Max, 0, c.env.config);
  return true;
}

inline bool fuse_clip(FusionState& s, const FusionCall& c) {
  const auto [lo, hi] = host::clip_int_bounds(clip_params(c.call.attrs), s.logical, c.label);
  if (!fits_alu_imm(lo, c.env) || !fits_alu_imm(hi, c.env)) return false;
  s.epilogue.imm(K::Max, lo, c.env.config);
  s.epilogue.imm(K::Min, hi, c.env.config);
  return true;
}

// To int8 only (VTA cannot keep a value wider than it stores); from int32 it wraps, which
// only the store does, so nothing may follow.
inline bool fuse_cast(FusionState& s, const FusionCall& c) {
  const DType to = cast_dtype(c.call.attrs);
  if (to != c.env.out_dtype) return false;
  s.wrapped = s.logical != to;
  s.logical = to;
  return true;
}

}  // namespace detail

DLAVM_INLINE std::vector<std::pair<std::string, EpilogueRule>> default_epilogue_rules() {
  return {{"bias_add", detail::fuse_bias_add},
          {"add", detail::fuse_add},
          {"requantize", detail::fuse_requantize},
          {"relu", detail::fuse_relu},
          {"clip", detail::fuse_clip},
          {"cast", detail::fuse_cast}};
}

}  // namespace dlavm::graph
