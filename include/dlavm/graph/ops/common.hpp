// Helpers the op families share: the pieces of type rules that recur (the product dtype, numpy
// broadcasting of symbolic shapes, sliding-window output sizes). Used by the definitions in
// graph/ops/*-inl.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/ne/expr.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::graph::detail {

// The dtype of the product-sum of inputs 0 and 1 (host::accumulate_dtype), or TypeError.
DType product_dtype(const TypeCall& c);
// The numpy broadcast of the shapes of inputs i and j: per dim (aligned at the end) the dims
// must be provably equal or one of them the constant 1; ShapeError otherwise.
std::vector<ne::Expr> broadcast(const TypeCall& c, std::size_t i, std::size_t j);
// The same for two shapes described as `what_a` and `what_b` ("input 0 (%x)", "attribute
// 'shape'").
std::vector<ne::Expr> broadcast(const TypeCall& c, std::string_view what_a,
                                std::span<const ne::Expr> a, std::string_view what_b,
                                std::span<const ne::Expr> b);
// The simplified product of dims (1 for none).
ne::Expr product(std::span<const ne::Expr> dims);
// The output extent of a sliding window: floor((extent + pads - window) / stride) + 1, after
// proving that the padded extent holds one window (ShapeError naming `what` otherwise).
ne::Expr window_output(const TypeCall& c, const ne::Expr& extent, std::int64_t pads,
                       std::int64_t window, std::int64_t stride, std::string_view what);
// A host support rule: the host kernel computes in float32 only.
std::optional<std::string> host_float32_only(const TypeCall& c);
// A host support rule: the host kernel takes float32 or any integer dtype.
std::optional<std::string> host_float32_or_integers(const TypeCall& c);
// The firmware call `function(input 0, ..., input n-1, output, elements)`: a kernel over the
// elements as one run (runtime/kernels.hpp's relu, add, copy, ...).
FirmwareCall elements_call(std::string function, const FirmwareStep& s, std::size_t inputs);
// The firmware kernel of an op that broadcasts its inputs (numpy): `elements`(input 0, ...,
// output, elements) for inputs of one shape, else `broadcast`(input 0, ..., output, shape,
// shape of input 0, ..., rank) with the shapes aligned to the result's rank (at most 8; a
// step of more dims is refused naming `op`) as local arrays named "shape" and `locals` (one
// per input): runtime::binary / binary_broadcast and their kin.
FirmwareKernel broadcast_firmware(std::string op, std::string elements, std::string broadcast,
                                  std::vector<std::string> locals);

}  // namespace dlavm::graph::detail

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/common-inl.hpp>
#endif
