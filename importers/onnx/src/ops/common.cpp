// The shared readers of ops/common.hpp.
#include "common.hpp"

#include <dlavm/ne/int_math.hpp>

namespace dlavm::onnx::detail {

std::int64_t static_dim(const ne::Expr& d, std::string_view what) {
  const auto v = d.as_int();
  if (!v) unsupported(fmt::format("{} needs a static dim, and it is {}", what, d));
  return *v;
}

std::int64_t window_sum(std::initializer_list<std::int64_t> terms, std::string_view what) {
  std::int64_t sum = 0;
  for (auto t : terms) {
    const auto next = ne::detail::checked_add(sum, t);
    if (!next) unsupported(fmt::format("{} overflows int64", what));
    sum = *next;
  }
  return sum;
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank, std::string_view what) {
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    raise<ValueError>("{} {} is outside [-{}, {}) for rank {}", what, axis, rank, rank, rank);
  return a;
}

std::vector<std::int64_t> ints_of(const te::NDArray& a) {
  if (!a.dtype().is_integral()) unsupported("a shape or pads tensor of floats");
  return {a.data().begin(), a.data().end()};
}

double scalar_of(const te::NDArray& a, std::string_view what) {
  if (a.size() != 1)
    unsupported(fmt::format("its {} has {} elements; a scalar is needed", what, a.size()));
  return a.value_as_double(0);
}

std::vector<std::int64_t> constant_ints(Importer& im, const Node& n, int k, std::string_view role) {
  const auto d = im.dims_of(n, k);
  if (!d) unsupported(fmt::format("its {} (input {}) is not a constant integer tensor", role, k));
  std::vector<std::int64_t> out;
  for (const auto& e : d->values) {
    const auto c = e.as_int();
    if (!c) unsupported(fmt::format("its {} (input {}) holds a symbolic value {}", role, k, e));
    out.push_back(*c);
  }
  return out;
}

void refuse_legacy_broadcast(Importer& im, const Node& n) {
  if (attr_int(im, n, "broadcast", 0) != 0) unsupported("the legacy broadcast attribute");
}

}  // namespace dlavm::onnx::detail
