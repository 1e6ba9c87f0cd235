// ONNX's linear quantization kernels (host/quantize.hpp) on hand-derived values: ties round to
// even, the zero point moves a value before it saturates, per-channel parameters follow the
// axis, and wrong types and shapes are refused.
#include <dlavm/host/quantize.hpp>

#include <doctest/doctest.h>

namespace host_linear_quant {

using namespace dlavm;
using te::NDArray;

TEST_CASE("quantize_linear: float32 division, ties to even, zero point, then saturation") {
  const auto x = NDArray::from_floats({6}, {2.5f, 3.5f, -2.5f, 1000.0f, -1000.0f, 0.75f});
  const auto one = NDArray::from_floats({}, {1.0f});
  const auto y = host::quantize_linear(x, one, NDArray::from_ints(DType::int8(), {}, {0}));
  CHECK(y.dtype() == DType::int8());
  CHECK(std::vector<std::int64_t>(y.data().begin(), y.data().end()) ==
        std::vector<std::int64_t>{2, 4, -2, 127, -128, 1});
  // uint8 with zero point 10: -20 -> -10 -> 0 (saturated after the zero point), 250 -> 255
  const auto u = host::quantize_linear(NDArray::from_floats({3}, {-20.0f, 250.0f, 1.5f}), one,
                                       NDArray::from_ints(DType::uint8(), {}, {10}));
  CHECK(std::vector<std::int64_t>(u.data().begin(), u.data().end()) ==
        std::vector<std::int64_t>{0, 255, 12});
}

TEST_CASE("dequantize_linear and rescale per channel along the axis") {
  // x[2, 3], channels along axis 1: scales 0.5, 1, 2; zero points 1, 0, -1
  const auto x = NDArray::from_ints(DType::int8(), {2, 3}, {3, 3, 3, -1, 0, 1});
  const auto scale = NDArray::from_floats({3}, {0.5f, 1.0f, 2.0f});
  const auto zp = NDArray::from_ints(DType::int8(), {3}, {1, 0, -1});
  const auto f = host::dequantize_linear(x, scale, zp, {.axis = 1});
  CHECK(std::vector<float>(f.fdata().begin(), f.fdata().end()) ==
        std::vector<float>{1.0f, 3.0f, 8.0f, -1.0f, 0.0f, 4.0f});
  // rescale: 5 * 0.5 = 2.5 -> 2, 7 * 0.5 = 3.5 -> 4, then + zero point, saturated to int8
  const auto acc = NDArray::from_ints(DType::int32(), {2, 2}, {5, 7, 1000, -1000});
  const auto m = NDArray::from_floats({2}, {0.5f, 0.5f});
  const auto q = host::rescale(acc, m, NDArray::from_ints(DType::int8(), {2}, {0, 1}), {.axis = 1});
  CHECK(std::vector<std::int64_t>(q.data().begin(), q.data().end()) ==
        std::vector<std::int64_t>{2, 5, 127, -128});
}

TEST_CASE("linear quantization refuses wrong types and shapes, naming them") {
  const auto x = NDArray::from_floats({2, 3}, {0, 1, 2, 3, 4, 5});
  const auto s = NDArray::from_floats({2}, {1, 1});
  const auto z = NDArray::from_ints(DType::int8(), {2}, {0, 0});
  CHECK_THROWS_WITH_AS(host::quantize_linear(x, s, z, {.axis = 1}),
                       doctest::Contains("2 scales for dim 1 of x, which is 3"), ShapeError);
  CHECK_THROWS_AS(host::quantize_linear(x, s, NDArray::from_ints(DType::int8(), {}, {0})),
                  ShapeError);
  CHECK_THROWS_WITH_AS(host::rescale(NDArray(DType::int8(), {2}), NDArray::from_floats({}, {1}),
                                     NDArray::from_ints(DType::int8(), {}, {0})),
                       doctest::Contains("int32"), TypeError);
  CHECK_THROWS_AS(
      host::dequantize_linear(NDArray(DType::uint8(), {2}), NDArray::from_floats({}, {1}),
                              NDArray::from_ints(DType::int8(), {}, {0})),
      TypeError);
}

}  // namespace host_linear_quant
