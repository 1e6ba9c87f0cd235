// Definitions for graph/appended_state.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/appended_state.hpp>
#include <dlavm/vta/program.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>

namespace dlavm::graph {

DLAVM_INLINE AppendedState::AppendedState(DType dtype, std::vector<std::int64_t> shape,
                                          std::size_t axis, std::vector<std::int64_t> perm,
                                          Layout layout, std::string name)
    : dtype_(dtype), shape_(std::move(shape)), axis_(axis), name_(std::move(name)) {
  const std::size_t rank = shape_.size();
  bool valid = layout.kind == Layout::Kind::MatmulWeight && layout.planes == 1 && rank >= 2 &&
               rank <= 8 && axis_ < rank && perm.size() == rank;
  std::vector<bool> seen(rank, false);
  for (std::size_t i = 0; valid && i < rank; ++i) {
    valid = perm[i] >= 0 && static_cast<std::size_t>(perm[i]) < rank && !seen[perm[i]];
    if (valid) seen[perm[i]] = true;
  }
  // the growing dim is the packed array's K or N, never one of its products
  valid = valid && (static_cast<std::size_t>(perm[rank - 1]) == axis_ ||
                    static_cast<std::size_t>(perm[rank - 2]) == axis_);
  if (!valid)
    raise<ValueError>(
        "internal: appended state '{}': dim {} of a rank-{} state permuted by [{}] into {} is not "
        "a matmul weight's K or N, please report",
        name_, axis_, rank, fmt::join(perm, ", "), to_string(layout));
  packed_.rank = static_cast<std::int64_t>(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    packed_.shape[k] = shape_[k];
    packed_.perm[k] = perm[k];
  }
  packed_.axis = static_cast<std::int64_t>(axis_);
  packed_.rows = layout.rows;
  packed_.cols = layout.cols;
  packed_.width = dtype.bytes();
  // the held positions, all zero
  held_[0] = held_[1] = held_[2] = pending_ = shape_[axis_];
  bytes_.assign(static_cast<std::size_t>(runtime::packed_state_bytes(packed_, held_[0])), 0);
}

DLAVM_INLINE void AppendedState::check_rows(DType dtype, std::span<const std::int64_t> shape,
                                            std::string_view what) const {
  bool same = dtype == dtype_ && shape.size() == shape_.size();
  for (std::size_t k = 0; same && k < shape_.size(); ++k)
    same = k == axis_ || shape[k] == shape_[k];
  if (same) return;
  std::vector<std::string> dims;
  for (std::size_t k = 0; k < shape_.size(); ++k)
    dims.push_back(k == axis_ ? std::string("*") : fmt::format("{}", shape_[k]));
  raise<ShapeError>("state '{}': {} {}[{}], the state is {}[{}] (any length along dim {})", name_,
                    what, dtype, fmt::join(shape, ", "), dtype_, fmt::join(dims, ", "), axis_);
}

DLAVM_INLINE void AppendedState::append(const te::NDArray& rows) {
  check_rows(rows.dtype(), rows.shape(), "the appended rows are");
  append(vta::dram_bytes(rows), rows.shape());
}

DLAVM_INLINE void AppendedState::append(std::span<const std::uint8_t> data,
                                        std::span<const std::int64_t> shape) {
  check_rows(dtype_, shape, "the appended rows are");
  const auto elements =
      std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>{});
  if (data.size() != static_cast<std::size_t>(elements * dtype_.bytes()))
    raise<ShapeError>("state '{}': {} bytes of rows [{}], which take {}", name_, data.size(),
                      fmt::join(shape, ", "), elements * dtype_.bytes());
  const std::int64_t count = shape[axis_];
  const auto need =
      static_cast<std::size_t>(runtime::packed_state_bytes(packed_, held_[0] + count));
  // bytes_ is laid out for held_[1] positions: another size, another tile count, and the held
  // tiles move
  if (need != bytes_.size()) written_all_ = true;
  if (bytes_.size() < need) bytes_.resize(need);
  const auto width = static_cast<std::size_t>(packed_.width);
  // a run's elements as ranges: one over the run where its gaps are at most kMergeGap bytes,
  // else one an element (each merged with the range before where they meet or lie close)
  const auto note = [this](std::size_t offset, std::size_t size) {
    const std::size_t end = written_.empty() ? 0 : written_.back().offset + written_.back().size;
    if (!written_.empty() && offset >= end && offset - end <= kMergeGap) {
      written_.back().size = offset + size - written_.back().offset;
    } else if (written_.size() < kMaxWrittenRanges) {
      written_.push_back({offset, size});
    } else {
      written_all_ = true;  // a copy of everything is cheaper by then
    }
  };
  runtime::append_packed(bytes_.data(), data.data(), count, held_, packed_,
                         [&](std::int64_t at, std::int64_t n, std::int64_t stride) {
                           if (written_all_) return;
                           const auto offset = static_cast<std::size_t>(at);
                           const auto step = static_cast<std::size_t>(stride);
                           if (n == 1 || step - width <= kMergeGap) {
                             note(offset, static_cast<std::size_t>(n - 1) * step + width);
                             return;
                           }
                           for (std::int64_t j = 0; j < n && !written_all_; ++j)
                             note(offset + static_cast<std::size_t>(j) * step, width);
                         });
  bytes_.resize(need);
  pending_ = held_[0] + count;
}

DLAVM_INLINE void AppendedState::reserve(std::int64_t length) {
  bytes_.reserve(static_cast<std::size_t>(runtime::packed_state_bytes(packed_, length)));
}

DLAVM_INLINE std::vector<AppendedState::ByteRange> AppendedState::take_written() {
  std::vector<ByteRange> out;
  if (written_all_) {
    if (!bytes_.empty()) out.push_back({0, bytes_.size()});
  } else {
    out = std::move(written_);
  }
  written_.clear();
  written_all_ = false;
  return out;
}

DLAVM_INLINE te::NDArray AppendedState::logical() const {
  std::vector<std::int64_t> shape = shape_;
  shape[axis_] = held_[0];
  te::NDArray out(dtype_, shape);
  auto data = out.data();
  std::size_t i = 0;
  runtime::detail::for_each_packed(
      packed_, held_[1], 0, held_[0], [&](std::int64_t at, std::int64_t n, std::int64_t stride) {
        for (std::int64_t j = 0; j < n; ++j, at += stride) {
          std::uint64_t v = 0;
          for (std::int64_t b = 0; b < packed_.width; ++b)
            v |= std::uint64_t{bytes_[static_cast<std::size_t>(at + b)]} << (8 * b);
          data[i++] = dtype_.wrap(static_cast<std::int64_t>(v));
        }
      });
  return out;
}

DLAVM_INLINE void AppendedState::assign(const te::NDArray& state) {
  check_rows(state.dtype(), state.shape(), "the array is");
  held_[0] = held_[1] = held_[2] = pending_ = 0;
  bytes_.clear();
  written_all_ = true;
  append(state);
  commit();
}

}  // namespace dlavm::graph
