// te::evaluate: computes a tensor straight from its definition, element by element, with no
// schedule. It is the independent reference that lowered programs are checked against.
//
//   auto c = te::evaluate(C, {{A, a}, {B, b}}, {{"token", 37}});
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te/expr.hpp>
#include <dlavm/te/index_eval.hpp>
#include <dlavm/te/ndarray.hpp>
#include <dlavm/te/ops.hpp>
#include <dlavm/te/tensor.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlavm::te {

using TensorBinding = std::pair<Tensor, std::reference_wrapper<const NDArray>>;

NDArray evaluate(const Tensor& t, std::span<const TensorBinding> inputs,
                 std::span<const ne::Binding> bindings = {});
NDArray evaluate(const Tensor& t, std::initializer_list<TensorBinding> inputs,
                 std::initializer_list<ne::Binding> bindings = {});

}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/evaluate-inl.hpp>
#endif
