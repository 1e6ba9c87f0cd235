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
//   strided_slice(x, begin (required), end (required), step = [] (all 1), axes = [] (0, 1, ...))
//       a static dim any slice; a symbolic dim d only one whose start and end are each known
//       for every value of d (a constant within d's minimum, an end past its maximum, a
//       negative bound d + v with d + v >= 0 always), and then the extent is an expression in
//       d: begin 1, end -1 on `token` gives `token - 2` when token >= 2 always
//   take(x, indices, axis = 0): indices int32 or int64 (an input, a constant or a computed
//       value); the result's shape is x's with dim axis replaced by the indices' dims
//   broadcast_to(x, shape (required)): the numpy broadcast of x's dims and the constant shape
//       (a symbolic dim meets 1 or itself)
//   tile(x, repeats (required)): dims x.shape[k] * repeats[k]
//
//   // [1, token, 512] -> [1, token, 8, 64]
//   auto h = graph::reshape(x, {.newshape = {0, 0, 8, -1}});
//   // the last 16 positions: [1, token, 512] -> [1, 16, 512] (token >= 16)
//   auto tail = graph::strided_slice(x, {.begin = {-16}, .end = {INT64_MAX}, .axes = {1}});
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
Expr strided_slice(Expr x, const host::StridedSliceParams& p);
Expr take(Expr x, Expr indices, const host::TakeParams& p = {});
Expr broadcast_to(Expr x, const host::BroadcastToParams& p);
Expr tile(Expr x, const host::TileParams& p);
// The parameters in a transpose call's attributes.
host::TransposeParams transpose_params(const Attrs& attrs);
// The parameters in a pad call's attributes.
host::PadParams pad_params(const Attrs& attrs);

void add_transform_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/transform-inl.hpp>
#endif
