// Operations and tensors. A placeholder is an input; a compute defines each element of its
// output from a lambda over one index per dimension. A Tensor is the (single) output of an
// operation and is what users index: `A(i, k)`.
//
//   auto A = te::placeholder(te::shape(n, 16), DType::int8(), "A");
//   auto B = te::compute(te::shape(n, 16), [&](auto i, auto j) { return A(i, j) + 1; }, "B");
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/te/iter_var.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/printer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dlavm::te {

using Operation = Ref<OperationNode>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Operation op) : op_(std::move(op)) {}

  const Operation& op() const { return op_; }
  const std::string& name() const { return op_->name; }
  DType dtype() const { return op_->dtype; }
  const std::vector<ne::Expr>& shape() const { return op_->shape; }
  std::size_t ndim() const { return op_->shape.size(); }
  bool defined() const { return op_ != nullptr; }
  bool is_placeholder() const { return op_->kind == OpKind::Placeholder; }
  friend bool operator==(const Tensor& a, const Tensor& b) { return a.op_ == b.op_; }

  // The element at the given indices: integers, static dims, ne expressions, axes, and
  // arithmetic on them (`A(i * 2 + dy, k + 1)`). Any argument type is accepted here so that a
  // wrong one meets the static_assert, rather than making the compute's lambda uncallable.
  template <class... I>
  Expr operator()(I&&... indices) const {
    constexpr bool all_indices = (std::convertible_to<I, ne::Expr> && ...);
    static_assert(all_indices,
                  "te::Tensor(...): an index must be an integer, a static dim, an ne expression "
                  "or a te::IterVar (arithmetic on them, such as k + 1, is an ne expression); a "
                  "te::Expr value such as another tensor's element cannot index a tensor");
    if constexpr (all_indices)
      return read(std::vector<ne::Expr>{ne::Expr(std::forward<I>(indices))...});
    else
      return {};
  }
  Expr read(std::vector<ne::Expr> indices) const {
    if (!op_) raise<ValueError>("te: indexing an undefined tensor");
    if (indices.size() != op_->shape.size())
      raise<ShapeError>("tensor '{}' has {} dims but is indexed with {}", op_->name,
                        op_->shape.size(), indices.size());
    return Expr(make_ref<ReadNode>(op_, op_->dtype, std::move(indices)));
  }

 private:
  Operation op_;
};

template <std::size_t N>
using Shape = std::array<ne::Expr, N>;

// te::shape(1, token, 16_c): a shape whose rank is part of its type, so that te::compute can
// check the lambda's arity at compile time.
template <class... D>
requires(std::convertible_to<D, ne::Expr>&&...) Shape<sizeof...(D)> shape(D&&... dims) {
  return {ne::Expr(std::forward<D>(dims))...};
}

namespace detail {

void check_shape(const std::string& name, const std::vector<ne::Expr>& shape);

// Collects the operations read by an expression, in first-use order, and checks each read
// that is not under a select: an index proven to leave its dim for some valid value of the
// axes and symbolic dims is a ShapeError. An axis ranges over its own extent (i < n), not
// over its variable's numeric range, so that Y(n - 1 - i) with i in [0, n) is in bounds.
class ReadCollector : public ExprVisitor<ReadCollector> {
 public:
  // `axes`: the compute's axes, each listed before the axes its range names.
  ReadCollector(const std::string& consumer, std::vector<ne::Sweep> axes)
      : consumer_(consumer),
        axes_(std::move(axes)),
        nonempty_(std::all_of(axes_.begin(), axes_.end(),
                              [](const ne::Sweep& a) { return ne::can_prove(a.extent >= 1); })) {}
  std::vector<Operation> inputs;

  void visit_read(const ReadNode& n, const Expr&) {
    if (seen_.insert(n.op.get()).second) inputs.push_back(n.op);
    if (guarded_ > 0) return;
    for (std::size_t k = 0; k < n.indices.size(); ++k) check_index(n, k);
  }
  void visit_select(const SelectNode& n, const Expr&) {
    visit(n.cond);
    ++guarded_;
    visit(n.t);
    visit(n.f);
    --guarded_;
  }

 private:
  void check_index(const ReadNode& n, std::size_t k) const {
    const auto& index = n.indices[k];
    const auto& dim = n.op->shape[k];
    const auto fail = [&](const auto& lo, const auto& hi) {
      raise<ShapeError>(
          "compute '{}' reads tensor '{}' out of bounds: index {} of dim {} ranges over [{}, {}] "
          "but the dim is {}",
          consumer_, n.op->name, index, k, lo, hi, dim);
    };
    // Every value of the index is outside the dim, whatever the axes' relations.
    const auto b = ne::bounds(index);
    if (b.max < 0 || b.min >= ne::bounds(dim).max) fail(b.min, b.max);
    // The ends of the index over the axes, in the symbolic dims: out of bounds when an end is
    // out for every value of the dims or, if no axis can be empty (the ends are then
    // attained), for some value where that end is affine in the dims (interval bounds of
    // independent variables are attained).
    const auto range = ne::swept_range(index, axes_);
    if (!range) return;
    const auto below = ne::simplify(range->lo);
    const auto above = ne::simplify(range->hi - dim);  // >= 0: past the end
    const auto lo = ne::bounds(below), past = ne::bounds(above);
    if (lo.max < 0 || past.min >= 0) fail(range->lo, range->hi);
    if (nonempty_ && ((is_exact(below) && lo.min < 0) || (is_exact(above) && past.max >= 0)))
      fail(range->lo, range->hi);
  }
  static bool is_exact(const ne::Expr& e) {
    auto vars = ne::free_vars(e);
    auto form = ne::linear_form(e, vars);
    return form && form->offset.is_const() &&
           std::all_of(form->strides.begin(), form->strides.end(),
                       [](const ne::Expr& s) { return s.is_const(); });
  }
  const std::string& consumer_;
  std::vector<ne::Sweep> axes_;
  bool nonempty_;  // no axis range can be empty
  std::unordered_set<const OperationNode*> seen_;
  int guarded_ = 0;
};

Tensor make_compute(std::string name, std::vector<ne::Expr> shape, std::vector<IterVar> axis,
                    Expr body);

// Raises the dlavm::Error being handled again, of the same kind, as "compute 'name': ...".
[[noreturn]] void rethrow_in_compute(const std::string& name);

// The body `build` returns (it calls a compute's lambda); an error the lambda raises names
// the compute, so "operator +: operands have types ..." says which lambda to look at.
template <class Build>
Expr build_body(const std::string& name, Build&& build) {
  try {
    return Expr(std::forward<Build>(build)());
  } catch (const Error&) {
    rethrow_in_compute(name);
  }
}

template <class T, std::size_t>
using repeat_t = T;

template <class F, std::size_t... K>
constexpr bool invocable_with_n_vars(std::index_sequence<K...>) {
  return std::is_invocable_v<F, repeat_t<ne::Var, K>...>;
}

}  // namespace detail

Tensor placeholder(std::vector<ne::Expr> shape, DType dtype, std::string name);
template <std::size_t N>
Tensor placeholder(const Shape<N>& shape, DType dtype, std::string name) {
  return placeholder(std::vector<ne::Expr>(shape.begin(), shape.end()), dtype, std::move(name));
}

// Axis names default to i0, i1, ...; pass `axis_names` to name them like TVM's lambda params.
template <std::size_t N, class F>
Tensor compute(const Shape<N>& shape, F&& fcompute, std::string name,
               std::array<std::string, N> axis_names = {}) {
  constexpr bool callable = detail::invocable_with_n_vars<F>(std::make_index_sequence<N>{});
  static_assert(callable,
                "te::compute: the lambda cannot be called with one ne::Var per dimension of the "
                "shape: it must take exactly one index per dimension, and its body must compile "
                "(if an error inside the lambda is reported above, that one is the cause)");
  std::vector<ne::Expr> dims(shape.begin(), shape.end());
  detail::check_shape(name, dims);
  std::vector<IterVar> axis;
  for (std::size_t k = 0; k < N; ++k) {
    auto axis_name = axis_names[k].empty() ? fmt::format("i{}", k) : axis_names[k];
    axis.push_back(make_iter_var(std::move(axis_name), 0, dims[k], IterKind::DataPar));
  }
  Expr body;
  if constexpr (callable)  // else the static_assert above is the one error reported
    body = detail::build_body(name, [&] {
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return Expr(std::invoke(fcompute, axis[K].var()...));
      }
      (std::make_index_sequence<N>{});
    });
  return detail::make_compute(std::move(name), std::move(dims), std::move(axis), std::move(body));
}

// Rank known only at run time (graph-layer ops): the lambda takes the axes' variables as a
// span. A separate name, so that overload resolution never instantiates a generic lambda with
// the wrong arguments.
template <class F>
Tensor compute_dynamic(std::vector<ne::Expr> shape, F&& fcompute, std::string name) {
  detail::check_shape(name, shape);
  std::vector<IterVar> axis;
  std::vector<ne::Var> vars;
  for (std::size_t k = 0; k < shape.size(); ++k) {
    axis.push_back(make_iter_var(fmt::format("i{}", k), 0, shape[k], IterKind::DataPar));
    vars.push_back(axis.back().var());
  }
  Expr body = detail::build_body(
      name, [&] { return std::invoke(fcompute, std::span<const ne::Var>(vars)); });
  return detail::make_compute(std::move(name), std::move(shape), std::move(axis), std::move(body));
}

// Every operation `outputs` depend on, inputs before their readers (post-order, deterministic).
std::vector<Operation> topo_order(std::span<const Tensor> outputs);

}  // namespace dlavm::te

template <>
struct fmt::formatter<dlavm::te::Tensor> : fmt::formatter<std::string_view> {
  auto format(const dlavm::te::Tensor& t, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(
        fmt::format("{}: {}[{}]", t.name(), t.dtype(), fmt::join(t.shape(), ", ")), ctx);
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/tensor-inl.hpp>
#endif
