// NDArray: a host tensor, the currency of references and interpreters. Integer arrays hold
// their values as int64, always wrapped to the dtype, so int8 arithmetic behaves as on
// hardware; float32 arrays (the only float type) hold `float`s. Each kind has its own accessors:
// data()/at()/set() for integers, fdata()/at_float()/set_float() for float32; using one on the
// other kind raises TypeError naming the dtype.
//
//   auto a = te::NDArray::random(DType::int8(), {2, 3}, /*seed=*/1);
//   auto f = te::NDArray::random(DType::float32(), {4}, 2);   // uniform in [-1, 1)
//   f.set_float({0}, 0.5f);
//   CHECK(te::allclose(f, expected, /*rtol=*/1e-5, /*atol=*/1e-6));
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/te/block_cache.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlavm::te {

class NDArray {
 public:
  NDArray() = default;
  NDArray(DType dtype, std::vector<std::int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    if (dtype.is_float() && dtype != DType::float32())
      raise<TypeError>("NDArray of {}: float32 is the only float type dlavm computes on", dtype);
    std::int64_t n = 1;
    for (auto d : shape_) {
      if (d < 0)
        raise<ShapeError>("NDArray: negative dim {} in shape [{}]", d, fmt::join(shape_, ", "));
      if (d != 0 && n > (std::int64_t{1} << 40) / d)
        raise<CapacityError>("NDArray of shape [{}] is too large to allocate",
                             fmt::join(shape_, ", "));
      n *= d;
    }
    if (dtype.is_float())
      fdata_.assign(static_cast<std::size_t>(n), 0.0f);
    else
      data_.assign(static_cast<std::size_t>(n), 0);
  }

  // An array holding `values` in row-major order (integers wrapped to the dtype, or float32
  // values); ShapeError when their count is not the shape's element count.
  static NDArray from_ints(DType dtype, std::vector<std::int64_t> shape,
                           std::span<const std::int64_t> values) {
    NDArray a(dtype, std::move(shape));
    a.check_count(values.size(), "from_ints");
    for (std::size_t i = 0; i < values.size(); ++i) a.set_flat(i, values[i]);
    return a;
  }
  static NDArray from_ints(DType dtype, std::vector<std::int64_t> shape,
                           std::initializer_list<std::int64_t> values) {
    return from_ints(dtype, std::move(shape), std::span(values.begin(), values.size()));
  }
  static NDArray from_floats(std::vector<std::int64_t> shape, std::span<const float> values) {
    NDArray a(DType::float32(), std::move(shape));
    a.check_count(values.size(), "from_floats");
    std::copy(values.begin(), values.end(), a.fdata_.begin());
    return a;
  }
  static NDArray from_floats(std::vector<std::int64_t> shape, std::initializer_list<float> values) {
    return from_floats(std::move(shape), std::span(values.begin(), values.size()));
  }

  // Uniform random values over the dtype's whole range (or [lo, hi]), reproducible by seed.
  // float32: uniform in [-1, 1) (or [lo, hi)).
  static NDArray random(DType dtype, std::vector<std::int64_t> shape, std::uint64_t seed) {
    if (dtype.is_float()) return random_float(std::move(shape), seed, -1.0, 1.0);
    return random(dtype, std::move(shape), seed, dtype.min_value(), dtype.max_value());
  }
  static NDArray random(DType dtype, std::vector<std::int64_t> shape, std::uint64_t seed,
                        std::int64_t lo, std::int64_t hi) {
    if (dtype.is_float())
      return random_float(std::move(shape), seed, static_cast<double>(lo), static_cast<double>(hi));
    NDArray a(dtype, std::move(shape));
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> dist(lo, hi);
    for (auto& v : a.data_) v = dtype.wrap(dist(rng));
    return a;
  }
  static NDArray random_float(std::vector<std::int64_t> shape, std::uint64_t seed, double lo,
                              double hi) {
    if (!(lo < hi)) raise<ValueError>("NDArray::random_float: empty range [{}, {})", lo, hi);
    NDArray a(DType::float32(), std::move(shape));
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    for (auto& v : a.fdata_) v = static_cast<float>(dist(rng));
    return a;
  }

  // The same elements in `shape`, which must hold as many (ShapeError otherwise): the
  // elements move, nothing is copied.
  NDArray reshape(std::vector<std::int64_t> shape) && {
    std::size_t n = 1;
    for (const auto d : shape) n *= d < 0 ? 0 : static_cast<std::size_t>(d);
    if (n != size())
      raise<ShapeError>("NDArray::reshape: {} elements cannot take the shape [{}]", size(),
                        fmt::join(shape, ", "));
    NDArray out;
    out.dtype_ = dtype_;
    out.shape_ = std::move(shape);
    out.data_ = std::move(data_);
    out.fdata_ = std::move(fdata_);
    return out;
  }

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::size_t ndim() const { return shape_.size(); }
  std::size_t size() const { return dtype_.is_float() ? fdata_.size() : data_.size(); }
  // The integer elements, row-major; TypeError on a float32 array.
  std::span<const std::int64_t> data() const {
    check_integral("data()");
    return data_;
  }
  std::span<std::int64_t> data() {
    check_integral("data()");
    return data_;
  }
  // The float32 elements, row-major; TypeError on an integer array.
  std::span<const float> fdata() const {
    check_float("fdata()");
    return fdata_;
  }
  std::span<float> fdata() {
    check_float("fdata()");
    return fdata_;
  }

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
  std::int64_t at(std::span<const std::int64_t> index) const {
    check_integral("at()");
    return data_[offset(index)];
  }
  std::int64_t at(std::initializer_list<std::int64_t> index) const {
    return at(std::span<const std::int64_t>(index.begin(), index.size()));
  }
  void set(std::span<const std::int64_t> index, std::int64_t v) {
    check_integral("set()");
    data_[offset(index)] = dtype_.wrap(v);
  }
  void set(std::initializer_list<std::int64_t> index, std::int64_t v) {
    set(std::span<const std::int64_t>(index.begin(), index.size()), v);
  }
  void set_flat(std::size_t i, std::int64_t v) {
    check_integral("set_flat()");
    data_[i] = dtype_.wrap(v);
  }

  float at_float(std::span<const std::int64_t> index) const {
    check_float("at_float()");
    return fdata_[offset(index)];
  }
  float at_float(std::initializer_list<std::int64_t> index) const {
    return at_float(std::span<const std::int64_t>(index.begin(), index.size()));
  }
  void set_float(std::span<const std::int64_t> index, float v) {
    check_float("set_float()");
    fdata_[offset(index)] = v;
  }
  void set_float(std::initializer_list<std::int64_t> index, float v) {
    set_float(std::span<const std::int64_t>(index.begin(), index.size()), v);
  }

  // Element i (row-major) as a double, for either kind: exact for float32 and for integers
  // up to 2^53 in magnitude.
  double value_as_double(std::size_t i) const {
    return dtype_.is_float() ? static_cast<double>(fdata_[i]) : static_cast<double>(data_[i]);
  }

  // Exact equality: same dtype, shape and values; float32 values compare with ==, except that
  // NaN equals NaN (so an array equals its copy).
  friend bool operator==(const NDArray& a, const NDArray& b) {
    if (a.dtype_ != b.dtype_ || a.shape_ != b.shape_ || a.data_ != b.data_) return false;
    for (std::size_t i = 0; i < a.fdata_.size(); ++i) {
      const float x = a.fdata_[i], y = b.fdata_[i];
      if (x != y && !(std::isnan(x) && std::isnan(y))) return false;
    }
    return true;
  }

 private:
  void check_integral(std::string_view what) const {
    if (dtype_.is_float())
      raise<TypeError>(
          "NDArray::{} on a {} array: it holds integers only; use the float "
          "accessors (fdata, at_float, set_float)",
          what, dtype_);
  }
  void check_float(std::string_view what) const {
    if (!dtype_.is_float())
      raise<TypeError>(
          "NDArray::{} on a {} array: it holds float32 only; use the integer "
          "accessors (data, at, set)",
          what, dtype_);
  }
  void check_count(std::size_t count, std::string_view who) const {
    if (count != size())
      raise<ShapeError>("NDArray::{}: {} values for shape [{}], which holds {}", who, count,
                        fmt::join(shape_, ", "), size());
  }

  DType dtype_ = DType::int32();
  std::vector<std::int64_t> shape_;
  // (large ones through the block cache, te/block_cache.hpp)
  std::vector<std::int64_t, CachingAllocator<std::int64_t>> data_;  // integer dtypes
  std::vector<float, CachingAllocator<float>> fdata_;               // float32
};

// numpy's allclose: same shape, and |a - b| <= atol + rtol * |b| for every element (compared as
// doubles, so integer and float32 arrays of one shape compare too). NaN is close to nothing.
bool allclose(const NDArray& a, const NDArray& b, double rtol = 1e-5, double atol = 1e-8);

}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/ndarray-inl.hpp>
#endif
