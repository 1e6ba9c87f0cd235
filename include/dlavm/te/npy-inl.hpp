// Definitions for te/npy.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/core/file.hpp>
#include <dlavm/te/npy.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <vector>

namespace dlavm::te {

namespace detail {

inline constexpr std::string_view kNpyMagic = "\x93NUMPY";

struct NpyType {
  std::string_view descr;  // numpy's dtype.str
  DType dtype;
};
inline constexpr std::array<NpyType, 7> kNpyTypes{{{"|i1", DType::int8()},
                                                   {"|u1", DType::uint8()},
                                                   {"<i2", DType::int16()},
                                                   {"<i4", DType::int32()},
                                                   {"<i8", DType::int64()},
                                                   {"<f4", DType::float32()},
                                                   {"<i1", DType::int8()}}};

// The value of `key` in the header's Python dict literal: the text after "'key':", up to the
// next top-level comma or the closing brace.
inline std::optional<std::string_view> npy_field(std::string_view header, std::string_view key) {
  const std::string quoted = fmt::format("'{}'", key);
  auto at = header.find(quoted);
  if (at == std::string_view::npos) return std::nullopt;
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t end = at + 1;
  int depth = 0;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' && depth == 0) || (c == '}' && depth == 0)) break;
  }
  auto v = header.substr(at + 1, end - at - 1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  return v;
}

// numpy's name of a dtype string, for messages ("<f8" -> "float64").
inline std::string npy_type_name(std::string_view descr) {
  if (descr.size() < 3) return std::string(descr);
  const char kind = descr[1];
  const std::string bits = fmt::format("{}", 8 * std::atoi(std::string(descr.substr(2)).c_str()));
  if (kind == 'f') return "float" + bits;
  if (kind == 'i') return "int" + bits;
  if (kind == 'u') return "uint" + bits;
  if (kind == 'b') return "bool";
  return std::string(descr);
}

}  // namespace detail

DLAVM_INLINE NDArray parse_npy(std::span<const std::uint8_t> bytes, std::string_view source) {
  const auto fail = [&](const std::string& why) -> NDArray {
    raise<ParseError>("{}: {}", source, why);
  };
  const auto u16 = [&](std::size_t at) {
    return static_cast<std::size_t>(bytes[at]) | static_cast<std::size_t>(bytes[at + 1]) << 8;
  };
  if (bytes.size() < 10 ||
      std::memcmp(bytes.data(), detail::kNpyMagic.data(), detail::kNpyMagic.size()) != 0)
    return fail("not a .npy file (no \\x93NUMPY magic)");
  const int major = bytes[6];
  if (major < 1 || major > 3)
    return fail(fmt::format(".npy format version {}.{} (dlavm reads 1.0 to 3.0)", major,
                            static_cast<int>(bytes[7])));
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = u16(8);
    start = 10;
  } else {
    if (bytes.size() < 12) return fail("cut short in its header");
    header_len = u16(8) | u16(10) << 16;
    start = 12;
  }
  if (bytes.size() < start + header_len) return fail("cut short in its header");
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + start), header_len);
  const auto descr = detail::npy_field(header, "descr");
  const auto fortran = detail::npy_field(header, "fortran_order");
  const auto shape_text = detail::npy_field(header, "shape");
  if (!descr || !fortran || !shape_text)
    return fail(fmt::format("a header without descr, fortran_order or shape: {}", header));
  if (*fortran != "False")
    return fail("an array in Fortran order; save it with numpy.ascontiguousarray");
  if (descr->size() < 2 || descr->front() != '\'' || descr->back() != '\'')
    return fail(fmt::format("descr {} is no dtype string", *descr));
  const auto type = descr->substr(1, descr->size() - 2);
  std::optional<DType> dtype;
  for (const auto& t : detail::kNpyTypes)
    if (t.descr == type) dtype = t.dtype;
  if (!dtype) {
    if (type == "<f8")
      return fail(
          "a float64 array; dlavm computes in float32: save it with .astype(numpy.float32)");
    return fail(fmt::format(
        "dtype '{}' ({}); dlavm reads little-endian int8, uint8, int16, int32, int64 and float32",
        type, detail::npy_type_name(type)));
  }
  // "(1, 3, 8, 8)", "(5,)", "()"
  std::vector<std::int64_t> shape;
  auto s = *shape_text;
  if (s.size() < 2 || s.front() != '(' || s.back() != ')')
    return fail(fmt::format("shape {} is no tuple", s));
  s = s.substr(1, s.size() - 2);
  std::size_t elements = 1;
  while (!s.empty()) {
    while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.front())) || s.front() == ','))
      s.remove_prefix(1);
    if (s.empty()) break;
    std::int64_t d = 0;
    std::size_t digits = 0;
    while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) {
      if (d > (std::numeric_limits<std::int64_t>::max() - 9) / 10)
        return fail(fmt::format("shape {} has a dim too large", *shape_text));
      d = d * 10 + (s[digits] - '0');
      ++digits;
    }
    if (digits == 0)
      return fail(fmt::format("shape {} holds a dim that is no number", *shape_text));
    if (d != 0 && elements > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(d))
      return fail(fmt::format("shape {} holds too many elements", *shape_text));
    elements *= static_cast<std::size_t>(d);
    shape.push_back(d);
    s.remove_prefix(digits);
  }
  const auto width = static_cast<std::size_t>(dtype->bytes());
  const std::size_t data = start + header_len;
  if (elements > (bytes.size() - data) / width || bytes.size() - data != elements * width)
    return fail(fmt::format("shape {} of {} holds {} bytes, the file {} after its header",
                            *shape_text, detail::npy_type_name(type), elements * width,
                            bytes.size() - data));
  NDArray a(*dtype, shape);
  const std::uint8_t* p = bytes.data() + data;
  for (std::size_t i = 0; i < elements; ++i, p += width) {
    if (dtype->is_float()) {
      std::uint32_t u = 0;
      for (std::size_t b = 0; b < 4; ++b) u |= static_cast<std::uint32_t>(p[b]) << (8 * b);
      a.fdata()[i] = std::bit_cast<float>(u);
      continue;
    }
    std::uint64_t u = 0;
    for (std::size_t b = 0; b < width; ++b) u |= static_cast<std::uint64_t>(p[b]) << (8 * b);
    std::int64_t v = 0;
    if (*dtype == DType::uint8()) {
      v = static_cast<std::int64_t>(u);
    } else {
      // sign-extend from `width` bytes
      const unsigned shift = 64 - 8 * static_cast<unsigned>(width);
      v = static_cast<std::int64_t>(u << shift) >> shift;
    }
    a.data()[i] = v;
  }
  return a;
}

DLAVM_INLINE NDArray read_npy(const std::filesystem::path& path) {
  if (const auto problem = not_a_file(path))
    raise<ValueError>("'{}' is {}, not a .npy file", path.string(), *problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) raise<ValueError>("'{}' cannot be opened", path.string());
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  return parse_npy(bytes, path.string());
}

DLAVM_INLINE std::string npy_bytes(const NDArray& a) {
  std::string_view descr;
  for (const auto& t : detail::kNpyTypes)
    if (t.dtype == a.dtype()) {
      descr = t.descr;
      break;
    }
  if (descr.empty()) raise<TypeError>("write_npy: {} has no .npy form here", a.dtype());
  // "()", "(5,)", "(1, 3)": a one-element tuple keeps its comma
  const std::string shape = a.shape().size() == 1 ? fmt::format("{},", a.shape()[0])
                                                  : fmt::format("{}", fmt::join(a.shape(), ", "));
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  // padded with spaces and a newline so that the data starts at a multiple of 64
  const bool v2 = header.size() + 11 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  const std::size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string out(detail::kNpyMagic);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const std::size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  out += header;
  const auto width = static_cast<std::size_t>(a.dtype().bytes());
  out.reserve(out.size() + a.size() * width);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::uint64_t u = a.dtype().is_float() ? std::bit_cast<std::uint32_t>(a.fdata()[i])
                                                 : static_cast<std::uint64_t>(a.data()[i]);
    for (std::size_t b = 0; b < width; ++b) out += static_cast<char>((u >> (8 * b)) & 0xff);
  }
  return out;
}

DLAVM_INLINE void write_npy(const std::filesystem::path& path, const NDArray& a) {
  const auto bytes = npy_bytes(a);
  std::ofstream out(path, std::ios::binary);
  if (!out || !out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    raise<ValueError>("'{}' cannot be written", path.string());
}

}  // namespace dlavm::te
