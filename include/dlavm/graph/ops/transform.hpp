// Graph ops that move elements: typed builders and op records. Semantics: host/transform.hpp.
//
//   reshape(x, newshape (required; 0 copies a dim, one -1 is inferred))
//       symbolic dims pass through 0 entries; a -1 is the element count of x divided by the
//       other entries, which must be provably divisible
//   transpose(x, perm = [] (reverse))
//   flatten(x, axis = 1) -> [prod(dims before axis), prod(dims from axis)]
//   concat(x0, x1, ..., axis (required)), at least one input
//   pad(x, pad_before (required), pad_after (required), value = 0.0,
//       mode = "constant" | "edge" | "reflect")
//
//   // [1, token, 512] -> [1, token, 8, 64]
//   auto h = graph::reshape(x, {.newshape = {0, 0, 8, -1}});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/transform.hpp>

#include <cstdint>
#include <vector>

namespace dlavm::graph {

Expr reshape(Expr x, const host::ReshapeParams& p);
Expr transpose(Expr x, const host::TransposeParams& p = {});
Expr flatten(Expr x, const host::FlattenParams& p = {});
Expr concat(std::vector<Expr> xs, const host::ConcatParams& p);
Expr pad(Expr x, const host::PadParams& p);
// The parameters in a transpose call's attributes.
host::TransposeParams transpose_params(const Attrs& attrs);

void add_transform_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/transform-inl.hpp>
#endif
