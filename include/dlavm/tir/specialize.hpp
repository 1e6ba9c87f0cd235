// tir::specialize: one function that runs `special` when its dims take given values and
// `general` otherwise. Both are lowerings of the same computation (two schedules of it, say a
// tiling for many rows and one for a single row), so their parameters agree in dtype and
// shape; each lowering made its own parameter buffers, and `special`'s are renamed to
// `general`'s. In `special` the dims are replaced by their values, so that its loop bounds
// and intrinsic fields fold to what they are there. Each branch keeps its own on-chip
// buffers, which may share storage: only one branch runs.
//
//   tir::PrimFunc f = tir::specialize(many_rows, {{token, 1}}, one_row);  // if (token == 1)
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/tir/rewrite.hpp>
#include <dlavm/tir/stmt.hpp>

#include <fmt/format.h>

#include <cstddef>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace dlavm::tir {

// The condition under which a specialization runs: every dim equal to its value.
inline ne::Expr specialized_when(std::span<const ne::Substitution> values) {
  std::optional<ne::Expr> when;
  for (const auto& [dim, value] : values) {
    const ne::Expr eq = dim == value;
    when = when ? (*when && eq) : eq;
  }
  if (!when) raise<ValueError>("tir::specialize: no dims to specialize for");
  return *when;
}

// ValueError naming the function and the parameter when the two disagree in their parameters.
inline PrimFunc specialize(const PrimFunc& general, std::span<const ne::Substitution> values,
                           const PrimFunc& special) {
  const ne::Expr when = specialized_when(values);
  if (general.params.size() != special.params.size() ||
      general.flat_params.size() != special.flat_params.size())
    raise<ValueError>("tir::specialize: '{}' has {} parameters, its specialization {}",
                      general.name, general.params.size(), special.params.size());
  BufferMap renamed;
  const auto rename = [&](const std::vector<Buffer>& from, const std::vector<Buffer>& to) {
    for (std::size_t k = 0; k < from.size(); ++k) {
      const Buffer& a = to[k];
      const Buffer& b = from[k];
      bool same = a.dtype() == b.dtype() && a.shape().size() == b.shape().size();
      for (std::size_t d = 0; same && d < a.shape().size(); ++d)
        same = ne::can_prove(a.shape()[d] == b.shape()[d]);
      if (!same)
        raise<ValueError>(
            "tir::specialize: '{}' parameter {} ('{}') is {}[{}], its specialization's ('{}') "
            "{}[{}]",
            general.name, k, a.name(), a.dtype(), fmt::join(a.shape(), ", "), b.name(), b.dtype(),
            fmt::join(b.shape(), ", "));
      renamed[b.get()] = a;
    }
  };
  rename(special.params, general.params);
  rename(special.flat_params, general.flat_params);
  PrimFunc f = general;
  f.body = make_if(when, rewrite(special.body, {values.begin(), values.end()}, std::move(renamed)),
                   general.body);
  return f;
}

}  // namespace dlavm::tir
