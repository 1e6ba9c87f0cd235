// Lowering a schedule to TIR (te::lower): inline, infer the region each stage must compute
// at its attach point, build the loop nests with guards for non-divisible splits, insert
// attached producers and their allocations at their loops, then drop unit loops and flatten
// buffers to one dimension (the form target passes match DMA and GEMM patterns on).
//
//   auto s = te::create_schedule(C);
//   tir::PrimFunc f = te::lower(s, {A, B, C}, "gemm");
//   fmt::print("{}", f);
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/te/tensor.hpp>
#include <dlavm/tir/stmt.hpp>

#include <string>
#include <vector>

namespace dlavm::tir {

// Lowers schedule s for the tensors `args` (inputs and outputs, in the order the function
// takes them) to a TIR function with flattened buffers.
PrimFunc lower(schedule::Schedule& s, const std::vector<te::Tensor>& args,
               std::string name = "main");

}  // namespace dlavm::tir

namespace dlavm::te {
using tir::lower;
}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/tir/lower-inl.hpp>
#endif
