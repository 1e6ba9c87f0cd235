// Definitions for dlavm/schedule/tensor_intrin.hpp (see core/api.hpp).
#pragma once

#include <dlavm/schedule/tensor_intrin.hpp>

namespace dlavm::schedule {

DLAVM_INLINE std::shared_ptr<const TensorIntrin> decl_tensor_intrin(te::Tensor pattern,
                                                                    TensorIntrin::LowerFn lower,
                                                                    std::string name) {
  return std::make_shared<const TensorIntrin>(std::move(name), std::move(pattern),
                                              std::move(lower));
}

}  // namespace dlavm::schedule
