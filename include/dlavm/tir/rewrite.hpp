// Rewriting a statement wholesale: variables replaced by expressions and buffers by other
// buffers, everywhere (loop bounds, conditions, store and load indices, intrinsic operands).
// With `fresh_allocations`, every buffer allocated inside gets a new identity (named with
// `suffix`), so that a copy of the statement owns storage distinct from the original's: what
// virtual threads need when they replicate a thread's statements.
#pragma once

#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/stmt.hpp>

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dlavm::tir {

using BufferMap = std::unordered_map<const te::BufferNode*, Buffer>;

class Rewriter : public StmtMutator<Rewriter> {
 public:
  Rewriter(std::vector<ne::Substitution> vars, BufferMap buffers, bool fresh_allocations = false,
           std::string suffix = "")
      : vars_(std::move(vars)),
        buffers_(std::move(buffers)),
        fresh_(fresh_allocations),
        suffix_(std::move(suffix)) {}

  ne::Expr mutate_index(const ne::Expr& e) {
    return vars_.empty() ? e : ne::simplify(ne::substitute(e, vars_));
  }
  te::Expr mutate_expr(const te::Expr& e) {
    struct Sub : te::ExprMutator<Sub> {
      Rewriter* self;
      ne::Expr mutate_index(const ne::Expr& i) { return self->mutate_index(i); }
      te::Expr visit_load(const te::LoadNode& n, const te::Expr& e) {
        auto base = te::ExprMutator<Sub>::visit_load(n, e);
        const auto* l = base.as<te::LoadNode>();
        const Buffer b = self->buffer(l->buffer);
        return b.same_as(l->buffer) ? base : te::load(b, l->indices);
      }
      te::Expr visit_call(const te::CallNode& n, const te::Expr& e) {
        auto base = te::ExprMutator<Sub>::visit_call(n, e);
        const auto* c = base.as<te::CallNode>();
        std::vector<Buffer> bufs;
        bool changed = false;
        for (const auto& b : c->buffers) {
          bufs.push_back(self->buffer(b));
          changed = changed || !bufs.back().same_as(b);
        }
        return changed ? te::call(c->name, c->dtype(), c->args, std::move(bufs)) : base;
      }
    } sub;
    sub.self = this;
    return sub.visit(e);
  }
  Stmt visit_store(const StoreNode& n, const Stmt& s) {
    auto base = StmtMutator<Rewriter>::visit_store(n, s);
    const auto* st = base.as<StoreNode>();
    const Buffer b = buffer(st->buffer);
    return b.same_as(st->buffer) ? base : make_store(b, st->indices, st->value);
  }
  Stmt visit_allocate(const AllocateNode& n, const Stmt& s) {
    if (!fresh_) {
      const Buffer b = buffer(n.buffer);
      auto body = visit(n.body);
      return b.same_as(n.buffer) && body.same_as(n.body) ? s : make_allocate(b, body);
    }
    std::vector<ne::Expr> shape;
    for (const auto& d : n.buffer.shape()) shape.push_back(mutate_index(d));
    const Buffer copy =
        te::make_buffer(n.buffer.name() + suffix_, n.buffer.dtype(), shape, n.buffer.scope());
    buffers_[n.buffer.get()] = copy;
    return make_allocate(copy, visit(n.body));
  }

  Buffer buffer(const Buffer& b) const {
    auto it = buffers_.find(b.get());
    return it == buffers_.end() ? b : it->second;
  }

 private:
  std::vector<ne::Substitution> vars_;
  BufferMap buffers_;
  bool fresh_;
  std::string suffix_;
};

inline Stmt rewrite(const Stmt& s, std::vector<ne::Substitution> vars, BufferMap buffers = {},
                    bool fresh_allocations = false, std::string suffix = "") {
  return Rewriter(std::move(vars), std::move(buffers), fresh_allocations, std::move(suffix))
      .visit(s);
}

// Whether s reads or writes buffer b (stores, loads, intrinsic operands, allocations).
inline bool uses_buffer(const Stmt& s, const te::BufferNode* b) {
  struct Finder : StmtVisitor<Finder> {
    const te::BufferNode* b;
    bool found = false;
    void value(const te::Expr& e) {
      struct V : te::ExprVisitor<V> {
        const te::BufferNode* b;
        bool found = false;
        void visit_load(const te::LoadNode& n, const te::Expr&) {
          found = found || n.buffer.get() == b;
        }
        void visit_call(const te::CallNode& n, const te::Expr& e) {
          for (const auto& x : n.buffers) found = found || x.get() == b;
          te::ExprVisitor<V>::visit_call(n, e);
        }
      } v;
      v.b = b;
      v.visit(e);
      found = found || v.found;
    }
    void visit_store(const StoreNode& n, const Stmt&) {
      found = found || n.buffer.get() == b;
      value(n.value);
    }
    void visit_evaluate(const EvaluateNode& n, const Stmt&) { value(n.value); }
    void visit_allocate(const AllocateNode& n, const Stmt&) {
      found = found || n.buffer.get() == b;
      visit(n.body);
    }
  } f;
  f.b = b;
  f.visit(s);
  return f.found;
}

}  // namespace dlavm::tir
