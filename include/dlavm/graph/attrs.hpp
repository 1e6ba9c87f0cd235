// Attributes of graph calls: a sorted map from names to values of six kinds (an integer, a
// float, a string, a list of integers, a dtype, a list of floats), as ONNX attributes and TVM's
// attrs carry them. Typed getters raise naming the key; op records (graph/op.hpp) declare which
// keys an op takes, with their kinds and defaults.
//
//   graph::Attrs a{{"strides", {2, 2}}, {"rounding", "nearest"}, {"shift", 8}};
//   a.get_ints("strides");          // {2, 2}
//   a.get_float("shift");           // 8.0: an integer reads as a float
//   a.set("scales", std::vector<double>{0.5, 0.25});   // per-channel scales
//   a.get_string("shift");          // TypeError: attribute 'shift' is an integer (8), ...
//   fmt::format("{}", a);           // rounding="nearest", shift=8, strides=[2, 2]
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dlavm::graph {

using AttrValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>, DType,
                               std::vector<double>>;

// The kinds of AttrValue, in the order of its alternatives.
enum class AttrKind : std::uint8_t { Int, Float, String, Ints, DType, Floats };

inline AttrKind kind_of(const AttrValue& v) { return static_cast<AttrKind>(v.index()); }
// "an integer", "a float", "a string", "a list of integers", "a dtype", "a list of floats"
std::string_view describe(AttrKind kind);
// The value as the printer writes it: 8, 1e-05, 2.0, "nearest", [2, 2], int8, [0.5, 2.0].
std::string to_string(const AttrValue& v);

class Attrs {
 public:
  struct Entry {
    Entry(std::string k, AttrValue v) : key(std::move(k)), value(std::move(v)) {}
    // {"strides", {2, 2}}: a braced list of integers.
    Entry(std::string k, std::initializer_list<std::int64_t> v)
        : key(std::move(k)), value(std::vector<std::int64_t>(v)) {}
    // {"rounding", "nearest"}: a string literal (an array, so that {"axis", 0} stays an integer).
    template <std::size_t N>
    Entry(std::string k, const char (&v)[N]) : key(std::move(k)), value(std::string(v)) {}
    friend bool operator==(const Entry&, const Entry&) = default;
    std::string key;
    AttrValue value;
  };

  Attrs() = default;
  // ValueError when a key appears twice.
  Attrs(std::initializer_list<Entry> entries);

  // Inserts or replaces.
  Attrs& set(std::string key, AttrValue value);
  // The value, or nullptr.
  const AttrValue* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  // Typed reads: ValueError when the key is missing, TypeError (naming key, kind and value)
  // when it holds another kind. get_float also reads an integer.
  std::int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;
  const std::string& get_string(std::string_view key) const;
  const std::vector<std::int64_t>& get_ints(std::string_view key) const;
  DType get_dtype(std::string_view key) const;
  // A list of floats; a list of integers reads as one too.
  std::vector<double> get_floats(std::string_view key) const;

  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  friend bool operator==(const Attrs&, const Attrs&) = default;

 private:
  const AttrValue& get(std::string_view key, AttrKind want) const;
  std::vector<Entry> entries_;  // sorted by key, keys unique
};

}  // namespace dlavm::graph

// key=value pairs in key order, separated by ", ".
template <>
struct fmt::formatter<dlavm::graph::Attrs> : fmt::formatter<std::string_view> {
  auto format(const dlavm::graph::Attrs& a, format_context& ctx) const {
    std::string out;
    for (const auto& e : a) {
      if (!out.empty()) out += ", ";
      out += e.key;
      out += '=';
      out += dlavm::graph::to_string(e.value);
    }
    return fmt::formatter<std::string_view>::format(out, ctx);
  }
};

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/graph/attrs-inl.hpp>
#endif
