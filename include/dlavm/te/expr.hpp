// Value expressions: what a compute lambda returns and what TIR stores. A small closed node
// set over element values of a DType, with indices that are ne expressions:
//   IntImm                               constant of a dtype
//   Cast                                 conversion (integer casts wrap)
//   Add Sub Mul Min Max Shl Shr          arithmetic (BinaryNode, both operands one dtype)
//   Div Mod                              division truncating toward zero (C++ / and %)
//   FloorDiv FloorMod                    division rounding down (TVM's floordiv, floormod)
//   EQ NE LT LE GT GE And Or, Not        conditions (dtype bool = uint1)
//   Select                               cond ? t : f
//   Index                                an ne index expression used as a value
//   Read                                 element of a tensor (te level)
//   Load                                 element of a buffer (TIR level)
//   Reduce                               sum/max/min of a source over reduction axes
//   Call                                 a named intrinsic (TIR level)
// A Read names the OperationNode it reads (a placeholder or a compute, defined here so that
// the printer and the builders' messages can name it; te::Tensor in tensor.hpp wraps it).
// Passes use ExprFunctor / ExprVisitor / ExprMutator below: one idiom, like ne's.
#pragma once

#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/core/ref.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te/buffer.hpp>
#include <dlavm/te/iter_var.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::te {

enum class ExprKind : std::uint8_t {
  IntImm,
  Cast,
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  FloorDiv,
  FloorMod,
  Min,
  Max,
  Shl,
  Shr,
  EQ,
  NE,
  LT,
  LE,
  GT,
  GE,
  And,
  Or,
  Not,
  Select,
  Index,
  Read,
  Load,
  Reduce,
  Call,
};

constexpr bool is_binary(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Or; }
constexpr bool is_arith(ExprKind k) { return k >= ExprKind::Add && k <= ExprKind::Shr; }
constexpr bool is_comparison(ExprKind k) { return k >= ExprKind::EQ && k <= ExprKind::GE; }
constexpr bool is_division(ExprKind k) { return k >= ExprKind::Div && k <= ExprKind::FloorMod; }
// Kinds written as a call, `min(a, b)`, rather than infix.
constexpr bool is_call_style(ExprKind k) { return k >= ExprKind::FloorDiv && k <= ExprKind::Max; }

inline constexpr DType bool_type{DType::Kind::UInt, 1};

constexpr std::string_view op_symbol(ExprKind k) {
  switch (k) {
    case ExprKind::Add:
      return "+";
    case ExprKind::Sub:
      return "-";
    case ExprKind::Mul:
      return "*";
    case ExprKind::Div:
      return "/";
    case ExprKind::Mod:
      return "%";
    case ExprKind::FloorDiv:
      return "floordiv";
    case ExprKind::FloorMod:
      return "floormod";
    case ExprKind::Min:
      return "min";
    case ExprKind::Max:
      return "max";
    case ExprKind::Shl:
      return "<<";
    case ExprKind::Shr:
      return ">>";
    case ExprKind::EQ:
      return "==";
    case ExprKind::NE:
      return "!=";
    case ExprKind::LT:
      return "<";
    case ExprKind::LE:
      return "<=";
    case ExprKind::GT:
      return ">";
    case ExprKind::GE:
      return ">=";
    case ExprKind::And:
      return "&&";
    case ExprKind::Or:
      return "||";
    default:
      return "?";
  }
}

class ExprNode;
struct OperationNode;

class Expr {
 public:
  Expr() = default;
  // C++ integers become "literal" constants, which take the dtype of the operand they meet:
  // `x + 1` with x int8 adds an int8 1. Alone they are int32.
  template <std::integral T>
  requires(!std::same_as<T, bool>) Expr(T value);  // NOLINT(google-explicit-constructor)
  explicit Expr(Ref<ExprNode> node);

  bool defined() const { return node_ != nullptr; }
  ExprKind kind() const;
  DType dtype() const;
  const ExprNode* get() const { return node_.get(); }
  template <class T>
  const T* as() const;
  bool same_as(const Expr& other) const { return node_ == other.node_; }

 private:
  Ref<ExprNode> node_;
};

class ExprNode : public RefCounted {
 public:
  ExprNode(const ExprNode&) = delete;
  ExprNode& operator=(const ExprNode&) = delete;
  ExprKind kind() const { return kind_; }
  DType dtype() const { return dtype_; }

 protected:
  ExprNode(ExprKind kind, DType dtype) : kind_(kind), dtype_(dtype) {}

 private:
  ExprKind kind_;
  DType dtype_;
};

struct IntImmNode final : ExprNode {
  IntImmNode(std::int64_t v, DType t, bool lit)
      : ExprNode(ExprKind::IntImm, t), value(v), literal(lit) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::IntImm; }
  const std::int64_t value;
  const bool literal;  // written as a C++ integer: adopts the dtype of the other operand
};

struct CastNode final : ExprNode {
  CastNode(DType t, Expr v) : ExprNode(ExprKind::Cast, t), value(std::move(v)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::Cast; }
  const Expr value;
};

struct BinaryNode final : ExprNode {
  BinaryNode(ExprKind k, DType t, Expr x, Expr y)
      : ExprNode(k, t), a(std::move(x)), b(std::move(y)) {}
  static constexpr bool classof(ExprKind k) { return is_binary(k); }
  const Expr a;
  const Expr b;
};

struct NotNode final : ExprNode {
  explicit NotNode(Expr x) : ExprNode(ExprKind::Not, bool_type), a(std::move(x)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::Not; }
  const Expr a;
};

struct SelectNode final : ExprNode {
  SelectNode(Expr c, Expr x, Expr y)
      : ExprNode(ExprKind::Select, x.dtype()),
        cond(std::move(c)),
        t(std::move(x)),
        f(std::move(y)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::Select; }
  const Expr cond;
  const Expr t;
  const Expr f;
};

struct IndexNode final : ExprNode {
  IndexNode(ne::Expr i, DType t) : ExprNode(ExprKind::Index, t), index(std::move(i)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::Index; }
  const ne::Expr index;
};

// An operation: what a Read reads. A placeholder is an input; a compute defines each element
// of its output by `body` over its axes.
enum class OpKind : std::uint8_t { Placeholder, Compute };

// Defined before ReadNode, which holds a reference to one: a Ref's destructor needs the
// complete type.
struct OperationNode : RefCounted {
  OperationNode(OpKind k, std::string n, DType t, std::vector<ne::Expr> s, std::vector<IterVar> a,
                std::vector<IterVar> r, Expr b, std::vector<Ref<OperationNode>> in)
      : kind(k),
        name(std::move(n)),
        dtype(t),
        shape(std::move(s)),
        axis(std::move(a)),
        reduce_axis(std::move(r)),
        body(std::move(b)),
        inputs(std::move(in)) {}
  OpKind kind;
  std::string name;
  DType dtype;
  std::vector<ne::Expr> shape;
  std::vector<IterVar> axis;               // compute: one data-parallel axis per output dim
  std::vector<IterVar> reduce_axis;        // compute whose body is a reduction: its axes
  Expr body;                               // compute: the element at `axis` (a Reduce node or not)
  std::vector<Ref<OperationNode>> inputs;  // tensors the body reads, once
};

struct ReadNode final : ExprNode {
  ReadNode(Ref<OperationNode> o, DType t, std::vector<ne::Expr> i)
      : ExprNode(ExprKind::Read, t), op(std::move(o)), indices(std::move(i)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::Read; }
  const Ref<OperationNode> op;
  const std::vector<ne::Expr> indices;
};

struct LoadNode final : ExprNode {
  LoadNode(Buffer b, std::vector<ne::Expr> i)
      : ExprNode(ExprKind::Load, b.dtype()), buffer(std::move(b)), indices(std::move(i)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::Load; }
  const Buffer buffer;
  const std::vector<ne::Expr> indices;
};

enum class Combiner : std::uint8_t { Sum, Max, Min };

struct ReduceNode final : ExprNode {
  ReduceNode(Combiner c, Expr s, std::vector<IterVar> ax)
      : ExprNode(ExprKind::Reduce, s.dtype()),
        combiner(c),
        source(std::move(s)),
        axes(std::move(ax)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::Reduce; }
  const Combiner combiner;
  const Expr source;
  const std::vector<IterVar> axes;
};

// A named intrinsic. `buffers` are the memory operands it addresses (the tiles a tensor
// intrinsic reads and writes); `args` are values, typically offsets into those buffers.
struct CallNode final : ExprNode {
  CallNode(std::string n, DType t, std::vector<Expr> a, std::vector<Buffer> b)
      : ExprNode(ExprKind::Call, t),
        name(std::move(n)),
        args(std::move(a)),
        buffers(std::move(b)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::Call; }
  const std::string name;
  const std::vector<Expr> args;
  const std::vector<Buffer> buffers;
};

// Out of the class: a Ref's destructor needs the complete node type.
inline Expr::Expr(Ref<ExprNode> node) : node_(std::move(node)) {}

inline ExprKind Expr::kind() const {
  if (!node_) raise<ValueError>("te: use of an undefined Expr");
  return node_->kind();
}
inline DType Expr::dtype() const {
  if (!node_) raise<ValueError>("te: use of an undefined Expr");
  return node_->dtype();
}
template <class T>
const T* Expr::as() const {
  if (node_ && T::classof(node_->kind())) return static_cast<const T*>(node_.get());
  return nullptr;
}
template <std::integral T>
requires(!std::same_as<T, bool>) Expr::Expr(T value)
    : node_(make_ref<IntImmNode>(static_cast<std::int64_t>(value), DType::int32(), true)) {}

// ---- the visitor idiom -------------------------------------------------------------------
// ExprFunctor dispatches on the node kind to the derived class (CRTP):
//   visit_int visit_cast visit_binary visit_not visit_select visit_index visit_read
//   visit_load visit_reduce visit_call, each taking (const XNode&, const Expr& self).
template <class Derived, class R>
class ExprFunctor {
 public:
  R visit(const Expr& e) {
    auto& self = static_cast<Derived&>(*this);
    const ExprNode* n = e.get();
    switch (e.kind()) {
      case ExprKind::IntImm:
        return self.visit_int(static_cast<const IntImmNode&>(*n), e);
      case ExprKind::Cast:
        return self.visit_cast(static_cast<const CastNode&>(*n), e);
      case ExprKind::Not:
        return self.visit_not(static_cast<const NotNode&>(*n), e);
      case ExprKind::Select:
        return self.visit_select(static_cast<const SelectNode&>(*n), e);
      case ExprKind::Index:
        return self.visit_index(static_cast<const IndexNode&>(*n), e);
      case ExprKind::Read:
        return self.visit_read(static_cast<const ReadNode&>(*n), e);
      case ExprKind::Load:
        return self.visit_load(static_cast<const LoadNode&>(*n), e);
      case ExprKind::Reduce:
        return self.visit_reduce(static_cast<const ReduceNode&>(*n), e);
      case ExprKind::Call:
        return self.visit_call(static_cast<const CallNode&>(*n), e);
      default:
        return self.visit_binary(static_cast<const BinaryNode&>(*n), e);
    }
  }
};

// Read-only traversal of every child; index expressions go to visit_index_expr.
template <class Derived>
class ExprVisitor : public ExprFunctor<Derived, void> {
 public:
  void visit_index_expr(const ne::Expr&) {}
  void visit_int(const IntImmNode&, const Expr&) {}
  void visit_cast(const CastNode& n, const Expr&) { this->visit(n.value); }
  void visit_binary(const BinaryNode& n, const Expr&) {
    this->visit(n.a);
    this->visit(n.b);
  }
  void visit_not(const NotNode& n, const Expr&) { this->visit(n.a); }
  void visit_select(const SelectNode& n, const Expr&) {
    this->visit(n.cond);
    this->visit(n.t);
    this->visit(n.f);
  }
  void visit_index(const IndexNode& n, const Expr&) { self().visit_index_expr(n.index); }
  void visit_read(const ReadNode& n, const Expr&) {
    for (const auto& i : n.indices) self().visit_index_expr(i);
  }
  void visit_load(const LoadNode& n, const Expr&) {
    for (const auto& i : n.indices) self().visit_index_expr(i);
  }
  void visit_reduce(const ReduceNode& n, const Expr&) { this->visit(n.source); }
  void visit_call(const CallNode& n, const Expr&) {
    for (const auto& a : n.args) this->visit(a);
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace dlavm::te
