// Definitions for dlavm/tir/storage_rewrite.hpp (see core/api.hpp).
#pragma once

#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/rewrite.hpp>
#include <dlavm/tir/storage_rewrite.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace dlavm::tir {

namespace detail {

class InplaceReuse : public StmtMutator<InplaceReuse> {
 public:
  Stmt visit_allocate(const AllocateNode&, const Stmt& s) {
    // The run of allocations and what they enclose.
    std::vector<Buffer> run;
    Stmt body = s;
    while (const auto* a = body.as<AllocateNode>()) {
      run.push_back(a->buffer);
      body = a->body;
    }
    body = visit(body);
    if (const auto* q = body.as<SeqNode>()) {
      std::vector<Stmt> seq = q->seq;
      while (reuse_once(run, seq)) {
      }
      body = make_seq(seq);
    }
    return make_allocate(run, body);
  }

 private:
  // An element-wise nest: its loops (outermost first) around one store, annotations allowed.
  struct Nest {
    std::vector<const ForNode*> loops;
    const StoreNode* store = nullptr;
  };
  static Nest nest_of(const Stmt& s) {
    Nest n;
    for (Stmt cur = s;;) {
      if (const auto* f = cur.as<ForNode>()) {
        n.loops.push_back(f);
        cur = f->body;
      } else if (const auto* a = cur.as<AttrNode>()) {
        cur = a->body;
      } else {
        n.store = cur.as<StoreNode>();
        return n;
      }
    }
  }

  // The store's flat index in `b` as stride and extent per loop of more than one iteration
  // (outermost first), or nullopt when it is not affine in the loops.
  struct Term {
    ne::Expr stride, extent;
  };
  static std::optional<std::vector<Term>> index_terms(const Nest& nest, const Buffer& b) {
    std::vector<ne::Var> vars;
    for (const auto* f : nest.loops) vars.push_back(f->var);
    const auto form = ne::linear_form(b.flat_index(nest.store->indices), vars);
    if (!form) return std::nullopt;
    std::vector<Term> terms;
    for (std::size_t k = 0; k < vars.size(); ++k)
      if (ne::bounds(nest.loops[k]->extent).max > 1)
        terms.push_back({ne::simplify(form->strides[k]), nest.loops[k]->extent});
    return terms;
  }

  // Whether each stride, taken in this order, provably exceeds the span of the ones before it
  // (a mixed-radix numbering of the iterations).
  static bool mixed_radix(std::span<const Term> terms) {
    ne::Expr span = 0;  // largest offset difference of the loops taken so far
    for (const auto& t : terms) {
      if (!ne::can_prove(t.stride > span)) return false;
      span = ne::simplify(span + t.stride * (t.extent - 1));
    }
    return true;
  }

  // Whether the nest writes each element of `b` at most once: the store's flat index is affine
  // in the loops with strides that, sorted by size, each exceed the span of the smaller ones.
  // Strides and extents may be symbolic (a block of a symbolic extent): each comparison must
  // then be provable for every value of the dims.
  static bool writes_each_once(const Nest& nest, const Buffer& b) {
    auto terms = index_terms(nest, b);
    if (!terms) return false;
    std::vector<std::pair<std::int64_t, Term>> sorted;  // by the stride's largest value
    for (auto& t : *terms) {
      if (ne::can_prove(t.stride < 0)) t.stride = ne::simplify(0 - t.stride);
      const auto sb = ne::bounds(t.stride);
      if (sb.min < 1 || sb.max > (std::int64_t{1} << 30) ||
          ne::bounds(t.extent).max > (std::int64_t{1} << 30))
        return false;
      sorted.emplace_back(sb.max, t);
    }
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<Term> ordered;
    for (const auto& [order, t] : sorted) ordered.push_back(t);
    return mixed_radix(ordered);
  }

  // Whether a vector unit that updates its destination in place (dst = dst op src) may take
  // either operand as the destination. A shift's amount and a multiplier are its second
  // operand (VTA's ALU reads only their low bits), so those results live in the first
  // operand's storage only, as do a subtraction's and a division's.
  static bool symmetric(te::ExprKind k) {
    return k == te::ExprKind::Add || k == te::ExprKind::Min || k == te::ExprKind::Max;
  }

  // Loads of `b` in e: their indices.
  static std::vector<std::vector<ne::Expr>> loads_of(const te::Expr& e, const te::BufferNode* b) {
    struct V : te::ExprVisitor<V> {
      const te::BufferNode* b;
      std::vector<std::vector<ne::Expr>> found;
      bool in_call = false;
      void visit_load(const te::LoadNode& n, const te::Expr&) {
        if (n.buffer.get() == b) found.push_back(n.indices);
      }
      void visit_call(const te::CallNode& n, const te::Expr& e) {
        for (const auto& x : n.buffers) in_call = in_call || x.get() == b;
        te::ExprVisitor<V>::visit_call(n, e);
      }
    } v;
    v.b = b;
    v.visit(e);
    if (v.in_call) v.found.push_back({});  // an intrinsic operand: not element-wise
    return v.found;
  }

  static bool same_indices(const std::vector<ne::Expr>& a, const std::vector<ne::Expr>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
      if (!ne::equal(ne::simplify(a[k]), ne::simplify(b[k]))) return false;
    return true;
  }

  // Whether the nest stores in `b` at increasing flat indices, iteration after iteration: the
  // store's flat index is affine in the loops with positive strides, each loop's stride
  // exceeding the span of the loops inside it (the outermost loop moves furthest).
  static bool stores_in_order(const Nest& nest, const Buffer& b) {
    auto terms = index_terms(nest, b);
    if (!terms) return false;
    std::reverse(terms->begin(), terms->end());  // innermost first
    return mixed_radix(*terms);
  }

  // Whether `dst` may live in `src` when the stage reads `src` ahead of where it writes, as a
  // halving reduction does: dst[k] = src[k] op src[k + d] over the first part of src. In place
  // the stage is the vector unit's dst = dst op src: its first operand is src at the store's
  // index, every other load of src reads a constant d > 0 entries further (an entry no earlier
  // iteration has written, the stores moving forward), and dst's elements are a prefix of
  // src's (same addressing, no larger).
  static bool reads_ahead(const Nest& nest, const Buffer& src, const Buffer& dst) {
    const auto* store = nest.store;
    const auto* bin = store->value.as<te::BinaryNode>();
    if (bin == nullptr) return false;
    const auto* first = bin->a.as<te::LoadNode>();
    if (first == nullptr || first->buffer.get() != src.get() ||
        !same_indices(first->indices, store->indices))
      return false;
    const auto at = ne::simplify(src.flat_index(store->indices));
    if (!ne::equal(at, ne::simplify(dst.flat_index(store->indices))) ||
        !ne::can_prove(dst.size() <= src.size()))
      return false;
    const auto ahead = loads_of(bin->b, src.get());
    return !ahead.empty() && stores_in_order(nest, dst) &&
           std::all_of(ahead.begin(), ahead.end(), [&](const auto& idx) {
             if (idx.empty()) return false;
             const auto d = ne::simplify(src.flat_index(idx) - at).as_int();
             return d && *d > 0;
           });
  }

  // Whether `dst` may live in `src` when the stage is the MIN or MAX of each entry with its
  // mirror image in one loop: dst[i] = min(src[i], src[m(i)]), m(i) the index with that loop's
  // variable v read as extent - 1 - v (entries paired, each the other's mirror). In place the
  // second of a pair reads its mate's new value min(src[m(i)], src[i]) or the old one: the
  // same result, as min(x, min(y, x)) = min(x, y).
  static bool reads_mirrored(const Nest& nest, const Buffer& src, const Buffer& dst) {
    const auto* store = nest.store;
    const auto* bin = store->value.as<te::BinaryNode>();
    if (bin == nullptr || (bin->kind() != te::ExprKind::Min && bin->kind() != te::ExprKind::Max))
      return false;
    const auto* first = bin->a.as<te::LoadNode>();
    const auto* mate = bin->b.as<te::LoadNode>();
    if (first == nullptr || mate == nullptr || first->buffer.get() != src.get() ||
        mate->buffer.get() != src.get() || !same_indices(first->indices, store->indices) ||
        !ne::equal(src.size(), dst.size()))
      return false;
    const auto at = ne::simplify(src.flat_index(store->indices));
    if (!ne::equal(at, ne::simplify(dst.flat_index(store->indices)))) return false;
    const auto mirrored = ne::simplify(src.flat_index(mate->indices));
    return std::any_of(nest.loops.begin(), nest.loops.end(), [&](const ForNode* f) {
      const auto lo = ne::simplify(f->min).as_int();
      const auto extent = ne::simplify(f->extent).as_int();
      if (!lo || !extent || *extent < 2) return false;
      const ne::Substitution flip{f->var, ne::Expr(2 * *lo + *extent - 1) - f->var};
      return ne::equal(ne::simplify(ne::substitute(at, {flip})), mirrored);
    });
  }

  bool reuse_once(std::vector<Buffer>& run, std::vector<Stmt>& seq) {
    const auto in_run = [&](const te::BufferNode* b) {
      return std::any_of(run.begin(), run.end(), [&](const Buffer& x) { return x.get() == b; });
    };
    for (std::size_t i = 0; i < seq.size(); ++i) {
      const auto nest = nest_of(seq[i]);
      const auto* store = nest.store;
      if (store == nullptr || !in_run(store->buffer.get())) continue;
      const Buffer dst = store->buffer;  // a copy: the store is rewritten below
      if (!loads_of(store->value, dst.get()).empty()) continue;
      for (std::size_t r = 0; r < run.size(); ++r) {
        const Buffer src = run[r];  // a copy: run changes below
        if (src.same_as(dst) || src.scope() != dst.scope() || src.dtype() != dst.dtype()) continue;
        const auto loads = loads_of(store->value, src.get());
        const bool element_wise = ne::equal(src.size(), dst.size()) && !loads.empty() &&
                                  std::all_of(loads.begin(), loads.end(), [&](const auto& idx) {
                                    return same_indices(idx, store->indices);
                                  });
        if (!element_wise && !reads_ahead(nest, src, dst) && !reads_mirrored(nest, src, dst))
          continue;
        if (const auto* bin = store->value.as<te::BinaryNode>();
            element_wise && bin && !symmetric(bin->kind()) && !loads_of(bin->b, src.get()).empty())
          continue;
        bool ok = true;
        for (std::size_t j = 0; j < i && ok; ++j) ok = !uses_buffer(seq[j], dst.get());
        for (std::size_t j = i + 1; j < seq.size() && ok; ++j) ok = !uses_buffer(seq[j], src.get());
        if (!ok || !writes_each_once(nest, dst)) continue;
        // dst lives in src from here on.
        BufferMap map{{dst.get(), src}};
        for (std::size_t j = i; j < seq.size(); ++j) seq[j] = rewrite(seq[j], {}, map);
        run.erase(
            std::find_if(run.begin(), run.end(), [&](const Buffer& x) { return x.same_as(dst); }));
        return true;
      }
    }
    return false;
  }
};

}  // namespace detail

}  // namespace dlavm::tir

namespace dlavm::tir {

DLAVM_INLINE Stmt reuse_inplace(const Stmt& s) { return detail::InplaceReuse().visit(s); }

}  // namespace dlavm::tir
