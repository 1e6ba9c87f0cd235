// Definitions for dlavm/te/pad.hpp (see core/api.hpp).
#pragma once

#include <dlavm/te/pad.hpp>

namespace dlavm::te {

DLAVM_INLINE Tensor pad(const Tensor& t, const std::vector<ne::Expr>& before,
                        const std::vector<ne::Expr>& after, std::int64_t value, std::string name) {
  if (!t.defined()) raise<ValueError>("te::pad of an undefined tensor");
  if (name.empty()) name = t.name() + "_pad";
  if (before.size() != t.ndim() || after.size() != t.ndim())
    raise<ShapeError>(
        "te::pad '{}': tensor '{}' has {} dims, pads given for {} (before) and {} "
        "(after)",
        name, t.name(), t.ndim(), before.size(), after.size());
  for (std::size_t k = 0; k < t.ndim(); ++k)
    for (const auto* p : {&before[k], &after[k]})
      if (!p->defined() || ne::bounds(*p).min < 0)
        raise<ShapeError>("te::pad '{}': the pad {} of dim {} can be negative", name,
                          p->defined() ? fmt::format("{}", *p) : std::string("(undefined)"), k);
  if (value < t.dtype().min_value() || value > t.dtype().max_value())
    raise<ValueError>("te::pad '{}': pad value {} does not fit {} (tensor '{}')", name, value,
                      t.dtype(), t.name());
  std::vector<ne::Expr> shape;
  for (std::size_t k = 0; k < t.ndim(); ++k)
    shape.push_back(ne::simplify(t.shape()[k] + before[k] + after[k]));
  const auto dims = t.shape();
  return compute_dynamic(
      std::move(shape),
      [&](std::span<const ne::Var> i) {
        ne::Expr inside;
        std::vector<ne::Expr> src;
        for (std::size_t k = 0; k < i.size(); ++k) {
          const bool padded =
              !ne::equal(ne::simplify(before[k]), 0) || !ne::equal(ne::simplify(after[k]), 0);
          src.push_back(ne::simplify(i[k] - before[k]));
          if (!padded) continue;
          const ne::Expr in_dim =
              ne::Expr(i[k]) >= before[k] && ne::Expr(i[k]) < before[k] + dims[k];
          inside = inside.defined() ? (inside && in_dim) : in_dim;
        }
        const Expr element = t.read(std::move(src));
        if (!inside.defined()) return element;
        return select(inside, element, make_const(value, t.dtype()));
      },
      std::move(name));
}

}  // namespace dlavm::te
