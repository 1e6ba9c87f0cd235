// Host kernels for ONNX's boolean operators. dlavm has no bool dtype: a boolean is uint8
// holding 0 or 1 (the importer reads ONNX's BOOL tensors so), what the comparisons and float
// classes give and what the logical ops and where's condition read (any nonzero as true). The
// semantics below are the definition the graph ops and their firmware kernels reproduce: each op
// is a kind of runtime::Compare, runtime::Logical or runtime::FloatClass whose value
// runtime/kernels.hpp computes (compare_value, logical_value, float_class_value) for the host
// and firmware alike.
//
//   equal(a, b), not_equal, greater, greater_equal, less, less_equal
//                     numpy broadcast of the shapes; one dtype for both, float32 or any integer
//                     dtype -> uint8 0/1. float32: IEEE's comparisons (a NaN compares false,
//                     with itself too, and not_equal true; -0 equals +0); integers: their values
//   logical_and(a, b), logical_or, logical_xor
//                     numpy broadcast; uint8 operands, any nonzero true -> uint8 0/1
//   logical_not(x)    uint8 -> uint8: 1 where x is 0, else 0
//   where(cond, a, b) cond ? a : b, the three broadcast together (numpy); cond uint8 (nonzero:
//                     true), a and b one dtype (any), the result of that dtype
//   is_nan(x)         float32 -> uint8: x is a NaN
//   is_inf(x, {detect_positive = 1, detect_negative = 1})
//                     float32 -> uint8: x is +inf (when detect_positive) or -inf (when
//                     detect_negative)
// kCompareOps, kLogicalOps and kFloatClassOps list them in their kinds' order: the graph records,
// the builders and the firmware calls are made from them, so a kind is an enum entry, its value
// and a row here.
//
//   auto mask = host::compare(runtime::Compare::Greater, x, threshold);   // uint8 [2, 3]
//   auto y = host::where(mask, x, zeros);                                  // float32 [2, 3]
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/te/ndarray.hpp>

#include <cstddef>
#include <iterator>
#include <string_view>

namespace dlavm::host {

struct CompareOp {
  runtime::Compare kind;
  std::string_view name;        // the graph op: "greater_equal"
  std::string_view enumerator;  // runtime::Compare's, as a firmware call spells it
};

inline constexpr CompareOp kCompareOps[] = {
    {runtime::Compare::Equal, "equal", "Equal"},
    {runtime::Compare::NotEqual, "not_equal", "NotEqual"},
    {runtime::Compare::Greater, "greater", "Greater"},
    {runtime::Compare::GreaterEqual, "greater_equal", "GreaterEqual"},
    {runtime::Compare::Less, "less", "Less"},
    {runtime::Compare::LessEqual, "less_equal", "LessEqual"},
};
static_assert(std::size(kCompareOps) == runtime::kCompareCount);

constexpr const CompareOp& compare_op(runtime::Compare kind) {
  return kCompareOps[static_cast<std::size_t>(kind)];
}

struct LogicalOp {
  runtime::Logical kind;
  std::string_view name;        // the graph op: "logical_xor"
  std::string_view enumerator;  // runtime::Logical's: "Xor"
};

inline constexpr LogicalOp kLogicalOps[] = {
    {runtime::Logical::And, "logical_and", "And"},
    {runtime::Logical::Or, "logical_or", "Or"},
    {runtime::Logical::Xor, "logical_xor", "Xor"},
    {runtime::Logical::Not, "logical_not", "Not"},
};
static_assert(std::size(kLogicalOps) == runtime::kLogicalCount);

constexpr const LogicalOp& logical_op(runtime::Logical kind) {
  return kLogicalOps[static_cast<std::size_t>(kind)];
}

struct FloatClassOp {
  runtime::FloatClass kind;
  std::string_view name;        // the graph op: "is_inf"
  std::string_view enumerator;  // runtime::FloatClass's: "Inf"
};

inline constexpr FloatClassOp kFloatClassOps[] = {
    {runtime::FloatClass::Nan, "is_nan", "Nan"},
    {runtime::FloatClass::Inf, "is_inf", "Inf"},
};
static_assert(std::size(kFloatClassOps) == runtime::kFloatClassCount);

constexpr const FloatClassOp& float_class_op(runtime::FloatClass kind) {
  return kFloatClassOps[static_cast<std::size_t>(kind)];
}

// ONNX IsInf's attributes (is_nan reads neither).
struct IsInfParams {
  bool detect_positive = true;
  bool detect_negative = true;
};

// a K b as uint8 0/1; TypeError naming the op for operands of two dtypes or a float other than
// float32, ShapeError for shapes that do not broadcast.
te::NDArray compare(runtime::Compare kind, const te::NDArray& a, const te::NDArray& b);
// The logical kind of a and b (And, Or, Xor), or of x (Not); TypeError for an operand that is
// not uint8, ValueError for a kind given the wrong number of operands.
te::NDArray logical(runtime::Logical kind, const te::NDArray& a, const te::NDArray& b);
te::NDArray logical(runtime::Logical kind, const te::NDArray& x);
te::NDArray logical_not(const te::NDArray& x);
// cond ? a : b; TypeError for a cond that is not uint8 or for a and b of two dtypes,
// ShapeError for shapes that do not broadcast.
te::NDArray where(const te::NDArray& cond, const te::NDArray& a, const te::NDArray& b);
// Whether x is of the class; TypeError for x not float32.
te::NDArray float_class(runtime::FloatClass kind, const te::NDArray& x, const IsInfParams& p = {});
te::NDArray is_nan(const te::NDArray& x);
te::NDArray is_inf(const te::NDArray& x, const IsInfParams& p = {});

}  // namespace dlavm::host

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/host/logic-inl.hpp>
#endif
