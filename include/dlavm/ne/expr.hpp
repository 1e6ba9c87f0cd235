// ne expressions: the node set, the `Expr` value type and symbolic variables.
//
// An Expr is a counted reference (core/ref.hpp) to an immutable node. The node set is small and
// closed:
//   IntImm, Var                          leaves
//   Add Sub Mul FloorDiv FloorMod Min Max  integer arithmetic (BinaryNode)
//   EQ NE LT LE GT GE And Or              conditions, valued 0 or 1 (BinaryNode)
//   Not, Select                           the rest
// Every node caches a structural hash at construction. Operators live in ne/ops.hpp, the
// visitor idiom in ne/functor.hpp; include <dlavm/ne.hpp> for all of it.
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/core/ref.hpp>

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace dlavm::ne {

enum class Kind : std::uint8_t {
  IntImm,
  Var,
  Add,
  Sub,
  Mul,
  FloorDiv,
  FloorMod,
  Min,
  Max,
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
};

constexpr bool is_binary(Kind k) { return k >= Kind::Add && k <= Kind::Or; }
constexpr bool is_comparison(Kind k) { return k >= Kind::EQ && k <= Kind::GE; }
// Kinds whose value is always 0 or 1.
constexpr bool is_condition(Kind k) { return k >= Kind::EQ && k <= Kind::Not; }

class Node;

// A symbolic int64 expression. Cheap to copy; never mutated. A default-constructed Expr is
// undefined (usable only as a placeholder, e.g. in containers).
class Expr {
 public:
  Expr() = default;
  // Integer constants convert implicitly: `x + 1`, `Expr e = 16;`.
  template <std::integral T>
  requires(!std::same_as<T, bool>) Expr(T value);  // NOLINT(google-explicit-constructor)
  // Integral constants (static dims such as 16_c, std::integral_constant) convert too.
  template <class C>
  requires(std::is_integral_v<decltype(C::value)> &&
           !std::same_as<std::remove_cv_t<decltype(C::value)>, bool>) Expr(C)
      : Expr(static_cast<std::int64_t>(C::value)) {}  // NOLINT(google-explicit-constructor)
  explicit Expr(Ref<Node> node);

  bool defined() const { return node_ != nullptr; }
  Kind kind() const;
  const Node* get() const { return node_.get(); }
  const Ref<Node>& node_ptr() const { return node_; }

  // The node as T (IntImmNode, VarNode, BinaryNode, NotNode, SelectNode), or nullptr.
  template <class T>
  const T* as() const;

  // The value when this is an integer constant.
  std::optional<std::int64_t> as_int() const;
  bool is_const() const { return as_int().has_value(); }

  // Same node object (identity, not structure; see ne::equal for structure).
  bool same_as(const Expr& other) const { return node_ == other.node_; }
  // Structural hash, consistent with ne::equal.
  std::size_t hash() const;

 private:
  Ref<Node> node_;
};

class Node : public RefCounted {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  Kind kind() const { return kind_; }
  std::size_t hash() const { return hash_; }

 protected:
  Node(Kind kind, std::size_t hash) : kind_(kind), hash_(hash) {}

 private:
  Kind kind_;
  std::size_t hash_;
};

namespace detail {
constexpr std::size_t hash_mix(std::size_t seed, std::size_t value) {
  // 64-bit variant of boost::hash_combine's mixing step.
  value *= 0x9E3779B97F4A7C15ull;
  value ^= value >> 32;
  return (seed ^ value) * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
}
}  // namespace detail

struct IntImmNode final : Node {
  explicit IntImmNode(std::int64_t v)
      : Node(Kind::IntImm, detail::hash_mix(1, static_cast<std::size_t>(v))), value(v) {}
  static constexpr bool classof(Kind k) { return k == Kind::IntImm; }
  const std::int64_t value;
};

struct VarNode final : Node {
  VarNode(std::string n, std::int64_t lo, std::int64_t hi, std::uint64_t i)
      : Node(Kind::Var, detail::hash_mix(2, i)), name(std::move(n)), min(lo), max(hi), id(i) {}
  static constexpr bool classof(Kind k) { return k == Kind::Var; }
  const std::string name;
  const std::int64_t min;  // inclusive range of the values the variable takes
  const std::int64_t max;
  const std::uint64_t id;  // creation order: identity, and the canonical order of variables
};

struct BinaryNode final : Node {
  BinaryNode(Kind k, Expr lhs, Expr rhs)
      : Node(k, detail::hash_mix(detail::hash_mix(static_cast<std::size_t>(k) + 3, lhs.hash()),
                                 rhs.hash())),
        a(std::move(lhs)),
        b(std::move(rhs)) {}
  static constexpr bool classof(Kind k) { return is_binary(k); }
  const Expr a;
  const Expr b;
};

struct NotNode final : Node {
  explicit NotNode(Expr x) : Node(Kind::Not, detail::hash_mix(40, x.hash())), a(std::move(x)) {}
  static constexpr bool classof(Kind k) { return k == Kind::Not; }
  const Expr a;
};

// select(cond, t, f): t when cond is nonzero, else f. Like TVM's Select, both branches are
// evaluated (errors in the unused branch are still errors).
struct SelectNode final : Node {
  SelectNode(Expr c, Expr x, Expr y)
      : Node(
            Kind::Select,
            detail::hash_mix(detail::hash_mix(detail::hash_mix(41, c.hash()), x.hash()), y.hash())),
        cond(std::move(c)),
        t(std::move(x)),
        f(std::move(y)) {}
  static constexpr bool classof(Kind k) { return k == Kind::Select; }
  const Expr cond;
  const Expr t;
  const Expr f;
};

// Out of the class: a Ref's destructor needs the complete node type.
inline Expr::Expr(Ref<Node> node) : node_(std::move(node)) {}

inline Kind Expr::kind() const {
  if (!node_) raise<ValueError>("ne: use of an undefined Expr");
  return node_->kind();
}

inline std::size_t Expr::hash() const { return node_ ? node_->hash() : 0; }

template <class T>
const T* Expr::as() const {
  if (node_ && T::classof(node_->kind())) return static_cast<const T*>(node_.get());
  return nullptr;
}

inline std::optional<std::int64_t> Expr::as_int() const {
  if (const auto* imm = as<IntImmNode>()) return imm->value;
  return std::nullopt;
}

template <std::integral T>
requires(!std::same_as<T, bool>) Expr::Expr(T value) {
  if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
    if (value > static_cast<T>(INT64_MAX))
      raise<ValueError>("ne: integer constant {} does not fit in int64", value);
  }
  node_ = make_ref<IntImmNode>(static_cast<std::int64_t>(value));
}

// A named symbolic variable with an inclusive range [min, max]. Each `ne::var` call creates
// a distinct variable, even with the same name.
class Var : public Expr {
 public:
  // Views an Expr that is a variable as a Var; raises ValueError otherwise.
  explicit Var(const Expr& e) : Expr(e) {
    if (as<VarNode>() == nullptr) raise<ValueError>("ne: expression is not a variable");
  }
  const VarNode& node() const { return *as<VarNode>(); }
  const std::string& name() const { return node().name; }
  std::int64_t min() const { return node().min; }
  std::int64_t max() const { return node().max; }
  std::uint64_t id() const { return node().id; }
};

namespace detail {
inline std::uint64_t next_var_id() {
  static std::atomic<std::uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

// Raw node constructors: no folding, no checks. Passes use them to rebuild canonical forms.
inline Expr make_int(std::int64_t v) { return Expr(make_ref<IntImmNode>(v)); }
inline Expr make_binary(Kind k, Expr a, Expr b) {
  return Expr(make_ref<BinaryNode>(k, std::move(a), std::move(b)));
}
inline Expr make_not(Expr a) { return Expr(make_ref<NotNode>(std::move(a))); }
inline Expr make_select(Expr c, Expr t, Expr f) {
  return Expr(make_ref<SelectNode>(std::move(c), std::move(t), std::move(f)));
}
}  // namespace detail

// A new variable named `name` taking values in [min, max] (inclusive). Memory planning sizes
// buffers for `max`. Raises ValueError when min > max.
inline Var var(std::string name, std::int64_t min, std::int64_t max) {
  if (min > max) raise<ValueError>("ne::var '{}': min {} is greater than max {}", name, min, max);
  return Var(Expr(make_ref<VarNode>(std::move(name), min, max, detail::next_var_id())));
}

}  // namespace dlavm::ne
