// Definitions for dlavm/tir/storage_rewrite.hpp (see core/api.hpp).
#pragma once

#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/rewrite.hpp>
#include <dlavm/tir/storage_rewrite.hpp>

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
    for (auto it = run.rbegin(); it != run.rend(); ++it) body = make_allocate(*it, body);
    return body;
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

  // Whether the nest writes each element of `b` at most once: the store's flat index is affine
  // in the loops with constant strides that, sorted by size, each exceed the span of the
  // smaller ones over the loops' largest extents (a mixed-radix numbering).
  static bool writes_each_once(const Nest& nest, const Buffer& b) {
    std::vector<ne::Var> vars;
    for (const auto* f : nest.loops) vars.push_back(f->var);
    const auto form = ne::linear_form(b.flat_index(nest.store->indices), vars);
    if (!form) return false;
    std::vector<std::pair<std::int64_t, std::int64_t>> terms;  // |stride|, largest extent
    for (std::size_t k = 0; k < vars.size(); ++k) {
      const auto extent = ne::bounds(nest.loops[k]->extent).max;
      if (extent <= 1) continue;
      const auto stride = ne::simplify(form->strides[k]).as_int();
      if (!stride || *stride == 0 || extent > (std::int64_t{1} << 30) ||
          std::llabs(*stride) > (std::int64_t{1} << 30))
        return false;
      terms.emplace_back(std::llabs(*stride), extent);
    }
    std::sort(terms.begin(), terms.end());
    std::int64_t span = 0;  // largest offset difference of the loops taken so far
    for (const auto& [stride, extent] : terms) {
      if (stride <= span) return false;
      span += stride * (extent - 1);
      if (span > (std::int64_t{1} << 62)) return false;
    }
    return true;
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
        if (src.same_as(dst) || src.scope() != dst.scope() || src.dtype() != dst.dtype() ||
            !ne::equal(src.size(), dst.size()))
          continue;
        const auto loads = loads_of(store->value, src.get());
        if (loads.empty() || !std::all_of(loads.begin(), loads.end(), [&](const auto& idx) {
              return same_indices(idx, store->indices);
            }))
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
