// Element data types: a kind (signed int, unsigned int, float), a bit width and a lane count,
// in TVM's vocabulary ("int8", "int32x16"). Value type; formatting and parsing round-trip.
#pragma once

#include <dlavm/core/error.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace dlavm {

class DType {
 public:
  enum class Kind : std::uint8_t { Int, UInt, Float };

  constexpr DType() = default;
  constexpr DType(Kind kind, int bits, int lanes = 1) : kind_(kind), bits_(bits), lanes_(lanes) {}

  static constexpr DType int8() { return {Kind::Int, 8}; }
  static constexpr DType int16() { return {Kind::Int, 16}; }
  static constexpr DType int32() { return {Kind::Int, 32}; }
  static constexpr DType int64() { return {Kind::Int, 64}; }
  static constexpr DType uint8() { return {Kind::UInt, 8}; }
  static constexpr DType float32() { return {Kind::Float, 32}; }

  // A signed or unsigned integer of any width from 1 to 64 bits (VTA configurations use 1..32).
  static DType int_bits(int bits) {
    check_bits(Kind::Int, bits);
    return {Kind::Int, bits};
  }
  static DType uint_bits(int bits) {
    check_bits(Kind::UInt, bits);
    return {Kind::UInt, bits};
  }

  // Parses "int8", "uint8", "float32", "int32x16"; raises ParseError on anything else.
  static DType parse(std::string_view text);

  constexpr Kind kind() const { return kind_; }
  constexpr int bits() const { return bits_; }
  constexpr int lanes() const { return lanes_; }
  constexpr bool is_int() const { return kind_ == Kind::Int; }
  constexpr bool is_uint() const { return kind_ == Kind::UInt; }
  constexpr bool is_float() const { return kind_ == Kind::Float; }
  constexpr bool is_integral() const { return kind_ != Kind::Float; }
  // Bytes one element (all lanes) occupies, rounding sub-byte widths up.
  constexpr int bytes() const { return (bits_ * lanes_ + 7) / 8; }

  constexpr DType with_lanes(int lanes) const { return {kind_, bits_, lanes}; }
  constexpr DType element_of() const { return {kind_, bits_, 1}; }

  // Smallest and largest value an integral scalar of this type holds.
  constexpr std::int64_t min_value() const {
    if (kind_ == Kind::UInt) return 0;
    return bits_ >= 64 ? INT64_MIN : -(std::int64_t{1} << (bits_ - 1));
  }
  constexpr std::int64_t max_value() const {
    if (kind_ == Kind::UInt) return bits_ >= 63 ? INT64_MAX : (std::int64_t{1} << bits_) - 1;
    return bits_ >= 64 ? INT64_MAX : (std::int64_t{1} << (bits_ - 1)) - 1;
  }
  // Two's-complement wrap of v into this integral type (what a hardware store does).
  constexpr std::int64_t wrap(std::int64_t v) const {
    if (bits_ >= 64) return v;
    const auto mask = (std::uint64_t{1} << bits_) - 1;
    auto u = static_cast<std::uint64_t>(v) & mask;
    if (kind_ == Kind::Int && (u >> (bits_ - 1)) != 0) u |= ~mask;
    return static_cast<std::int64_t>(u);
  }

  friend constexpr bool operator==(DType, DType) = default;

  std::string str() const {
    const char* name = kind_ == Kind::Int ? "int" : kind_ == Kind::UInt ? "uint" : "float";
    return lanes_ == 1 ? fmt::format("{}{}", name, bits_)
                       : fmt::format("{}{}x{}", name, bits_, lanes_);
  }

 private:
  static void check_bits(Kind kind, int bits) {
    if (bits < 1 || bits > 64)
      raise<ValueError>("{} type with {} bits: integer widths must be 1..64",
                        kind == Kind::Int ? "int" : "uint", bits);
  }

  Kind kind_ = Kind::Int;
  int bits_ = 32;
  int lanes_ = 1;
};

inline DType DType::parse(std::string_view input) {
  // The name as messages show it, whatever the input: at most 32 characters, control
  // characters as '?'.
  std::string text;
  for (const char c : input.substr(0, 32))
    text += static_cast<unsigned char>(c) < 0x20 || c == 0x7F ? '?' : c;
  if (input.size() > 32) text += "...";
  auto rest = input;
  Kind kind{};
  if (rest.starts_with("uint")) {
    kind = Kind::UInt;
    rest.remove_prefix(4);
  } else if (rest.starts_with("int")) {
    kind = Kind::Int;
    rest.remove_prefix(3);
  } else if (rest.starts_with("float")) {
    kind = Kind::Float;
    rest.remove_prefix(5);
  } else {
    raise<ParseError>("dtype '{}': expected int<bits>, uint<bits> or float<bits>", text);
  }
  auto read_number = [&](const char* what) {
    int value = 0;
    std::size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9' && value < 100000) {
      value = value * 10 + (rest[digits] - '0');
      ++digits;
    }
    if (digits == 0) raise<ParseError>("dtype '{}': missing {}", text, what);
    rest.remove_prefix(digits);
    return value;
  };
  const int bits = read_number("bit width");
  int lanes = 1;
  if (!rest.empty() && rest.front() == 'x') {
    rest.remove_prefix(1);
    lanes = read_number("lane count");
  }
  if (!rest.empty())
    raise<ParseError>("dtype '{}': unexpected trailing characters from offset {}", text,
                      input.size() - rest.size());
  const bool valid_bits =
      kind == Kind::Float ? (bits == 16 || bits == 32 || bits == 64) : (bits >= 1 && bits <= 64);
  if (!valid_bits) raise<ParseError>("dtype '{}': {} bits is not a supported width", text, bits);
  if (lanes < 1 || lanes > 65536)
    raise<ParseError>("dtype '{}': {} lanes is outside 1..65536", text, lanes);
  return {kind, bits, lanes};
}

}  // namespace dlavm

template <>
struct fmt::formatter<dlavm::DType> : fmt::formatter<std::string_view> {
  auto format(dlavm::DType t, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(t.str(), ctx);
  }
};
