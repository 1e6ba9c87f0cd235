// Converters of ONNX's boolean operators: the comparisons (Equal, Greater, GreaterOrEqual, Less,
// LessOrEqual), the logical ones (And, Or, Xor, Not), Where, IsNaN, IsInf, and If whose
// condition is known at import. A BOOL is uint8 holding 0 or 1 (tensor.cpp reads it so).
//
// Shape computations: a comparison of computed dims folds when the dims' ranges decide it
// (`Equal(Shape(x)[0], 0)` over a batch in [1, 8] is 0), and Where over computed dims picks
// them by its constant condition; If then inlines the branch its folded condition chooses.
#include <dlavm/ne/bounds.hpp>
#include <dlavm/ne/ops.hpp>

#include <fmt/ranges.h>

#include "common.hpp"
#include <algorithm>

namespace dlavm::onnx::detail {

namespace {

// The relation of a comparison kind between dims, and the relation that is its negation.
std::pair<ne::Kind, ne::Kind> relations(runtime::Compare k) {
  switch (k) {
    case runtime::Compare::Equal:
      return {ne::Kind::EQ, ne::Kind::NE};
    case runtime::Compare::NotEqual:
      return {ne::Kind::NE, ne::Kind::EQ};
    case runtime::Compare::Greater:
      return {ne::Kind::GT, ne::Kind::LE};
    case runtime::Compare::GreaterEqual:
      return {ne::Kind::GE, ne::Kind::LT};
    case runtime::Compare::Less:
      return {ne::Kind::LT, ne::Kind::GE};
    case runtime::Compare::LessEqual:
      return {ne::Kind::LE, ne::Kind::GT};
  }
  return {ne::Kind::EQ, ne::Kind::NE};
}

// Inputs `first`.. as dims (one of them symbolic), broadcast to one length (rank 0 or 1 each);
// nullopt when none holds symbolic dims (the operator's graph form, or its folding, applies).
std::optional<std::vector<DimValues>> symbolic_operands(Importer& im, const Node& n,
                                                        std::vector<int> inputs) {
  if (std::none_of(inputs.begin(), inputs.end(),
                   [&](int k) { return im.input(n, k).dims.has_value(); }))
    return std::nullopt;
  std::vector<DimValues> out;
  std::size_t len = 1;
  for (int k : inputs) {
    auto d = im.dims_of(n, k);
    if (!d)
      unsupported(fmt::format(
          "it combines computed dims with input {} '{}', which is not a constant integer tensor "
          "of rank 0 or 1",
          k, n.input(k)));
    len = std::max(len, d->values.size());
    out.push_back(std::move(*d));
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i].values.size() != len && out[i].values.size() != 1)
      raise<ShapeError>("input {} holds {} dims, which do not broadcast to {}", inputs[i],
                        out[i].values.size(), len);
  return out;
}

const ne::Expr& at(const DimValues& d, std::size_t i) {
  return d.values[d.values.size() == 1 ? 0 : i];
}

// A comparison of computed dims, decided by their ranges: a uint8 constant.
std::optional<Outs> compare_dims(Importer& im, const Node& n, runtime::Compare kind) {
  const auto ops = symbolic_operands(im, n, {0, 1});
  if (!ops) return std::nullopt;
  const auto& a = (*ops)[0];
  const auto& b = (*ops)[1];
  const std::size_t len = std::max(a.values.size(), b.values.size());
  const auto [holds, fails] = relations(kind);
  std::vector<std::int64_t> bits;
  for (std::size_t i = 0; i < len; ++i) {
    const auto &x = at(a, i), &y = at(b, i);
    if (ne::can_prove(ne::binary(holds, x, y)))
      bits.push_back(1);
    else if (ne::can_prove(ne::binary(fails, x, y)))
      bits.push_back(0);
    else
      unsupported(fmt::format(
          "it compares the computed dims {} and {}, which their ranges do not decide", x, y));
  }
  std::vector<std::int64_t> shape;
  if (!(a.scalar && b.scalar)) shape.push_back(static_cast<std::int64_t>(len));
  return Outs{im.constant_value(n, "value", te::NDArray::from_ints(DType::uint8(), shape, bits))};
}

template <runtime::Compare K>
Outs compare_by(Importer& im, const Node& n) {
  if (auto folded = compare_dims(im, n, K)) return *folded;
  return {graph::compare(K, im.expr(n, 0), im.expr(n, 1))};
}

template <runtime::Logical K>
Outs logical_by(Importer& im, const Node& n) {
  if constexpr (runtime::arity(K) == 1)
    return {graph::logical(K, im.expr(n, 0))};
  else
    return {graph::logical(K, im.expr(n, 0), im.expr(n, 1))};
}

}  // namespace

namespace convert {

Outs equal_v1(Importer& im, const Node& n) {
  refuse_legacy_broadcast(im, n);
  return equal(im, n);
}
Outs equal(Importer& im, const Node& n) { return compare_by<runtime::Compare::Equal>(im, n); }
Outs greater_v1(Importer& im, const Node& n) {
  refuse_legacy_broadcast(im, n);
  return greater(im, n);
}
Outs greater(Importer& im, const Node& n) { return compare_by<runtime::Compare::Greater>(im, n); }
Outs greater_or_equal(Importer& im, const Node& n) {
  return compare_by<runtime::Compare::GreaterEqual>(im, n);
}
Outs less_v1(Importer& im, const Node& n) {
  refuse_legacy_broadcast(im, n);
  return less(im, n);
}
Outs less(Importer& im, const Node& n) { return compare_by<runtime::Compare::Less>(im, n); }
Outs less_or_equal(Importer& im, const Node& n) {
  return compare_by<runtime::Compare::LessEqual>(im, n);
}

Outs and_v1(Importer& im, const Node& n) {
  refuse_legacy_broadcast(im, n);
  return and_(im, n);
}
Outs and_(Importer& im, const Node& n) { return logical_by<runtime::Logical::And>(im, n); }
Outs or_v1(Importer& im, const Node& n) {
  refuse_legacy_broadcast(im, n);
  return or_(im, n);
}
Outs or_(Importer& im, const Node& n) { return logical_by<runtime::Logical::Or>(im, n); }
Outs xor_v1(Importer& im, const Node& n) {
  refuse_legacy_broadcast(im, n);
  return xor_(im, n);
}
Outs xor_(Importer& im, const Node& n) { return logical_by<runtime::Logical::Xor>(im, n); }
Outs not_(Importer& im, const Node& n) { return logical_by<runtime::Logical::Not>(im, n); }

// Over computed dims (PyTorch's Expand writes Where(Equal(shape, -1), ones, shape)): the dims
// its constant condition picks.
Outs where(Importer& im, const Node& n) {
  if (const auto ops = symbolic_operands(im, n, {1, 2})) {
    const te::NDArray& cond = im.constant(n, 0, "condition over computed dims");
    const auto& a = (*ops)[0];
    const auto& b = (*ops)[1];
    const std::size_t len = std::max({a.values.size(), b.values.size(), cond.size()});
    if (cond.shape().size() > 1 || (cond.size() != len && cond.size() != 1))
      raise<ShapeError>("its condition of shape [{}] does not broadcast to the {} dims",
                        fmt::join(cond.shape(), ", "), len);
    for (const auto* d : {&a, &b})
      if (d->values.size() != len && d->values.size() != 1)
        raise<ShapeError>("input {} holds {} dims, which do not broadcast to {}", d == &a ? 1 : 2,
                          d->values.size(), len);
    DimValues out{.scalar = a.scalar && b.scalar && cond.shape().empty()};
    for (std::size_t i = 0; i < len; ++i)
      out.values.push_back(cond.data()[cond.size() == 1 ? 0 : i] != 0 ? at(a, i) : at(b, i));
    return {im.dims_value(n, out)};
  }
  return {graph::where(im.expr(n, 0), im.expr(n, 1), im.expr(n, 2))};
}

Outs is_nan(Importer& im, const Node& n) { return {graph::is_nan(im.expr(n, 0))}; }

Outs is_inf(Importer& im, const Node& n) {
  return {graph::is_inf(im.expr(n, 0),
                        {.detect_positive = attr_int(im, n, "detect_positive", 1) != 0,
                         .detect_negative = attr_int(im, n, "detect_negative", 1) != 0})};
}

// The branch a condition known at import chooses, its nodes converted in the If's place. A
// condition computed at run time runs both branches and picks each output with where: the
// branches are pure, so this is the If's value, paid for with the branch not taken (a
// wake-word head that runs its verifier only above a threshold, say). Each output of the two
// branches must then have one shape and dtype.
Outs if_(Importer& im, const Node& n) {
  const auto branch_of = [&](const char* which) -> const ::onnx::GraphProto& {
    const auto* branch = find_attr(n, which);
    if (branch == nullptr || branch->type() != ::onnx::AttributeProto::GRAPH)
      raise<ValueError>("attribute '{}' is {}", which,
                        branch == nullptr ? "missing" : "not a graph");
    return branch->g();
  };
  const Value& c = im.input(n, 0);
  if (c.constant != nullptr) {
    if (c.constant->size() != 1)
      raise<ValueError>("its condition (input 0 '{}') has {} elements; it is one boolean",
                        n.input(0), c.constant->size());
    const char* which = c.constant->value_as_double(0) != 0 ? "then_branch" : "else_branch";
    return im.inline_branch(n, branch_of(which), which);
  }
  const graph::Expr cond = im.expr(n, 0);
  const auto cond_type = im.type_of(cond);
  ne::Expr count(1);
  for (const auto& d : cond_type.shape) count = count * d;
  if (!ne::can_prove(ne::simplify(count) == 1))
    raise<ValueError>("its condition (input 0 '{}') has shape [{}]; it is one boolean", n.input(0),
                      fmt::join(cond_type.shape, ", "));
  const auto then_outs = im.inline_branch(n, branch_of("then_branch"), "then_branch");
  const auto else_outs = im.inline_branch(n, branch_of("else_branch"), "else_branch");
  Outs outs;
  for (std::size_t k = 0; k < then_outs.size(); ++k) {
    const auto as_expr = [&](const Value& v, const char* which) {
      if (v.refused) throw ReadsRefused{};  // the refused node in the branch is the cause
      if (v.dims || !v.expr.defined())
        unsupported(fmt::format(
            "its condition is computed at run time (input 0 '{}'), so both branches run, and "
            "output {} of its {} is {}, not a computed tensor",
            n.input(0), k, which, v.dims ? "a list of symbolic dims" : "an empty tensor"));
      return v.expr;
    };
    const graph::Expr a = as_expr(then_outs[k], "then_branch");
    const graph::Expr b = as_expr(else_outs[k], "else_branch");
    const auto ta = im.type_of(a), tb = im.type_of(b);
    bool same = ta.dtype == tb.dtype && ta.shape.size() == tb.shape.size();
    for (std::size_t d = 0; same && d < ta.shape.size(); ++d)
      same = ne::can_prove(ne::simplify(ta.shape[d] - tb.shape[d]) == 0);
    if (!same)
      unsupported(fmt::format(
          "its condition is computed at run time (input 0 '{}'), so both branches run and "
          "where picks output {}, which needs one type: the then_branch makes {}[{}], the "
          "else_branch {}[{}]",
          n.input(0), k, ta.dtype, fmt::join(ta.shape, ", "), tb.dtype, fmt::join(tb.shape, ", ")));
    // the condition as a scalar, so that it broadcasts to any output shape
    const graph::Expr scalar =
        cond_type.shape.empty() ? cond : graph::reshape(cond, {.newshape = {}});
    outs.push_back(graph::where(scalar, a, b));
  }
  return outs;
}

}  // namespace convert

}  // namespace dlavm::onnx::detail
