// NDArray: a host tensor of integers, the currency of references and interpreters. Values are
// held as int64 and always wrapped to the dtype, so int8 arithmetic behaves as on hardware.
#pragma once

#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::te {

class NDArray {
 public:
  NDArray() = default;
  NDArray(DType dtype, std::vector<std::int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    if (!dtype.is_integral())
      raise<TypeError>("NDArray of {}: dlavm computes on integer types only", dtype);
    std::int64_t n = 1;
    for (auto d : shape_) {
      if (d < 0)
        raise<ShapeError>("NDArray: negative dim {} in shape [{}]", d, fmt::join(shape_, ", "));
      if (d != 0 && n > (std::int64_t{1} << 40) / d)
        raise<CapacityError>("NDArray of shape [{}] is too large to allocate",
                             fmt::join(shape_, ", "));
      n *= d;
    }
    data_.assign(static_cast<std::size_t>(n), 0);
  }

  // Uniform random values over the dtype's whole range (or [lo, hi]), reproducible by seed.
  static NDArray random(DType dtype, std::vector<std::int64_t> shape, std::uint64_t seed) {
    return random(dtype, std::move(shape), seed, dtype.min_value(), dtype.max_value());
  }
  static NDArray random(DType dtype, std::vector<std::int64_t> shape, std::uint64_t seed,
                        std::int64_t lo, std::int64_t hi) {
    NDArray a(dtype, std::move(shape));
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> dist(lo, hi);
    for (auto& v : a.data_) v = dtype.wrap(dist(rng));
    return a;
  }

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::size_t ndim() const { return shape_.size(); }
  std::size_t size() const { return data_.size(); }
  std::span<const std::int64_t> data() const { return data_; }
  std::span<std::int64_t> data() { return data_; }

  // Row-major offset of an index; ShapeError names the array when it is out of range.
  std::size_t offset(std::span<const std::int64_t> index, std::string_view name = "NDArray") const {
    if (index.size() != shape_.size())
      raise<ShapeError>("{} has {} dims but is indexed with {}", name, shape_.size(), index.size());
    std::size_t off = 0;
    for (std::size_t k = 0; k < index.size(); ++k) {
      if (index[k] < 0 || index[k] >= shape_[k])
        raise<ShapeError>("{}: index {} of dim {} is outside [0, {})", name, index[k], k,
                          shape_[k]);
      off = off * static_cast<std::size_t>(shape_[k]) + static_cast<std::size_t>(index[k]);
    }
    return off;
  }
  std::int64_t at(std::span<const std::int64_t> index) const { return data_[offset(index)]; }
  std::int64_t at(std::initializer_list<std::int64_t> index) const {
    return at(std::span<const std::int64_t>(index.begin(), index.size()));
  }
  void set(std::span<const std::int64_t> index, std::int64_t v) {
    data_[offset(index)] = dtype_.wrap(v);
  }
  void set(std::initializer_list<std::int64_t> index, std::int64_t v) {
    set(std::span<const std::int64_t>(index.begin(), index.size()), v);
  }
  void set_flat(std::size_t i, std::int64_t v) { data_[i] = dtype_.wrap(v); }

  friend bool operator==(const NDArray& a, const NDArray& b) {
    return a.dtype_ == b.dtype_ && a.shape_ == b.shape_ && a.data_ == b.data_;
  }

 private:
  DType dtype_ = DType::int32();
  std::vector<std::int64_t> shape_;
  std::vector<std::int64_t> data_;
};

}  // namespace dlavm::te
