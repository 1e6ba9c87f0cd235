// Symbolic intervals for bound inference: the range [lo, hi] an index expression covers when
// some loop variables sweep their ranges while the others (the enclosing loops) stay fixed.
// The ends are ne expressions in the fixed variables, simplified. This is the role TVM's
// IntSet evaluation plays in InferBound.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne.hpp>

#include <cstdint>
#include <unordered_map>
#include <utility>

namespace dlavm::schedule {

struct IntSet {
  ne::Expr lo;
  ne::Expr hi;
  static IntSet point(const ne::Expr& e) { return {e, e}; }
  bool is_point() const { return lo.same_as(hi) || ne::equal(lo, hi); }
};

// Variables that sweep, by id, with the interval each covers.
using SweepMap = std::unordered_map<std::uint64_t, IntSet>;

// The interval e covers while the variables in `sweep` range over their intervals.
IntSet eval_set(const ne::Expr& e, const SweepMap& sweep);

// Hull of two intervals.
IntSet unite(const IntSet& a, const IntSet& b);

}  // namespace dlavm::schedule

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/schedule/int_set-inl.hpp>
#endif
