// Definitions for graph/attrs.hpp.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/graph/attrs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dlavm::graph {

DLAVM_INLINE std::string_view describe(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int:
      return "an integer";
    case AttrKind::Float:
      return "a float";
    case AttrKind::String:
      return "a string";
    case AttrKind::Ints:
      return "a list of integers";
    case AttrKind::DType:
      return "a dtype";
    case AttrKind::Floats:
      return "a list of floats";
  }
  raise<ValueError>("internal: unknown AttrKind {}, please report", static_cast<int>(kind));
}

namespace detail {

// The shortest round-trip text, with a decimal point so that 2.0 does not read as 2.
inline std::string float_text(double d) {
  std::string s = fmt::format("{}", d);
  if (std::isfinite(d) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace detail

DLAVM_INLINE std::string to_string(const AttrValue& v) {
  using detail::float_text;
  switch (kind_of(v)) {
    case AttrKind::Int:
      return fmt::format("{}", std::get<std::int64_t>(v));
    case AttrKind::Float:
      return float_text(std::get<double>(v));
    case AttrKind::String: {
      std::string s = "\"";
      for (char c : std::get<std::string>(v)) {
        if (c == '"' || c == '\\') s += '\\';
        s += c;
      }
      return s + "\"";
    }
    case AttrKind::Ints:
      return fmt::format("[{}]", fmt::join(std::get<std::vector<std::int64_t>>(v), ", "));
    case AttrKind::DType:
      return std::get<DType>(v).str();
    case AttrKind::Floats: {
      std::vector<std::string> items;
      for (double d : std::get<std::vector<double>>(v)) items.push_back(float_text(d));
      return fmt::format("[{}]", fmt::join(items, ", "));
    }
  }
  raise<ValueError>("internal: unknown attribute kind, please report");
}

DLAVM_INLINE Attrs::Attrs(std::initializer_list<Entry> entries) {
  for (const Entry& e : entries) {
    if (contains(e.key)) raise<ValueError>("attributes: '{}' is given twice", e.key);
    set(e.key, e.value);
  }
}

DLAVM_INLINE Attrs& Attrs::set(std::string key, AttrValue value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Entry& e, const std::string& k) { return e.key < k; });
  if (it != entries_.end() && it->key == key)
    it->value = std::move(value);
  else
    entries_.emplace(it, std::move(key), std::move(value));
  return *this;
}

DLAVM_INLINE const AttrValue* Attrs::find(std::string_view key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const Entry& e, std::string_view k) { return e.key < k; });
  return it != entries_.end() && it->key == key ? &it->value : nullptr;
}

DLAVM_INLINE const AttrValue& Attrs::get(std::string_view key, AttrKind want) const {
  const AttrValue* v = find(key);
  if (v == nullptr) raise<ValueError>("attribute '{}' is missing", key);
  if (kind_of(*v) != want)
    raise<TypeError>("attribute '{}' is {} ({}), expected {}", key, describe(kind_of(*v)),
                     to_string(*v), describe(want));
  return *v;
}

DLAVM_INLINE std::int64_t Attrs::get_int(std::string_view key) const {
  return std::get<std::int64_t>(get(key, AttrKind::Int));
}

DLAVM_INLINE double Attrs::get_float(std::string_view key) const {
  const AttrValue* v = find(key);
  if (v != nullptr && kind_of(*v) == AttrKind::Int)
    return static_cast<double>(std::get<std::int64_t>(*v));
  return std::get<double>(get(key, AttrKind::Float));
}

DLAVM_INLINE const std::string& Attrs::get_string(std::string_view key) const {
  return std::get<std::string>(get(key, AttrKind::String));
}

DLAVM_INLINE const std::vector<std::int64_t>& Attrs::get_ints(std::string_view key) const {
  return std::get<std::vector<std::int64_t>>(get(key, AttrKind::Ints));
}

DLAVM_INLINE DType Attrs::get_dtype(std::string_view key) const {
  return std::get<DType>(get(key, AttrKind::DType));
}

DLAVM_INLINE std::vector<double> Attrs::get_floats(std::string_view key) const {
  const AttrValue* v = find(key);
  if (v != nullptr && kind_of(*v) == AttrKind::Ints) {
    const auto& ints = std::get<std::vector<std::int64_t>>(*v);
    return {ints.begin(), ints.end()};
  }
  return std::get<std::vector<double>>(get(key, AttrKind::Floats));
}

}  // namespace dlavm::graph
