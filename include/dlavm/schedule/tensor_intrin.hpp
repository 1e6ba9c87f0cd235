// Tensor intrinsics: a hardware operation declared as the compute pattern it implements plus
// how it lowers. Stage::tensorize(axis, intrin) asks lowering to match the loops from `axis`
// inward against the pattern and to replace them by the intrinsic's calls. Targets declare
// theirs (VTA's GEMM in vta/); users can declare their own.
//
//   auto a = te::placeholder(te::shape(16), DType::int8(), "a");
//   auto w = te::placeholder(te::shape(16, 16), DType::int8(), "w");
//   auto k = te::reduce_axis({0, 16}, "k");
//   auto c = te::compute(te::shape(16), [&](auto i) { return te::sum(cast(i32, a(k)) * cast(i32,
//   w(i, k)), {k}); }, "c"); auto gemv = schedule::decl_tensor_intrin(c, [](const IntrinCall& call)
//   { ... }, "gemv");
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/te.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::schedule {

// One memory operand of a tensorized computation: the buffer, the flat element offset of the
// region the intrinsic covers, and the flat stride of each of the operand's dims.
struct IntrinOperand {
  te::Buffer buffer;
  ne::Expr elem_offset;
  std::vector<ne::Expr> strides;
};

// What an intrinsic's lowering receives: operands in the order of the pattern's inputs, and
// the output.
struct IntrinCall {
  std::vector<IntrinOperand> inputs;
  IntrinOperand output;
};

// The statements that replace a tensorized nest (each a te intrinsic call). For a reduction,
// `body` computes from scratch, `reset` only initialises the output, `update` accumulates:
// lowering picks body when the whole reduction is inside the tensorized loops, and reset +
// update when outer reduction loops remain.
struct IntrinBody {
  std::vector<te::Expr> body;
  std::vector<te::Expr> reset;
  std::vector<te::Expr> update;
};

class TensorIntrin {
 public:
  using LowerFn = std::function<IntrinBody(const IntrinCall&)>;
  TensorIntrin(std::string name, te::Tensor pattern, LowerFn lower)
      : name_(std::move(name)), pattern_(std::move(pattern)), lower_(std::move(lower)) {
    if (pattern_.is_placeholder())
      raise<ScheduleError>(
          "tensor intrinsic '{}': the pattern must be a compute, not a placeholder", name_);
    for (const auto& in : pattern_.op()->inputs)
      if (in->kind != te::OpKind::Placeholder)
        raise<ScheduleError>(
            "tensor intrinsic '{}': the pattern may read only placeholders, not '{}'", name_,
            in->name);
    for (const auto& d : pattern_.shape())
      if (!d.is_const())
        raise<ScheduleError>("tensor intrinsic '{}': pattern dims must be constants, got {}", name_,
                             d);
  }
  const std::string& name() const { return name_; }
  const te::Tensor& pattern() const { return pattern_; }
  IntrinBody lower(const IntrinCall& call) const { return lower_(call); }

 private:
  std::string name_;
  te::Tensor pattern_;
  LowerFn lower_;
};

std::shared_ptr<const TensorIntrin> decl_tensor_intrin(te::Tensor pattern,
                                                       TensorIntrin::LowerFn lower,
                                                       std::string name);

}  // namespace dlavm::schedule

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/schedule/tensor_intrin-inl.hpp>
#endif
