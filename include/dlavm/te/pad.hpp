// te::pad: a tensor surrounded by a constant border, as topi.nn.pad builds it in TVM. The
// result is an ordinary compute, `select(inside, t(i - before), value)`, so that schedules
// treat it like any other stage (a VTA DMA turns the select into the LOAD's pad fields).
//
//   // NCHWnc activations padded by one pixel in H and W:
//   auto data_pad = te::pad(data, {0, 0, 1, 1, 0, 0}, {0, 0, 1, 1, 0, 0}, 0, "data_pad");
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/tensor.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dlavm::te {

// `before[k]` / `after[k]` elements of `value` in front of / behind dim k. Pads may be
// symbolic; each must be provably non-negative.
Tensor pad(const Tensor& t, const std::vector<ne::Expr>& before, const std::vector<ne::Expr>& after,
           std::int64_t value = 0, std::string name = "");

}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/pad-inl.hpp>
#endif
