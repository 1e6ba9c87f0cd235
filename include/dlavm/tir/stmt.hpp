// TIR statements: the loop IR that schedules lower to and that target passes rewrite.
//   For          for (var, min, extent) body, serial, unrolled or a virtual thread
//   Allocate     a buffer in a storage scope, live in body
//   Store        buffer[indices] = value
//   Attr         an annotation on body: pragma_dma_copy, pragma_alu, ...
//   IfThenElse   guard (non-divisible splits, padding)
//   Evaluate     an expression for its effect (intrinsic calls)
//   Seq          statements in order
// Values are te expressions (with Load nodes), indices and extents are ne expressions. Passes
// use StmtFunctor / StmtVisitor / StmtMutator (tir/functor.hpp).
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/core/ref.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::tir {

using te::Buffer;

enum class StmtKind : std::uint8_t { For, Allocate, Store, Attr, IfThenElse, Evaluate, Seq };
enum class ForKind : std::uint8_t { Serial, Unrolled, VThread };

class StmtNode;

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(Ref<StmtNode> node);
  bool defined() const { return node_ != nullptr; }
  StmtKind kind() const;
  const StmtNode* get() const { return node_.get(); }
  template <class T>
  const T* as() const;
  bool same_as(const Stmt& other) const { return node_ == other.node_; }

 private:
  Ref<StmtNode> node_;
};

class StmtNode : public RefCounted {
 public:
  StmtNode(const StmtNode&) = delete;
  StmtNode& operator=(const StmtNode&) = delete;
  StmtKind kind() const { return kind_; }

 protected:
  explicit StmtNode(StmtKind kind) : kind_(kind) {}

 private:
  StmtKind kind_;
};

struct ForNode final : StmtNode {
  ForNode(ne::Var v, ne::Expr lo, ne::Expr ext, ForKind k, Stmt b)
      : StmtNode(StmtKind::For),
        var(std::move(v)),
        min(std::move(lo)),
        extent(std::move(ext)),
        for_kind(k),
        body(std::move(b)) {}
  static constexpr bool classof(StmtKind k) { return k == StmtKind::For; }
  const ne::Var var;
  const ne::Expr min;
  const ne::Expr extent;
  const ForKind for_kind;
  const Stmt body;
};

struct AllocateNode final : StmtNode {
  AllocateNode(Buffer b, Stmt s)
      : StmtNode(StmtKind::Allocate), buffer(std::move(b)), body(std::move(s)) {}
  static constexpr bool classof(StmtKind k) { return k == StmtKind::Allocate; }
  const Buffer buffer;
  const Stmt body;
};

struct StoreNode final : StmtNode {
  StoreNode(Buffer b, std::vector<ne::Expr> i, te::Expr v)
      : StmtNode(StmtKind::Store),
        buffer(std::move(b)),
        indices(std::move(i)),
        value(std::move(v)) {}
  static constexpr bool classof(StmtKind k) { return k == StmtKind::Store; }
  const Buffer buffer;
  const std::vector<ne::Expr> indices;
  const te::Expr value;
};

struct AttrNode final : StmtNode {
  AttrNode(std::string k, std::string n, ne::Expr v, Stmt b)
      : StmtNode(StmtKind::Attr),
        key(std::move(k)),
        node(std::move(n)),
        value(std::move(v)),
        body(std::move(b)) {}
  static constexpr bool classof(StmtKind k) { return k == StmtKind::Attr; }
  const std::string key;   // "pragma_dma_copy", "pragma_alu", ...
  const std::string node;  // what it annotates (a stage or axis name), for printing
  const ne::Expr value;
  const Stmt body;
};

struct IfThenElseNode final : StmtNode {
  IfThenElseNode(ne::Expr c, Stmt t, Stmt e)
      : StmtNode(StmtKind::IfThenElse),
        cond(std::move(c)),
        then_case(std::move(t)),
        else_case(std::move(e)) {}
  static constexpr bool classof(StmtKind k) { return k == StmtKind::IfThenElse; }
  const ne::Expr cond;
  const Stmt then_case;
  const Stmt else_case;  // may be undefined
};

struct EvaluateNode final : StmtNode {
  explicit EvaluateNode(te::Expr v) : StmtNode(StmtKind::Evaluate), value(std::move(v)) {}
  static constexpr bool classof(StmtKind k) { return k == StmtKind::Evaluate; }
  const te::Expr value;
};

struct SeqNode final : StmtNode {
  explicit SeqNode(std::vector<Stmt> s) : StmtNode(StmtKind::Seq), seq(std::move(s)) {}
  static constexpr bool classof(StmtKind k) { return k == StmtKind::Seq; }
  const std::vector<Stmt> seq;
};

// Out of the class: a Ref's destructor needs the complete node type.
inline Stmt::Stmt(Ref<StmtNode> node) : node_(std::move(node)) {}

inline StmtKind Stmt::kind() const {
  if (!node_) raise<ValueError>("tir: use of an undefined Stmt");
  return node_->kind();
}
template <class T>
const T* Stmt::as() const {
  if (node_ && T::classof(node_->kind())) return static_cast<const T*>(node_.get());
  return nullptr;
}

// ---- builders ---------------------------------------------------------------------------
inline Stmt make_for(ne::Var var, ne::Expr min, ne::Expr extent, ForKind kind, Stmt body) {
  return Stmt(
      make_ref<ForNode>(std::move(var), std::move(min), std::move(extent), kind, std::move(body)));
}
inline Stmt make_allocate(Buffer buffer, Stmt body) {
  return Stmt(make_ref<AllocateNode>(std::move(buffer), std::move(body)));
}
// `body` inside an allocation of each of `buffers`, the first outermost.
inline Stmt make_allocate(const std::vector<Buffer>& buffers, Stmt body) {
  for (auto it = buffers.rbegin(); it != buffers.rend(); ++it) body = make_allocate(*it, body);
  return body;
}
inline Stmt make_store(Buffer buffer, std::vector<ne::Expr> indices, te::Expr value) {
  if (indices.size() != buffer.ndim())
    raise<ShapeError>("store to buffer '{}' with {} indices; it has {} dims", buffer.name(),
                      indices.size(), buffer.ndim());
  if (!value.defined())
    raise<ValueError>("store to buffer '{}' of an undefined value", buffer.name());
  if (value.dtype() != buffer.dtype())
    raise<TypeError>("store of a {} value to buffer '{}' of {}", value.dtype(), buffer.name(),
                     buffer.dtype());
  return Stmt(make_ref<StoreNode>(std::move(buffer), std::move(indices), std::move(value)));
}
inline Stmt make_attr(std::string key, std::string node, ne::Expr value, Stmt body) {
  return Stmt(
      make_ref<AttrNode>(std::move(key), std::move(node), std::move(value), std::move(body)));
}
inline Stmt make_if(ne::Expr cond, Stmt then_case, Stmt else_case = {}) {
  return Stmt(
      make_ref<IfThenElseNode>(std::move(cond), std::move(then_case), std::move(else_case)));
}
inline Stmt make_evaluate(te::Expr value) { return Stmt(make_ref<EvaluateNode>(std::move(value))); }
// A sequence, flattening nested sequences and dropping undefined parts; one statement stays itself.
inline Stmt make_seq(const std::vector<Stmt>& parts) {
  std::vector<Stmt> flat;
  for (const auto& s : parts) {
    if (!s.defined()) continue;
    if (const auto* seq = s.as<SeqNode>())
      flat.insert(flat.end(), seq->seq.begin(), seq->seq.end());
    else
      flat.push_back(s);
  }
  if (flat.size() == 1) return flat.front();
  return Stmt(make_ref<SeqNode>(std::move(flat)));
}

// A lowered function. `params` are the buffers of the tensors it was built for, with their
// shapes; after flattening the body addresses `flat_params` (same order, one dimension).
struct PrimFunc {
  std::string name;
  std::vector<Buffer> params;
  Stmt body;
  std::vector<Buffer> flat_params;
};

}  // namespace dlavm::tir
