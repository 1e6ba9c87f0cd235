// A firmware kernel of the user's own, for tests/deploy/custom_op.hpp's op: what the generated
// header includes (EmitOptions::includes) and calls. Firmware code: C++17, no exceptions, no
// heap.
#pragma once

#include <cstdint>

namespace custom_kernels {

// y = x * gain + offset, saturated to int8.
inline void gain(const std::int8_t* x, std::int8_t* y, std::int64_t n, std::int64_t gain,
                 std::int64_t offset) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t v = x[i] * gain + offset;
    y[i] = static_cast<std::int8_t>(v < -128 ? -128 : v > 127 ? 127 : v);
  }
}

}  // namespace custom_kernels
