// The VTA lowering passes, TIR to TIR. After te::lower, each pass replaces one kind of loop
// nest by VTA intrinsic calls, leaving the loops it cannot fold as host loops around them:
//   inject_dma     copy nests under `pragma_dma_copy` -> vta.load / vta.store (2D, strided)
//   inject_alu     element-wise nests under `pragma_alu` -> vta.alu over accumulator tiles
//   fold_gemm      loops around tensorized vta.gemm calls -> the two micro-op loop levels
// Each pass is printable before and after (tir::to_string). Mistakes raise dlavm::Error
// naming the buffer and the numbers: a copy VTA cannot express, an ALU operation it lacks.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/env.hpp>

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::vta {

namespace detail {

// A loop of a nest: variable and extent.
struct NestLoop {
  ne::Var var;
  ne::Expr extent;
};

// Peels the For loops at the top of s; returns them outermost first and the innermost body.
inline std::pair<std::vector<NestLoop>, tir::Stmt> peel_loops(tir::Stmt s) {
  std::vector<NestLoop> loops;
  while (const auto* f = s.as<tir::ForNode>()) {
    if (!f->min.is_const() || *f->min.as_int() != 0)
      raise<ScheduleError>("VTA lowering: loop '{}' starts at {}, expected 0", f->var.name(),
                           f->min);
    loops.push_back({f->var, f->extent});
    s = f->body;
  }
  return {std::move(loops), std::move(s)};
}

inline bool same(const ne::Expr& a, const ne::Expr& b) {
  return ne::equal(ne::simplify(a), ne::simplify(b));
}

inline bool divisible(const ne::Expr& e, std::int64_t d) {
  return ne::simplify(ne::floormod(e, d)).as_int() == 0;
}

// One dimension of an access: extent and the strides of the accesses that walk it.
struct Dim {
  ne::Var var;
  ne::Expr extent;
  std::vector<ne::Expr> strides;  // one per access
  std::vector<ne::Var> merged;    // loops folded into this dimension
};

// The dims of a nest for the given flat index expressions (innermost first), with adjacent
// loops merged where every access walks them contiguously (stride_outer = stride_inner *
// extent_inner). nullopt when an index is not affine in the loops.
inline std::optional<std::vector<Dim>> access_dims(const std::vector<NestLoop>& loops,
                                                   const std::vector<ne::Expr>& indices) {
  std::vector<ne::Var> vars;
  for (const auto& l : loops) vars.push_back(l.var);
  std::vector<ne::LinearForm> forms;
  for (const auto& i : indices) {
    auto f = ne::linear_form(i, vars);
    if (!f) return std::nullopt;
    forms.push_back(std::move(*f));
  }
  std::vector<Dim> dims;
  for (std::size_t k = loops.size(); k-- > 0;) {
    Dim d{loops[k].var, loops[k].extent, {}, {loops[k].var}};
    for (const auto& f : forms) d.strides.push_back(ne::simplify(f.strides[k]));
    if (!dims.empty()) {
      auto& inner = dims.back();
      bool contiguous = true;
      for (std::size_t a = 0; a < forms.size(); ++a)
        contiguous = contiguous && same(d.strides[a], inner.strides[a] * inner.extent);
      if (contiguous) {
        inner.extent = ne::simplify(inner.extent * d.extent);
        inner.merged.push_back(d.var);
        continue;
      }
    }
    dims.push_back(std::move(d));
  }
  return dims;
}

inline te::Expr iv(const ne::Expr& e) { return te::index_value(ne::simplify(e)); }

// The index with the given loop variables at zero.
inline ne::Expr at_zero(const ne::Expr& index, const std::vector<ne::Var>& vars) {
  std::vector<ne::Substitution> z;
  for (const auto& v : vars) z.emplace_back(v, 0);
  return ne::simplify(ne::substitute(index, z));
}

inline tir::Stmt wrap_loops(const std::vector<NestLoop>& host, tir::Stmt body) {
  for (auto it = host.rbegin(); it != host.rend(); ++it)
    body = tir::make_for(it->var, 0, it->extent, tir::ForKind::Serial, body);
  return body;
}

}  // namespace detail

// ---- DMA --------------------------------------------------------------------------------

class InjectDma : public tir::StmtMutator<InjectDma> {
 public:
  explicit InjectDma(const Env& env) : env_(env) {}

  tir::Stmt visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
    if (n.key != "pragma_" + env_.dma_copy) return tir::StmtMutator<InjectDma>::visit_attr(n, s);
    return lower_copy(n.node, n.body);
  }

 private:
  tir::Stmt lower_copy(const std::string& where, const tir::Stmt& nest) {
    using namespace detail;
    auto [loops, body] = peel_loops(nest);
    const auto* store = body.as<tir::StoreNode>();
    if (store == nullptr)
      raise<ScheduleError>("dma_copy at '{}': the annotated nest is not a single copy loop nest",
                           where);
    te::Expr value = store->value;
    if (const auto* c = value.as<te::CastNode>()) value = c->value;
    const auto* load = value.as<te::LoadNode>();
    if (load == nullptr)
      raise<ScheduleError>("dma_copy into '{}': `{}` is not a copy (padding is not supported yet)",
                           store->buffer.name(), store->value);
    const auto& dst = store->buffer;
    const auto& src = load->buffer;
    const bool to_sram = src.scope() == "global" && is_sram(dst.scope());
    const bool from_acc = src.scope() == env_.acc_scope && dst.scope() == "global";
    if (!to_sram && !from_acc)
      raise<ScheduleError>(
          "dma_copy from '{}' ({}) to '{}' ({}): VTA's DMA moves DRAM tensors into its "
          "SRAM buffers and accumulator tiles out to DRAM",
          src.name(), src.scope(), dst.name(), dst.scope());
    runtime::MemId mem = runtime::MemId::Out;
    if (to_sram)
      mem = dst.scope() == env_.inp_scope                ? runtime::MemId::Inp
            : dst.scope() == env_.wgt_scope              ? runtime::MemId::Wgt
            : src.dtype().bits() < env_.acc_dtype.bits() ? runtime::MemId::Acc8
                                                         : runtime::MemId::Acc;
    const std::int64_t tile = mem == runtime::MemId::Inp   ? env_.inp_tile()
                              : mem == runtime::MemId::Wgt ? env_.wgt_tile()
                                                           : env_.acc_tile();
    const ne::Expr& sram_index = to_sram ? store->indices[0] : load->indices[0];
    const ne::Expr& dram_index = to_sram ? load->indices[0] : store->indices[0];
    auto dims = access_dims(loops, {sram_index, dram_index});
    if (!dims)
      raise<ScheduleError>(
          "dma_copy '{}' -> '{}': the indices {} and {} are not affine in the loops", src.name(),
          dst.name(), load->indices[0], store->indices[0]);
    if (dims->empty())
      raise<ScheduleError>(
          "dma_copy '{}' -> '{}': a single element; VTA moves whole {}-element tiles", src.name(),
          dst.name(), tile);
    const auto& x = dims->front();
    const ne::Expr x_extent = x.extent;
    if (!same(x.strides[0], 1) || !same(x.strides[1], 1) || !divisible(x_extent, tile))
      raise<ScheduleError>(
          "dma_copy '{}' -> '{}': the innermost contiguous run is {} elements (strides {} in SRAM, "
          "{} in DRAM); VTA moves whole {}-element tiles",
          src.name(), dst.name(), x_extent, x.strides[0], x.strides[1], tile);
    std::vector<ne::Var> folded = x.merged;
    ne::Expr y_size = 1, x_stride = ne::simplify(ne::floordiv(x_extent, tile));
    const ne::Expr x_size = x_stride;
    std::size_t next = 1;
    if (next < dims->size()) {
      const auto& y = (*dims)[next];
      // A y dimension: SRAM rows back to back, DRAM rows a whole number of tiles apart.
      if (same(y.strides[0], x_extent) && divisible(y.strides[1], tile)) {
        y_size = y.extent;
        x_stride = ne::simplify(ne::floordiv(y.strides[1], tile));
        folded.insert(folded.end(), y.merged.begin(), y.merged.end());
        ++next;
      }
    }
    // Everything else stays a host loop around the instruction.
    std::vector<NestLoop> host;
    for (const auto& l : loops)
      if (std::none_of(folded.begin(), folded.end(),
                       [&](const ne::Var& v) { return v.id() == l.var.id(); }))
        host.push_back(l);
    const auto sram_off = at_zero(sram_index, folded);
    const auto dram_off = at_zero(dram_index, folded);
    if (!divisible(sram_off, tile) || !divisible(dram_off, tile))
      raise<ScheduleError>(
          "dma_copy '{}' -> '{}': offsets {} (SRAM) and {} (DRAM) are not whole {}-element tiles",
          src.name(), dst.name(), sram_off, dram_off, tile);
    const te::Buffer& sram = to_sram ? dst : src;
    const te::Buffer& dram = to_sram ? src : dst;
    std::vector<te::Expr> args{te::make_const(static_cast<int>(mem), DType::int32()),
                               iv(ne::floordiv(sram_off, tile)),
                               iv(ne::floordiv(dram_off, tile)),
                               iv(y_size),
                               iv(x_size),
                               iv(x_stride)};
    auto call = te::call(to_sram ? intrin::load : intrin::store, DType::int32(), std::move(args),
                         {sram, dram});
    return wrap_loops(host, tir::make_evaluate(call));
  }

  bool is_sram(const std::string& scope) const {
    return scope == env_.inp_scope || scope == env_.wgt_scope || scope == env_.acc_scope;
  }
  const Env& env_;
};

// ---- ALU --------------------------------------------------------------------------------

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
    if ((o.op == runtime::AluOp::Shr) && !o.use_imm) lacks();
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
    // Micro-op loop levels: the tile count of the lane dimension, then the next dims, two at
    // most; the rest are host loops.
    struct Level {
      ne::Expr extent;
      ne::Expr dst, lhs, rhs;  // strides in tiles of the destination and the two operands
    };
    std::vector<Level> levels;
    std::vector<ne::Var> folded = lanes.merged;
    const auto tiles = ne::simplify(ne::floordiv(lanes.extent, tile));
    if (!same(tiles, 1)) levels.push_back({tiles, 1, 1, 1});
    for (std::size_t k = 1; k < dims->size() && levels.size() < 2; ++k) {
      const auto& d = (*dims)[k];
      bool whole = true;
      for (const auto& st : d.strides) whole = whole && divisible(st, tile);
      if (!whole) break;
      levels.push_back({d.extent, ne::floordiv(d.strides[0], tile),
                        ne::floordiv(d.strides[1], tile),
                        ne::floordiv(o.rhs ? d.strides[2] : d.strides[1], tile)});
      folded.insert(folded.end(), d.merged.begin(), d.merged.end());
    }
    std::vector<NestLoop> host;
    for (const auto& l : loops)
      if (std::none_of(folded.begin(), folded.end(),
                       [&](const ne::Var& v) { return v.id() == l.var.id(); }))
        host.push_back(l);
    // levels[0] is the innermost; the kernel lists the outer level first.
    while (levels.size() < 2) levels.push_back({1, 0, 0, 0});
    const auto dst_off = at_zero(store->indices[0], folded);
    const auto lhs_off = at_zero(o.lhs->indices[0], folded);
    const auto src_off = o.rhs ? at_zero(o.rhs->indices[0], folded) : lhs_off;
    // `operand` picks the source strides: 0 the destination itself, 1 lhs, 2 rhs.
    const auto make = [&](int op, bool use_imm, std::int64_t imm, const ne::Expr& dst,
                          const ne::Expr& src, const te::Buffer& dst_buf, const te::Buffer& src_buf,
                          int operand) {
      const auto src_stride = [&](const Level& l) {
        return operand == 0 ? l.dst : operand == 1 ? l.lhs : l.rhs;
      };
      std::vector<te::Expr> args{
          te::make_const(op, DType::int32()),
          te::make_const(use_imm, DType::int32()),
          te::make_const(std::clamp<std::int64_t>(imm, INT32_MIN, INT32_MAX), DType::int32()),
          iv(ne::floordiv(dst, tile)),
          iv(ne::floordiv(src, tile)),
          iv(levels[1].extent),
          iv(levels[1].dst),
          iv(src_stride(levels[1])),
          iv(levels[0].extent),
          iv(levels[0].dst),
          iv(src_stride(levels[0]))};
      if (std::abs(imm) > INT32_MAX)
        raise<EncodingError>(
            "alu into '{}': immediate {} does not fit the 16-bit signed ALU argument",
            dst_buf.name(), imm);
      return tir::make_evaluate(
          te::call(intrin::alu, DType::int32(), std::move(args), {dst_buf, src_buf}));
    };
    std::vector<tir::Stmt> parts;
    const bool in_place = o.lhs->buffer.same_as(store->buffer) && same(dst_off, lhs_off);
    if (!in_place) {
      // VTA's ALU updates its destination in place: copy the first operand there first
      // (dst = dst * 0, then dst = dst + lhs).
      parts.push_back(make(static_cast<int>(runtime::AluOp::Mul), true, 0, dst_off, dst_off,
                           store->buffer, store->buffer, 0));
      parts.push_back(make(static_cast<int>(runtime::AluOp::Add), false, 0, dst_off, lhs_off,
                           store->buffer, o.lhs->buffer, 1));
    }
    const auto& src_buf = o.rhs ? o.rhs->buffer : store->buffer;
    parts.push_back(make(static_cast<int>(o.op), o.use_imm, o.imm, dst_off,
                         o.rhs ? src_off : dst_off, store->buffer, src_buf, o.rhs ? 2 : 0));
    return wrap_loops(host, tir::make_seq(parts));
  }

  const Env& env_;
};

// ---- GEMM micro-op loops ----------------------------------------------------------------

// Folds up to two loops directly around each vta.gemm / vta.gemm_reset call into the
// instruction's micro-op loops; the offsets' strides in those loops become the factors.
class FoldGemm : public tir::StmtMutator<FoldGemm> {
 public:
  tir::Stmt visit_for(const tir::ForNode& n, const tir::Stmt& s) {
    auto body = visit(n.body);
    const auto* ev = body.as<tir::EvaluateNode>();
    const auto* call = ev ? ev->value.as<te::CallNode>() : nullptr;
    if (call == nullptr || (call->name != intrin::gemm && call->name != intrin::gemm_reset))
      return body.same_as(n.body) ? s : tir::make_for(n.var, n.min, n.extent, n.for_kind, body);
    return fold(n, *call).value_or(tir::make_for(n.var, n.min, n.extent, n.for_kind, body));
  }
  tir::Stmt visit_evaluate(const tir::EvaluateNode& n, const tir::Stmt& s) {
    const auto* call = n.value.as<te::CallNode>();
    if (call == nullptr || (call->name != intrin::gemm && call->name != intrin::gemm_reset) ||
        call->args.size() > 3)
      return s;
    // A call with no loop around it: both micro-op loop levels of extent 1.
    std::vector<te::Expr> args = call->args;
    while (args.size() < 3) args.push_back(te::make_const(0, DType::int32()));
    for (int level = 0; level < 2; ++level) {
      args.push_back(te::make_const(1, DType::int32()));
      for (int k = 0; k < 3; ++k) args.push_back(te::make_const(0, DType::int32()));
    }
    return tir::make_evaluate(te::call(call->name, call->dtype(), args, call->buffers));
  }

 private:
  // args: [dst, src, wgt, out_ext, out_dst, out_src, out_wgt, in_ext, in_dst, in_src, in_wgt]
  static std::optional<tir::Stmt> fold(const tir::ForNode& loop, const te::CallNode& call) {
    std::vector<ne::Expr> a;
    for (const auto& e : call.args) {
      const auto* i = e.as<te::IndexNode>();
      const auto* c = e.as<te::IntImmNode>();
      a.push_back(i ? i->index : ne::Expr(c ? c->value : 0));
    }
    // The innermost loop becomes the inner level, the next one the outer level.
    const bool inner_free = a[7].as_int() == 1;
    if (!inner_free && a[3].as_int() != 1) return std::nullopt;
    std::vector<ne::Expr> strides;
    for (int k = 0; k < 3; ++k) {
      auto f = ne::linear_form(a[static_cast<std::size_t>(k)], {loop.var});
      if (!f) return std::nullopt;
      strides.push_back(f->strides[0]);
      a[static_cast<std::size_t>(k)] = f->offset;
    }
    for (const auto& e : {a[4], a[5], a[6], a[8], a[9], a[10]})
      for (const auto& v : ne::free_vars(e))
        if (v.id() == loop.var.id()) return std::nullopt;
    std::vector<ne::Expr> out =
        inner_free
            ? std::vector<ne::Expr>{a[0], a[1],        a[2],       a[3],       a[4],      a[5],
                                    a[6], loop.extent, strides[0], strides[1], strides[2]}
            : std::vector<ne::Expr>{a[0],       a[1], a[2], loop.extent, strides[0], strides[1],
                                    strides[2], a[7], a[8], a[9],        a[10]};
    std::vector<te::Expr> args;
    for (const auto& e : out) args.push_back(detail::iv(e));
    return tir::make_evaluate(te::call(call.name, call.dtype(), std::move(args), call.buffers));
  }
};

}  // namespace dlavm::vta
