// Shared by the host tests: the index walk the independent references loop over, and the
// operand index numpy broadcasting reads.
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

// The index of `out_index` in an operand of `shape` under numpy broadcasting (the operand's
// dims aligned at the end, a dim of 1 stretched).
inline std::vector<std::int64_t> operand_index(const std::vector<std::int64_t>& out_index,
                                               const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> idx(shape.size());
  const std::size_t skip = out_index.size() - shape.size();
  for (std::size_t k = 0; k < shape.size(); ++k) idx[k] = shape[k] == 1 ? 0 : out_index[skip + k];
  return idx;
}

}  // namespace dlavm_test
