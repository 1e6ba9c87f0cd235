// Definitions for dlavm/te/buffer.hpp (see core/api.hpp).
#pragma once

#include <dlavm/te/buffer.hpp>

namespace dlavm::te {

DLAVM_INLINE Buffer make_buffer(std::string name, DType dtype, std::vector<ne::Expr> shape,
                                std::string scope) {
  return Buffer(make_ref<BufferNode>(std::move(name), dtype, std::move(shape), std::move(scope)));
}

}  // namespace dlavm::te
