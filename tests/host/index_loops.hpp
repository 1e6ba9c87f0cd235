// Shared by the host tests: the index walk the independent references loop over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlavm_test {

// Calls f(index) for every index of `shape`, row-major.
template <class F>
void for_each_index(const std::vector<std::int64_t>& shape, F&& f) {
  std::int64_t total = 1;
  for (auto d : shape) total *= d;
  std::vector<std::int64_t> idx(shape.size(), 0);
  for (std::int64_t i = 0; i < total; ++i) {
    f(idx);
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace dlavm_test
