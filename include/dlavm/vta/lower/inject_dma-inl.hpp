// Definitions for dlavm/vta/lower/inject_dma.hpp (see core/api.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/inject_dma.hpp>
#include <dlavm/vta/lower/nest.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::vta {

namespace detail {

// Per-loop bounds of a te::pad condition; `what` names the copy for error messages.
inline std::vector<ClipBound> pad_bounds(const ne::Expr& cond, const std::vector<NestLoop>& loops,
                                         const std::string& what) {
  auto b = loop_bounds(cond, loops);
  if (b.failed.defined())
    raise<ScheduleError>(
        "{}: the padding condition `{}` {}; VTA's DMA pads a box (each bound `lo <= i` or "
        "`i < hi` on one copy loop)",
        what, b.failed, b.why);
  return std::move(b.bounds);
}

}  // namespace detail

namespace detail {

class InjectDma : public tir::StmtMutator<InjectDma> {
 public:
  explicit InjectDma(const Env& env) : env_(env) {
    const auto layout = env.config.layout();
    const auto max_of = [&](runtime::Field f) {
      return (std::int64_t{1} << layout.pos(runtime::Form::Mem, f).width) - 1;
    };
    max_stride_ = max_of(runtime::Field::x_stride);
    max_size_ = max_of(runtime::Field::y_size);
    pad_bits_ = layout.pos(runtime::Form::Mem, runtime::Field::y_pad_0).width;
    max_pad_ = max_of(runtime::Field::y_pad_0);
  }

  tir::Stmt visit_attr(const tir::AttrNode& n, const tir::Stmt& s) {
    if (n.key != "pragma_" + env_.dma_copy) return tir::StmtMutator<InjectDma>::visit_attr(n, s);
    return lower_copy(n.node, n.body);
  }

 private:
  struct Padding {
    std::vector<ne::Expr> before, after;  // per loop, in iterations
    std::vector<bool> any;                // whether the loop can be padded at all
  };

  // A copy nest read: its store, the load it copies, the te::pad condition and value.
  struct Copy {
    const tir::StoreNode* store;
    const te::LoadNode* load;
    ne::Expr inside;    // undefined: not padded
    std::int64_t fill;  // the pad value
    te::Expr value;     // the stored value without the select (casts kept)
    runtime::MemId mem;
    bool to_sram;
    std::int64_t tile;
    std::string what;  // "dma_copy 'src' -> 'dst'", for messages
  };

  tir::Stmt lower_copy(const std::string& where, const tir::Stmt& nest) {
    using namespace detail;
    auto [loops, body] = peel_loops(nest);
    if (const auto* guard = body.as<tir::IfThenElseNode>())
      return lower_guarded(where, loops, *guard);
    const auto* store = body.as<tir::StoreNode>();
    if (store == nullptr) {
      const auto* st = first_store(body);
      raise<ScheduleError>(
          "stage '{}' (dma_copy pragma at '{}'): the annotated nest is not a single copy loop "
          "nest (its body is not one store); put the pragma on the loop around the copy",
          st ? st->buffer.name() : where, where);
    }
    const Copy copy = read_copy(*store);
    if (copy.inside.defined() && copy.to_sram && copy.mem != runtime::MemId::Inp &&
        copy.mem != runtime::MemId::Wgt)
      return lower_acc_padded(where, loops, copy);
    return lower_transfer(loops, copy);
  }

  // A guard around the store (the `if` of a split whose factor does not divide the extent):
  // each loop it bounds is clipped to the iterations it keeps, and the clipped nest lowered.
  tir::Stmt lower_guarded(const std::string& where, const std::vector<detail::NestLoop>& loops,
                          const tir::IfThenElseNode& guard) {
    using namespace detail;
    const auto* store = guard.then_case.as<tir::StoreNode>();
    const auto bounds = loop_bounds(guard.cond, loops);
    if (store == nullptr || guard.else_case.defined() || bounds.failed.defined())
      raise<ScheduleError>(
          "stage '{}': the copy nest at '{}' is guarded by `if ({})`, left by {}; the guard {}, "
          "so no set of VTA transfers covers the iterations it keeps; split by a factor that "
          "divides the extent",
          store ? store->buffer.name() : where, where, guard.cond,
          describe_guard(guard.cond, loops),
          bounds.failed.defined() ? fmt::format("`{}` {}", bounds.failed, bounds.why)
                                  : std::string("has an else branch or more than one store"));
    const auto clipped = clip_loops(loops, bounds.bounds);
    return only_if(clipped.nonempty, lower_copy(where, clipped_nest(clipped, guard.then_case)));
  }

  // The parts of a copy: a load (under casts), or te::pad's select(inside, load, value).
  Copy read_copy(const tir::StoreNode& store) const {
    Copy c{&store, nullptr, {}, 0, store.value, runtime::MemId::Out, false, 0, {}};
    te::Expr value = store.value;
    if (const auto* cast = value.as<te::CastNode>()) value = cast->value;
    if (const auto* sel = value.as<te::SelectNode>()) {
      const auto* cond = sel->cond.as<te::IndexNode>();
      const auto* fill = sel->f.as<te::IntImmNode>();
      if (cond == nullptr || fill == nullptr)
        raise<ScheduleError>(
            "dma_copy into '{}': `{}` is not a padded copy (select(index condition, load, "
            "constant))",
            store.buffer.name(), store.value);
      c.inside = cond->index;
      c.fill = fill->value;
      value = sel->t;
      c.value = value;
      if (const auto* cast = value.as<te::CastNode>()) value = cast->value;
    }
    c.load = value.as<te::LoadNode>();
    if (c.load == nullptr)
      raise<ScheduleError>("dma_copy into '{}': `{}` is not a copy", store.buffer.name(),
                           store.value);
    const auto& dst = store.buffer;
    const auto& src = c.load->buffer;
    c.to_sram = src.scope() == "global" && is_sram(dst.scope());
    const bool from_acc = src.scope() == env_.acc_scope && dst.scope() == "global";
    if (!c.to_sram && !from_acc)
      raise<ScheduleError>(
          "dma_copy from '{}' ({}) to '{}' ({}): VTA's DMA moves DRAM tensors into its SRAM "
          "buffers and accumulator tiles out to DRAM{}",
          src.name(), src.scope(), dst.name(), dst.scope(),
          src.scope() == "global" && dst.scope() == "global"
              ? fmt::format("; give stage '{}' an on-chip scope (s[{}].set_scope(env.acc_scope), "
                            "env.inp_scope or env.wgt_scope)",
                            dst.name(), dst.name())
              : std::string());
    if (c.to_sram)
      c.mem = dst.scope() == env_.inp_scope                ? runtime::MemId::Inp
              : dst.scope() == env_.wgt_scope              ? runtime::MemId::Wgt
              : src.dtype().bits() < env_.acc_dtype.bits() ? runtime::MemId::Acc8
                                                           : runtime::MemId::Acc;
    if (c.mem == runtime::MemId::Acc8 && !env_.config.variant.load_acc8)
      raise<FeatureError>(
          "dma_copy '{}' -> '{}': loading {} {} into the accumulator needs LOAD ACC_8BIT, which "
          "the {} design does not have; give the accumulator an {} copy to load",
          src.name(), dst.name(), src.dtype(), src.name(), env_.config.variant.name(),
          env_.acc_dtype);
    c.tile = c.mem == runtime::MemId::Inp   ? env_.inp_tile()
             : c.mem == runtime::MemId::Wgt ? env_.wgt_tile()
                                            : env_.acc_tile();
    c.what = fmt::format("dma_copy '{}' -> '{}'", src.name(), dst.name());
    return c;
  }

  // Padding in the accumulator, which VTA's loads cannot pad: the border is filled with the
  // pad value by the ALU (a nest under the alu pragma that inject_alu lowers), then the
  // interior is loaded without padding.
  tir::Stmt lower_acc_padded(const std::string& where, const std::vector<detail::NestLoop>& loops,
                             const Copy& copy) {
    using namespace detail;
    const Padding pad = padding(copy.inside, loops, copy.what);
    std::vector<tir::Stmt> parts = fill_border(where, loops, pad, copy);
    const auto clipped = clip_loops(loops, pad_bounds(copy.inside, loops, copy.what));
    const auto interior = tir::make_store(copy.store->buffer, copy.store->indices,
                                          copy.value.dtype() == copy.store->buffer.dtype()
                                              ? copy.value
                                              : te::cast(copy.store->buffer.dtype(), copy.value));
    parts.push_back(only_if(clipped.nonempty, lower_copy(where, clipped_nest(clipped, interior))));
    return tir::make_seq(parts);
  }

  // ALU nests that write `copy.fill` over the padding: the border boxes (for each padded loop,
  // the iterations before and after the interior, inside the interior of the loops around it)
  // or the whole buffer, whichever the cycle model's figures make cheaper.
  std::vector<tir::Stmt> fill_border(const std::string& where,
                                     const std::vector<detail::NestLoop>& loops, const Padding& pad,
                                     const Copy& copy) const {
    using namespace detail;
    const auto& dst = copy.store->buffer;
    const te::Expr value = te::make_const(copy.fill, dst.dtype());
    const auto fill = [&](const std::vector<ClipBound>& box) {
      const auto c = clip_loops(loops, box);
      return tir::make_attr("pragma_" + env_.alu, where, 1,
                            clipped_nest(c, tir::make_store(dst, copy.store->indices, value)));
    };
    // Cost of a fill over `loops` clipped to `box`, in cycles: per instruction (a reset and, for
    // a nonzero value, an ADD) the overhead and pipeline fill, per tile one cycle of reset and
    // two of ALU.
    const std::int64_t insns = copy.fill == 0 ? 1 : 2, per_tile = copy.fill == 0 ? 1 : 3;
    const auto cost = [&](const std::vector<ClipBound>& box) {
      const auto c = clip_loops(loops, box);
      std::int64_t elems = 1;
      for (const auto& l : c.loops) elems *= std::max<std::int64_t>(ne::bounds(l.extent).max, 0);
      return insns * 8 + per_tile * (elems / copy.tile);
    };
    std::vector<std::vector<ClipBound>> boxes;
    std::vector<ClipBound> interior(loops.size());
    for (std::size_t k = 0; k < loops.size(); ++k) {
      if (!pad.any[k]) continue;
      const auto& ext = loops[k].extent;
      auto box = interior;
      if (ne::bounds(pad.before[k]).max > 0) {
        box[k] = {0, ne::simplify(pad.before[k] - 1)};
        boxes.push_back(box);
      }
      if (ne::bounds(pad.after[k]).max > 0) {
        box[k] = {ne::simplify(ext - pad.after[k]), {}};
        boxes.push_back(box);
      }
      interior[k] = {pad.before[k], ne::simplify(ext - pad.after[k] - 1)};
    }
    std::int64_t border = 0;
    for (const auto& b : boxes) border += cost(b);
    const std::vector<ClipBound> whole(loops.size());
    if (border >= cost(whole)) return {fill(whole)};
    std::vector<tir::Stmt> out;
    for (const auto& b : boxes) out.push_back(fill(b));
    return out;
  }

  // Pad fields of a dim whose outermost loop is padded: counts in units of the dim's elements
  // per iteration of that loop.
  struct DimPad {
    ne::Expr before = 0, after = 0;
    std::optional<std::size_t> loop;
  };

  // The fields of one transfer: the loops folded into x and y (the rest stay host loops),
  // x's size in tiles, y's rows and DRAM stride, and their pads.
  struct TransferForm {
    std::vector<ne::Var> folded;
    ne::Expr x_tiles, y_rows = 1, x_stride;
    DimPad xp, yp;
  };

  // One transfer per host-loop iteration: x and y dims folded into the LOAD/STORE fields,
  // INP padding as its pad fields. Loops merge into x wherever both sides are contiguous,
  // unless a padded row merged into x would pad more tiles than the 4-bit fields hold: the
  // padded loop then stays a dim of its own (y), padded in rows.
  tir::Stmt lower_transfer(const std::vector<detail::NestLoop>& loops, const Copy& copy) {
    const Padding pad = padding(copy.inside, loops, copy.what);
    check_padded(pad, copy);
    TransferForm form = fold_dims(loops, copy, pad, false);
    if (copy.to_sram && !pads_fit(form)) form = fold_dims(loops, copy, pad, true);
    return emit_transfer(loops, copy, pad, form);
  }

  // Only input loads pad, and only with zeros.
  void check_padded(const Padding& pad, const Copy& copy) const {
    bool padded = false;
    for (bool p : pad.any) padded = padded || p;
    if (padded && copy.mem != runtime::MemId::Inp)
      raise<ScheduleError>(
          "{}: VTA pads only input loads ({}) and accumulator buffers (by the ALU); '{}' is in "
          "{}: pad the tensor in DRAM instead",
          copy.what, env_.inp_scope, copy.store->buffer.name(), copy.store->buffer.scope());
    if (padded && copy.fill != 0)
      raise<ScheduleError>(
          "{}: VTA's input loads pad with zeros, not {}; a buffer in the accumulator ({}) is "
          "padded with any value (the ALU fills the border)",
          copy.what, copy.fill, env_.acc_scope);
  }

  bool pads_fit(const TransferForm& f) const {
    for (const auto& p : {f.xp.before, f.xp.after, f.yp.before, f.yp.after})
      if (ne::bounds(p).max > max_pad_) return false;
    return true;
  }

  std::size_t loop_of(const std::vector<detail::NestLoop>& loops, const ne::Var& v) const {
    for (std::size_t k = 0; k < loops.size(); ++k)
      if (loops[k].var.id() == v.id()) return k;
    return loops.size();
  }

  // The pad of dim d in units of `unit_div` elements (tiles for x, rows for y).
  DimPad dim_pad(const std::vector<detail::NestLoop>& loops, const Padding& pad,
                 const detail::Dim& d, std::int64_t unit_div, const char* axis,
                 const std::string& what) const {
    using namespace detail;
    DimPad p;
    const auto k = loop_of(loops, d.merged.back());
    if (!pad.any[k]) return p;
    for (std::size_t m = 0; m + 1 < d.merged.size(); ++m)
      if (pad.any[loop_of(loops, d.merged[m])])
        raise<ScheduleError>("{}: padding inside the {} dim (loop '{}')", what, axis,
                             d.merged[m].name());
    // Elements per iteration of the padded loop: the extents of the loops merged inside it.
    ne::Expr unit = 1;
    for (std::size_t m = 0; m + 1 < d.merged.size(); ++m)
      unit = unit * loops[loop_of(loops, d.merged[m])].extent;
    unit = ne::simplify(unit);
    if (!divisible(unit, unit_div))
      raise<ScheduleError>(
          "{}: padding along loop '{}' pads {} elements at a time; VTA pads whole {}-element "
          "tiles",
          what, loops[k].var.name(), unit, unit_div);
    const auto per = ne::simplify(ne::floordiv(unit, unit_div));
    p.before = ne::simplify(pad.before[k] * per);
    p.after = ne::simplify(pad.after[k] * per);
    p.loop = k;
    return p;
  }

  // The x and y dims of the copy. `rows_apart`: a padded loop joins x only over a single tile
  // (so that its pad counts rows of tiles, not tiles of a whole row).
  TransferForm fold_dims(const std::vector<detail::NestLoop>& loops, const Copy& copy,
                         const Padding& pad, bool rows_apart) const {
    using namespace detail;
    const auto* store = copy.store;
    const auto* load = copy.load;
    const auto tile = copy.tile;
    const auto& what = copy.what;
    const ne::Expr& sram_index = copy.to_sram ? store->indices[0] : load->indices[0];
    const ne::Expr& dram_index = copy.to_sram ? load->indices[0] : store->indices[0];
    auto dims = access_dims(loops, {sram_index, dram_index}, pad.any, rows_apart ? tile : 0);
    if (!dims)
      raise<ScheduleError>("{}: the indices {} and {} are not affine in the loops", what,
                           load->indices[0], store->indices[0]);
    if (dims->empty())
      raise<ScheduleError>("{}: a single element; VTA moves whole {}-element tiles", what, tile);
    const auto& x = dims->front();
    if (!same(x.strides[0], 1) || !same(x.strides[1], 1) || !divisible(x.extent, tile))
      raise<ScheduleError>(
          "{}: the innermost contiguous run is {} elements (strides {} in SRAM, {} in DRAM); "
          "VTA moves whole {}-element tiles",
          what, x.extent, x.strides[0], x.strides[1], tile);
    TransferForm f;
    f.folded = x.merged;
    f.xp = dim_pad(loops, pad, x, tile, "x", what);
    f.x_tiles = ne::simplify(ne::floordiv(x.extent, tile));
    f.x_stride = f.x_tiles;
    if (dims->size() > 1) {
      const auto& y = (*dims)[1];
      // A y dimension: SRAM rows back to back (padded rows included), DRAM rows a whole
      // number of tiles apart, a stride and a row count the fields hold.
      const bool dense = same(y.strides[0], x.extent) && divisible(y.strides[1], tile);
      // A partial block's rows (x shorter than the SRAM row, a symbolic reduction's last
      // step) are still one transfer where the input load pads each row's tail with zeros,
      // which nothing reads.
      // (The SRAM row is a constant number of tiles, and x, at least a tile, fits in it: rows
      // that overlapped would be a broken schedule.)
      const auto row = ne::simplify(y.strides[0]).as_int();
      const bool padded_rows = !dense && copy.to_sram && copy.mem == runtime::MemId::Inp &&
                               !f.xp.loop && row && *row % tile == 0 &&
                               *row / tile - 1 <= max_pad_ && divisible(y.strides[1], tile);
      const auto stride = ne::simplify(ne::floordiv(y.strides[1], tile));
      if ((dense || padded_rows) && ne::bounds(stride).max <= max_stride_ &&
          ne::bounds(stride).min >= 0 && ne::bounds(y.extent).max <= max_size_) {
        f.yp = dim_pad(loops, pad, y, 1, "y", what);
        f.y_rows = y.extent;
        f.x_stride = stride;
        f.folded.insert(f.folded.end(), y.merged.begin(), y.merged.end());
        if (padded_rows) {
          f.x_tiles = *row / tile;
          f.xp.after = ne::simplify(ne::floordiv(y.strides[0] - x.extent, tile));
        }
      }
    }
    return f;
  }

  // The vta.load / vta.store of a transfer form, inside its host loops.
  tir::Stmt emit_transfer(const std::vector<detail::NestLoop>& loops, const Copy& copy,
                          const Padding& pad, const TransferForm& f) const {
    using namespace detail;
    const auto host = host_loops(loops, f.folded);
    // Padding along a host loop: its padded iterations load a box of padding rows only
    // (y_size 0, every row counted as top padding).
    ne::Expr in_box = 1;
    for (const auto& h : host) {
      const auto k = loop_of(loops, h.var);
      if (!pad.any[k]) continue;
      in_box = in_box && ne::Expr(h.var) >= pad.before[k] &&
               ne::Expr(h.var) < loops[k].extent - pad.after[k];
    }
    in_box = ne::simplify(in_box);
    // SRAM: the padded box starts at the loops' origin. DRAM: the first element that is
    // not padding.
    const ne::Expr& sram_index = copy.to_sram ? copy.store->indices[0] : copy.load->indices[0];
    const ne::Expr& dram_index = copy.to_sram ? copy.load->indices[0] : copy.store->indices[0];
    const auto sram_off = pinned(sram_index, f.folded);
    std::vector<std::pair<ne::Var, ne::Expr>> first;
    for (const DimPad* p : {&f.xp, &f.yp})
      if (p->loop) first.emplace_back(loops[*p->loop].var, pad.before[*p->loop]);
    const auto dram_off = pinned(dram_index, f.folded, first);
    if (!divisible(sram_off, copy.tile) || !divisible(dram_off, copy.tile))
      raise<ScheduleError>("{}: offsets {} (SRAM) and {} (DRAM) are not whole {}-element tiles",
                           copy.what, sram_off, dram_off, copy.tile);
    const te::Buffer& dst = copy.store->buffer;
    const te::Buffer& src = copy.load->buffer;
    const te::Buffer& sram = copy.to_sram ? dst : src;
    const te::Buffer& dram = copy.to_sram ? src : dst;
    ne::Expr y_size = f.y_rows - f.yp.before - f.yp.after, y_pad_0 = f.yp.before,
             y_pad_1 = f.yp.after;
    if (in_box.as_int() != 1) {
      y_size = ne::select(in_box, y_size, 0);
      y_pad_0 = ne::select(in_box, y_pad_0, f.y_rows);
      y_pad_1 = ne::select(in_box, y_pad_1, 0);
    }
    std::vector<te::Expr> args{te::make_const(static_cast<int>(copy.mem), DType::int32()),
                               iv(ne::floordiv(sram_off, copy.tile)),
                               iv(ne::floordiv(dram_off, copy.tile)),
                               iv(y_size),
                               iv(f.x_tiles - f.xp.before - f.xp.after),
                               iv(f.x_stride)};
    if (copy.to_sram) {
      for (const auto& p : {y_pad_0, y_pad_1, f.xp.before, f.xp.after}) {
        // A pad the 4-bit field never holds is a mistake in the schedule: say so now.
        if (ne::bounds(p).min > max_pad_)
          raise<EncodingError>(
              "{}: a pad of {} (at least {}) does not fit the LOAD's {}-bit pad fields (at most "
              "{}); use smaller blocks or pad the tensor in DRAM",
              copy.what, ne::simplify(p), ne::bounds(p).min, pad_bits_, max_pad_);
        args.push_back(iv(p));
      }
    }
    if (const auto parts = erratum_chunks(copy, f, y_size); parts > 1) {
      // the x dim in chunks the erratum leaves alone: chunk k moves tiles [k c, min((k + 1) c,
      // x)), and runs only where x reaches it
      const std::int64_t chunk = env_.config.variant.inp_load_limit / 2;
      const ne::Expr x = f.x_tiles;
      std::vector<tir::Stmt> loads;
      for (std::int64_t k = 0; k < parts; ++k) {
        auto part = args;
        part[1] = iv(ne::floordiv(sram_off, copy.tile) + k * chunk);
        part[2] = iv(ne::floordiv(dram_off, copy.tile) + k * chunk);
        part[4] = iv(ne::min(x - k * chunk, chunk));
        part[5] = part[4];
        loads.push_back(
            detail::only_if(ne::simplify(x > k * chunk),
                            tir::make_evaluate(te::call(std::string(intrin::load), DType::int32(),
                                                        std::move(part), {sram, dram}))));
      }
      return wrap_loops(host, tir::make_seq(loads));
    }
    auto call = te::call(std::string(copy.to_sram ? intrin::load : intrin::store), DType::int32(),
                         std::move(args), {sram, dram});
    return wrap_loops(host, tir::make_evaluate(call));
  }

  // An INP load that may read config.variant.inp_load_limit DRAM elements or more (the Chisel
  // design's erratum) is split into this many loads of half the limit; 1 for one load. Only an
  // unpadded load of one row splits (a whole INP SRAM is one such row at the default depth);
  // FeatureError for another form.
  std::int64_t erratum_chunks(const Copy& copy, const TransferForm& f,
                              const ne::Expr& y_size) const {
    const std::int64_t limit = env_.config.variant.inp_load_limit;
    if (!copy.to_sram || copy.mem != runtime::MemId::Inp || limit == 0) return 1;
    const ne::Expr x = ne::simplify(f.x_tiles - f.xp.before - f.xp.after);
    // the most elements one load reads (the fields are never negative)
    const auto most = [](const ne::Expr& e) {
      return std::max<std::int64_t>(ne::bounds(e).max, 0);
    };
    if (most(y_size) * most(x) < limit) return 1;
    const bool padded = ne::bounds(f.xp.before).max > 0 || ne::bounds(f.xp.after).max > 0 ||
                        ne::bounds(f.yp.before).max > 0 || ne::bounds(f.yp.after).max > 0;
    if (!ne::simplify(f.y_rows).as_int() || *ne::simplify(f.y_rows).as_int() != 1 || padded ||
        limit < 2)
      raise<FeatureError>(
          "{}: an input load of up to {} rows of {} tiles may read {} elements or more, which the "
          "{} design loads wrong (erratum); use smaller blocks",
          copy.what, ne::simplify(y_size), x, limit, env_.config.variant.name());
    return (most(x) + limit / 2 - 1) / (limit / 2);
  }

  // Pad counts per loop from the select condition (none when the copy is not padded).
  Padding padding(const ne::Expr& inside, const std::vector<detail::NestLoop>& loops,
                  const std::string& what) const {
    Padding p;
    p.before.assign(loops.size(), 0);
    p.after.assign(loops.size(), 0);
    p.any.assign(loops.size(), false);
    if (!inside.defined()) return p;
    const auto bounds = detail::pad_bounds(inside, loops, what);
    for (std::size_t k = 0; k < loops.size(); ++k) {
      const auto& ext = loops[k].extent;
      if (bounds[k].lo.defined())
        p.before[k] = ne::simplify(ne::min(ne::max(bounds[k].lo, 0), ext));
      if (bounds[k].hi.defined())
        p.after[k] = ne::simplify(ne::min(ne::max(ext - 1 - bounds[k].hi, 0), ext));
      p.any[k] = ne::bounds(p.before[k]).max > 0 || ne::bounds(p.after[k]).max > 0;
    }
    return p;
  }

  bool is_sram(const std::string& scope) const {
    return scope == env_.inp_scope || scope == env_.wgt_scope || scope == env_.acc_scope;
  }
  const Env& env_;
  std::int64_t max_stride_ = 0, max_size_ = 0, max_pad_ = 0;
  int pad_bits_ = 0;
};

}  // namespace detail

DLAVM_INLINE tir::Stmt inject_dma(const tir::Stmt& body, const Env& env) {
  return detail::InjectDma(env).visit(body);
}

}  // namespace dlavm::vta
