// Definitions for host/logic.hpp: the kinds' values from runtime/kernels.hpp over the broadcast
// rows of host/common.hpp, integers in 64 bits (host/common.hpp's with_integer_type), results
// stored as 0 or 1 into the uint8 array's elements.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/host/common.hpp>
#include <dlavm/host/logic.hpp>
#include <dlavm/runtime/kernels.hpp>

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace dlavm::host {

namespace detail {

// The numpy broadcast of two shapes, or ShapeError naming `who` and the operands.
inline Shape broadcast_or_raise(std::string_view who, std::string_view what_a,
                                std::span<const std::int64_t> a, std::string_view what_b,
                                std::span<const std::int64_t> b) {
  const auto shape = broadcast_shapes(a, b);
  if (!shape)
    raise<ShapeError>("{}: {} {} and {} {} do not broadcast (dims must match or be 1)", who, what_a,
                      shape_str(a), what_b, shape_str(b));
  return *shape;
}

inline void require_uint8(std::string_view who, std::string_view what, const te::NDArray& a,
                          std::string_view role) {
  if (a.dtype() != DType::uint8())
    raise<TypeError>("{}: {} is {}; {} (a boolean: 0 or 1, any nonzero true)", who, what, a.dtype(),
                     role);
}

// y[o] = f(a[ia], b[ib]) over the broadcast `shape`, y an integer array (0 or 1 stored).
template <class T, class F>
void apply_to_ints(const T* a, const te::NDArray& ta, const T* b, const te::NDArray& tb,
                   te::NDArray& y, F&& f) {
  std::int64_t* out = y.data().data();
  for_each_broadcast_row<2>(y.shape(), {std::span(ta.shape()), std::span(tb.shape())},
                            [&](std::int64_t o, const auto& at, const auto& step, std::int64_t n) {
                              for (std::int64_t i = 0; i < n; ++i)
                                out[o + i] = f(a[at[0] + i * step[0]], b[at[1] + i * step[1]]);
                            });
}

}  // namespace detail

DLAVM_INLINE te::NDArray compare(runtime::Compare kind, const te::NDArray& a,
                                 const te::NDArray& b) {
  const std::string who = fmt::format("host::{}", compare_op(kind).name);
  detail::require_same_dtype(who, a, b);
  te::NDArray y(DType::uint8(), detail::broadcast_or_raise(who, "a", a.shape(), "b", b.shape()));
  runtime::with_kind(kind, [&](auto tag) {
    constexpr runtime::Compare K = decltype(tag)::value;
    if (a.dtype().is_float()) {
      detail::apply_to_ints(a.fdata().data(), a, b.fdata().data(), b, y, [](float x, float z) {
        return std::int64_t{runtime::compare_value<K>(x, z)};
      });
      return;
    }
    detail::with_integer_type(a.dtype(), [&](auto t) {
      using T = decltype(t);
      detail::apply_to_ints(detail::elements_as<T>(a), a, detail::elements_as<T>(b), b, y,
                            [](T x, T z) { return std::int64_t{runtime::compare_value<K>(x, z)}; });
    });
  });
  return y;
}

DLAVM_INLINE te::NDArray logical(runtime::Logical kind, const te::NDArray& a,
                                 const te::NDArray& b) {
  const std::string who = fmt::format("host::{}", logical_op(kind).name);
  if (runtime::arity(kind) != 2)
    raise<ValueError>("{}: takes {} operand, given 2", who, runtime::arity(kind));
  detail::require_uint8(who, "a", a, "logical ops take uint8");
  detail::require_uint8(who, "b", b, "logical ops take uint8");
  te::NDArray y(DType::uint8(), detail::broadcast_or_raise(who, "a", a.shape(), "b", b.shape()));
  runtime::with_kind(kind, [&](auto tag) {
    constexpr runtime::Logical K = decltype(tag)::value;
    if constexpr (runtime::arity(K) == 2)
      detail::apply_to_ints(a.data().data(), a, b.data().data(), b, y,
                            [](std::int64_t x, std::int64_t z) {
                              return std::int64_t{runtime::logical_value<K>(x, z)};
                            });
  });
  return y;
}

DLAVM_INLINE te::NDArray logical(runtime::Logical kind, const te::NDArray& x) {
  const std::string who = fmt::format("host::{}", logical_op(kind).name);
  if (runtime::arity(kind) != 1)
    raise<ValueError>("{}: takes {} operands, given 1", who, runtime::arity(kind));
  detail::require_uint8(who, "x", x, "logical ops take uint8");
  te::NDArray y(DType::uint8(), x.shape());
  runtime::logical<runtime::Logical::Not>(x.data().data(), y.data().data(),
                                          static_cast<std::int64_t>(x.size()));
  return y;
}

DLAVM_INLINE te::NDArray logical_not(const te::NDArray& x) {
  return logical(runtime::Logical::Not, x);
}

DLAVM_INLINE te::NDArray where(const te::NDArray& cond, const te::NDArray& a,
                               const te::NDArray& b) {
  constexpr std::string_view who = "host::where";
  detail::require_uint8(who, "cond", cond, "a condition is uint8");
  if (a.dtype() != b.dtype())
    raise<TypeError>("{}: a is {} and b is {}; they must have one dtype (cast one first)", who,
                     a.dtype(), b.dtype());
  const auto ab = detail::broadcast_or_raise(who, "a", a.shape(), "b", b.shape());
  te::NDArray y(a.dtype(), detail::broadcast_or_raise(who, "cond", cond.shape(),
                                                      "the broadcast of a and b", ab));
  const auto pick = [&](const auto* av, const auto* bv, auto* out) {
    const std::int64_t* c = cond.data().data();
    detail::for_each_broadcast_row<3>(
        y.shape(), {std::span(cond.shape()), std::span(a.shape()), std::span(b.shape())},
        [&](std::int64_t o, const auto& at, const auto& step, std::int64_t n) {
          for (std::int64_t i = 0; i < n; ++i)
            out[o + i] =
                c[at[0] + i * step[0]] != 0 ? av[at[1] + i * step[1]] : bv[at[2] + i * step[2]];
        });
  };
  if (a.dtype().is_float())
    pick(a.fdata().data(), b.fdata().data(), y.fdata().data());
  else
    pick(a.data().data(), b.data().data(), y.data().data());
  return y;
}

DLAVM_INLINE te::NDArray float_class(runtime::FloatClass kind, const te::NDArray& x,
                                     const IsInfParams& p) {
  const std::string who = fmt::format("host::{}", float_class_op(kind).name);
  detail::require_float32(who, "x", x);
  te::NDArray y(DType::uint8(), x.shape());
  runtime::with_kind(kind, [&](auto tag) {
    runtime::float_class<decltype(tag)::value>(x.fdata().data(), y.data().data(),
                                               static_cast<std::int64_t>(x.size()),
                                               p.detect_positive, p.detect_negative);
  });
  return y;
}

DLAVM_INLINE te::NDArray is_nan(const te::NDArray& x) {
  return float_class(runtime::FloatClass::Nan, x);
}

DLAVM_INLINE te::NDArray is_inf(const te::NDArray& x, const IsInfParams& p) {
  return float_class(runtime::FloatClass::Inf, x, p);
}

}  // namespace dlavm::host
