// Host kernels for element-wise ops. The semantics below are the definition the graph ops and
// every accelerator strategy must reproduce.
//
//   add(a, b), mul(a, b), sub(a, b)
//                          numpy broadcast of the shapes (aligned at the end, 1 stretches);
//                          one dtype for both; integers wrap around (two's complement: the
//                          exact result modulo 2^bits), float32 rounds as C++ float does.
//   div(a, b)              broadcast like add. float32: IEEE a / b (x / 0 = +-inf, 0 / 0 =
//                          NaN). Integers: the quotient truncated toward zero (-7 / 2 = -3, as
//                          ONNX's Div and C++), a division by zero gives 0 (defined, as numpy
//                          does, rather than a trap), the minimum / -1 gives the minimum (wraps).
//   pow(a, b)              broadcast like add; float32 only: std::pow on float (pow(x, 0) = 1
//                          and pow(1, y) = 1 even for NaN, a negative base to a non-integer
//                          power is NaN).
//   maximum(a, b), minimum(a, b)
//                          broadcast like add. float32: NaN when either operand is NaN; of equal
//                          operands (-0 and +0) the first. Integers: the larger / smaller.
//   prelu(x, slope)        x < 0 ? x * slope : x, slope broadcast to x (ONNX's unidirectional
//                          broadcast: the result has x's shape, slope may not stretch x); one
//                          dtype; integers wrap like mul (unsigned x is never below 0).
//   bias_add(x, b[C], {axis = 1})   y[..., c, ...] = x[..., c, ...] + b[c] with c along axis
//                          (negative counts from the end); same dtype, wraps like add.
//   relu(x)                x < 0 ? 0 : x (float32: NaN and -0.0 stay as they are).
//   clip(x, {lo, hi})      min(max(x, lo), hi) with lo <= hi. Integers: the bounds are
//                          ceil(lo) and floor(hi) (at least one integer must lie in [lo, hi]),
//                          taken within the dtype's range; float32: the bounds rounded to float,
//                          NaN stays NaN.
// The binary ops are the kinds of runtime::Binary, each value computed by runtime/kernels.hpp
// (binary_value) for the host and firmware alike; kBinaryOps lists them in its order.
//
//   auto y = host::add(a, b);          // int8 [2, 1, 4] + int8 [3, 1] -> int8 [2, 3, 4]
//   auto q = host::binary(runtime::Binary::Div, a, b);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <utility>

namespace dlavm::host {

struct BiasAddParams {
  std::int64_t axis = 1;
};

struct ClipParams {
  double lo = 0;
  double hi = 0;
};

// ValueError naming `who` when lo > hi.
void validate(const ClipParams& p, std::string_view who);
// The integer bounds clip uses for an integer dtype: ceil(lo) and floor(hi) within the dtype's
// range; ValueError naming `who` when no value of the dtype lies in [lo, hi].
std::pair<std::int64_t, std::int64_t> clip_int_bounds(const ClipParams& p, DType dtype,
                                                      std::string_view who);

struct BinaryOp {
  runtime::Binary kind;
  std::string_view name;        // the graph op: "maximum"
  std::string_view enumerator;  // runtime::Binary's, as a firmware call spells it: "Maximum"
};

inline constexpr BinaryOp kBinaryOps[] = {
    {runtime::Binary::Add, "add", "Add"},
    {runtime::Binary::Sub, "sub", "Sub"},
    {runtime::Binary::Mul, "mul", "Mul"},
    {runtime::Binary::Div, "div", "Div"},
    {runtime::Binary::Pow, "pow", "Pow"},
    {runtime::Binary::Maximum, "maximum", "Maximum"},
    {runtime::Binary::Minimum, "minimum", "Minimum"},
    {runtime::Binary::Prelu, "prelu", "Prelu"},
};
static_assert(std::size(kBinaryOps) == runtime::kBinaryCount);

constexpr const BinaryOp& binary_op(runtime::Binary kind) {
  return kBinaryOps[static_cast<std::size_t>(kind)];
}

// y = f(a, b) for the op of `kind` (prelu: a is x, b the slope); TypeError naming the op for
// dtypes it does not take, ShapeError for shapes that do not broadcast.
te::NDArray binary(runtime::Binary kind, const te::NDArray& a, const te::NDArray& b);
te::NDArray add(const te::NDArray& a, const te::NDArray& b);
te::NDArray mul(const te::NDArray& a, const te::NDArray& b);
te::NDArray bias_add(const te::NDArray& x, const te::NDArray& b, const BiasAddParams& p = {});
te::NDArray relu(const te::NDArray& x);
te::NDArray clip(const te::NDArray& x, const ClipParams& p);

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/elementwise-inl.hpp>
#endif
