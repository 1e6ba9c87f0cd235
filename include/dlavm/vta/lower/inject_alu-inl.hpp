// Definitions for dlavm/vta/lower/inject_alu.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/te/value_evaluator.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/inject_alu.hpp>
#include <dlavm/vta/lower/nest.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace dlavm::vta {

namespace detail {

// What VTA's ALU runs, for messages.
inline constexpr const char* kAluCan =
    "VTA's ALU runs element-wise nests (min, max, add, multiply and shift of an accumulator "
    "tile by a tile or an immediate, subtraction by an immediate, constant fills) and "
    "reductions of accumulator tiles with max, min or sum over a window (te::max / te::min / "
    "te::sum), one instruction per window element";

// A nest over accumulator tiles: loops outermost first, each access's index in tiles.
struct TileNest {
  std::vector<NestLoop> loops;
  std::vector<ne::Expr> index;
};

// The load an ALU operand reads: a load, or a load under a cast that does not narrow it (an
// accumulator entry holds the widened value already).
inline const te::LoadNode* operand_load(const te::Expr& e) {
  if (const auto* c = e.as<te::CastNode>()) {
    const auto* l = c->value.as<te::LoadNode>();
    return l && c->dtype().bits() >= l->dtype().bits() ? l : nullptr;
  }
  return e.as<te::LoadNode>();
}

class InjectAlu : public tir::StmtMutator<InjectAlu> {
 public:
  explicit InjectAlu(const Env& env) : env_(env) {}

  tir::Stmt visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
    if (n.key != "pragma_" + env_.alu) return tir::StmtMutator<InjectAlu>::visit_attr(n, s);
    return lower_alu(n.node, n.body);
  }
  tir::Stmt visit_allocate(const tir::AllocateNode& n, const tir::Stmt& s) {
    allocated_.insert(n.buffer.get());
    return tir::StmtMutator<InjectAlu>::visit_allocate(n, s);
  }
  // A reduction whose init te::lower put in front of the pragma (reduction loops outermost).
  tir::Stmt visit_seq(const tir::SeqNode& n, const tir::Stmt& s) {
    const auto key = "pragma_" + env_.alu;
    std::vector<tir::Stmt> out;
    bool changed = false;
    for (std::size_t k = 0; k < n.seq.size(); ++k) {
      if (k + 1 < n.seq.size() && init_before(n.seq[k], n.seq[k + 1], key)) {
        const auto& attr = *n.seq[k + 1].as<tir::AttrNode>();
        const tir::SeqNode both({n.seq[k], attr.body});
        out.push_back(lower_reduction(attr.node, {}, both));
        changed = true;
        ++k;
        continue;
      }
      out.push_back(visit(n.seq[k]));
      changed = changed || !out.back().same_as(n.seq[k]);
    }
    return changed ? tir::make_seq(out) : s;
  }

 private:
  struct Operation {
    runtime::AluOp op;
    bool use_imm;
    std::int64_t imm;
    const te::LoadNode* lhs;
    const te::LoadNode* rhs;  // tensor operand, when not an immediate
  };

  // The nest under an alu pragma: an element-wise store, a constant fill, or te::lower's
  // reduction (an init nest, then an update nest); a split guard clips the loops.
  tir::Stmt lower_alu(const std::string& where, const tir::Stmt& nest) {
    auto [loops, body] = peel_loops(nest);
    if (const auto* seq = body.as<tir::SeqNode>()) return lower_reduction(where, loops, *seq);
    if (const auto* guard = body.as<tir::IfThenElseNode>()) {
      const auto bounds = loop_bounds(guard->cond, loops);
      if (guard->then_case.as<tir::StoreNode>() == nullptr || guard->else_case.defined() ||
          bounds.failed.defined())
        unsupported(where, body,
                    fmt::format("it is guarded by `if ({})`, left by {}, which no ALU "
                                "instruction can skip; split by a factor that divides the extent",
                                guard->cond, describe_guard(guard->cond, loops)));
      const auto clipped = clip_loops(loops, bounds.bounds);
      return only_if(clipped.nonempty, lower_alu(where, clipped_nest(clipped, guard->then_case)));
    }
    const auto* store = body.as<tir::StoreNode>();
    if (store == nullptr) unsupported(where, body, "its body is not a store");
    check_scope(store->buffer.name(), store->buffer, true);
    if (const auto* c = store->value.as<te::IntImmNode>())
      return lower_fill(loops, *store, c->value);
    if (auto fills = lower_row_fills(where, loops, *store)) return *fills;
    return lower_elementwise(loops, *store);
  }

  [[noreturn]] void unsupported(const std::string& where, const tir::Stmt& body,
                                const std::string& why) const {
    const auto* st = first_store(body);
    raise<ScheduleError>("stage '{}' (alu pragma at '{}'): {}; {}", st ? st->buffer.name() : where,
                         where, why, kAluCan);
  }

  // VTA's ALU reads and writes only the accumulator.
  void check_scope(const std::string& stage, const te::Buffer& b, bool written) const {
    if (b.scope() == env_.acc_scope) return;
    if (written)
      raise<ScheduleError>(
          "stage '{}' runs on VTA's ALU (the {} pragma), which computes in the accumulator ({}), "
          "but its buffer '{}' is in {}: s[{}].set_scope(env.acc_scope)",
          stage, env_.alu, env_.acc_scope, b.name(), b.scope(), b.name());
    if (b.scope() == "global" && allocated_.count(b.get()) == 0)
      raise<ScheduleError>(
          "stage '{}' runs on VTA's ALU (the {} pragma), which reads only the accumulator ({}), "
          "but it reads DRAM tensor '{}': copy it into the accumulator first (a stage that reads "
          "it, with set_scope(env.acc_scope) and the {} pragma)",
          stage, env_.alu, env_.acc_scope, b.name(), env_.dma_copy);
    raise<ScheduleError>(
        "stage '{}' runs on VTA's ALU (the {} pragma), which reads only the accumulator ({}), "
        "but it reads buffer '{}', which is in {}: s[{}].set_scope(env.acc_scope)",
        stage, env_.alu, env_.acc_scope, b.name(), b.scope(), b.name());
  }

  Operation decode(const tir::StoreNode& store) const {
    const auto& v = store.value;
    const auto* bin = v.as<te::BinaryNode>();
    const auto lacks = [&] {
      raise<ScheduleError>("stage '{}': `{}` is not an operation VTA's ALU has; {}",
                           store.buffer.name(), v, kAluCan);
    };
    if (bin == nullptr) lacks();
    const auto* lhs = operand_load(bin->a);
    if (lhs == nullptr) lacks();
    const auto* imm = bin->b.as<te::IntImmNode>();
    const auto* rhs = operand_load(bin->b);
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
        if (env_.config.variant.alu_opcode4 != AluOpcode4::Mul)
          raise<FeatureError>(
              "stage '{}': `{}` needs the ALU's MUL, which the {} design does not have (its "
              "opcode 4 {})",
              store.buffer.name(), v, env_.config.variant.name(),
              env_.config.variant.alu_opcode4 == AluOpcode4::Shl ? "shifts left" : "does nothing");
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
    // a shift wider than the argument field is split into several (shift_steps)
    const bool split_shift =
        o.op == runtime::AluOp::Shr && o.imm >= -kMaxShift && o.imm <= kMaxShift;
    if (o.use_imm && !split_shift) check_imm(store.buffer.name(), o.op, o.imm, v);
    return o;
  }

  // An arithmetic shift by `amount` (negative: left) as the design's shift instructions hold
  // it: (x >> a) >> b == x >> (a + b) while a + b < 32. SHR takes both directions where it
  // reads a signed amount; the Chisel design shifts right only, and left with opcode 4 (SHL,
  // -k for k places).
  static constexpr std::int64_t kMaxShift = 31;
  std::vector<std::pair<runtime::AluOp, std::int64_t>> shift_steps(std::int64_t amount) const {
    const bool shl = env_.config.variant.alu_opcode4 == AluOpcode4::Shl &&
                     env_.config.variant.shr_amount == ShrAmount::UnsignedLow;
    const auto op = shl && amount < 0 ? runtime::AluOp::Mul : runtime::AluOp::Shr;
    const auto [lo, hi] = alu_imm_range(op, env_.config);
    std::vector<std::pair<runtime::AluOp, std::int64_t>> steps;
    do {
      steps.emplace_back(op, std::clamp(amount, lo, hi));
      amount -= steps.back().second;
    } while (amount != 0);
    return steps;
  }

  void check_imm(const std::string& stage, runtime::AluOp op, std::int64_t imm,
                 const te::Expr& v) const {
    const auto [lo, hi] = alu_imm_range(op, env_.config);
    if (imm < lo || imm > hi)
      raise<EncodingError>(
          "stage '{}': immediate {} of `{}` does not fit the hardware's {} argument [{}, {}]",
          stage, imm, v, runtime::alu_name(op), lo, hi);
  }

  // The loops of an element-wise nest over whole accumulator tiles, and each access's tile
  // index; variables outside `loops` (window loops of a reduction) may appear in the indices.
  TileNest tiles(const std::string& stage, const std::vector<NestLoop>& loops,
                 const std::vector<ne::Expr>& indices) const {
    auto dims = access_dims(loops, indices);
    const std::int64_t tile = env_.acc_tile();
    if (!dims || dims->empty())
      raise<ScheduleError>("stage '{}': the indices are not affine in the loops; {}", stage,
                           kAluCan);
    const auto& lanes = dims->front();
    bool unit = true;
    for (const auto& st : lanes.strides) unit = unit && same(st, 1);
    if (!unit || !divisible(lanes.extent, tile))
      raise<ScheduleError>(
          "stage '{}': the innermost contiguous run is {} elements; VTA's ALU works on whole "
          "{}-element tiles",
          stage, lanes.extent, tile);
    for (std::size_t k = 1; k < dims->size(); ++k)
      for (const auto& st : (*dims)[k].strides)
        if (!divisible(st, tile))
          raise<ScheduleError>(
              "stage '{}': loop '{}' steps {} elements; VTA's ALU addresses whole {}-element tiles",
              stage, (*dims)[k].var.name(), st, tile);
    std::vector<ne::Var> all;
    for (const auto& l : loops) all.push_back(l.var);
    TileNest t;
    for (const auto& index : indices) {
      const auto base = pinned(index, all);
      if (!divisible(base, tile))
        raise<ScheduleError>("stage '{}': offset {} is not a whole {}-element tile", stage, base,
                             tile);
      t.index.push_back(ne::simplify(ne::floordiv(base, tile)));
    }
    // One loop per dim over tiles, outermost first; the lane dim counts tiles.
    for (std::size_t k = dims->size(); k-- > 0;) {
      const auto& d = (*dims)[k];
      const bool lane = k == 0;
      const auto ext = lane ? ne::simplify(ne::floordiv(d.extent, tile)) : d.extent;
      if (ne::simplify(ext).as_int() == 1) continue;  // one iteration (a bound of 1 may be 0)
      auto v = ne::var(fmt::format("{}.t", d.var.name()), 0, ne::bounds(ext).max - 1);
      t.loops.push_back({v, ext});
      for (std::size_t a = 0; a < indices.size(); ++a) {
        const ne::Expr step = lane ? ne::Expr(1) : ne::simplify(ne::floordiv(d.strides[a], tile));
        t.index[a] = ne::simplify(t.index[a] + step * v);
      }
    }
    return t;
  }

  // One ALU instruction's nest: dst = op(dst, src | imm) over the tiles of t.
  static tir::Stmt alu(const TileNest& t, runtime::AluOp op, bool use_imm, std::int64_t imm,
                       const te::Buffer& dst, const te::Buffer& src, const ne::Expr& src_index) {
    std::vector<te::Expr> args{te::make_const(static_cast<int>(op), DType::int32()),
                               te::make_const(use_imm ? 1 : 0, DType::int32()),
                               te::make_const(imm, DType::int32()), iv(t.index[0]), iv(src_index)};
    return wrap_loops(t.loops, tir::make_evaluate(te::call(std::string(intrin::alu), DType::int32(),
                                                           std::move(args), {dst, src})));
  }
  static tir::Stmt alu_imm(const TileNest& t, runtime::AluOp op, std::int64_t imm,
                           const te::Buffer& dst) {
    return alu(t, op, true, imm, dst, dst, t.index[0]);
  }

  // Zeroes the tiles of t: a GEMM reset, one cycle per tile (the ALU's MUL by 0 takes two).
  static tir::Stmt reset(const TileNest& t, const te::Buffer& dst) {
    return wrap_loops(t.loops,
                      tir::make_evaluate(te::call(std::string(intrin::gemm_reset), DType::int32(),
                                                  {iv(t.index[0])}, {dst})));
  }

  // dst = constant: a reset, then ADD immediates; a value wider than the 16-bit immediate is
  // built as (hi << 16) + lo, lo added in steps the immediate holds.
  tir::Stmt lower_fill(const std::vector<NestLoop>& loops, const tir::StoreNode& store,
                       std::int64_t value) {
    const auto& dst = store.buffer;
    const auto t = tiles(dst.name(), loops, {store.indices[0]});
    std::vector<tir::Stmt> parts{reset(t, dst)};
    add_constant(t, dst, value, parts);
    return tir::make_seq(parts);
  }

  // dst = a value of the nest's loops alone, a constant per tile row (a te::select on a row's
  // index, as a pair of rows [min, max] is written): the tiles reset, then each row's ADDs.
  // Nothing where the value reads a buffer or a symbolic dim.
  std::optional<tir::Stmt> lower_row_fills(const std::string& where,
                                           const std::vector<NestLoop>& loops,
                                           const tir::StoreNode& store) {
    struct Reads : te::ExprVisitor<Reads> {
      std::vector<ne::Var> vars;
      bool buffers = false;
      void visit_index_expr(const ne::Expr& e) {
        for (const auto& v : ne::free_vars(e)) vars.push_back(v);
      }
      void visit_load(const te::LoadNode&, const te::Expr&) { buffers = true; }
      void visit_read(const te::ReadNode&, const te::Expr&) { buffers = true; }
      void visit_call(const te::CallNode&, const te::Expr&) { buffers = true; }
    } reads;
    reads.visit(store.value);
    if (reads.buffers || reads.vars.empty()) return std::nullopt;
    std::vector<NestLoop> rows, rest;
    for (const auto& loop : loops) {
      const bool read = std::any_of(reads.vars.begin(), reads.vars.end(),
                                    [&](const ne::Var& v) { return v.id() == loop.var.id(); });
      (read ? rows : rest).push_back(loop);
    }
    if (std::any_of(reads.vars.begin(), reads.vars.end(), [&](const ne::Var& v) {
          return std::none_of(loops.begin(), loops.end(),
                              [&](const NestLoop& l) { return l.var.id() == v.id(); });
        }))
      return std::nullopt;
    constexpr std::int64_t kMostRows = 64;
    std::int64_t points = 1;
    for (const auto& r : rows) {
      const auto form = ne::linear_form(store.indices[0], {r.var});
      if (!form || !divisible(form->strides[0], env_.acc_tile()))
        unsupported(where, tir::make_store(store.buffer, store.indices, store.value),
                    fmt::format("its value `{}` differs within a {}-element tile, which an ALU "
                                "immediate fills whole",
                                store.value, env_.acc_tile()));
      const auto extent = ne::simplify(r.extent).as_int();
      if (!extent || *extent < 1 || (points *= *extent) > kMostRows)
        unsupported(
            where, tir::make_store(store.buffer, store.indices, store.value),
            fmt::format("its value `{}` differs in more than {} rows", store.value, kMostRows));
    }
    const auto& dst = store.buffer;
    std::vector<tir::Stmt> parts{reset(tiles(dst.name(), loops, {store.indices[0]}), dst)};
    for (std::int64_t p = 0; p < points; ++p) {
      te::IndexEnv env;
      std::vector<ne::Substitution> at;
      for (std::int64_t k = static_cast<std::int64_t>(rows.size()), q = p; k-- > 0;) {
        const std::int64_t extent = *ne::simplify(rows[k].extent).as_int();
        env.push(rows[k].var, q % extent);
        at.emplace_back(rows[k].var, ne::Expr(q % extent));
        q /= extent;
      }
      te::detail::ValueEvaluator value(env, [](const te::ReadNode&, auto) -> std::int64_t {
        return 0;  // (the value reads no tensor)
      });
      const auto t = tiles(dst.name(), rest, {ne::simplify(ne::substitute(store.indices[0], at))});
      add_constant(t, dst, dst.dtype().wrap(value.visit(store.value)), parts);
    }
    return tir::make_seq(parts);
  }

  // ADDs of immediates that bring zeroed tiles to `value`; a value wider than the 16-bit
  // immediate is built as (hi << 16) + lo, lo added in steps the immediate holds.
  void add_constant(const TileNest& t, const te::Buffer& dst, std::int64_t value,
                    std::vector<tir::Stmt>& parts) const {
    const auto [lo, hi] = alu_imm_range(runtime::AluOp::Add, env_.config);
    std::int64_t rest = value;
    if (value < lo || value > hi) {
      const std::int64_t low = ((value % 65536) + 65536 + 32768) % 65536 - 32768;
      const std::int64_t high = std::clamp((value - low) / 65536, lo, hi);
      parts.push_back(alu_imm(t, runtime::AluOp::Add, high, dst));
      for (const auto& [op, step] : shift_steps(-16)) parts.push_back(alu_imm(t, op, step, dst));
      rest = value - high * 65536;
    }
    for (; rest != 0;) {
      const std::int64_t step = std::clamp(rest, lo, hi);
      parts.push_back(alu_imm(t, runtime::AluOp::Add, step, dst));
      rest -= step;
    }
  }

  // dst = op(lhs, rhs | imm). The ALU updates in place: when dst is not lhs's storage (the
  // storage pass makes most stages in place), dst is zeroed and lhs added first.
  tir::Stmt lower_elementwise(const std::vector<NestLoop>& loops, const tir::StoreNode& store) {
    const auto& stage = store.buffer.name();
    auto o = decode(store);
    for (const auto* l : {o.lhs, o.rhs})
      if (l != nullptr) check_scope(stage, l->buffer, false);
    const auto& dst = store.buffer;
    const auto in_place = [&](const te::LoadNode* l) {
      return l->buffer.same_as(dst) && same(l->indices[0], store.indices[0]);
    };
    // Add, min and max are commutative: read the in-place operand first. A multiply and a shift
    // take their multiplier and amount from the source operand (the storage pass keeps the
    // result out of its storage).
    if (o.rhs && !in_place(o.lhs) && in_place(o.rhs)) {
      if (o.op == runtime::AluOp::Mul || o.op == runtime::AluOp::Shr)
        raise<ScheduleError>(
            "internal: stage '{}' is stored where its {} operand `{}` lives, please report", stage,
            o.op == runtime::AluOp::Mul ? "multiplier" : "shift amount", store.value);
      std::swap(o.lhs, o.rhs);
    }
    // The storage pass puts a stage in its own operand's buffer read at another index only
    // when that operand is read ahead of the stores (a halving reduction's level: every entry
    // is read before the micro-op that overwrites it), with the first operand in place.
    const auto reads_ahead = [&](const te::LoadNode* l) {
      const auto d = ne::simplify(l->indices[0] - store.indices[0]).as_int();
      return in_place(o.lhs) && d && *d > 0;
    };
    // Or, for a MIN or MAX, when it reads each entry's mirror image in one loop (pairs of
    // entries, each the other's mirror): the micro-op of the second of a pair may read its
    // mate's old value or its new one, min(x, min(y, x)) = min(x, y).
    const auto reads_mirrored = [&](const te::LoadNode* l) {
      if (!in_place(o.lhs) || (o.op != runtime::AluOp::Min && o.op != runtime::AluOp::Max))
        return false;
      return std::any_of(loops.begin(), loops.end(), [&](const NestLoop& loop) {
        const auto extent = ne::simplify(loop.extent).as_int();
        if (!extent || *extent < 2) return false;
        const ne::Substitution flip{loop.var, ne::Expr(*extent - 1) - loop.var};
        return same(ne::substitute(store.indices[0], {flip}), l->indices[0]);
      });
    };
    if (o.rhs && o.rhs->buffer.same_as(dst) && !in_place(o.rhs) && !reads_ahead(o.rhs) &&
        !reads_mirrored(o.rhs))
      raise<ScheduleError>(
          "internal: stage '{}' reads its own buffer at another index (`{}`), please report", stage,
          store.value);
    std::vector<ne::Expr> indices{store.indices[0], o.lhs->indices[0]};
    if (o.rhs) indices.push_back(o.rhs->indices[0]);
    const auto t = tiles(stage, loops, indices);
    std::vector<tir::Stmt> parts;
    if (!in_place(o.lhs)) {
      parts.push_back(reset(tiles(stage, loops, {store.indices[0]}), dst));
      parts.push_back(alu(t, runtime::AluOp::Add, false, 0, dst, o.lhs->buffer, t.index[1]));
    }
    if (o.rhs) {
      parts.push_back(alu(t, o.op, false, 0, dst, o.rhs->buffer, t.index[2]));
    } else if (o.op == runtime::AluOp::Shr) {
      // a copied operand shifted by 0 is the copy
      if (o.imm != 0 || parts.empty())
        for (const auto& [op, step] : shift_steps(o.imm))
          parts.push_back(alu_imm(t, op, step, dst));
    } else {
      parts.push_back(alu_imm(t, o.op, o.imm, dst));
    }
    return tir::make_seq(parts);
  }

  // The parts of te::lower's reduction nest: the init store (the combiner's identity) and
  // the update `dst = combine(dst, src)` with the loops around each.
  struct Reduction {
    std::vector<NestLoop> init_loops, loops;
    const tir::StoreNode* store = nullptr;
    te::ExprKind kind = te::ExprKind::Add;
    const te::LoadNode* src = nullptr;
  };

  Reduction read_reduction(const std::string& where, const tir::SeqNode& seq) const {
    const tir::Stmt body = tir::Stmt(make_ref<tir::SeqNode>(seq.seq));
    if (seq.seq.size() != 2) unsupported(where, body, "its body is not one loop nest");
    Reduction r;
    auto [init_loops, init] = peel_loops(seq.seq[0]);
    auto [loops, update] = peel_loops(seq.seq[1]);
    r.init_loops = std::move(init_loops);
    r.loops = std::move(loops);
    for (const auto& s : {init, update})
      if (const auto* g = s.as<tir::IfThenElseNode>())
        unsupported(where, body,
                    fmt::format("the reduction is guarded by `if ({})`, left by {}; split by a "
                                "factor that divides the extent",
                                g->cond, describe_guard(g->cond, r.loops)));
    const auto* init_store = init.as<tir::StoreNode>();
    r.store = update.as<tir::StoreNode>();
    const auto* bin = r.store ? r.store->value.as<te::BinaryNode>() : nullptr;
    const auto* acc = bin ? bin->a.as<te::LoadNode>() : nullptr;
    if (init_store == nullptr || init_store->value.as<te::IntImmNode>() == nullptr || !acc ||
        !init_store->buffer.same_as(r.store->buffer) || !acc->buffer.same_as(r.store->buffer) ||
        !same(acc->indices[0], r.store->indices[0]))
      unsupported(where, body, "its body is neither one element-wise store nor a reduction");
    r.kind = bin->kind();
    if (r.kind != te::ExprKind::Add && r.kind != te::ExprKind::Max && r.kind != te::ExprKind::Min)
      unsupported(where, body, fmt::format("`{}` is not a max, min or sum", r.store->value));
    r.src = operand_load(bin->b);
    if (r.src == nullptr)
      raise<ScheduleError>(
          "stage '{}': a reduction of `{}`, which is not an accumulator tile read as it is; "
          "compute `{}` in a stage of its own first; {}",
          r.store->buffer.name(), bin->b, bin->b, kAluCan);
    return r;
  }

  // A max, min or sum over window loops: the window loops become host loops, each window
  // element one ALU instruction over the output tiles. The output is zeroed by a reset; a sum
  // adds every element, a max or min adds the first element and combines the rest:
  //   reset(out); out += in(0, 0); for dy in [1, ky), dx in [0, kx): out = max(out, in(dy, dx));
  //   for dx in [1, kx): out = max(out, in(0, dx))
  tir::Stmt lower_reduction(const std::string& where, const std::vector<NestLoop>& outer,
                            const tir::SeqNode& seq) {
    const auto r = read_reduction(where, seq);
    const auto& dst = r.store->buffer;
    const auto& stage = dst.name();
    check_scope(stage, dst, true);
    check_scope(stage, r.src->buffer, false);
    // Data-parallel loops: those the output index depends on; the others walk the window.
    std::vector<NestLoop> data = outer, window;
    const auto out_vars = ne::free_vars(r.store->indices[0]);
    const auto in_out = [&](const ne::Var& v) { return contains(out_vars, v); };
    for (const auto& l : r.loops) (in_out(l.var) ? data : window).push_back(l);
    if (data.size() != outer.size() + r.init_loops.size())
      raise<ScheduleError>(
          "internal: stage '{}': the reduction's init and update nests differ, "
          "please report",
          stage);
    std::vector<ne::Var> data_vars;
    for (const auto& l : data) data_vars.push_back(l.var);
    for (const auto& w : window) {
      for (const auto& v : ne::free_vars(w.extent))
        if (contains(data_vars, v))
          raise<ScheduleError>(
              "stage '{}': the reduction loop '{}' has extent {}, which depends on the output "
              "loop '{}'; VTA's ALU reduces a window that is the same for every output tile",
              stage, w.var.name(), w.extent, v.name());
      if (r.kind != te::ExprKind::Add && ne::bounds(w.extent).min < 1)
        raise<ScheduleError>(
            "stage '{}': the reduction loop '{}' can be empty (extent {}); the max or min of no "
            "element is the type's limit, which VTA's ALU does not produce from an empty window",
            stage, w.var.name(), w.extent);
    }
    const auto t = tiles(stage, data, {r.store->indices[0], r.src->indices[0]});
    std::vector<tir::Stmt> parts{reset(tiles(stage, data, {r.store->indices[0]}), dst)};
    const auto combine = [&](runtime::AluOp op, const std::vector<ne::Substitution>& at) {
      const auto src = ne::simplify(ne::substitute(t.index[1], at));
      return alu(t, op, false, 0, dst, r.src->buffer, src);
    };
    if (r.kind == te::ExprKind::Add) {
      parts.push_back(wrap_loops(window, combine(runtime::AluOp::Add, {})));
      return tir::make_seq(parts);
    }
    const auto op = r.kind == te::ExprKind::Max ? runtime::AluOp::Max : runtime::AluOp::Min;
    // The first element, then the rest of the window as boxes: loops before j at 0, loop j
    // from 1, the loops after it whole.
    std::vector<ne::Substitution> first;
    for (const auto& w : window) first.emplace_back(w.var, 0);
    parts.push_back(combine(runtime::AluOp::Add, first));
    for (std::size_t j = 0; j < window.size(); ++j) {
      if (ne::bounds(window[j].extent).max < 2) continue;
      std::vector<ne::Substitution> at(first.begin(), first.begin() + static_cast<long>(j));
      const auto v = ne::var(window[j].var.name(), 0, ne::bounds(window[j].extent).max - 2);
      at.emplace_back(window[j].var, ne::Expr(v) + 1);
      std::vector<NestLoop> box{{v, ne::simplify(window[j].extent - 1)}};
      box.insert(box.end(), window.begin() + static_cast<long>(j) + 1, window.end());
      // Loops of one iteration are their iteration.
      std::vector<NestLoop> loops;
      for (const auto& l : box) {
        if (ne::simplify(l.extent).as_int() == 1)
          at.emplace_back(l.var, 0);
        else
          loops.push_back(l);
      }
      parts.push_back(wrap_loops(loops, combine(op, at)));
    }
    return tir::make_seq(parts);
  }

  const Env& env_;
  std::unordered_set<const te::BufferNode*> allocated_;
};

}  // namespace detail

DLAVM_INLINE tir::Stmt inject_alu(const tir::Stmt& body, const Env& env) {
  return detail::InjectAlu(env).visit(body);
}

DLAVM_INLINE void check_alu(const tir::Stmt& body, const Env& env) {
  (void)detail::InjectAlu(env).visit(body);
}

}  // namespace dlavm::vta
