// tir::run: a reference interpreter for lowered functions. It executes loops, allocations,
// stores and guards on host arrays, so that every schedule can be checked against
// te::evaluate of the same tensors. Intrinsic calls go to an optional handler (targets pass
// theirs); without one they are an error.
//
//   tir::run(func, {a, b, c}, {{"token", 37}});   // arrays in parameter order; c is written
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir/stmt.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <vector>

namespace dlavm::tir {

// Executes one intrinsic call: its evaluated value arguments and the arrays behind its
// buffer operands (flattened, one dimension).
using IntrinsicHandler = std::function<void(const te::CallNode&, std::span<const std::int64_t> args,
                                            std::span<te::NDArray* const> buffers)>;

// Runs func with `args` bound to its parameters in order; outputs are written in place.
void run(const PrimFunc& func, std::span<te::NDArray* const> args,
         std::span<const ne::Binding> bindings = {}, IntrinsicHandler handler = {});
void run(const PrimFunc& func, std::initializer_list<te::NDArray*> args,
         std::initializer_list<ne::Binding> bindings = {}, IntrinsicHandler handler = {});

}  // namespace dlavm::tir

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tir/interpreter-inl.hpp>
#endif
