// TensorProto <-> te::NDArray: element types, raw_data (little-endian) and the typed fields.
// dlavm has no bool dtype: a BOOL tensor is read as uint8 holding 0 or 1 (a value other than
// those is a ValueError naming the tensor), what the comparison ops give and the logical ops,
// Where and If read.
#include <dlavm/core/error.hpp>

#include <fmt/format.h>

#include "importer.hpp"
#include <cstring>
#include <limits>

namespace dlavm::onnx::detail {

namespace {
using TP = ::onnx::TensorProto;
}

std::optional<DType> dtype_of(std::int32_t onnx_type) {
  switch (onnx_type) {
    case TP::FLOAT:
      return DType::float32();
    case TP::INT8:
      return DType::int8();
    case TP::UINT8:
    case TP::BOOL:  // 0 or 1
      return DType::uint8();
    case TP::INT32:
      return DType::int32();
    case TP::INT64:
      return DType::int64();
    default:
      return std::nullopt;
  }
}

std::string_view onnx_type_name(std::int32_t onnx_type) {
  if (!TP::DataType_IsValid(onnx_type)) return "an unknown type";
  return TP::DataType_Name(static_cast<TP::DataType>(onnx_type));
}

namespace {

// Reads element i of raw little-endian data of `bytes` per element.
std::int64_t raw_int(const std::string& raw, std::size_t i, int bytes, bool is_signed) {
  std::uint64_t v = 0;
  for (int b = 0; b < bytes; ++b)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(raw[i * bytes + b])) << (8 * b);
  if (is_signed && bytes < 8 && (v >> (8 * bytes - 1)) != 0) v |= ~std::uint64_t{0} << (8 * bytes);
  return static_cast<std::int64_t>(v);
}

// A BOOL tensor holds 0 and 1 only.
void check_booleans(const TP& t, const te::NDArray& a, std::string_view what) {
  if (t.data_type() != TP::BOOL) return;
  const auto v = a.data();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] > 1) raise<ValueError>("{}: BOOL element {} is {}, neither 0 nor 1", what, i, v[i]);
}

}  // namespace

te::NDArray to_array(const TP& t, std::string_view what) {
  if (t.has_data_location() && t.data_location() == TP::EXTERNAL)
    raise<NotSupported>("{} keeps its data in an external file", what);
  const auto dtype = dtype_of(t.data_type());
  if (!dtype)
    raise<TypeError>(
        "{} has element type {}; dlavm computes on float32, int8, uint8, int32 and "
        "int64 (and BOOL as uint8)",
        what, onnx_type_name(t.data_type()));
  std::vector<std::int64_t> shape(t.dims().begin(), t.dims().end());
  std::int64_t count = 1;
  for (auto d : shape) {
    if (d < 0) raise<ShapeError>("{} has a negative dim {}", what, d);
    if (d != 0 && count > (std::int64_t{1} << 40) / d)
      raise<ShapeError>("{} is too large ({} dims)", what, shape.size());
    count *= d;
  }
  const auto n = static_cast<std::size_t>(count);
  const int bytes = dtype->bits() / 8;
  const auto mismatch = [&](std::size_t have, std::string_view field) {
    raise<ValueError>("{} has {} values in {} for shape [{}] ({} elements)", what, have, field,
                      fmt::join(shape, ", "), count);
  };
  // the data is counted before the array is allocated: the dims alone may claim terabytes
  if (t.has_raw_data()) {
    if (t.raw_data().size() != n * static_cast<std::size_t>(bytes))
      raise<ValueError>("{} has {} bytes of raw data for shape [{}] of {} ({} bytes)", what,
                        t.raw_data().size(), fmt::join(shape, ", "), *dtype, n * bytes);
  } else if (t.data_type() == TP::FLOAT) {
    if (static_cast<std::size_t>(t.float_data_size()) != n)
      mismatch(static_cast<std::size_t>(t.float_data_size()), "float_data");
  } else if (t.data_type() == TP::INT64) {
    if (static_cast<std::size_t>(t.int64_data_size()) != n)
      mismatch(static_cast<std::size_t>(t.int64_data_size()), "int64_data");
  } else if (static_cast<std::size_t>(t.int32_data_size()) != n) {
    mismatch(static_cast<std::size_t>(t.int32_data_size()), "int32_data");
  }
  te::NDArray a(*dtype, shape);
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (dtype->is_float()) {
      for (std::size_t i = 0; i < n; ++i) {
        const auto bits = static_cast<std::uint32_t>(raw_int(raw, i, 4, false));
        float f;
        std::memcpy(&f, &bits, 4);
        a.fdata()[i] = f;
      }
    } else {
      // whole arrays of weights: one read per element and no range check (every value of the
      // width is a value of the type)
      auto out = a.data();
      const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
      if (bytes == 1 && dtype->is_int()) {
        for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int8_t>(p[i]);
      } else if (bytes == 1) {
        for (std::size_t i = 0; i < n; ++i) out[i] = p[i];
      } else {
        for (std::size_t i = 0; i < n; ++i) out[i] = raw_int(raw, i, bytes, dtype->is_int());
      }
    }
    check_booleans(t, a, what);
    return a;
  }
  switch (t.data_type()) {
    case TP::FLOAT:
      for (std::size_t i = 0; i < n; ++i) a.fdata()[i] = t.float_data(static_cast<int>(i));
      break;
    case TP::INT64:
      for (std::size_t i = 0; i < n; ++i) a.set_flat(i, t.int64_data(static_cast<int>(i)));
      break;
    default:  // int8, uint8, bool, int32: int32_data, one value per element
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t v = t.int32_data(static_cast<int>(i));
        if (v < dtype->min_value() || v > dtype->max_value())
          raise<ValueError>("{}: value {} at {} is outside {}", what, v, i, *dtype);
        a.set_flat(i, v);
      }
      break;
  }
  check_booleans(t, a, what);
  return a;
}

}  // namespace dlavm::onnx::detail
