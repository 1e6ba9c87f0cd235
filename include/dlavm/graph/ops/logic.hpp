// Graph ops for ONNX's boolean operators: comparisons, logical ops, where, is_nan and is_inf,
// as typed builders and op records, one record per entry of host::kCompareOps, kLogicalOps and
// kFloatClassOps, and where's. Semantics: host/logic.hpp. A boolean is uint8 holding 0 or 1
// (dlavm has no bool dtype); dims may be symbolic and broadcast as add's do.
//
//   equal(a, b), not_equal, greater, greater_equal, less, less_equal
//                              one dtype (float32 or integers) -> uint8 0/1, numpy broadcast
//   logical_and(a, b), logical_or, logical_xor
//                              uint8 (nonzero: true) -> uint8 0/1, numpy broadcast
//   logical_not(x)             uint8 -> uint8 0/1
//   where(cond, a, b)          cond uint8, a and b one dtype -> their dtype, the three broadcast
//   is_nan(x), is_inf(x, detect_positive = 1, detect_negative = 1)
//                              float32 -> uint8 0/1
// Firmware kernels: runtime::compare<kind> / compare_broadcast<kind>, logical<kind> /
// logical_broadcast<kind>, where / where_broadcast (operands of one shape / up to 8 dims) and
// runtime::float_class<kind>.
//
//   auto y = graph::where(graph::greater(x, zero), x, graph::mul(x, slope));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/graph/node.hpp>
#include <dlavm/graph/op.hpp>
#include <dlavm/host/logic.hpp>

namespace dlavm::graph {

// The call of the comparison of `kind` (host::compare_op(kind).name).
Expr compare(runtime::Compare kind, Expr a, Expr b);
Expr equal(Expr a, Expr b);
Expr not_equal(Expr a, Expr b);
Expr greater(Expr a, Expr b);
Expr greater_equal(Expr a, Expr b);
Expr less(Expr a, Expr b);
Expr less_equal(Expr a, Expr b);
// The call of the logical op of `kind` of two operands (And, Or, Xor) or of one (Not):
// ValueError for a kind given the other count.
Expr logical(runtime::Logical kind, Expr a, Expr b);
Expr logical(runtime::Logical kind, Expr x);
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr logical_xor(Expr a, Expr b);
Expr logical_not(Expr x);
Expr where(Expr cond, Expr a, Expr b);
Expr is_nan(Expr x);
Expr is_inf(Expr x, const host::IsInfParams& p = {});
// The parameters in an is_inf call's (normalized) attributes.
host::IsInfParams is_inf_params(const Attrs& attrs);

void add_logic_ops(OpRegistry& ops);

}  // namespace dlavm::graph

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/ops/logic-inl.hpp>
#endif
