// Definitions for dlavm/vta/lower/inject_alu.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/inject_alu.hpp>
#include <dlavm/vta/lower/nest.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlavm::vta {

DLAVM_INLINE std::pair<std::int64_t, std::int64_t> alu_imm_range(runtime::AluOp op,
                                                                 const Config& c) {
  const auto signed_range = [](int bits) {
    return std::pair{-(std::int64_t{1} << (bits - 1)), (std::int64_t{1} << (bits - 1)) - 1};
  };
  switch (op) {
    case runtime::AluOp::Mul:
      return signed_range(8);  // VTA_MUL_ARG_BIT_WIDTH
    case runtime::AluOp::Shr:
      return signed_range(c.log_acc_width);  // VTA_SHR_ARG_BIT_WIDTH
    default:
      return signed_range(16);  // VTA_ALUOP_IMM_BIT_WIDTH
  }
}

namespace detail {

class InjectAlu : public tir::StmtMutator<InjectAlu> {
 public:
  explicit InjectAlu(const Env& env) : env_(env) {}

  tir::Stmt visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
    if (n.key != "pragma_" + env_.alu) return tir::StmtMutator<InjectAlu>::visit_attr(n, s);
    return lower_alu(n.node, n.body);
  }

 private:
  struct Operation {
    runtime::AluOp op;
    bool use_imm;
    std::int64_t imm;
    const te::LoadNode* lhs;
    const te::LoadNode* rhs;  // tensor operand, when not an immediate
  };

  Operation decode(const tir::StoreNode& store) const {
    const auto& v = store.value;
    const auto* bin = v.as<te::BinaryNode>();
    const auto lacks = [&] {
      raise<ScheduleError>(
          "alu into '{}': `{}` is not an operation VTA's ALU has (min, max, add, shift, "
          "multiply of an accumulator tile by a tile or an immediate)",
          store.buffer.name(), v);
    };
    if (bin == nullptr) lacks();
    const auto* lhs = bin->a.as<te::LoadNode>();
    if (lhs == nullptr) lacks();
    const auto* imm = bin->b.as<te::IntImmNode>();
    const auto* rhs = bin->b.as<te::LoadNode>();
    if (imm == nullptr && rhs == nullptr) lacks();
    Operation o{runtime::AluOp::Add, imm != nullptr, imm ? imm->value : 0, lhs, rhs};
    switch (bin->kind()) {
      case te::ExprKind::Add:
        o.op = runtime::AluOp::Add;
        break;
      case te::ExprKind::Min:
        o.op = runtime::AluOp::Min;
        break;
      case te::ExprKind::Max:
        o.op = runtime::AluOp::Max;
        break;
      case te::ExprKind::Mul:
        o.op = runtime::AluOp::Mul;
        break;
      case te::ExprKind::Shr:
        o.op = runtime::AluOp::Shr;
        break;
      case te::ExprKind::Sub:
        if (!o.use_imm) lacks();
        o.op = runtime::AluOp::Add;
        o.imm = -o.imm;
        break;
      case te::ExprKind::Shl:
        if (!o.use_imm) lacks();
        o.op = runtime::AluOp::Shr;
        o.imm = -o.imm;
        break;
      default:
        lacks();
    }
    if (o.op == runtime::AluOp::Shr && !o.use_imm) lacks();
    if (o.use_imm) {
      const auto [lo, hi] = alu_imm_range(o.op, env_.config);
      if (o.imm < lo || o.imm > hi)
        raise<EncodingError>(
            "alu into '{}': immediate {} of `{}` does not fit the hardware's {} argument "
            "[{}, {}]",
            store.buffer.name(), o.imm, v, runtime::alu_name(o.op), lo, hi);
    }
    return o;
  }

  tir::Stmt lower_alu(const std::string& where, const tir::Stmt& nest) {
    using namespace detail;
    auto [loops, body] = peel_loops(nest);
    const auto* store = body.as<tir::StoreNode>();
    if (store == nullptr)
      raise<ScheduleError>("alu at '{}': the annotated nest is not a single element-wise loop nest",
                           where);
    const auto o = decode(*store);
    for (const auto* b : {&store->buffer, &o.lhs->buffer, o.rhs ? &o.rhs->buffer : nullptr})
      if (b != nullptr && b->scope() != env_.acc_scope)
        raise<ScheduleError>("alu into '{}': buffer '{}' is in {}, VTA's ALU works on {}",
                             store->buffer.name(), b->name(), b->scope(), env_.acc_scope);
    std::vector<ne::Expr> indices{store->indices[0], o.lhs->indices[0]};
    if (o.rhs) indices.push_back(o.rhs->indices[0]);
    auto dims = access_dims(loops, indices);
    const std::int64_t tile = env_.acc_tile();
    if (!dims || dims->empty())
      raise<ScheduleError>("alu into '{}': the indices are not affine in the loops",
                           store->buffer.name());
    const auto& lanes = dims->front();
    bool unit = true;
    for (const auto& st : lanes.strides) unit = unit && same(st, 1);
    if (!unit || !divisible(lanes.extent, tile))
      raise<ScheduleError>(
          "alu into '{}': the innermost contiguous run is {} elements; VTA's ALU works on whole "
          "{}-element tiles",
          store->buffer.name(), lanes.extent, tile);
    for (std::size_t k = 1; k < dims->size(); ++k)
      for (const auto& st : (*dims)[k].strides)
        if (!divisible(st, tile))
          raise<ScheduleError>(
              "alu into '{}': loop '{}' steps {} elements; VTA's ALU addresses whole {}-element "
              "tiles",
              store->buffer.name(), (*dims)[k].var.name(), st, tile);
    // One loop per dim over tiles, outermost first; the lane dim counts tiles.
    std::vector<ne::Var> vars;
    std::vector<NestLoop> tile_loops;
    std::vector<ne::Var> all;
    for (const auto& l : loops) all.push_back(l.var);
    std::vector<ne::Expr> tile_index(indices.size());
    for (std::size_t a = 0; a < indices.size(); ++a) {
      const auto base = pinned(indices[a], all);
      if (!divisible(base, tile))
        raise<ScheduleError>("alu into '{}': offset {} is not a whole {}-element tile",
                             store->buffer.name(), base, tile);
      tile_index[a] = ne::simplify(ne::floordiv(base, tile));
    }
    for (std::size_t k = dims->size(); k-- > 0;) {
      const auto& d = (*dims)[k];
      const bool lane = k == 0;
      const auto ext = lane ? ne::simplify(ne::floordiv(d.extent, tile)) : d.extent;
      if (ne::bounds(ext).max == 1) continue;
      auto v = ne::var(fmt::format("{}.t", d.var.name()), 0, ne::bounds(ext).max - 1);
      tile_loops.push_back({v, ext});
      for (std::size_t a = 0; a < indices.size(); ++a) {
        const ne::Expr step = lane ? ne::Expr(1) : ne::simplify(ne::floordiv(d.strides[a], tile));
        tile_index[a] = ne::simplify(tile_index[a] + step * v);
      }
    }
    const auto& dst = store->buffer;
    const auto make = [&](runtime::AluOp op, bool use_imm, std::int64_t imm, const te::Buffer& src,
                          const ne::Expr& src_index) {
      std::vector<te::Expr> args{te::make_const(static_cast<int>(op), DType::int32()),
                                 te::make_const(use_imm ? 1 : 0, DType::int32()),
                                 te::make_const(imm, DType::int32()), iv(tile_index[0]),
                                 iv(src_index)};
      return wrap_loops(tile_loops,
                        tir::make_evaluate(te::call(std::string(intrin::alu), DType::int32(),
                                                    std::move(args), {dst, src})));
    };
    std::vector<tir::Stmt> parts;
    const bool in_place = o.lhs->buffer.same_as(dst) && same(tile_index[0], tile_index[1]);
    if (!in_place) {
      // dst = dst * 0; dst = dst + lhs: a copy of the first operand into the destination.
      parts.push_back(make(runtime::AluOp::Mul, true, 0, dst, tile_index[0]));
      parts.push_back(make(runtime::AluOp::Add, false, 0, o.lhs->buffer, tile_index[1]));
    }
    if (o.rhs)
      parts.push_back(make(o.op, false, 0, o.rhs->buffer, tile_index[2]));
    else
      parts.push_back(make(o.op, true, o.imm, dst, tile_index[0]));
    return tir::make_seq(parts);
  }

  const Env& env_;
};

}  // namespace detail

DLAVM_INLINE tir::Stmt inject_alu(const tir::Stmt& body, const Env& env) {
  return detail::InjectAlu(env).visit(body);
}

}  // namespace dlavm::vta
