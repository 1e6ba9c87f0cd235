// Definitions for dlavm/te/ndarray.hpp (see core/api.hpp).
#pragma once

#include <dlavm/te/ndarray.hpp>

namespace dlavm::te {

DLAVM_INLINE bool allclose(const NDArray& a, const NDArray& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a.value_as_double(i), y = b.value_as_double(i);
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
  }
  return true;
}

}  // namespace dlavm::te
